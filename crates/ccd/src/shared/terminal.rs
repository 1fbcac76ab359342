//! What a full-screen command needs of the terminal before it starts,
//! for the attach commands and the dashboard alike: that stdin and stdout
//! are one, and the detach key (flag, config file, else `ctrl-\`).

use crate::cli::{DetachKeyArg, GlobalArgs};
use crate::settings::Settings;
use crate::term::DetachKey;
use std::io::IsTerminal;

/// The detach key: flag, config file, else `ctrl-\`.
pub fn detach_key(global: &GlobalArgs, arg: &DetachKeyArg) -> anyhow::Result<DetachKey> {
    let configured = match &arg.detach_key {
        Some(k) => Some(k.clone()),
        None => Settings::load(global.config.as_deref())?.detach_key,
    };
    parse_detach_key(configured)
}

/// The detach key `configured` (flag or config file) names, else `ctrl-\`.
pub fn parse_detach_key(configured: Option<String>) -> anyhow::Result<DetachKey> {
    match configured {
        Some(k) => k.parse().map_err(|e: String| anyhow::anyhow!(e)),
        None => Ok(DetachKey::default()),
    }
}

/// Refuses to go on unless stdin and stdout are both a terminal.
pub fn require_terminal(what: &str) -> anyhow::Result<()> {
    if !on_terminal() {
        anyhow::bail!("{what} needs a terminal (use `ccd screen` or the socket API from scripts)");
    }
    Ok(())
}

/// Whether stdin and stdout are both a terminal (`ccd` with no arguments
/// then opens the dashboard).
pub fn on_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}
