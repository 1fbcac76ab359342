//! Idle fake-claude sessions held by one daemon (`Held`), and what they
//! cost: memory per session and the idle wakeups (`idle.rs`).

use super::*;

/// A field of `/proc/<pid>/<file>` (`status`, `smaps_rollup`), in kB (0
/// when unreadable).
pub(crate) fn proc_kb(pid: u32, file: &str, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/{file}"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// A `/proc/<pid>/status` figure in kB. Elsewhere only the resident set
/// (`VmRSS`) is known, through `ccd_testkit::procs`; other keys read 0.
pub(crate) fn status_kb(pid: u32, key: &str) -> u64 {
    if cfg!(not(target_os = "linux")) && key == "VmRSS:" {
        return ccd_testkit::procs::rss_kb(pid);
    }
    proc_kb(pid, "status", key)
}

pub(crate) fn rollup_kb(pid: u32, key: &str) -> u64 {
    proc_kb(pid, "smaps_rollup", key)
}

/// Idle fake-claude sessions under one daemon of ours, for the memory
/// and idle parts. Stopped (daemon, holders, claudes) by [`Held::stop`].
pub struct Held {
    ccd: Ccd,
    /// The fake claudes' pids.
    pub claudes: Vec<u32>,
    /// Their holders' pids, in the same order.
    pub holders: Vec<u32>,
    /// `session.new` calls that failed (the rest are here).
    pub failed: Vec<String>,
    /// The daemon's VmRSS before any session.
    pub daemon_rss_kb_idle: u64,
    /// When the last session was started.
    pub started: Instant,
}

impl Held {
    /// Starts `n` sessions (each waited for until ready), one after the
    /// other; at least one must start.
    pub fn start(cx: &Ctx, n: usize) -> anyhow::Result<Self> {
        anyhow::ensure!(
            cx.fake.exists(),
            "{} not found: cargo build --release -p ccd-fake-claude",
            cx.fake.display()
        );
        eprintln!("{n} idle fake-claude sessions…");
        let dir = cx.dir("held")?;
        let mut c = Ccd::start(&cx.ccd, &cx.bench, &cx.fake, &dir, true)?;
        std::thread::sleep(Duration::from_millis(500));
        let daemon_rss_kb_idle = status_kb(c.daemon_pid(), "VmRSS:");
        let mut claudes = Vec::new();
        let mut failed = Vec::new();
        for _ in 0..n {
            match c.new_session(&[], true) {
                Ok((_, pid)) => claudes.push(pid),
                Err(e) => failed.push(format!("{e:#}")),
            }
        }
        let started = Instant::now();
        let holders: Vec<u32> = claudes.iter().filter_map(|p| ppid(*p)).collect();
        if claudes.is_empty() || holders.len() != claudes.len() {
            c.stop();
            anyhow::ensure!(!claudes.is_empty(), "no session started: {failed:?}");
            anyhow::bail!("holders not found");
        }
        Ok(Self {
            ccd: c,
            claudes,
            holders,
            failed,
            daemon_rss_kb_idle,
            started,
        })
    }

    /// Sleeps until `d` after the last session started.
    fn settle(&self, d: Duration) {
        if let Some(left) = d.checked_sub(self.started.elapsed()) {
            std::thread::sleep(left);
        }
    }

    pub fn stop(self) {
        self.ccd.stop();
    }

    /// The ccd binary and the environment its commands run in.
    pub fn ccd_and_env(&self) -> (&std::path::Path, &[(String, String)]) {
        (&self.ccd.ccd, &self.ccd.env)
    }
}

pub fn memory(h: &Held) -> Memory {
    h.settle(Duration::from_secs(3));
    let n = h.claudes.len();
    let holders = &h.holders;
    let rss: Vec<u64> = holders.iter().map(|h| status_kb(*h, "VmRSS:")).collect();
    let anon: Vec<u64> = holders.iter().map(|h| status_kb(*h, "RssAnon:")).collect();
    let pss: Vec<u64> = holders.iter().map(|h| rollup_kb(*h, "Pss:")).collect();
    let private: Vec<u64> = holders
        .iter()
        .map(|h| rollup_kb(*h, "Private_Clean:") + rollup_kb(*h, "Private_Dirty:"))
        .collect();
    let claude: Vec<u64> = h.claudes.iter().map(|p| status_kb(*p, "VmRSS:")).collect();
    let avg = |v: &[u64]| v.iter().sum::<u64>() / v.len().max(1) as u64;
    let daemon = status_kb(h.ccd.daemon_pid(), "VmRSS:");
    let growth = daemon.saturating_sub(h.daemon_rss_kb_idle) / n.max(1) as u64;
    Memory {
        sessions: n,
        daemon_rss_kb_idle: h.daemon_rss_kb_idle,
        daemon_rss_kb: daemon,
        holder_rss_kb_avg: avg(&rss),
        holder_rss_kb_max: rss.iter().copied().max().unwrap_or(0),
        holder_anon_kb_avg: avg(&anon),
        holder_pss_kb_avg: avg(&pss),
        holder_private_kb_avg: avg(&private),
        per_session_pss_kb: avg(&pss) + growth,
        claude_rss_kb_avg: avg(&claude),
        per_session_kb: avg(&rss) + growth,
        failed_starts: h.failed.clone(),
    }
}

/// Wakeups and CPU of the daemon, the holders and the claudes over
/// `window`, once `settle` has passed since the last session started.
pub fn idle(h: &Held, settle: Duration, window: Duration) -> crate::pty::idle::Idle {
    h.settle(settle);
    eprintln!(
        "idle: sampling {} sessions for {:.0} s…",
        h.holders.len(),
        window.as_secs_f64()
    );
    crate::pty::idle::measure(h.ccd.daemon_pid(), &h.holders, &h.claudes, settle, window)
}
