//! tmux (a server on a private socket, `-f /dev/null`, status line off) and
//! dtach (when installed) as contenders. Their attached clients run under
//! PTYs the bench reads.

use super::term::{Env, PtyProc, COLS, ROWS};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct Tmux {
    pub bin: PathBuf,
    pub sock: PathBuf,
    pub env: Env,
    started: bool,
}

impl Tmux {
    pub fn new(bin: &Path, root: &Path, env: Env) -> Self {
        Self {
            bin: bin.to_path_buf(),
            sock: root.join("tmux.sock"),
            env,
            started: false,
        }
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new(&self.bin);
        c.arg("-u")
            .arg("-S")
            .arg(&self.sock)
            .arg("-f")
            .arg("/dev/null")
            .env_remove("TMUX")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
    }

    fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = self.cmd().args(args).output().context("running tmux")?;
        anyhow::ensure!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// A detached session `name` running `prog args`.
    pub fn new_session(&mut self, name: &str, prog: &Path, args: &[String]) -> anyhow::Result<()> {
        let (x, y) = (COLS.to_string(), ROWS.to_string());
        let mut a: Vec<String> = ["new-session", "-d", "-s", name, "-x", &x, "-y", &y]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.push(prog.display().to_string());
        a.extend(args.iter().cloned());
        a.extend([";", "set-option", "-g", "status", "off"].map(String::from));
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        self.run(&refs)?;
        self.started = true;
        Ok(())
    }

    pub fn attach_pty(&self, name: &str) -> anyhow::Result<PtyProc> {
        let args: Vec<String> = [
            "-u",
            "-S",
            &self.sock.display().to_string(),
            "attach-session",
            "-t",
            name,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        PtyProc::spawn(&self.bin, &args, &self.env)
    }

    /// Waits until `n` clients are attached to `name`.
    pub fn wait_clients(&self, name: &str, n: usize) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let out = self.run(&["list-clients", "-t", name]).unwrap_or_default();
            if out.lines().count() >= n {
                return Ok(());
            }
            anyhow::ensure!(Instant::now() < deadline, "tmux client never attached");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn kill_server(&mut self) {
        if self.started {
            let _ = self.run(&["kill-server"]);
            self.started = false;
        }
    }

    pub fn version(bin: &Path) -> String {
        Command::new(bin)
            .arg("-V")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.kill_server();
    }
}

/// dtach: `dtach -n <sock>` runs the program under its own PTY; `dtach -a`
/// attaches (no redraw, no detach character, no suspend).
pub struct Dtach {
    pub bin: PathBuf,
    pub env: Env,
    /// Master processes started (dtach -n forks a daemon): killed at the end.
    socks: Vec<PathBuf>,
}

impl Dtach {
    pub fn new(bin: &Path, env: Env) -> Self {
        Self {
            bin: bin.to_path_buf(),
            env,
            socks: Vec::new(),
        }
    }

    pub fn new_session(&mut self, sock: &Path, prog: &Path, args: &[String]) -> anyhow::Result<()> {
        // Created under a PTY of ours so the program gets our size.
        let mut a = vec![
            "-n".to_string(),
            sock.display().to_string(),
            "-E".into(),
            "-z".into(),
            prog.display().to_string(),
        ];
        a.extend(args.iter().cloned());
        let mut p = PtyProc::spawn(&self.bin, &a, &self.env)?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while !sock.exists() {
            anyhow::ensure!(Instant::now() < deadline, "dtach did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        // `dtach -n` ends by itself once its master runs. The socket is
        // there before the master leaves our PTY's session, so ending the
        // launcher (and with it that PTY) at once could hang the master up
        // before its program started (seen: a session whose program never
        // ran).
        if !p.wait_exit(deadline.saturating_duration_since(Instant::now())) {
            eprintln!(
                "note: dtach -n {} still running after 10 s: ended",
                sock.display()
            );
        }
        p.kill(Duration::from_millis(200));
        self.socks.push(sock.to_path_buf());
        Ok(())
    }

    pub fn attach_pty(&self, sock: &Path) -> anyhow::Result<PtyProc> {
        let a = vec![
            "-a".to_string(),
            sock.display().to_string(),
            "-E".into(),
            "-z".into(),
            "-r".into(),
            "none".into(),
        ];
        PtyProc::spawn(&self.bin, &a, &self.env)
    }

    /// The dtach master of `sock`: the process holding the socket, found
    /// among every process by its command line.
    pub fn master_pid(&self, sock: &Path) -> Option<u32> {
        let want = sock.display().to_string();
        for pid in ccd_testkit::procs::pids() {
            let cmd = ccd_testkit::procs::cmdline(pid);
            let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
            let is_master = args.first().is_some_and(|a| a.ends_with(b"dtach"))
                && args.get(1) == Some(&&b"-n"[..])
                && args.get(2) == Some(&want.as_bytes());
            if is_master {
                return Some(pid);
            }
        }
        None
    }

    /// Kills the dtach master (and so its program) of `sock`.
    pub fn kill_session(&self, sock: &Path) {
        if let Some(pid) = self.master_pid(sock) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        let _ = std::fs::remove_file(sock);
    }
}

impl Drop for Dtach {
    fn drop(&mut self) {
        for s in std::mem::take(&mut self.socks) {
            self.kill_session(&s);
        }
    }
}
