//! A session started outside ccd: the fake claude under the test's own PTY.

use super::{wait_for, Sandbox};
use portable_pty::CommandBuilder;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

/// A session started outside ccd: the fake claude under the test's own PTY.
pub struct External {
    pub child: Box<dyn portable_pty::Child + Send + Sync>,
    pub _writer: Box<dyn std::io::Write + Send>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
    pub sid: String,
    pub transcript: PathBuf,
}

impl Drop for External {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn trust(sb: &Sandbox, dir: &Path) {
    let p = sb.config.join(".claude.json");
    std::fs::create_dir_all(&sb.config).unwrap();
    let mut v: serde_json::Value = std::fs::read(&p)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(json!({}));
    v["projects"][dir.to_str().unwrap()] = json!({"hasTrustDialogAccepted": true});
    std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
}

/// `claude --resume <sid>` started by hand in `dir` (the fake claude,
/// under the test's own PTY); returns once its registry entry names `sid`.
pub fn resumed_outside(sb: &Sandbox, dir: &Path, sid: &str) -> External {
    let (child, writer, master) = spawn(sb, dir, &["--resume", sid]);
    let pid = child.process_id().unwrap();
    let entry = sb.config.join("sessions").join(format!("{pid}.json"));
    wait_for(T, "the resumed external session's registry entry", || {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&entry).ok()?).ok()?;
        (v["sessionId"] == sid).then_some(())
    });
    let transcript =
        ccd_claude::transcript::find_by_session_id(&sb.config.join("projects"), sid).unwrap();
    External {
        child,
        _writer: writer,
        _master: master,
        sid: sid.to_string(),
        transcript,
    }
}

type Spawned = (
    Box<dyn portable_pty::Child + Send + Sync>,
    Box<dyn std::io::Write + Send>,
    Box<dyn portable_pty::MasterPty + Send>,
);

/// The fake claude with `args` in `dir` (trusted), its output drained.
fn spawn(sb: &Sandbox, dir: &Path, args: &[&str]) -> Spawned {
    trust(sb, dir);
    let pty = super::pty::open();
    let mut cmd = CommandBuilder::new(super::fake_claude());
    cmd.args(args);
    for (k, v) in &sb.env {
        cmd.env(k, v);
    }
    cmd.cwd(dir);
    let child = pty.slave.spawn_command(cmd).unwrap();
    drop(pty.slave);
    let mut reader = pty.master.try_clone_reader().unwrap();
    std::thread::spawn(move || {
        let mut b = [0u8; 65536];
        while matches!(std::io::Read::read(&mut reader, &mut b), Ok(n) if n > 0) {}
    });
    let writer = pty.master.take_writer().unwrap();
    (child, writer, pty.master)
}

pub fn external(sb: &Sandbox, dir: &Path) -> External {
    let (child, mut writer, master) = spawn(sb, dir, &[]);
    let pid = child.process_id().unwrap();
    let entry = sb.config.join("sessions").join(format!("{pid}.json"));
    let sid = wait_for(T, "the external session's registry entry", || {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&entry).ok()?).ok()?;
        v["sessionId"].as_str().map(String::from)
    });
    std::thread::sleep(Duration::from_millis(400)); // input handler live
    writer.write_all(b"hello from outside\r").unwrap();
    let transcript = wait_for(T, "the external transcript", || {
        let p = ccd_claude::transcript::find_by_session_id(&sb.config.join("projects"), &sid)?;
        let t = std::fs::read_to_string(&p).ok()?;
        t.contains("hello from outside").then_some(())?;
        // The turn is over once its `turn_duration` and the `last-prompt`
        // after it are written (three appends after the reply).
        let last = t.lines().last()?;
        (t.contains("\"assistant\"")
            && t.contains("\"turn_duration\"")
            && last.contains("\"last-prompt\""))
        .then_some(p)
    });
    External {
        child,
        _writer: writer,
        _master: master,
        sid,
        transcript,
    }
}

/// A session the fake ran outside ccd, then killed (SIGKILL: its registry
/// entry stays behind), once ccd lists it dead; its id and folder.
pub fn dead_session(sb: &Sandbox, name: &str) -> (String, PathBuf) {
    let dir = sb.project(name);
    let sid = external(sb, &dir).sid.clone();
    wait_for(T, "the session to be dead", || {
        (super::row(sb, &sid)["state"] == "dead").then_some(())
    });
    (sid, dir)
}
