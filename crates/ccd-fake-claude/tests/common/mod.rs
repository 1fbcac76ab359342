//! Test harness: runs the built `fake-claude` under a real PTY with an isolated HOME and
//! CLAUDE_CONFIG_DIR, feeding its output to a vt100 screen model.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{native_pty_system, Child, CommandBuilder, ExitStatus, MasterPty, PtySize};

pub const ROWS: u16 = 40;
pub const COLS: u16 = 120;

/// A throwaway HOME with `.claude` inside and a project folder.
pub struct Env {
    _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub config: PathBuf,
    pub proj: PathBuf,
}

impl Env {
    pub fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let home = root.join("home");
        let config = home.join(".claude");
        let proj = root.join("proj");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::create_dir_all(&proj).unwrap();
        Env {
            _tmp: tmp,
            home,
            config,
            proj,
        }
    }

    pub fn state_file(&self) -> PathBuf {
        self.config.join(".claude.json")
    }

    /// Marks `dir` trusted the way the CLI records it.
    pub fn trust(&self, dir: &Path) {
        let v = serde_json::json!({
            "theme": "dark",
            "projects": { dir.to_string_lossy(): { "hasTrustDialogAccepted": true } }
        });
        std::fs::write(self.state_file(), v.to_string()).unwrap();
    }

    pub fn registry_file(&self, pid: u32) -> PathBuf {
        self.config.join("sessions").join(format!("{pid}.json"))
    }

    pub fn registry(&self, pid: u32) -> serde_json::Value {
        let text = std::fs::read_to_string(self.registry_file(pid)).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    pub fn key_files(&self, pid: u32) -> Vec<PathBuf> {
        let prefix = format!("{pid}.");
        match std::fs::read_dir(self.config.join("sessions")) {
            Ok(rd) => rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    let n = p.file_name().unwrap().to_string_lossy().into_owned();
                    n.starts_with(&prefix) && n.ends_with(".key")
                })
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// `projects/*/<sid>.jsonl`
    pub fn transcript(&self, sid: &str) -> Option<PathBuf> {
        let rd = std::fs::read_dir(self.config.join("projects")).ok()?;
        rd.flatten()
            .map(|e| e.path().join(format!("{sid}.jsonl")))
            .find(|p| p.is_file())
    }
}

pub fn records(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `procStart` the CLI would write for `pid`. Linux: field 22 of /proc/<pid>/stat.
#[cfg(target_os = "linux")]
pub fn starttime(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(19).unwrap().to_string()
}

/// The `procStart` the CLI would write for `pid`. macOS: the trimmed
/// `LC_ALL=C TZ=UTC ps -o lstart= -p <pid>`.
#[cfg(not(target_os = "linux"))]
pub fn starttime(pid: u32) -> String {
    let out = std::process::Command::new("ps")
        .args(["-o", "lstart=", "-p", &pid.to_string()])
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub struct Fake {
    pub pid: u32,
    child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    _master: Box<dyn MasterPty + Send>,
    parser: Arc<Mutex<vt100::Parser>>,
}

impl Fake {
    pub fn spawn(env: &Env, cwd: &Path, args: &[&str], vars: &[(&str, &str)]) -> Fake {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_fake-claude"));
        cmd.args(args);
        cmd.cwd(cwd);
        cmd.env_clear();
        cmd.env("TERM", "xterm-256color");
        cmd.env("PATH", "/usr/bin:/bin");
        cmd.env("HOME", &env.home);
        cmd.env("CLAUDE_CONFIG_DIR", &env.config);
        cmd.env("FAKE_CLAUDE_INPUT_DELAY_MS", "100");
        cmd.env("FAKE_CLAUDE_TURN_MS", "100");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let pid = child.process_id().unwrap();
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            NonZeroU16::new(ROWS).unwrap(),
            NonZeroU16::new(COLS).unwrap(),
            0,
        )));
        let p = parser.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                p.lock().unwrap().process(&buf[..n]);
            }
        });
        Fake {
            pid,
            child,
            writer,
            _master: pair.master,
            parser,
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
        self.writer.flush().unwrap();
    }

    pub fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// Polls the screen until `pred` holds; panics with the screen after `timeout`.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn wait_text(&self, text: &str) -> String {
        self.wait_for(text, |s| s.contains(text))
    }

    /// Presses `key` every 150 ms until `text` shows (keys sent too early are dropped).
    pub fn press_until(&mut self, key: &[u8], text: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            self.send(key);
            let until = Instant::now() + Duration::from_millis(150);
            while Instant::now() < until {
                if self.screen().contains(text) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            if Instant::now() > deadline {
                panic!("'{text}' never showed; screen:\n{}", self.screen());
            }
        }
    }

    /// Waits for the ready prompt of either UI variant.
    pub fn wait_prompt(&self) -> String {
        self.wait_for("the prompt", |s| {
            s.contains("auto mode on") || s.contains("? for shortcuts")
        })
    }

    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().unwrap()
    }

    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("fake-claude did not exit; screen:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid as i32), sig).unwrap();
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
