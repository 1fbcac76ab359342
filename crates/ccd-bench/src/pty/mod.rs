//! `ccd-bench pty`: ccd's terminal path side by side with a raw PTY, tmux
//! and dtach (when installed), in one run.
//!
//! - flood throughput into an attached client: a seeded TUI-like stream
//!   (synchronized-output frames, cursor movement, 16/256/truecolor SGR,
//!   box drawing, CJK and emoji) and a plain-text stream, written by
//!   `ccd-bench __emit` as fast as the PTY takes it; bytes lost, resyncs,
//!   and whether the client's final screen equals a reference parse;
//! - keystroke echo latency (`ccd-bench __echo`), idle and while a sibling
//!   session floods (with a client attached to the flood, draining it);
//! - `ccd attach` → first full frame (and `session.attach` → first resync);
//! - memory of the daemon and of each holder with idle fake-claude sessions;
//! - what measuring those sessions' cost costs: `ccd ls` with and without
//!   the MEM/CPU columns, and one sample of every session (`cost.rs`);
//! - the idle cost of those sessions: wakeups and CPU per second of the
//!   daemon, of each holder and of each fake claude, by thread (`idle.rs`);
//! - `ccd approve` at a settled permission prompt, walked by the holder
//!   and (a holder capped at protocol 2) by the daemon, next to `ccd
//!   screen`, with the holder connections each costs (`respond.rs`);
//! - with `--only ssh`: the echo `ccd --host ssh://… attach` adds over
//!   loopback ssh beside a local `ccd attach` (`ssh.rs`);
//! - with `--only web`: a held session's PTY output to a `ccd web` page's
//!   WebSocket frame beside `ccd attach`'s echo of it (`web.rs`).
//!
//! Every process gets a temp HOME, CLAUDE_CONFIG_DIR, TMPDIR and ccd
//! socket/state dirs; everything started is stopped by pid (tmux by
//! `kill-server` on its private socket).

mod api;
mod cases;
mod ccd;
pub mod child;
mod cost;
mod idle;
mod report;
mod respond;
mod ssh;
pub mod stream;
mod term;
mod tmux;
mod web;

use std::path::{Path, PathBuf};
use stream::Kind;

#[derive(clap::Args)]
pub struct Args {
    /// The ccd binary (default: `ccd` beside this benchmark's executable).
    #[arg(long)]
    pub ccd: Option<PathBuf>,
    /// The fake claude (default: `fake-claude` beside this executable).
    #[arg(long)]
    pub fake_claude: Option<PathBuf>,
    /// Small sizes and sample counts, for development.
    #[arg(long)]
    pub quick: bool,
    /// TUI stream size in MB (default 50; 5 with --quick).
    #[arg(long)]
    pub tui_mb: Option<u64>,
    /// Plain stream size in MB (default 200; 20 with --quick).
    #[arg(long)]
    pub plain_mb: Option<u64>,
    /// Echo samples per case (default 1000; 200 with --quick).
    #[arg(long)]
    pub samples: Option<usize>,
    /// Echo rounds (default 4; 1 with --quick): the samples are taken in
    /// this many rounds over every contender, the order reversed each
    /// round, and pooled, so a machine that drifts during the run weighs
    /// on each contender alike.
    #[arg(long)]
    pub echo_rounds: Option<usize>,
    /// Attach samples per contender (default 300; 20 with --quick): p99 of
    /// 300 is the third slowest (of 100 it was the second, and one stray
    /// process start moved it by milliseconds).
    #[arg(long)]
    pub attach_samples: Option<usize>,
    /// Flood rounds per contender (default 3; 1 with --quick); the median is reported.
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Idle fake-claude sessions for the memory and idle figures (default 20).
    #[arg(long, default_value_t = 20)]
    pub sessions: usize,
    /// Idle part: seconds the sessions are left alone after the last one
    /// started, before sampling (the daemon refreshes a session that
    /// changed within 5 s twice a second: past that it is settled).
    #[arg(long, default_value_t = 10)]
    pub idle_settle_secs: u64,
    /// Idle part: the sampled window, in seconds.
    #[arg(long, default_value_t = 10)]
    pub idle_secs: u64,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// `respond` part: approves per walker.
    #[arg(long, default_value_t = 7)]
    pub respond_runs: usize,
    /// `cost` part: `ccd ls` runs with and without the cost columns.
    #[arg(long, default_value_t = 15)]
    pub cost_runs: usize,
    /// `cost` part: also sample while this many unrelated `sleep`
    /// processes are on the machine (started and ended by the bench).
    #[arg(long, default_value_t = 0)]
    pub cost_unrelated: usize,
    /// Only these parts (comma separated: flood, echo, attach, respond, memory, cost, idle; and
    /// ssh, never run by default: echo of `ccd attach` over loopback ssh,
    /// with a private sshd the run starts; and web, never run by default:
    /// the echo through `ccd web`'s WebSocket beside `ccd attach`'s).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Skip these contenders (comma separated: raw, tmux, dtach, ccd-api, ccd-attach).
    #[arg(long, value_delimiter = ',')]
    pub skip: Vec<String>,
    /// Write the figures as JSON here too.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Append every echo sample here, one line each: its start on
    /// CLOCK_MONOTONIC in seconds and its latency in ms, in the order taken
    /// (the first 20 of each case are warm-up). Lines up with
    /// `perf record -k CLOCK_MONOTONIC`, to see what the slow samples
    /// waited for (`crates/ccd-bench/scripts/echo_waits.py`).
    #[arg(long)]
    pub echo_trace: Option<PathBuf>,
    /// Append every attach sample here, one line each: its start on
    /// CLOCK_MONOTONIC in seconds, its time to the full frame in ms and its
    /// contender (ccd-attach, cat, tmux), to line up with `perf record -k
    /// CLOCK_MONOTONIC` (`crates/ccd-bench/scripts/echo_waits.py --label`).
    #[arg(long)]
    pub attach_trace: Option<PathBuf>,
}

pub struct Ctx {
    pub bench: PathBuf,
    pub ccd: PathBuf,
    pub fake: PathBuf,
    pub tmux: Option<PathBuf>,
    pub dtach: Option<PathBuf>,
    pub root: PathBuf,
    pub seed: u64,
    pub samples: usize,
    pub echo_rounds: usize,
    pub attach_samples: usize,
    pub skip: Vec<String>,
    counter: std::cell::Cell<u32>,
}

impl Ctx {
    /// A fresh directory under the run's temp root.
    pub fn dir(&self, what: &str) -> anyhow::Result<PathBuf> {
        let n = self.counter.get() + 1;
        self.counter.set(n);
        let d = self.root.join(format!("{what}-{n}"));
        std::fs::create_dir_all(&d)?;
        Ok(d)
    }

    /// An isolated environment rooted at `dir`.
    pub fn env(&self, dir: &Path) -> anyhow::Result<term::Env> {
        let home = dir.join("home");
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&home)?;
        std::fs::create_dir_all(&tmp)?;
        Ok(vec![
            ("HOME".into(), home.display().to_string()),
            (
                "CLAUDE_CONFIG_DIR".into(),
                home.join(".claude").display().to_string(),
            ),
            ("TMPDIR".into(), tmp.display().to_string()),
            (
                "CCD_SOCKET_DIR".into(),
                dir.join("ccd-sock").display().to_string(),
            ),
            (
                "CCD_STATE_DIR".into(),
                dir.join("ccd-state").display().to_string(),
            ),
            ("LANG".into(), "C.UTF-8".into()),
        ])
    }

    pub fn wants(&self, contender: &str) -> bool {
        !self.skip.iter().any(|s| s == contender)
    }
}

/// The files an emitter run coordinates through.
pub struct Run {
    pub ready: PathBuf,
    pub go: PathBuf,
    pub done: PathBuf,
    pub stop: PathBuf,
}

impl Run {
    pub fn new(dir: &Path) -> Self {
        Self {
            ready: dir.join("ready"),
            go: dir.join("go"),
            done: dir.join("done"),
            stop: dir.join("stop"),
        }
    }

    /// `__emit` arguments for a measured flood (waits for go, lingers).
    pub fn emit_args(&self, kind: Kind, bytes: usize, seed: u64) -> Vec<String> {
        vec![
            "__emit".into(),
            "--kind".into(),
            kind.name().into(),
            "--bytes".into(),
            bytes.to_string(),
            "--seed".into(),
            seed.to_string(),
            "--ready-file".into(),
            self.ready.display().to_string(),
            "--go-file".into(),
            self.go.display().to_string(),
            "--done-file".into(),
            self.done.display().to_string(),
            "--stop-file".into(),
            self.stop.display().to_string(),
            "--linger-secs".into(),
            "600".into(),
        ]
    }

    /// `__emit` arguments for a sibling flood: the TUI stream over and over
    /// until the stop file appears (at most 10 minutes).
    pub fn sibling_args(&self, seed: u64) -> Vec<String> {
        vec![
            "__emit".into(),
            "--kind".into(),
            "tui".into(),
            "--bytes".into(),
            "4000000".into(),
            "--seed".into(),
            seed.to_string(),
            "--stop-file".into(),
            self.stop.display().to_string(),
            "--loop-secs".into(),
            "600".into(),
        ]
    }

    pub fn echo_args(&self) -> Vec<String> {
        vec![
            "__echo".into(),
            "--ready-file".into(),
            self.ready.display().to_string(),
        ]
    }

    /// A finished screen for the attach test: written at once, lingering.
    pub fn marker_args(&self, bytes: usize, seed: u64) -> Vec<String> {
        vec![
            "__emit".into(),
            "--kind".into(),
            "tui".into(),
            "--bytes".into(),
            bytes.to_string(),
            "--seed".into(),
            seed.to_string(),
            "--done-file".into(),
            self.done.display().to_string(),
            "--stop-file".into(),
            self.stop.display().to_string(),
            "--linger-secs".into(),
            "600".into(),
        ]
    }
}

/// The reference: the stream parsed by ccd's own screen model.
pub struct Reference {
    pub kind: Kind,
    /// The size asked for (`--bytes`); `bytes` is the stream's real length.
    pub target: usize,
    pub bytes: usize,
    pub screen: String,
    /// ccd's screen model (what the holder runs on every byte), in memory.
    pub parse_mb_per_s: f64,
}

pub fn reference(kind: Kind, bytes: usize, seed: u64) -> Reference {
    let data = stream::generate(kind, bytes, seed, term::ROWS, term::COLS);
    // As the holder runs it (its default scrollback).
    let scrollback =
        ccd_holder::HolderConfig::new(PathBuf::new(), PathBuf::new(), PathBuf::new()).scrollback;
    let mut s = ccd_screen::Screen::with_scrollback(term::ROWS, term::COLS, scrollback);
    let t0 = std::time::Instant::now();
    for c in data.chunks(4096) {
        s.process(c);
    }
    let parse_mb_per_s = data.len() as f64 / 1e6 / t0.elapsed().as_secs_f64();
    Reference {
        parse_mb_per_s,
        kind,
        target: bytes,
        bytes: data.len(),
        screen: s.contents(),
    }
}

/// `bytes` through a fresh screen model: its contents.
pub fn parse(bytes: &[u8]) -> String {
    let mut s = ccd_screen::Screen::new(term::ROWS, term::COLS);
    s.process(bytes);
    s.contents()
}

fn beside_exe(name: &str) -> anyhow::Result<PathBuf> {
    crate::beside_me(None, name)
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    if let Some(p) = &a.echo_trace {
        term::ECHO_TRACE.start(p)?;
    }
    if let Some(p) = &a.attach_trace {
        term::ATTACH_TRACE.start(p)?;
    }
    let ccd = match &a.ccd {
        Some(p) => p.clone(),
        None => beside_exe("ccd")?,
    };
    let fake = match &a.fake_claude {
        Some(p) => p.clone(),
        None => beside_exe("fake-claude")?,
    };
    anyhow::ensure!(
        ccd.exists(),
        "{} not found: cargo build --release -p ccd",
        ccd.display()
    );
    let tmp = tempfile::Builder::new().prefix("ccd-bench-pty").tempdir()?;
    let cx = Ctx {
        bench: std::env::current_exe()?,
        ccd,
        fake,
        tmux: which("tmux"),
        dtach: which("dtach"),
        root: std::fs::canonicalize(tmp.path())?,
        seed: a.seed,
        samples: a.samples.unwrap_or(if a.quick { 200 } else { 1000 }),
        echo_rounds: a.echo_rounds.unwrap_or(if a.quick { 1 } else { 4 }).max(1),
        attach_samples: a
            .attach_samples
            .unwrap_or(if a.quick { 20 } else { 300 })
            .max(1),
        skip: a.skip.clone(),
        counter: Default::default(),
    };
    let tui_mb = a.tui_mb.unwrap_or(if a.quick { 5 } else { 50 });
    let plain_mb = a.plain_mb.unwrap_or(if a.quick { 20 } else { 200 });
    let rounds = a.rounds.unwrap_or(if a.quick { 1 } else { 3 }).max(1);
    let part = |p: &str| a.only.is_empty() || a.only.iter().any(|o| o == p);
    let mut rep = report::Report::new(&cx, tui_mb, plain_mb);
    if part("flood") {
        for (kind, mb) in [(Kind::Tui, tui_mb), (Kind::Plain, plain_mb)] {
            eprintln!("reference parse of the {} stream ({mb} MB)…", kind.name());
            let r = reference(kind, (mb * 1_000_000) as usize, cx.seed);
            rep.parse_mb_per_s.push((kind, r.parse_mb_per_s));
            rep.floods.extend(cases::floods(&cx, &r, rounds));
        }
    }
    if part("echo") {
        rep.echo = cases::echoes(&cx);
    }
    if part("attach") {
        rep.attach = cases::attach_times(&cx);
    }
    if part("respond") {
        rep.respond = Some(respond::respond(&cx, a.respond_runs.max(1)));
    }
    if a.only.iter().any(|o| o == "ssh") {
        match ssh::echo(&cx) {
            Ok(e) => rep.ssh_echo = Some(e),
            Err(e) => rep.echo.push(ssh::failed(&e)),
        }
    }
    if a.only.iter().any(|o| o == "web") {
        match web::echo(&cx) {
            Ok(e) => rep.web_echo = Some(e),
            Err(e) => rep.notes.push(format!("web: {e:#}")),
        }
    }
    if part("memory") || part("idle") || part("cost") {
        match cases::Held::start(&cx, a.sessions) {
            Ok(held) => {
                if part("memory") {
                    rep.memory = Some(cases::memory(&held));
                }
                if part("cost") {
                    rep.cost = Some(cost::cost(&held, a.cost_runs, a.cost_unrelated));
                }
                if part("idle") {
                    rep.idle = Some(cases::idle(
                        &held,
                        std::time::Duration::from_secs(a.idle_settle_secs),
                        std::time::Duration::from_secs(a.idle_secs.max(1)),
                    ));
                }
                held.stop();
            }
            Err(e) => rep.notes.push(format!("memory/idle: {e:#}")),
        }
    }
    rep.finish();
    if std::env::var_os("CCD_BENCH_KEEP").is_some() {
        eprintln!("keeping {}", tmp.keep().display());
    }
    print!("{}", rep.table());
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_vec_pretty(&rep)?)?;
        eprintln!("wrote {}", p.display());
    }
    Ok(())
}

/// Clock ticks a second (`sysconf(_SC_CLK_TCK)`, the unit of
/// `/proc/<pid>/stat`'s CPU times); 0 if unknown.
pub(crate) fn clock_ticks() -> i64 {
    use nix::unistd::{sysconf, SysconfVar};
    sysconf(SysconfVar::CLK_TCK).ok().flatten().unwrap_or(0)
}
