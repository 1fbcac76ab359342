//! The figures, as a table and as JSON.

use super::stream::Kind;
use super::term::Latency;
use super::Ctx;
use serde::Serialize;
use std::fmt::Write;

pub const CONTENDERS: [&str; 5] = ["raw", "tmux", "dtach", "ccd-api", "ccd-attach"];

fn header(c: &str) -> &'static str {
    match c {
        "raw" => "raw PTY",
        "tmux" => "tmux",
        "dtach" => "dtach",
        "ccd-api" => "ccd (API)",
        _ => "ccd attach",
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Flood {
    pub contender: String,
    pub kind: Kind,
    /// Bytes the emitter wrote.
    pub expected_bytes: u64,
    /// Bytes the client received after the go (for tmux: its re-rendering).
    pub received_bytes: u64,
    pub seconds: f64,
    /// Stream bytes (expected_bytes) per second, MB = 10^6 bytes.
    pub mb_per_s: f64,
    /// MB/s of each round (`mb_per_s` is their median).
    pub rounds_mb_per_s: Vec<f64>,
    pub ratio_to_raw: Option<f64>,
    /// expected − received, where the client gets the stream's own bytes
    /// (not tmux, which re-renders).
    pub bytes_lost: Option<i64>,
    /// ccd API client: overflow resyncs received, and their bytes.
    pub resyncs: Option<u64>,
    pub resync_bytes: Option<u64>,
    pub screen_matches: bool,
    pub timed_out: bool,
    /// CPU time (user + system, /proc) per MB of the stream: the session's
    /// server (dtach master, ccd holder: its screen model's parse included)
    /// and the attached client process.
    pub cpu_ms_per_mb: Option<(f64, f64)>,
    /// The ccd holder's CPU per MB by thread name (the reader: PTY reads,
    /// into its slab, and fan-out; the parser: the mode scanner and the
    /// screen model; the pumps: writes to clients and the terminal), ms.
    pub server_threads_ms_per_mb: Option<std::collections::BTreeMap<String, f64>>,
    /// The server's peak RSS (VmHWM) at the flood's end, kB: what it held
    /// for the stream (dtach master, ccd holder: parse backlog included).
    pub server_peak_rss_kb: Option<u64>,
    /// This contender against dtach in the same rounds ([`Paired`]).
    pub paired_to_dtach: Option<Paired>,
    pub error: Option<String>,
}

/// A contender's figures over dtach's, round by round: each of its rounds
/// follows dtach's round of the same number, so a machine whose speed
/// drifts during the run weighs on both figures of a pair alike; the
/// median of the rounds' ratios.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Paired {
    /// Rounds paired (both ran without an error).
    pub rounds: usize,
    /// MB/s ÷ dtach's MB/s.
    pub mb_per_s: f64,
    /// The lowest and highest of those ratios (how far one round may be
    /// from the median on this machine).
    pub mb_per_s_range: (f64, f64),
    /// CPU ms per MB, server + client, ÷ dtach's server + client (when
    /// both were measured).
    pub cpu: Option<f64>,
    /// The lowest and highest of those ratios.
    pub cpu_range: Option<(f64, f64)>,
}

impl Flood {
    pub fn failed(contender: &str, kind: Kind, e: &anyhow::Error) -> Self {
        Self {
            contender: contender.into(),
            kind,
            expected_bytes: 0,
            received_bytes: 0,
            seconds: 0.0,
            mb_per_s: 0.0,
            rounds_mb_per_s: Vec::new(),
            ratio_to_raw: None,
            bytes_lost: None,
            resyncs: None,
            resync_bytes: None,
            screen_matches: false,
            timed_out: false,
            cpu_ms_per_mb: None,
            server_threads_ms_per_mb: None,
            server_peak_rss_kb: None,
            paired_to_dtach: None,
            error: Some(format!("{e:#}")),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Echo {
    pub contender: String,
    pub idle: Option<Latency>,
    pub sibling_flood: Option<Latency>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Attach {
    /// `ccd attach <id>` started → its PTY shows the full screen.
    pub ccd_attach: Option<Latency>,
    /// `session.attach` request → reply.
    pub api_reply: Option<Latency>,
    /// `session.attach` request → first `session.resync`.
    pub api_resync: Option<Latency>,
    /// The resync reproduces the session's screen.
    pub api_screen_matches: bool,
    /// `tmux attach` started → full screen, for comparison.
    pub tmux_attach: Option<Latency>,
    /// The floor of this harness: `cat` of the same frame (the bytes of
    /// ccd's redraw) started under a PTY → full screen.
    pub cat_frame: Option<Latency>,
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Memory {
    pub sessions: usize,
    pub daemon_rss_kb_idle: u64,
    pub daemon_rss_kb: u64,
    pub holder_rss_kb_avg: u64,
    pub holder_rss_kb_max: u64,
    pub holder_anon_kb_avg: u64,
    /// Proportional set size: pages shared with the other holders and the
    /// daemon (the `ccd` executable, libc) counted once among them.
    pub holder_pss_kb_avg: u64,
    /// Pages no other process maps (what ending the holder frees).
    pub holder_private_kb_avg: u64,
    pub claude_rss_kb_avg: u64,
    /// holder RSS + the daemon's growth per session (counts the shared
    /// executable pages once per holder: an upper bound).
    pub per_session_kb: u64,
    /// holder PSS + the daemon's growth per session: what each session
    /// costs the machine.
    pub per_session_pss_kb: u64,
    /// `session.new` calls that failed (the rest were measured).
    pub failed_starts: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub rows: u16,
    pub cols: u16,
    pub tui_mb: u64,
    pub plain_mb: u64,
    pub seed: u64,
    pub cpus: usize,
    pub tmux: Option<String>,
    pub dtach: Option<String>,
    /// ccd_screen::Screen parse speed of each stream, in memory, 4 KiB
    /// chunks (the holder parses every byte on its PTY reader thread).
    pub parse_mb_per_s: Vec<(Kind, f64)>,
    pub floods: Vec<Flood>,
    pub echo: Vec<Echo>,
    pub attach: Attach,
    pub memory: Option<Memory>,
    /// What measuring sessions' costs costs (`cost` part).
    pub cost: Option<super::cost::Cost>,
    /// `ccd approve` at a settled prompt, by walker (`respond` part).
    pub respond: Option<super::respond::Respond>,
    /// Wakeups and CPU of idle held sessions (`idle` part).
    pub idle: Option<super::idle::Idle>,
    /// `ccd attach` locally and over loopback ssh (`--only ssh`).
    pub ssh_echo: Option<super::ssh::SshEcho>,
    /// `ccd attach` and a `ccd web` page's WebSocket (`--only web`).
    pub web_echo: Option<super::web::WebEcho>,
    pub notes: Vec<String>,
    pub targets: serde_json::Value,
}

impl Report {
    pub fn new(cx: &Ctx, tui_mb: u64, plain_mb: u64) -> Self {
        let mut notes = Vec::new();
        if cx.dtach.is_none() {
            notes.push("dtach is not installed: skipped".into());
        }
        if cx.tmux.is_none() {
            notes.push("tmux is not installed: skipped".into());
        }
        Self {
            rows: super::term::ROWS,
            cols: super::term::COLS,
            tui_mb,
            plain_mb,
            seed: cx.seed,
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            tmux: cx.tmux.as_deref().map(super::tmux::Tmux::version),
            dtach: cx.dtach.as_ref().map(|_| "dtach".to_string()),
            parse_mb_per_s: Vec::new(),
            floods: Vec::new(),
            echo: Vec::new(),
            attach: Attach::default(),
            memory: None,
            cost: None,
            respond: None,
            idle: None,
            ssh_echo: None,
            web_echo: None,
            notes,
            targets: serde_json::json!({
                "tui_ratio_to_raw_min": 0.85,
                "bytes_lost": 0,
                "echo_p50_vs_raw_max": 1.5,
                "echo_p99_sibling_flood_ms_max": 1.0,
                "attach_first_frame_ms_max": 5.0,
                "per_idle_session_mb_max": 4.0,
                "ls_cost_columns_ratio_max": 1.2,
                "approve_to_screen_ratio_max": 10.0,
                "holder_connections_per_approve": 1,
            }),
        }
    }

    /// Ratios to the raw PTY of the same stream.
    pub fn finish(&mut self) {
        let raw: Vec<(Kind, f64)> = self
            .floods
            .iter()
            .filter(|f| f.contender == "raw" && f.error.is_none())
            .map(|f| (f.kind, f.mb_per_s))
            .collect();
        for f in &mut self.floods {
            if let Some((_, r)) = raw.iter().find(|(k, _)| *k == f.kind) {
                if *r > 0.0 && f.error.is_none() {
                    f.ratio_to_raw = Some(f.mb_per_s / r);
                }
            }
        }
    }

    fn flood(&self, c: &str, k: Kind) -> Option<&Flood> {
        self.floods.iter().find(|f| f.contender == c && f.kind == k)
    }

    fn echo(&self, c: &str) -> Option<&Echo> {
        self.echo.iter().find(|e| e.contender == c)
    }

    pub fn table(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "ccd-bench pty: {}x{}, seed {}, {} CPUs, {}{}",
            self.cols,
            self.rows,
            self.seed,
            self.cpus,
            self.tmux.as_deref().unwrap_or("no tmux"),
            if self.dtach.is_some() {
                ", dtach"
            } else {
                ", no dtach"
            }
        );
        let _ = writeln!(
            o,
            "One run, side by side: compare ratios, not absolute figures.\n"
        );
        let row = |o: &mut String, label: &str, cells: Vec<String>, target: &str| {
            let _ = write!(o, "{label:<34}");
            for c in cells {
                let _ = write!(o, "{c:>12}");
            }
            let _ = writeln!(o, "   {target}");
        };
        let heads: Vec<String> = CONTENDERS.iter().map(|c| header(c).to_string()).collect();
        row(&mut o, "", heads, "target");
        for (k, mb) in [(Kind::Tui, self.tui_mb), (Kind::Plain, self.plain_mb)] {
            if !self.floods.iter().any(|f| f.kind == k) {
                continue;
            }
            let name = format!("{} stream, {mb} MB", k.name().to_uppercase());
            let cell = |f: &dyn Fn(&Flood) -> String| -> Vec<String> {
                CONTENDERS
                    .iter()
                    .map(|c| match self.flood(c, k) {
                        Some(x) if x.error.is_some() && x.rounds_mb_per_s.is_empty() => {
                            "error".into()
                        }
                        Some(x) => f(x),
                        None => "-".into(),
                    })
                    .collect()
            };
            let _ = writeln!(o, "{name}");
            if let Some((_, p)) = self.parse_mb_per_s.iter().find(|(kk, _)| *kk == k) {
                let _ = writeln!(
                    o,
                    "  (ccd's screen model parses this stream at {p:.0} MB/s in memory)"
                );
            }
            row(
                &mut o,
                "  MB/s (median of rounds)",
                cell(&|f| format!("{:.1}", f.mb_per_s)),
                "",
            );
            row(
                &mut o,
                "  MB/s min–max",
                cell(&|f| {
                    let lo = f.rounds_mb_per_s.iter().copied().fold(f64::MAX, f64::min);
                    let hi = f.rounds_mb_per_s.iter().copied().fold(0.0, f64::max);
                    format!("{lo:.0}–{hi:.0}")
                }),
                "",
            );
            row(
                &mut o,
                "  ratio to raw PTY",
                cell(&|f| f.ratio_to_raw.map_or("-".into(), |r| format!("{r:.2}"))),
                if k == Kind::Tui {
                    "ccd ≥ 0.85 (tmux ~0.25)"
                } else {
                    ""
                },
            );
            row(
                &mut o,
                "  ÷ dtach, round by round: MB/s",
                cell(&|f| {
                    f.paired_to_dtach
                        .map_or("-".into(), |p| format!("{:.2}", p.mb_per_s))
                }),
                "",
            );
            row(
                &mut o,
                "    lowest–highest round",
                cell(&|f| {
                    f.paired_to_dtach.map_or("-".into(), |p| {
                        let (lo, hi) = p.mb_per_s_range;
                        format!("{lo:.2}–{hi:.2}")
                    })
                }),
                "",
            );
            row(
                &mut o,
                "  ÷ dtach, round by round: CPU",
                cell(&|f| {
                    f.paired_to_dtach
                        .and_then(|p| p.cpu)
                        .map_or("-".into(), |c| format!("{c:.2}"))
                }),
                "",
            );
            row(
                &mut o,
                "    lowest–highest round",
                cell(&|f| {
                    f.paired_to_dtach
                        .and_then(|p| p.cpu_range)
                        .map_or("-".into(), |(lo, hi)| format!("{lo:.2}–{hi:.2}"))
                }),
                "",
            );
            row(
                &mut o,
                "  CPU ms/MB server + client",
                cell(&|f| {
                    f.cpu_ms_per_mb
                        .map_or("-".into(), |(s, c)| format!("{s:.1}+{c:.1}"))
                }),
                "",
            );
            row(
                &mut o,
                "  server CPU ms/MB by thread",
                cell(&|f| {
                    f.server_threads_ms_per_mb.as_ref().map_or("-".into(), |m| {
                        m.iter()
                            .filter(|(_, v)| **v >= 0.05)
                            .map(|(k, v)| format!("{} {v:.1}", k.trim_start_matches("holder-")))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                }),
                "",
            );
            row(
                &mut o,
                "  server peak RSS, MB",
                cell(&|f| {
                    f.server_peak_rss_kb
                        .map_or("-".into(), |k| format!("{:.1}", k as f64 / 1024.0))
                }),
                "",
            );
            row(
                &mut o,
                "  bytes lost",
                cell(&|f| f.bytes_lost.map_or("n/a".into(), |b| b.to_string())),
                "0",
            );
            row(
                &mut o,
                "  resyncs (bytes)",
                cell(&|f| match (f.resyncs, f.resync_bytes) {
                    (Some(n), Some(b)) => format!("{n} ({b})"),
                    (Some(n), None) => n.to_string(),
                    _ => "-".into(),
                }),
                "",
            );
            row(
                &mut o,
                "  final screen = reference",
                cell(&|f| {
                    let s = if f.screen_matches { "yes" } else { "NO" };
                    if f.timed_out {
                        format!("{s} (t/o)")
                    } else {
                        s.into()
                    }
                }),
                "yes",
            );
        }
        if !self.echo.is_empty() {
            let raw = self.echo("raw");
            let _ = writeln!(o, "keystroke echo, ms");
            for (label, flood, p99) in [
                ("  p50 idle", false, false),
                ("  p99 idle", false, true),
                ("  p50 sibling flood", true, false),
                ("  p99 sibling flood", true, true),
            ] {
                let pick = |e: &Echo| -> Option<f64> {
                    let l = if flood {
                        e.sibling_flood.as_ref()
                    } else {
                        e.idle.as_ref()
                    }?;
                    Some(if p99 { l.p99_ms } else { l.p50_ms })
                };
                let cells = CONTENDERS
                    .iter()
                    .map(|c| match self.echo(c) {
                        Some(e) if e.error.is_some() && pick(e).is_none() => "error".into(),
                        Some(e) => pick(e).map_or("-".into(), |v| format!("{v:.3}")),
                        None => "-".into(),
                    })
                    .collect();
                let target = match (flood, p99) {
                    (_, false) => raw
                        .and_then(pick)
                        .map_or(String::new(), |r| format!("≤ 1.5× raw = {:.3}", r * 1.5)),
                    (true, true) => "≤ 1 ms (tmux 2.3–3.4)".into(),
                    _ => String::new(),
                };
                row(&mut o, label, cells, &target);
            }
            let ratios: Vec<String> = CONTENDERS
                .iter()
                .map(|c| {
                    match (
                        self.echo(c).and_then(|e| e.sibling_flood.as_ref()),
                        raw.and_then(|e| e.sibling_flood.as_ref()),
                    ) {
                        (Some(x), Some(r)) if r.p50_ms > 0.0 => {
                            format!("{:.2}", x.p50_ms / r.p50_ms)
                        }
                        _ => "-".into(),
                    }
                })
                .collect();
            row(&mut o, "  p50 flood / raw p50 flood", ratios, "≤ 1.5");
        }
        let a = &self.attach;
        if a.ccd_attach.is_some() || a.api_resync.is_some() || !a.errors.is_empty() {
            let _ = writeln!(o, "attach → first full frame, ms (p50 / p99)");
            let f = |l: &Option<Latency>| {
                l.as_ref().map_or("-".to_string(), |l| {
                    format!("{:.2} / {:.2}", l.p50_ms, l.p99_ms)
                })
            };
            let _ = writeln!(
                o,
                "  ccd attach (process start → screen) {:>16}   ≤ 5 ms",
                f(&a.ccd_attach)
            );
            let _ = writeln!(
                o,
                "  tmux attach (same)                  {:>16}",
                f(&a.tmux_attach)
            );
            let _ = writeln!(
                o,
                "  floor: cat of the frame (same)      {:>16}",
                f(&a.cat_frame)
            );
            let _ = writeln!(
                o,
                "  session.attach → reply              {:>16}",
                f(&a.api_reply)
            );
            let _ = writeln!(
                o,
                "  session.attach → first resync       {:>16}   (screen = reference: {})",
                f(&a.api_resync),
                if a.api_screen_matches { "yes" } else { "NO" }
            );
            for e in &a.errors {
                let _ = writeln!(o, "  error: {e}");
            }
        }
        if let Some(e) = &self.web_echo {
            let _ = writeln!(o, "screen update to a ccd web page, ms (p50 / p90 / p99)");
            let f = |l: &Latency| format!("{:.3} / {:.3} / {:.3}", l.p50_ms, l.p90_ms, l.p99_ms);
            let _ = writeln!(o, "  ccd attach: key -> echo         {:>28}", f(&e.attach));
            let _ = writeln!(o, "  ccd web: key -> WebSocket frame {:>28}", f(&e.web));
            if e.web.timeouts > 0 {
                let _ = writeln!(o, "  ccd web timeouts: {}", e.web.timeouts);
            }
        }
        if let Some(e) = &self.ssh_echo {
            let _ = writeln!(o, "keystroke echo over loopback ssh, ms (p50 / p90 / p99)");
            let f = |l: &Latency| format!("{:.3} / {:.3} / {:.3}", l.p50_ms, l.p90_ms, l.p99_ms);
            let _ = writeln!(o, "  ccd attach (local)              {:>28}", f(&e.local));
            let _ = writeln!(o, "  ccd --host ssh://… attach       {:>28}", f(&e.ssh));
            let _ = writeln!(
                o,
                "  added by ssh (p50 / p99)        {:>28}",
                format!(
                    "{:.3} / {:.3}",
                    e.ssh.p50_ms - e.local.p50_ms,
                    e.ssh.p99_ms - e.local.p99_ms
                )
            );
            let _ = writeln!(
                o,
                "  ({}; timeouts {} / {})",
                e.command, e.local.timeouts, e.ssh.timeouts
            );
        }
        if let Some(r) = &self.respond {
            let _ = writeln!(
                o,
                "ccd approve at a settled permission prompt (fake claude; ≤ 10× ccd screen, 1 holder connection)"
            );
            for w in &r.walkers {
                let _ = writeln!(
                    o,
                    "  walked by the {:<7} approve {:.1} ms p50 (max {:.1}, {} runs)   screen {:.1} ms p50   ×{:.1}   {} holder connection(s)",
                    w.walked_by,
                    w.approve_p50_ms,
                    w.approve_max_ms,
                    w.approves,
                    w.screen_p50_ms,
                    w.ratio,
                    w.connections
                );
                for e in &w.errors {
                    let _ = writeln!(o, "  error: {e}");
                }
            }
        }
        if let Some(c) = &self.cost {
            let _ = writeln!(
                o,
                "cost columns, {} live fake-claude sessions ({} runs each, interleaved)",
                c.sessions, c.runs
            );
            let _ = writeln!(
                o,
                "  ccd ls --json             {:.1} ms median, {:.1} ms p90",
                c.ls_with_cost_median_ms, c.ls_with_cost_p90_ms
            );
            let _ = writeln!(
                o,
                "  ccd ls --json --no-cost   {:.1} ms median, {:.1} ms p90   with/without {:.2}   ≤ 1.20",
                c.ls_no_cost_median_ms, c.ls_no_cost_p90_ms, c.ratio
            );
            let _ = writeln!(
                o,
                "  one sample of every session (the daemon's 5 s tick)  {:.2} ms median, {:.2} ms p90 ({} processes on the machine)",
                c.sample_median_ms, c.sample_p90_ms, c.machine_processes
            );
            if c.unrelated > 0 {
                let _ = writeln!(
                    o,
                    "  the same with {} unrelated processes  {:.2} ms median, {:.2} ms p90 ({} processes on the machine; the first sample after they started {:.2} ms)",
                    c.unrelated,
                    c.unrelated_sample_median_ms,
                    c.unrelated_sample_p90_ms,
                    c.unrelated_machine_processes,
                    c.unrelated_first_ms
                );
            }
            for e in &c.errors {
                let _ = writeln!(o, "  error: {e}");
            }
        }
        if let Some(m) = &self.memory {
            let mb = |kb: u64| kb as f64 / 1024.0;
            let _ = writeln!(
                o,
                "memory, {} idle fake-claude sessions (VmRSS)",
                m.sessions
            );
            let _ = writeln!(
                o,
                "  daemon                 {:.1} MB idle, {:.1} MB with the sessions",
                mb(m.daemon_rss_kb_idle),
                mb(m.daemon_rss_kb)
            );
            let _ = writeln!(
                o,
                "  holder                 {:.1} MB avg, {:.1} MB max ({:.1} MB anonymous avg)",
                mb(m.holder_rss_kb_avg),
                mb(m.holder_rss_kb_max),
                mb(m.holder_anon_kb_avg)
            );
            let _ = writeln!(
                o,
                "  holder PSS / private   {:.1} MB / {:.1} MB avg (shared executable pages counted once)",
                mb(m.holder_pss_kb_avg),
                mb(m.holder_private_kb_avg)
            );
            let _ = writeln!(
                o,
                "  per session beyond claude  {:.1} MB PSS, {:.1} MB RSS (holder + daemon growth / sessions)   ≤ 4 MB",
                mb(m.per_session_pss_kb),
                mb(m.per_session_kb)
            );
            let _ = writeln!(
                o,
                "  (the fake claude itself: {:.1} MB avg)",
                mb(m.claude_rss_kb_avg)
            );
        }
        if let Some(i) = &self.idle {
            i.write(&mut o);
        }
        let _ = writeln!(
            o,
            "ccd ls over 10,000 transcripts: see `ccd-bench ls` (target: flat as transcripts grow)"
        );
        for f in &self.floods {
            if let Some(e) = &f.error {
                let _ = writeln!(o, "error: {} {} flood: {e}", f.contender, f.kind.name());
            }
        }
        for e in &self.echo {
            if let Some(err) = &e.error {
                let _ = writeln!(o, "error: {} echo: {err}", e.contender);
            }
        }
        for n in &self.notes {
            let _ = writeln!(o, "note: {n}");
        }
        o
    }
}
