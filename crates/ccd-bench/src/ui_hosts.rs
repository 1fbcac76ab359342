//! `ccd ui --host local --host ssh://far`: how fast a key is answered
//! (key written to the PTY → the first redraw bytes back) while the other
//! machine's link is healthy, then while it is stalled. The other machine
//! is a second daemon on private directories behind an ssh stand-in (a
//! script running its `ccd dial-stdio`); the stall is that stand-in
//! stopped with SIGSTOP (it reads and writes nothing, as a dead network),
//! so the dashboard's call to it runs into its deadline, the machine is
//! said unreachable and the link reconnects, all while keys are pressed.
//! This machine lists generated transcripts (the rows `j`/`k` move over).

use crate::gen_config;
use portable_pty::{native_pty_system, CommandBuilder, PtySize};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// The ccd binary (default: `ccd` beside this benchmark's executable).
    #[arg(long)]
    pub ccd: Option<PathBuf>,
    /// Where generated config dirs are kept between runs.
    #[arg(long, default_value = "target/bench-data")]
    pub work: PathBuf,
    /// Transcripts on this machine.
    #[arg(long, default_value_t = 1_000)]
    pub transcripts: u64,
    /// Keys pressed in each phase (one every `gap_ms`).
    #[arg(long, default_value_t = 300)]
    pub keys: usize,
    #[arg(long, default_value_t = 50)]
    pub gap_ms: u64,
}

fn quote(s: &Path) -> String {
    format!("'{}'", s.display().to_string().replace('\'', "'\\''"))
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let ccd = crate::beside_me(a.ccd.as_deref(), "ccd")?;
    anyhow::ensure!(
        ccd.exists(),
        "{} not found: cargo build --release -p ccd",
        ccd.display()
    );
    // The same config dir as `ccd-bench ui`'s (kept between runs).
    let near_cfg = crate::ui::config_dir(&a.work, a.transcripts)?;
    let near_cfg = std::fs::canonicalize(&near_cfg)?;
    let tmp = tempfile::Builder::new()
        .prefix("ccd-bench-hosts")
        .tempdir()?;
    let root = std::fs::canonicalize(tmp.path())?;
    let far = root.join("far");
    // The socket directories are made by ccd (private).
    for d in ["home", "state"] {
        std::fs::create_dir_all(far.join(d))?;
        std::fs::create_dir_all(root.join(d))?;
    }
    // The other machine: 20 transcripts of its own.
    gen_config::run(&gen_config::Args {
        dir: far.join("claude"),
        transcripts: 20,
        big: 0,
        big_mb: 1,
        entries: 10,
        projects: 4,
    })?;
    let ssh = root.join("fake-ssh");
    std::fs::write(
        &ssh,
        format!(
            "#!/bin/sh\nexec env -u XDG_RUNTIME_DIR HOME={} CCD_SOCKET_DIR={} CCD_STATE_DIR={} CLAUDE_CONFIG_DIR={} {} dial-stdio\n",
            quote(&far.join("home")),
            quote(&far.join("sock")),
            quote(&far.join("state")),
            quote(&far.join("claude")),
            quote(&ccd)
        ),
    )?;
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755))?;

    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(|e| anyhow::anyhow!("openpty: {e}"))?;
    let mut cmd = CommandBuilder::new(&ccd);
    cmd.args(["ui", "--host", "local", "--host", "ssh://far"]);
    cmd.arg("--claude-config-dir");
    cmd.arg(&near_cfg);
    cmd.env("HOME", root.join("home"));
    cmd.env("CCD_STATE_DIR", root.join("state"));
    cmd.env("CCD_SOCKET_DIR", root.join("sock"));
    cmd.env("CCD_SSH_COMMAND", &ssh);
    cmd.cwd(&root);
    cmd.env_remove("CLAUDE_CONFIG_DIR");
    cmd.env_remove("XDG_RUNTIME_DIR");
    let mut child = pty
        .slave
        .spawn_command(cmd)
        .map_err(|e| anyhow::anyhow!("spawn: {e}"))?;
    drop(pty.slave);
    let ui = child
        .process_id()
        .ok_or_else(|| anyhow::anyhow!("no pid"))?;
    let mut reader = pty
        .master
        .try_clone_reader()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut keys = pty
        .master
        .take_writer()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    // Every chunk of output: when it came, and its text.
    let (tx, rx) = mpsc::channel::<(Instant, String)>();
    std::thread::spawn(move || {
        let mut b = [0u8; 65536];
        while let Ok(n) = reader.read(&mut b) {
            if n == 0
                || tx
                    .send((
                        Instant::now(),
                        String::from_utf8_lossy(&b[..n]).into_owned(),
                    ))
                    .is_err()
            {
                break;
            }
        }
    });
    // Both machines shown: the other machine's link is up once its
    // dial-stdio runs and the screen has settled.
    let until = Instant::now() + Duration::from_secs(60);
    let mut screen = String::new();
    let link = loop {
        while let Ok((_, t)) = rx.try_recv() {
            screen.push_str(&t);
        }
        anyhow::ensure!(
            Instant::now() < until,
            "the other machine's link never came up; the screen:\n{screen}"
        );
        if let Some(p) = dial_child(ui) {
            break p;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_secs(3));
    while rx.try_recv().is_ok() {}

    let healthy = press(&mut keys, &rx, a.keys, a.gap_ms)?;
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(link)?),
        nix::sys::signal::Signal::SIGSTOP,
    );
    let stalled_at = Instant::now();
    let mut said = None;
    let stalled = press_watching(&mut keys, &rx, a.keys, a.gap_ms, &mut |text| {
        if said.is_none() && text.contains("UNREACHABLE") {
            said = Some(stalled_at.elapsed());
        }
    })?;
    keys.write_all(b"q")?;
    let until = Instant::now() + Duration::from_secs(20);
    while child.try_wait()?.is_none() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    for (sock, home) in [
        (root.join("sock"), root.join("home")),
        (far.join("sock"), far.join("home")),
    ] {
        let _ = std::process::Command::new(&ccd)
            .args(["daemon", "stop"])
            .env("HOME", home)
            .env("CCD_SOCKET_DIR", sock)
            .output();
    }
    for (what, mut v) in [
        ("the other machine's link healthy", healthy),
        ("its link stalled (ssh stopped)", stalled),
    ] {
        v.sort_by(f64::total_cmp);
        println!(
            "ccd ui over 2 machines, a key to its redraw, {what}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} keys)",
            crate::stats::nearest_rank(&v, 0.5),
            crate::stats::nearest_rank(&v, 0.99),
            v.last().copied().unwrap_or(0.0),
            v.len()
        );
    }
    match said {
        Some(d) => println!(
            "the stall was shown (far UNREACHABLE) {:.1} s after the stop",
            d.as_secs_f64()
        ),
        None => println!("the stall was not shown while the keys were pressed"),
    }
    Ok(())
}

/// The `dial-stdio` child of `pid` (the link's ssh stand-in).
fn dial_child(pid: u32) -> Option<u32> {
    ccd_testkit::procs::children(pid)
        .into_iter()
        .map(|(p, _)| p)
        .find(|&p| String::from_utf8_lossy(&ccd_testkit::procs::cmdline(p)).contains("dial-stdio"))
}

fn press(
    keys: &mut Box<dyn Write + Send>,
    rx: &mpsc::Receiver<(Instant, String)>,
    n: usize,
    gap_ms: u64,
) -> anyhow::Result<Vec<f64>> {
    press_watching(keys, rx, n, gap_ms, &mut |_| {})
}

/// Presses `j` and `k` in turn `n` times; each key's time to the first
/// output after it (ms).
fn press_watching(
    keys: &mut Box<dyn Write + Send>,
    rx: &mpsc::Receiver<(Instant, String)>,
    n: usize,
    gap_ms: u64,
    seen: &mut dyn FnMut(&str),
) -> anyhow::Result<Vec<f64>> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        while let Ok((_, text)) = rx.try_recv() {
            seen(&text);
        }
        let key: &[u8] = if i % 2 == 0 { b"j" } else { b"k" };
        let t0 = Instant::now();
        keys.write_all(key)?;
        keys.flush()?;
        let (at, text) = rx
            .recv_timeout(Duration::from_secs(5))
            .map_err(|_| anyhow::anyhow!("no redraw within 5 s of a key"))?;
        seen(&text);
        out.push(at.saturating_duration_since(t0).as_secs_f64() * 1e3);
        std::thread::sleep(Duration::from_millis(gap_ms));
    }
    Ok(out)
}
