//! A real terminal for full-screen tests: tmux on a private socket
//! (`tmux -S <tmp>/tmux.sock -f /dev/null`), one window running a command
//! under `sh`, driven with `send-keys` and read with `capture-pane -p`.
//! The server is killed when the value drops.

use super::{wait_for, Sandbox};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

pub struct Tmux {
    sock: PathBuf,
}

/// The dashboard's list rows in a captured pane: the lines between the
/// column header (`ID` … `TITLE`, with `HOST` when it shows machines) and
/// the preview.
pub fn list_rows(pane: &str) -> Vec<String> {
    pane.lines()
        .skip_while(|l| !l.contains("ID") || !l.contains("TITLE"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(String::from)
        .collect()
}

/// tmux, or a skip: under CI (`$CI` set) a missing tmux fails the test.
pub fn tmux_or_skip() -> bool {
    let ok = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is not installed (CI is set: .ci/run installs it)"
        );
        eprintln!("SKIPPED: tmux is not installed; set CI=1 to make this a failure");
    }
    ok
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

impl Tmux {
    /// Runs `ccd <args>` (with the sandbox's environment) in a `cols` x
    /// `rows` window; when it ends, the pane says `ccd-exited=<code>`.
    pub fn start(sb: &Sandbox, args: &[&str], cols: u16, rows: u16) -> Self {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let sock = sb.tmp.path().join(format!("tmux-{n}.sock"));
        let mut cmd = String::from("env -u XDG_RUNTIME_DIR -u CCD_CLAUDE_BIN");
        for (k, v) in &sb.env {
            cmd.push_str(&format!(" {k}={}", quote(v)));
        }
        cmd.push_str(&format!(" {}", quote(super::ccd_bin().to_str().unwrap())));
        for a in args {
            cmd.push_str(&format!(" {}", quote(a)));
        }
        cmd.push_str("; echo ccd-exited=$?; exec sleep 600");
        let t = Tmux { sock };
        t.tmux(&[
            "new-session",
            "-d",
            "-s",
            "ui",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
            &format!("sh -c {}", quote(&cmd)),
        ]);
        t
    }

    pub fn tmux(&self, args: &[&str]) -> String {
        let o = Command::new("tmux")
            .arg("-S")
            .arg(&self.sock)
            .args(["-f", "/dev/null"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The pane's text now.
    pub fn capture(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "ui"])
    }

    /// Sends tmux key names (`Enter`, `Escape`, `C-\\`, `q`).
    pub fn keys(&self, keys: &[&str]) {
        let mut a = vec!["send-keys", "-t", "ui"];
        a.extend_from_slice(keys);
        self.tmux(&a);
    }

    /// Types `text` literally.
    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "ui", "-l", text]);
    }

    /// Waits until the pane shows `needle`; returns the pane.
    pub fn wait(&self, needle: &str, timeout: Duration) -> String {
        let mut last = String::new();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            wait_for(timeout, needle, || {
                last = self.capture();
                last.contains(needle).then(|| last.clone())
            })
        }));
        match r {
            Ok(v) => v,
            Err(_) => panic!("timed out waiting for {needle:?}; the pane:\n{last}"),
        }
    }

    /// Waits until `f` holds for the pane; returns the pane.
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        mut f: impl FnMut(&str) -> bool,
    ) -> String {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let last = self.capture();
            if f(&last) {
                return last;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {what}; the pane:\n{last}"
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// Whether the pane is in the alternate screen.
    pub fn alternate_on(&self) -> bool {
        self.tmux(&["display-message", "-p", "-t", "ui", "#{alternate_on}"])
            .trim()
            == "1"
    }

    /// The pid of the process the pane's shell runs (`ccd`).
    pub fn child_pid(&self) -> Option<u32> {
        let sh: u32 = self
            .tmux(&["display-message", "-p", "-t", "ui", "#{pane_pid}"])
            .trim()
            .parse()
            .ok()?;
        #[cfg(target_os = "linux")]
        {
            let kids = std::fs::read_to_string(format!("/proc/{sh}/task/{sh}/children")).ok()?;
            kids.split_whitespace().next()?.parse().ok()
        }
        #[cfg(not(target_os = "linux"))]
        {
            ccd_testkit::procs::children(sh)
                .first()
                .map(|&(pid, _)| pid)
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.sock)
            .args(["kill-server"])
            .output();
    }
}
