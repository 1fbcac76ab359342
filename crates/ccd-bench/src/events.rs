//! Registry change → event latency: how long after an external session's
//! registry entry changes does a subscriber hear of it?
//!
//! Starts a daemon (the `ccd` beside this executable) on a temp socket dir
//! and config dir, subscribes, then rewrites the registry entry of a live
//! process (a `sleep` child standing in for an external claude) `--runs`
//! times, alternating `idle` and `busy` the way Claude Code does (write a
//! temp file, rename it over), and times each `session.status` event.

use anyhow::Context;
use ccd_client::{Client, SocketDir};
use serde_json::json;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// The ccd binary (default: `ccd` beside this benchmark's executable).
    #[arg(long)]
    pub ccd: Option<PathBuf>,
    #[arg(long, default_value_t = 200)]
    pub runs: usize,
    /// Pause between changes (the watcher must see each one separately).
    #[arg(long, default_value_t = 50)]
    pub gap_ms: u64,
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let ccd = crate::beside_me(a.ccd.as_deref(), "ccd")?;
    let tmp = tempfile::tempdir()?;
    let root = tmp.path();
    let config = root.join("claude");
    let sessions = config.join("sessions");
    std::fs::create_dir_all(&sessions)?;
    let sock = SocketDir::new(root.join("sock"));
    let mut daemon = Command::new(&ccd)
        .args(["daemon", "--socket-dir"])
        .arg(sock.path())
        .args(["--claude-config-dir"])
        .arg(&config)
        .env("HOME", root)
        .env("CCD_STATE_DIR", root.join("state"))
        .env("CCD_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let result = measure(&sock, &sessions, a);
    let _ = daemon.kill();
    let _ = daemon.wait();
    result
}

fn measure(sock: &SocketDir, sessions: &std::path::Path, a: &Args) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut c = loop {
        match Client::connect(sock, "ccd-bench/events") {
            Ok(c) => break c,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.into()),
        }
    };
    c.call_value(
        "events.subscribe",
        json!({"types": ["session.appeared", "session.status"]}),
    )?;
    let mut sleeper = Command::new("sleep").arg("600").spawn()?;
    let pid = sleeper.id();
    #[cfg(target_os = "linux")]
    let start = {
        let start = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        start
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().nth(19))
            .context("parsing /proc/<pid>/stat")?
            .to_string()
    };
    // Elsewhere the platform's `procStart` form (macOS: `ps -o lstart=`).
    #[cfg(not(target_os = "linux"))]
    let start = ccd_claude::liveness::current_proc_start(pid)
        .context("reading the sleeper's start time")?;
    let write = |status: &str| -> anyhow::Result<()> {
        let entry = json!({"pid": pid, "sessionId": "bench-session", "cwd": "/tmp", "procStart": start,
            "startedAt": 1, "kind": "interactive", "status": status, "updatedAt": 2});
        let tmp = sessions.join(format!(".{pid}.json.tmp"));
        std::fs::write(&tmp, serde_json::to_vec(&entry)?)?;
        std::fs::rename(&tmp, sessions.join(format!("{pid}.json")))?;
        Ok(())
    };
    write("idle")?;
    wait_event(&mut c, "session.appeared", None)?;
    let mut lat = Vec::with_capacity(a.runs);
    for i in 0..a.runs {
        let status = if i % 2 == 0 { "busy" } else { "idle" };
        std::thread::sleep(Duration::from_millis(a.gap_ms));
        let t0 = Instant::now();
        write(status)?;
        wait_event(&mut c, "session.status", Some(status))?;
        lat.push(t0.elapsed());
    }
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    lat.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let pick = |q: f64| ms(crate::stats::nearest_rank(&lat, q));
    println!(
        "registry change -> event ({} changes): p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target: within 300 ms)",
        lat.len(),
        pick(0.5),
        pick(0.9),
        pick(0.99),
        ms(lat[lat.len() - 1])
    );
    Ok(())
}

fn wait_event(c: &mut Client, kind: &str, status: Option<&str>) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        anyhow::ensure!(Instant::now() < deadline, "no {kind} event within 10 s");
        let Some(n) = c.next_notification(Some(Duration::from_secs(1)))? else {
            continue;
        };
        let Some(p) = n.params else { continue };
        if p["type"] == kind && status.is_none_or(|s| p["status"] == s) {
            return Ok(());
        }
    }
}
