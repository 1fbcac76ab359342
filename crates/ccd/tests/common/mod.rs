//! A sandbox per test: temp HOME, Claude config dir, socket dir, state dir
//! and TMPDIR, the fake claude as the claude binary, and a daemon that is
//! stopped (with its sessions) when the sandbox drops. Never the machine's
//! own ~/.claude.

#![allow(dead_code)]

pub mod desk;
pub mod external;
pub mod nvim;
pub mod pty;
pub mod real;
pub mod sshd;
pub mod tmux;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub fn ccd_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ccd"))
}

#[allow(unused_imports)]
pub use ccd_testkit::bins::fake_claude;
// Not every test file that includes this module waits.
#[allow(unused_imports)]
pub use ccd_testkit::wait::wait_for;

pub struct Sandbox {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub config: PathBuf,
    pub sock: PathBuf,
    pub state: PathBuf,
    pub work: PathBuf,
    pub env: Vec<(String, String)>,
}

impl Sandbox {
    pub fn new() -> Self {
        Self::with_env(&[])
    }

    /// `extra` is set for the daemon (and so for every session it starts).
    pub fn with_env(extra: &[(&str, &str)]) -> Self {
        let dirs = ccd_testkit::sandbox::Dirs::new("ccd-t");
        let mut env = dirs.env();
        let ccd_testkit::sandbox::Dirs {
            tmp,
            root: _,
            home,
            config,
            sock,
            state,
            work,
        } = dirs;
        for (k, v) in extra {
            env.push((k.to_string(), v.to_string()));
        }
        Self {
            tmp,
            home,
            config,
            sock,
            state,
            work,
            env,
        }
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        ccd_testkit::sandbox::command(&ccd_bin(), args, &self.env)
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// Runs and requires success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.ok_output(args);
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Runs and requires success; returns stderr (what commands that
    /// report to a person print).
    pub fn ok_stderr(&self, args: &[&str]) -> String {
        let o = self.ok_output(args);
        String::from_utf8_lossy(&o.stderr).into_owned()
    }

    fn ok_output(&self, args: &[&str]) -> Output {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "ccd {args:?} failed: {}\nstdout: {}\nlogs:\n{}",
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&o.stdout),
            self.logs()
        );
        o
    }

    /// A fresh project folder (untrusted).
    pub fn project(&self, name: &str) -> PathBuf {
        let p = self.work.join(name);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    /// `ccd new --detach` in a new folder; returns the session id.
    pub fn new_session(&self, name: &str) -> String {
        let p = self.project(name);
        self.ok(&["new", "--detach", "--cwd", p.to_str().unwrap()])
            .trim()
            .to_string()
    }

    /// A new session in a fresh folder with one turn done (so it has a
    /// transcript), back at rest; its id.
    pub fn new_session_with_a_turn(&self, name: &str) -> String {
        let sid = self.new_session(name);
        self.ok(&["send", &sid, "make a transcript"]);
        wait_for(Duration::from_secs(30), "the turn", || {
            let r = row(self, &sid);
            (r["status"] == "idle" && !r["transcript"].is_null()).then_some(())
        });
        sid
    }

    /// Starts the daemon if needed (through a harmless command).
    pub fn client_or_start(&self) -> ccd_client::Client {
        let _ = self.run(&["screen", "no-such-session"]);
        self.client()
    }

    pub fn client(&self) -> ccd_client::Client {
        ccd_client::Client::connect(&ccd_client::SocketDir::new(&self.sock), "test/0").unwrap()
    }

    pub fn daemon_pid(&self) -> Option<u32> {
        let s = std::fs::read_to_string(self.sock.join("daemon.lock")).ok()?;
        let pid: u32 = s.trim().parse().ok()?;
        // Signal 0 finds it (a zombie too), on every system.
        let alive = !matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(pid).ok()?), None),
            Err(nix::errno::Errno::ESRCH)
        );
        (pid > 0 && alive).then_some(pid)
    }

    pub fn logs(&self) -> String {
        let mut out = String::new();
        if let Ok(rd) = std::fs::read_dir(&self.state) {
            for e in rd.flatten() {
                out.push_str(&format!("== {}\n", e.path().display()));
                out.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
            }
        }
        out
    }

    /// The daemon's logs once they hold every one of `lines` (or after
    /// 10 s, as they are then). The daemon writes its log through a
    /// background worker, so a line lands a moment after the action that
    /// logged it: a test reading at once can miss it.
    pub fn logs_with(&self, lines: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let logs = self.logs();
            if lines.iter().all(|l| logs.contains(l)) || Instant::now() > deadline {
                return logs;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The socket of the holder running `sid` (asked of the daemon).
    pub fn holder_socket(&self, sid: &str) -> PathBuf {
        let v = self
            .client()
            .call_value("sessions.get", serde_json::json!({"session": sid}))
            .unwrap();
        let holder = v["ccd"]["holder"].as_str().expect("a session ccd holds");
        self.sock.join("holders").join(format!("{holder}.sock"))
    }

    /// The session's screen as the holder's model has it, a line per row
    /// (trailing blanks trimmed).
    pub fn model_rows(&self, sid: &str) -> Vec<String> {
        let v = self
            .client()
            .call_value(
                "session.screen",
                serde_json::json!({"session": sid, "format": "text"}),
            )
            .unwrap();
        v["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().trim_end().to_string())
            .collect()
    }

    /// Waits (20 s at most) for a row of the model's screen that contains
    /// `needle`.
    pub fn wait_for_row(&self, sid: &str, needle: &str) {
        wait_for(Duration::from_secs(20), needle, || {
            self.model_rows(sid)
                .iter()
                .any(|r| r.contains(needle))
                .then_some(())
        });
    }

    /// Types `keys` into `sid` through the API (`session.input`), as an
    /// editor or `ccd attach` types.
    pub fn type_keys(&self, sid: &str, keys: &[u8]) {
        let data = ccd_protocol::b64::encode(keys);
        self.client()
            .call_value(
                "session.input",
                serde_json::json!({"session": sid, "data": data}),
            )
            .expect("session.input");
    }

    /// Types `flood <bytes>` at the fake claude's prompt: it writes that
    /// many bytes of output, then its prompt (`echo: flood …`).
    pub fn type_flood(&self, sid: &str, bytes: u64) {
        self.type_keys(sid, format!("flood {bytes}\r").as_bytes());
    }

    /// Sets (or replaces) an environment variable of every later `ccd`
    /// this sandbox runs.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.into(), value.into()));
    }

    /// Every process of this sandbox: the daemon and the holders (by
    /// their environment, which names the sandbox's socket dir) and each
    /// of `roots` (a `claude` outside that environment: the real CLI)
    /// with everything that runs under it. Never this test's own process.
    pub fn processes(&self, roots: &[u32]) -> Vec<u32> {
        let needle = format!("CCD_SOCKET_DIR={}", self.sock.display());
        let me = std::process::id();
        let mut pids: Vec<u32> = ccd_testkit::procs::pids()
            .into_iter()
            .filter(|&p| p != me && ccd_testkit::procs::has_env(p, &needle))
            .collect();
        let mut todo = roots.to_vec();
        while let Some(p) = todo.pop() {
            if !pids.contains(&p) {
                pids.push(p);
            }
            todo.extend(ccd_testkit::procs::children(p).into_iter().map(|(c, _)| c));
        }
        pids
    }

    /// The simulated reboot (issue 54): every process of the sandbox
    /// ([`Sandbox::processes`] with `roots`) SIGKILLed by pid, the socket
    /// and runtime dir removed, and a new boot id (`CCD_TEST_BOOT_ID`);
    /// Claude Code's config dir (transcripts, registry entries naming dead
    /// pids now, as after a real reboot) and ccd's state dir stay, as on
    /// a disk.
    pub fn simulate_reboot(&mut self, roots: &[u32], boot: &str) {
        let pids = self.processes(roots);
        assert!(
            roots.iter().all(|c| pids.contains(c)) && pids.len() > roots.len(),
            "the daemon, the holders and the claudes: {pids:?}"
        );
        for &p in &pids {
            kill_hard(p);
        }
        wait_for(Duration::from_secs(10), "every process gone", || {
            pids.iter()
                .all(|&p| ccd_testkit::procs::gone(p))
                .then_some(())
        });
        let _ = std::fs::remove_dir_all(&self.sock);
        self.set_env("CCD_TEST_BOOT_ID", boot);
    }

    /// A stand-in for ssh (whatever its options and host), written in this
    /// sandbox, that runs `far`'s `ccd dial-stdio` in `far`'s environment:
    /// `far` as another machine, for `--host` tests.
    pub fn stand_in_ssh_to(&self, far: &Sandbox) -> PathBuf {
        let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
        let path = self.tmp.path().join("fake-ssh");
        let mut script = "#!/bin/sh\nexec env -u XDG_RUNTIME_DIR".to_string();
        for (k, v) in &far.env {
            script.push_str(&format!(" {k}={}", quote(v)));
        }
        script.push_str(&format!(
            " {} dial-stdio\n",
            quote(ccd_bin().to_str().unwrap())
        ));
        std::fs::write(&path, script).unwrap();
        let mut perm = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(&path, perm).unwrap();
        path
    }

    /// The holder processes' pids (from their sockets' peers is not
    /// available; read from the daemon's view).
    pub fn holder_pids(&self) -> Vec<u32> {
        let mut c = self.client();
        let v = c
            .call_value("sessions.list", serde_json::json!({"held_only": true}))
            .unwrap();
        let mut pids = Vec::new();
        for s in v["sessions"].as_array().cloned().unwrap_or_default() {
            let holder = s["ccd"]["holder"].as_str().unwrap_or("").to_string();
            let sock = self.sock.join("holders").join(format!("{holder}.sock"));
            if let Ok(mut h) = ccd_holder::HolderClient::connect(&sock) {
                if let Ok(i) = h.info() {
                    pids.push(i.holder_pid);
                }
            }
        }
        pids
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // End every session and the daemon this sandbox started. A test may
        // have killed the daemon: start one (it adopts the holders) first.
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&self.sock, std::fs::Permissions::from_mode(0o700));
        let _ = std::fs::set_permissions(
            self.sock.join("ccd.sock"),
            std::fs::Permissions::from_mode(0o600),
        );
        if self.daemon_pid().is_none() {
            let _ = self.run(&["screen", "no-such-session"]);
        }
        let _ = self.run(&["daemon", "stop", "--kill-sessions"]);
        // Last resort: any process still carrying this sandbox's socket dir
        // (a holder nobody could reach) is ended by pid.
        for pid in self.processes(&[]) {
            kill_hard(pid);
        }
    }
}

/// SIGKILL to `pid` (one this test started).
fn kill_hard(pid: u32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
}

/// What a holder may hold in a flood with one stuck client, from its
/// stated bounds: a full parse backlog, the stuck client's queue (a reading
/// client's shares the backlog's chunks), and 12 MiB of its own (the
/// screen model, read slabs, stacks and the allocator's slack). Measured
/// as private memory ([`private_kb`]: anonymous pages), not RSS: the
/// holder runs as the debug `ccd` binary, whose shared file pages (about
/// 20 MiB idle) grow with every feature and are no cost of a flood.
pub const HOLDER_FLOOD_PRIVATE_BOUND_KB: u64 =
    ((ccd_holder::session::BACKLOG_CAP + ccd_holder::config::CLIENT_QUEUE + (12 << 20)) / 1024)
        as u64;

/// The info of the holder listening on `sock`, asked of it directly.
pub fn holder_info(sock: &Path) -> ccd_holder::InfoResult {
    ccd_holder::HolderClient::connect(sock)
        .unwrap()
        .info()
        .unwrap()
}

/// VmRSS of a process in kB (0 once it is gone; `ccd_testkit::procs`).
#[allow(unused_imports)] // not every test binary measures memory
pub use ccd_testkit::procs::{private_kb, rss_kb};

/// Whether `python3` runs here (a fake remote is a Python script); without
/// it a test is skipped, saying so, except under CI, where it must be there.
pub fn python3_or_skip() -> bool {
    let ok = std::process::Command::new("python3")
        .arg("-c")
        .arg("pass")
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(std::env::var_os("CI").is_none(), "CI needs python3");
        eprintln!("SKIPPED: no python3");
    }
    ok
}

/// The next `event` notification's params on a subscribed client, waiting
/// at most `wait` (other notifications are skipped).
pub fn next_event(c: &mut ccd_client::Client, wait: Duration) -> Option<serde_json::Value> {
    let n = c.next_notification(Some(wait)).unwrap()?;
    (n.method == "event").then(|| n.params.unwrap_or(serde_json::Value::Null))
}

pub fn ls_json(sb: &Sandbox) -> Vec<serde_json::Value> {
    let out = sb.ok(&["ls", "--json"]);
    serde_json::from_str::<serde_json::Value>(&out)
        .unwrap()
        .as_array()
        .cloned()
        .unwrap()
}

/// The `ccd ls --json` row of `sid` (null when not listed).
pub fn row(sb: &Sandbox, sid: &str) -> serde_json::Value {
    ls_json(sb)
        .into_iter()
        .find(|r| r["session_id"] == sid)
        .unwrap_or(serde_json::Value::Null)
}
