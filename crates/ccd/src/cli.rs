//! The command line, as clap types.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "ccd",
    version,
    about = "Run Claude Code sessions under PTYs and get back into any of them by id."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Claude Code's config dir (default: $CLAUDE_CONFIG_DIR, else ~/.claude).
    #[arg(long, global = true, value_name = "DIR")]
    pub claude_config_dir: Option<PathBuf>,
    /// ccd's own config file (default: $CCD_CONFIG, else <config dir>/ccd/config.toml).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every Claude Code session on this machine, newest first.
    #[command(
        after_help = "Examples:\n  ccd ls\n  ccd ls --live\n  ccd ls --cwd ~/src/project --json | jq '.[0].session_id'"
    )]
    Ls(LsArgs),
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// One JSON array, for scripts.
    #[arg(long)]
    pub json: bool,
    /// Only sessions a process may be running (live or unknown).
    #[arg(long)]
    pub live: bool,
    /// Only sessions whose cwd is DIR or below it.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}
