//! `fake-claude`: a deterministic stand-in for Claude Code's interactive TUI, for ccd's
//! integration tests. See the crate README for the behaviours and environment variables.

// Unsafe code only where an item allows it, with its reason
// (docs/architecture.md, "Unsafe code").
#![deny(unsafe_code)]

mod app;
mod args;
mod input;
mod mode;
mod registry;
mod session;
mod settings;
mod signals;
mod term;
mod transcript;
mod trust;
mod tui;
mod util;

use args::Args;
use settings::Settings;

fn main() {
    let args = Args::parse(std::env::args().skip(1));
    if args.version {
        println!("{} (Claude Code)", settings::version());
        return;
    }
    let mut settings = match Settings::from_env() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fake-claude: {e}");
            std::process::exit(1);
        }
    };
    if let Some(m) = &args.model {
        // `--model` beats FAKE_CLAUDE_MODEL, as the flag beats the config.
        settings.model = m.clone();
    }
    let code = match app::run(settings, args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("fake-claude: {e}");
            1
        }
    };
    std::process::exit(code);
}
