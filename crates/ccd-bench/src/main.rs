//! ccd's benchmarks. Figures on shared machines are noisy: every run prints
//! the spread, and comparisons are meant to be made within one run.
//!
//! ```text
//! cargo build --release -p ccd -p ccd-bench
//! target/<host triple>/release/ccd-bench ls            # generates once, then times `ccd ls --json`
//! target/<host triple>/release/ccd-bench events        # registry change → event latency
//! target/<host triple>/release/ccd-bench pty           # ccd vs raw PTY / tmux / dtach: flood, echo, attach, memory
//! target/<host triple>/release/ccd-bench parse         # the screen model's parse speed, part by part
//! target/<host triple>/release/ccd-bench trim          # trim a generated 1 GB transcript: time, MB/s, peak RSS, cp baseline
//! target/<host triple>/release/ccd-bench ui            # ccd ui: process start → first frame, 10k transcripts
//! target/<host triple>/release/ccd-bench search        # ccd search vs rg -F -l, 10k transcripts (--scales 1,10: and 100k), page cache warm
//! target/<host triple>/release/ccd-bench search-archived # one search over 300 and 1,000 archived conversations: decompressed vs indexed
//! target/<host triple>/release/ccd-bench restore       # after a simulated reboot: daemon start → 50 sessions back; record writes per change
//! ```

// No unsafe code here, and none may be added (docs/architecture.md, "Unsafe code").
#![forbid(unsafe_code)]

mod events;
mod gen_config;
mod ls;
mod parse;
mod pty;
mod restore;
mod search;
mod search_archived;
mod stats;
mod trim;
mod ui;
mod ui_hosts;
mod usage;

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
    /// ccd's terminal path next to a raw PTY, tmux and dtach: flood
    /// throughput, keystroke echo, attach time, memory.
    Pty(pty::Args),
    /// `ccd web`: a held session's PTY output to a page's WebSocket frame,
    /// beside `ccd attach`'s echo (`pty --only web`; `pty`'s options).
    Web(pty::Args),
    /// In-memory parse speed of the screen model, part by part.
    Parse(parse::Args),
    /// Trim a generated real-shaped transcript (default 1 GB): time, MB/s,
    /// peak RSS of the trimming process, and a `cp` of the same file.
    Trim(trim::Args),
    /// (internal) Trim one file, print the figures as JSON.
    #[command(name = "__trim", hide = true)]
    TrimChild(trim::ChildArgs),
    /// `ccd ui`: process start to the first frame showing the list, over
    /// generated transcripts.
    Ui(ui::Args),
    /// `ccd ui` over two machines: a key to its redraw while the other
    /// machine's link is healthy, then stalled.
    UiHosts(ui_hosts::Args),
    /// After a simulated reboot: daemon start to N fake sessions back at
    /// their prompt (`restore = "auto"`) per `restore_at_once`, and the
    /// restore record's writes per session change.
    Restore(restore::Args),
    /// `ccd search` beside `rg -F -l` over the same generated transcripts,
    /// page cache warm: wall times, their ratio, MB/s.
    Search(search::Args),
    /// One search over N archived conversations: every archive
    /// decompressed, against the index that covers them.
    SearchArchived(search_archived::Args),
    /// `ccd usage` beside `ccusage` on the same query over generated
    /// transcripts (several GB): cold, warm, after appends.
    Usage(usage::Args),
    /// (internal) Write a seeded stream to the tty.
    #[command(name = "__emit", hide = true)]
    Emit(pty::child::EmitArgs),
    /// (internal) Echo every byte read from the tty.
    #[command(name = "__echo", hide = true)]
    Echo(pty::child::EchoArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Cmd::GenConfig(a) => gen_config::run(&a).map(|_| ()),
        Cmd::Ls(a) => ls::run(&a),
        Cmd::Events(a) => events::run(&a),
        Cmd::Pty(a) => pty::run(&a),
        Cmd::Web(mut a) => {
            a.only = vec!["web".into()];
            pty::run(&a)
        }
        Cmd::Parse(a) => parse::run(&a),
        Cmd::Trim(a) => trim::run(&a),
        Cmd::TrimChild(a) => trim::child(&a),
        Cmd::Ui(a) => ui::run(&a),
        Cmd::UiHosts(a) => ui_hosts::run(&a),
        Cmd::Restore(a) => restore::run(&a),
        Cmd::Search(a) => search::run(&a),
        Cmd::SearchArchived(a) => search_archived::run(&a),
        Cmd::Usage(a) => usage::run(&a),
        Cmd::Emit(a) => pty::child::emit(&a),
        Cmd::Echo(a) => pty::child::echo(&a),
    }
}

/// `explicit`, else the binary `name` beside this benchmark's executable
/// (cargo builds them into one folder).
pub fn beside_me(
    explicit: Option<&std::path::Path>,
    name: &str,
) -> anyhow::Result<std::path::PathBuf> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .ok_or_else(|| anyhow::anyhow!("{} has no folder", exe.display()))?;
    Ok(dir.join(name))
}
