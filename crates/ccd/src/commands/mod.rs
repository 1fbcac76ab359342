//! One module per subcommand.

mod ls;

use crate::cli::{Cli, Command};
use std::process::ExitCode;

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Ls(args) => ls::run(&cli.global, &args),
    }
}
