//! Runs `ccd` under a pseudo-terminal, as a person would: keys in, a screen
//! model of what it draws out.

#![allow(dead_code)]

use super::Sandbox;
use ccd_screen::Screen;
use portable_pty::{native_pty_system, Child, CommandBuilder, MasterPty, PtySize};
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct PtyRun {
    pub master: Box<dyn MasterPty + Send>,
    pub child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    pub screen: Arc<Mutex<Screen>>,
    pub raw: Arc<Mutex<Vec<u8>>>,
}

/// A fresh 40x120 PTY pair.
pub fn open() -> portable_pty::PtyPair {
    native_pty_system()
        .openpty(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap()
}

impl PtyRun {
    pub fn start(sb: &Sandbox, args: &[&str], cwd: Option<&std::path::Path>) -> Self {
        let pty = open();
        let mut cmd = CommandBuilder::new(super::ccd_bin());
        cmd.args(args);
        cmd.env_remove("XDG_RUNTIME_DIR");
        cmd.env_remove("CCD_CLAUDE_BIN");
        for (k, v) in &sb.env {
            cmd.env(k, v);
        }
        cmd.env("TERM", "xterm-256color");
        cmd.cwd(cwd.unwrap_or(&sb.work));
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().unwrap();
        let writer = pty.master.take_writer().unwrap();
        let screen = Arc::new(Mutex::new(Screen::new(40, 120)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        {
            let screen = screen.clone();
            let raw = raw.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                loop {
                    match reader.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            screen.lock().unwrap().process(&buf[..n]);
                            raw.lock().unwrap().extend_from_slice(&buf[..n]);
                        }
                    }
                }
            });
        }
        Self {
            master: pty.master,
            child,
            writer,
            screen,
            raw,
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
        self.writer.flush().unwrap();
    }

    pub fn text(&self) -> String {
        self.screen.lock().unwrap().contents()
    }

    pub fn raw_text(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().unwrap()).into_owned()
    }

    /// Waits until the screen contains `needle`.
    pub fn wait_text(&self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let t = self.text();
            if t.contains(needle) {
                return t;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {needle:?}; screen:\n{t}\nraw tail: {:?}",
                self.raw_text()
                    .chars()
                    .rev()
                    .take(400)
                    .collect::<String>()
                    .chars()
                    .rev()
                    .collect::<String>()
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// Waits until the raw output contains `needle`.
    pub fn wait_raw(&self, needle: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.raw_text().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for raw {needle:?}: {:?}",
                self.raw_text()
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// Waits for the process to exit; its exit code.
    pub fn wait_exit(&mut self, timeout: Duration) -> u32 {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                // let the reader drain
                std::thread::sleep(Duration::from_millis(100));
                return s.exit_code();
            }
            assert!(
                Instant::now() < deadline,
                "process did not exit; screen:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// Whether the terminal is back in canonical mode with echo.
    pub fn terminal_is_cooked(&self) -> bool {
        let t = self.master.get_termios().expect("termios");
        let want = nix::libc::ICANON | nix::libc::ECHO;
        t.local_flags.bits() & want == want
    }

    pub fn resize(&self, rows: u16, cols: u16) {
        self.master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
    }
}

impl Drop for PtyRun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
