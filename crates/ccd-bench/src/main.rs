//! ccd's benchmarks. Figures on shared machines are noisy: every run prints
//! the spread, and comparisons are meant to be made within one run.
//!
//! ```text
//! cargo build --release -p ccd -p ccd-bench
//! target/release/ccd-bench ls            # generates once, then times `ccd ls --json`
//! target/release/ccd-bench events        # registry change → event latency
//! ```

mod events;
mod gen_config;
mod ls;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "ccd-bench", about = "ccd's benchmarks")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write a Claude Code config dir of generated sessions.
    GenConfig(gen_config::Args),
    /// Time `ccd ls --json` over generated config dirs.
    Ls(ls::Args),
    /// Latency from a change in an external session's registry entry to
    /// the event reaching a subscriber.
    Events(events::Args),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Cmd::GenConfig(a) => gen_config::run(&a).map(|_| ()),
        Cmd::Ls(a) => ls::run(&a),
        Cmd::Events(a) => events::run(&a),
    }
}
