//! `ccd ui`'s first frame over a generated config dir: process start to
//! the first frame that shows the list, as `ccd ui` itself measures it
//! (`CCD_UI_EXIT_AFTER_FIRST_FRAME=1`: it draws, leaves, prints the figure
//! and exits), under a PTY of 120x40, with a daemon running on a private
//! socket dir (started by the first run, stopped at the end). The wall
//! time from spawn to exit is printed beside it.

use crate::gen_config;
use portable_pty::{native_pty_system, CommandBuilder, PtySize};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// The ccd binary (default: `ccd` beside this benchmark's executable).
    #[arg(long)]
    pub ccd: Option<PathBuf>,
    /// Where generated config dirs are kept between runs.
    #[arg(long, default_value = "target/bench-data")]
    pub work: PathBuf,
    #[arg(long, default_value_t = 10_000)]
    pub transcripts: u64,
    #[arg(long, default_value_t = 15)]
    pub runs: usize,
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let ccd = crate::beside_me(a.ccd.as_deref(), "ccd")?;
    anyhow::ensure!(
        ccd.exists(),
        "{} not found: cargo build --release -p ccd",
        ccd.display()
    );
    let dir = config_dir(&a.work, a.transcripts)?;
    let tmp = tempfile::Builder::new().prefix("ccd-bench-ui").tempdir()?;
    let home = tmp.path().to_path_buf();
    let env = Env {
        home: home.clone(),
        state: home.join("state"),
        sock: home.join("sock"),
        config: std::fs::canonicalize(&dir)?,
    };
    // The first run starts the daemon and fills the summary cache.
    let (_, _, n) = once(&ccd, &env)?;
    let mut first = Vec::new();
    let mut wall = Vec::new();
    for _ in 0..a.runs {
        let (f, w, _) = once(&ccd, &env)?;
        first.push(f);
        wall.push(w);
    }
    let _ = std::process::Command::new(&ccd)
        .args(["daemon", "stop"])
        .env("HOME", &env.home)
        .env("CCD_SOCKET_DIR", &env.sock)
        .output();
    for (what, v) in [
        ("first frame (ccd's own figure)", &mut first),
        ("spawn to exit (wall)", &mut wall),
    ] {
        v.sort_by(f64::total_cmp);
        println!(
            "ccd ui, {n} sessions, {what}: min {:.1} ms, median {:.1} ms, p90 {:.1} ms ({} runs)",
            v[0],
            crate::stats::nearest_rank(v, 0.5),
            crate::stats::nearest_rank(v, 0.9),
            a.runs
        );
    }
    Ok(())
}

/// The generated config dir the dashboard benchmarks list (`transcripts`
/// in 250 folders, none large; kept under `work` between runs).
pub(crate) fn config_dir(work: &Path, transcripts: u64) -> anyhow::Result<PathBuf> {
    gen_config::kept(&gen_config::Args {
        dir: work.join(format!("ls-{transcripts}-0")),
        transcripts,
        big: 0,
        big_mb: 100,
        entries: 50,
        projects: 250,
    })
}

struct Env {
    home: PathBuf,
    state: PathBuf,
    sock: PathBuf,
    config: PathBuf,
}

/// One `ccd ui` run: (first frame ms as ccd says, wall ms, sessions).
fn once(ccd: &Path, env: &Env) -> anyhow::Result<(f64, f64, u64)> {
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(|e| anyhow::anyhow!("openpty: {e}"))?;
    let mut cmd = CommandBuilder::new(ccd);
    cmd.args(["ui", "--claude-config-dir"]);
    cmd.arg(&env.config);
    cmd.env("HOME", &env.home);
    cmd.env("CCD_STATE_DIR", &env.state);
    cmd.env("CCD_SOCKET_DIR", &env.sock);
    cmd.env("CCD_UI_EXIT_AFTER_FIRST_FRAME", "1");
    cmd.env_remove("CLAUDE_CONFIG_DIR");
    cmd.env_remove("XDG_RUNTIME_DIR");
    let t0 = Instant::now();
    let mut child = pty
        .slave
        .spawn_command(cmd)
        .map_err(|e| anyhow::anyhow!("spawn: {e}"))?;
    drop(pty.slave);
    let mut reader = pty
        .master
        .try_clone_reader()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let out = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut b = [0u8; 65536];
        while let Ok(n) = reader.read(&mut b) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&b[..n]);
        }
        all
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        anyhow::ensure!(Instant::now() < deadline, "ccd ui did not exit in 60 s");
        std::thread::sleep(Duration::from_millis(1));
    };
    let wall = t0.elapsed().as_secs_f64() * 1e3;
    drop(pty.master);
    let text = String::from_utf8_lossy(&out.join().unwrap_or_default()).into_owned();
    anyhow::ensure!(status.success(), "ccd ui failed: {text}");
    // "ccd ui: first frame with N sessions drawn X ms after process start"
    let line = text
        .lines()
        .find(|l| l.contains("first frame with"))
        .ok_or_else(|| anyhow::anyhow!("no timing line in: {text}"))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let n = words
        .iter()
        .position(|w| *w == "with")
        .and_then(|i| words.get(i + 1))
        .and_then(|w| w.parse().ok())
        .unwrap_or(0);
    let ms = words
        .iter()
        .position(|w| *w == "drawn")
        .and_then(|i| words.get(i + 1))
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("unreadable timing line: {line}"))?;
    Ok((ms, wall, n))
}
