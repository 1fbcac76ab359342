//! ccd as a contender: a daemon on a temp socket dir whose `claude` is a
//! wrapper script. `session.new` runs `<claude-bin> --session-id <uuid>
//! <args>`; the wrapper drops the first two arguments and execs
//! `ccd-bench __emit …` / `ccd-bench __echo …` when the args ask for them,
//! else the fake claude with every argument (the memory test). Such a
//! session never becomes `ready` (no registry entry), so sessions are
//! started with `wait: false` and attached to at once.

use super::api::{Api, Note};
use super::term::{Env, PtyProc, COLS, ROWS};
use anyhow::Context;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Ccd {
    pub ccd: PathBuf,
    pub sock: PathBuf,
    pub work: PathBuf,
    pub env: Env,
    daemon: Child,
    /// (pid, start time) of every session and holder we saw: killed at the
    /// end if still there.
    pids: Vec<(u32, String)>,
    /// Session id → holder id.
    holders: Vec<(String, String)>,
}

/// The start time of `pid`, to recognize it later: field 22 of
/// /proc/<pid>/stat on Linux, the platform's `procStart` form elsewhere.
#[cfg(not(target_os = "linux"))]
pub fn start_time(pid: u32) -> Option<String> {
    ccd_claude::liveness::current_proc_start(pid)
}

/// The parent of `pid` (field 4 of /proc/<pid>/stat on Linux).
#[cfg(not(target_os = "linux"))]
pub fn ppid(pid: u32) -> Option<u32> {
    ccd_claude::liveness::parent_pid(pid)
}

/// Field 22 of /proc/<pid>/stat (start time), to recognize a pid later.
#[cfg(target_os = "linux")]
pub fn start_time(pid: u32) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit_once(')')
        .and_then(|(_, r)| r.split_whitespace().nth(19))
        .map(String::from)
}

#[cfg(target_os = "linux")]
pub fn ppid(pid: u32) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit_once(')')
        .and_then(|(_, r)| r.split_whitespace().nth(1))
        .and_then(|p| p.parse().ok())
}

impl Ccd {
    pub fn start(
        ccd: &Path,
        bench: &Path,
        fake: &Path,
        root: &Path,
        trusted: bool,
    ) -> anyhow::Result<Self> {
        Self::start_with(ccd, bench, fake, root, trusted, &[])
    }

    /// [`Self::start`] with `extra` in the environment of the daemon (and
    /// so of its holders) and of every command run.
    pub fn start_with(
        ccd: &Path,
        bench: &Path,
        fake: &Path,
        root: &Path,
        trusted: bool,
        extra: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let home = root.join("home");
        let config = home.join(".claude");
        let work = root.join("work");
        let sock = root.join("sock");
        for d in [&home, &config, &work, &root.join("tmp")] {
            std::fs::create_dir_all(d)?;
        }
        let wrapper = root.join("claude-wrapper");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\ncase \"$3\" in __emit|__echo) shift 2; exec '{}' \"$@\";; esac\nexec '{}' \"$@\"\n",
                bench.display(),
                fake.display()
            ),
        )?;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))?;
        if trusted {
            let v =
                json!({"projects": {work.display().to_string(): {"hasTrustDialogAccepted": true}}});
            std::fs::write(config.join(".claude.json"), serde_json::to_vec(&v)?)?;
        }
        let env: Env = [
            ("HOME".into(), home.display().to_string()),
            ("CLAUDE_CONFIG_DIR".into(), config.display().to_string()),
            ("TMPDIR".into(), root.join("tmp").display().to_string()),
            ("CCD_SOCKET_DIR".into(), sock.display().to_string()),
            (
                "CCD_STATE_DIR".into(),
                root.join("state").display().to_string(),
            ),
            (
                "CCD_CONFIG".into(),
                root.join("ccd.toml").display().to_string(),
            ),
            ("CCD_CLAUDE_BIN".into(), wrapper.display().to_string()),
            ("CCD_LOG".into(), "warn".into()),
            ("LANG".into(), "C.UTF-8".into()),
        ]
        .into_iter()
        .chain(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
        let mut cmd = Command::new(ccd);
        cmd.args(["daemon", "--socket-dir"])
            .arg(&sock)
            .arg("--claude-config-dir")
            .arg(&config)
            .arg("--claude-bin")
            .arg(&wrapper)
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("CLAUDE_CONFIG_DIR")
            .current_dir(&work)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (k, v) in &env {
            cmd.env(k, v);
        }
        let daemon = cmd.spawn().context("starting the ccd daemon")?;
        let c = Self {
            ccd: ccd.to_path_buf(),
            sock: sock.join("ccd.sock"),
            work,
            env,
            daemon,
            pids: Vec::new(),
            holders: Vec::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if c.sock.exists() && Api::connect(&c.sock).is_ok() {
                break;
            }
            anyhow::ensure!(Instant::now() < deadline, "the ccd daemon did not answer");
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(c)
    }

    pub fn daemon_pid(&self) -> u32 {
        self.daemon.id()
    }

    pub fn api(&self) -> anyhow::Result<Api> {
        Api::connect(&self.sock)
    }

    /// `session.new` running `args` (after the wrapper); returns (session id, claude pid).
    pub fn new_session(&mut self, args: &[String], wait: bool) -> anyhow::Result<(String, u32)> {
        let mut api = self.api()?;
        let r = api.call(
            "session.new",
            json!({"cwd": self.work, "args": args, "size": {"cols": COLS, "rows": ROWS}, "wait": wait}),
        )?;
        api.close();
        let sid = r["session"]
            .as_str()
            .context("session.new: no session")?
            .to_string();
        let pid = r["pid"].as_u64().unwrap_or(0) as u32;
        if let Some(h) = r["holder"].as_str() {
            self.holders.push((sid.clone(), h.to_string()));
        }
        if pid > 0 {
            if let Some(st) = start_time(pid) {
                self.pids.push((pid, st));
            }
            if let Some(h) = ppid(pid) {
                if let Some(st) = start_time(h) {
                    self.pids.push((h, st));
                }
            }
        }
        Ok((sid, pid))
    }

    /// The holder process of `sid`.
    pub fn holder_pid(&self, sid: &str) -> Option<u32> {
        let sock = self.holder_socket(sid)?;
        Some(
            ccd_holder::HolderClient::connect(&sock)
                .ok()?
                .info()
                .ok()?
                .holder_pid,
        )
    }

    pub fn holder_socket(&self, sid: &str) -> Option<PathBuf> {
        let (_, h) = self.holders.iter().find(|(s, _)| s == sid)?;
        Some(
            self.sock
                .parent()?
                .join("holders")
                .join(format!("{h}.sock")),
        )
    }

    /// (bytes dropped, overflow resyncs) summed over the clients attached
    /// to `sid`, as its holder counts them.
    /// The holder's screen is read first: its model caught up to the end.
    pub fn drops(&self, sid: &str) -> Option<(u64, u64)> {
        let sock = self.holder_socket(sid)?;
        let mut c = ccd_holder::HolderClient::connect(&sock).ok()?;
        c.screen(ccd_protocol::holder::ScreenFormat::Text).ok()?;
        let info = c.info().ok()?;
        Some(
            info.clients
                .iter()
                .fold((0, 0), |(b, r), c| (b + c.bytes_dropped, r + c.resyncs)),
        )
    }

    /// How many clients are attached to `sid`, as the daemon sees it.
    pub fn attached(&self, sid: &str) -> u64 {
        let Ok(mut api) = self.api() else { return 0 };
        let v = api
            .call("sessions.get", json!({"session": sid}))
            .unwrap_or(Value::Null);
        api.close();
        v["ccd"]["attached"].as_u64().unwrap_or(0)
    }

    pub fn wait_attached(&self, sid: &str, n: u64) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(15);
        while self.attached(sid) < n {
            anyhow::ensure!(Instant::now() < deadline, "client never attached to {sid}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// `ccd attach <sid>` under a PTY of ours, like a person.
    pub fn attach_pty(&self, sid: &str) -> anyhow::Result<PtyProc> {
        PtyProc::spawn(&self.ccd, &["attach".into(), sid.into()], &self.env)
    }

    /// Attaches `api` to `sid` and returns the first resync (seq, data).
    pub fn api_attach(api: &mut Api, sid: &str) -> anyhow::Result<(u64, Vec<u8>)> {
        api.call(
            "session.attach",
            json!({"session": sid, "size": {"cols": COLS, "rows": ROWS}}),
        )?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(Note::Resync { seq, data, .. }) =
                api.next_note(Duration::from_millis(200))?
            {
                return Ok((seq, data));
            }
        }
        anyhow::bail!("no resync after session.attach")
    }

    pub fn stop(mut self) {
        if let Ok(mut api) = self.api() {
            let _ = api.call("daemon.stop", json!({"kill_sessions": true}));
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.daemon.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
        std::thread::sleep(Duration::from_millis(200));
        for (pid, st) in &self.pids {
            if start_time(*pid).as_deref() == Some(st.as_str()) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(*pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}
