//! `ccd-bench restore` (issue 54): the time from a daemon start after a
//! simulated reboot to every one of N fake sessions back at its prompt
//! (`restore = "auto"`), for each `restore_at_once` bound given; and the
//! restore record's cost, in writes per session change (`/clear` and a pin
//! of each session: the daemon's debug log line "restore record written"
//! counted). The reboot is the one tests/restore.rs makes: every process
//! of this run (by its `CCD_SOCKET_DIR`) SIGKILLed by pid, the socket dir
//! removed, a new `CCD_TEST_BOOT_ID`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// The ccd binary (default: `ccd` beside this benchmark's executable).
    #[arg(long)]
    pub ccd: Option<PathBuf>,
    /// The fake claude (default: `fake-claude` beside it).
    #[arg(long)]
    pub fake_claude: Option<PathBuf>,
    /// How many sessions.
    #[arg(long, default_value_t = 50)]
    pub sessions: usize,
    /// The `restore_at_once` bounds to time, one reboot each.
    #[arg(long, value_delimiter = ',', default_value = "4,16")]
    pub at_once: Vec<usize>,
}

struct World {
    ccd: PathBuf,
    root: PathBuf,
    env: Vec<(String, String)>,
}

impl World {
    fn cmd(&self, args: &[&str]) -> Command {
        ccd_testkit::sandbox::command(&self.ccd, args, &self.env)
    }

    fn ok(&self, args: &[&str]) -> anyhow::Result<String> {
        let o = self.cmd(args).output()?;
        anyhow::ensure!(
            o.status.success(),
            "ccd {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
    }

    fn set(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.into(), value.into()));
    }

    fn sock(&self) -> PathBuf {
        self.root.join("sock")
    }

    fn client(&self) -> anyhow::Result<ccd_client::Client> {
        Ok(ccd_client::Client::connect(
            &ccd_client::SocketDir::new(self.sock()),
            "ccd-bench/restore",
        )?)
    }

    /// Held sessions at their prompt.
    fn at_prompt(&self) -> usize {
        let Ok(mut c) = self.client() else { return 0 };
        let Ok(v) = c.call_value(
            "sessions.list",
            serde_json::json!({"held_only": true, "no_cost": true}),
        ) else {
            return 0;
        };
        v["sessions"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|r| matches!(r["ccd"]["lifecycle"].as_str(), Some("idle" | "ready")))
                    .count()
            })
            .unwrap_or(0)
    }

    /// "restore record written" lines in the daemon's logs so far.
    fn record_writes(&self) -> usize {
        std::fs::read_dir(self.root.join("state"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("ccd."))
            .map(|e| {
                std::fs::read_to_string(e.path())
                    .unwrap_or_default()
                    .matches("restore record written")
                    .count()
            })
            .sum()
    }

    /// The simulated reboot, to boot id `boot`.
    fn reboot(&mut self, boot: &str) {
        let needle = format!("CCD_SOCKET_DIR={}", self.sock().display());
        let me = std::process::id();
        let pids: Vec<u32> = ccd_testkit::procs::pids()
            .into_iter()
            .filter(|&p| p != me && ccd_testkit::procs::has_env(p, &needle))
            .collect();
        for &p in &pids {
            if let Ok(p) = i32::try_from(p) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(p),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while !pids.iter().all(|&p| ccd_testkit::procs::gone(p)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = std::fs::remove_dir_all(self.sock());
        self.set("CCD_TEST_BOOT_ID", boot);
    }
}

fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while !f() {
        anyhow::ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let ccd = crate::beside_me(a.ccd.as_deref(), "ccd")?;
    let fake = crate::beside_me(a.fake_claude.as_deref(), "fake-claude")?;
    for b in [&ccd, &fake] {
        anyhow::ensure!(
            b.exists(),
            "{} not found: cargo build --release -p ccd -p ccd-fake-claude -p ccd-bench",
            b.display()
        );
    }
    let tmp = tempfile::Builder::new()
        .prefix("ccd-bench-restore")
        .tempdir()?;
    let root = std::fs::canonicalize(tmp.path())?;
    let path = |p: &Path| p.display().to_string();
    let home = root.join("home");
    let work = root.join("work");
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&work)?;
    let mut w = World {
        ccd,
        env: vec![
            ("HOME".into(), path(&home)),
            ("CLAUDE_CONFIG_DIR".into(), path(&home.join(".claude"))),
            ("CCD_SOCKET_DIR".into(), path(&root.join("sock"))),
            ("CCD_STATE_DIR".into(), path(&root.join("state"))),
            ("CCD_CLAUDE_BIN".into(), path(&fake)),
            ("CCD_CONFIG".into(), path(&root.join("ccd.toml"))),
            ("CCD_TRUST_STABLE_MS".into(), "300".into()),
            ("TMPDIR".into(), path(&root)),
            ("CCD_LOG".into(), "debug".into()),
            ("CCD_TEST_BOOT_ID".into(), "boot-0".into()),
        ],
        root: root.clone(),
    };
    let r = measure(&mut w, &work, a);
    let _ = w.cmd(&["daemon", "stop", "--kill-sessions"]).output();
    r
}

fn measure(w: &mut World, work: &Path, a: &Args) -> anyhow::Result<()> {
    let n = a.sessions;
    let mut ids = Vec::new();
    for i in 0..n {
        let dir = work.join(format!("p{i}"));
        std::fs::create_dir_all(&dir)?;
        let mode = ["default", "acceptEdits", "plan"][i % 3];
        let sid = w.ok(&[
            "new",
            "--detach",
            "--cwd",
            &path_str(&dir),
            "--",
            "--model",
            "claude-bench",
            "--permission-mode",
            mode,
        ])?;
        w.ok(&["send", &sid, "a turn for a transcript"])?;
        ids.push(sid);
    }
    wait_until("every first turn", Duration::from_secs(300), || {
        w.at_prompt() >= n
    })?;
    std::thread::sleep(Duration::from_secs(3));
    // The record's cost: a /clear and a pin of each session, 2n changes.
    let before = w.record_writes();
    for sid in &ids {
        w.ok(&["pin", sid])?;
    }
    for sid in &ids {
        w.ok(&["send", sid, "/clear"])?;
    }
    std::thread::sleep(Duration::from_secs(5));
    let writes = w.record_writes() - before;
    println!(
        "restore record: {writes} writes for {} session changes ({n} pins, {n} /clear): {:.2} writes per change",
        2 * n,
        writes as f64 / (2 * n) as f64
    );
    for (k, at_once) in a.at_once.iter().enumerate() {
        std::fs::write(
            w.root.join("ccd.toml"),
            format!("restore = \"auto\"\nrestore_at_once = {at_once}\n"),
        )?;
        // The record names the sessions held now (boot k).
        std::thread::sleep(Duration::from_secs(3));
        w.reboot(&format!("boot-{}", k + 1));
        let t0 = Instant::now();
        // A command that needs the daemon starts it.
        let _ = w.cmd(&["screen", "no-such-session"]).output();
        wait_until("every session back", Duration::from_secs(600), || {
            w.at_prompt() >= n
        })?;
        let took = t0.elapsed();
        println!(
            "restore of {n} sessions, restore_at_once = {at_once}: daemon start to all at their prompt {:.2} s ({:.0} ms a session)",
            took.as_secs_f64(),
            took.as_secs_f64() * 1000.0 / n as f64
        );
    }
    Ok(())
}

fn path_str(p: &Path) -> String {
    p.display().to_string()
}
