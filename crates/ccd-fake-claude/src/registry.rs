//! The session registry entry `<config>/sessions/<pid>.json` and its sibling secret
//! `<pid>.<hex>.key`, shaped like the real 2.1.332 entry.

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::util::{atomic_write, now_ms, random_hex};

/// What the session is doing, as published in `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Idle,
    Busy,
    /// A permission dialog is open (`"waitingFor":"permission prompt"`).
    WaitingPermission,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    pid: u32,
    session_id: String,
    cwd: String,
    started_at: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    proc_start: Option<String>,
    version: String,
    peer_protocol: u32,
    kind: &'static str,
    entrypoint: &'static str,
    pid_domain: String,
    name: String,
    name_source: &'static str,
    name_since: u64,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    waiting_for: Option<&'static str>,
    updated_at: u64,
    status_updated_at: u64,
}

/// The live registry entry of this process. Dropping it does NOT remove the files: removal is
/// an explicit step of a graceful exit, so a crash leaves them behind like the real CLI.
pub struct Registry {
    json: PathBuf,
    key: PathBuf,
    entry: Entry,
    status: Status,
}

impl Registry {
    /// Writes `<config>/sessions/<pid>.json` (atomically) and the `.key` file.
    pub fn create(config: &Path, session_id: &str, cwd: &Path, version: &str) -> io::Result<Self> {
        let dir = config.join("sessions");
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)?;
        let pid = std::process::id();
        let now = now_ms();
        let base = cwd
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".to_string());
        let entry = Entry {
            pid,
            session_id: session_id.to_string(),
            cwd: cwd.to_string_lossy().into_owned(),
            started_at: now,
            proc_start: proc_start(),
            version: version.to_string(),
            peer_protocol: 1,
            kind: "interactive",
            entrypoint: "cli",
            pid_domain: pid_domain(),
            name: format!("{base}-{}", random_hex(1)),
            name_source: "derived",
            name_since: now,
            status: "idle",
            waiting_for: None,
            updated_at: now,
            status_updated_at: now,
        };
        let key = dir.join(format!("{pid}.{}.key", random_hex(8)));
        atomic_write(&key, random_hex(32).as_bytes(), 0o600)?;
        let reg = Registry {
            json: dir.join(format!("{pid}.json")),
            key,
            entry,
            status: Status::Idle,
        };
        reg.write()?;
        Ok(reg)
    }

    fn write(&self) -> io::Result<()> {
        let text = serde_json::to_string(&self.entry).map_err(io::Error::other)?;
        atomic_write(&self.json, text.as_bytes(), 0o600)
    }

    /// Publishes a new status; `updatedAt`/`statusUpdatedAt` change only when it changes.
    pub fn set_status(&mut self, status: Status) -> io::Result<()> {
        if status == self.status {
            return Ok(());
        }
        self.status = status;
        let now = now_ms();
        self.entry.status = match status {
            Status::Idle => "idle",
            Status::Busy => "busy",
            Status::WaitingPermission => "waiting",
        };
        self.entry.waiting_for = match status {
            Status::WaitingPermission => Some("permission prompt"),
            _ => None,
        };
        self.entry.updated_at = now;
        self.entry.status_updated_at = now;
        self.write()
    }

    /// Switches the entry to another conversation (`/clear`, in-TUI `/resume`): rewritten at
    /// once, atomically; same pid, procStart, startedAt and status.
    pub fn set_session_id(&mut self, session_id: &str) -> io::Result<()> {
        self.entry.session_id = session_id.to_string();
        self.entry.updated_at = now_ms();
        self.write()
    }

    /// Removes the entry and its key (graceful exit).
    pub fn remove(&self) {
        let _ = fs::remove_file(&self.json);
        let _ = fs::remove_file(&self.key);
    }
}

/// Linux: field 22 (`starttime`) of `/proc/self/stat`, parsed after the last `)`.
#[cfg(target_os = "linux")]
pub fn proc_start() -> Option<String> {
    let stat = fs::read_to_string("/proc/self/stat").ok()?;
    parse_starttime(&stat)
}

/// Elsewhere (macOS): what the CLI writes there, the trimmed output of
/// `LC_ALL=C TZ=UTC ps -o lstart= -p <pid>` (docs/claude-cli-compat.md), got
/// the way the CLI gets it, so it stays independent of ccd's own conversion.
#[cfg(not(target_os = "linux"))]
pub fn proc_start() -> Option<String> {
    let out = std::process::Command::new("ps")
        .args(["-o", "lstart=", "-p", &std::process::id().to_string()])
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let start = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !start.is_empty()).then_some(start)
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_starttime(stat: &str) -> Option<String> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After ')' come fields 3.. ; starttime is field 22, i.e. the 20th of these.
    rest.split_whitespace().nth(19).map(str::to_string)
}

/// Linux: `linux:<machine-id>:pid:[<pid namespace inode>]`.
#[cfg(target_os = "linux")]
pub fn pid_domain() -> String {
    let machine = fs::read_to_string("/etc/machine-id")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    let ns = fs::read_link("/proc/self/ns/pid")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "pid:[unknown]".to_string());
    format!("linux:{machine}:{ns}")
}

/// Elsewhere (macOS): the platform's name as Node's `process.platform` gives
/// it, which is what the CLI writes there (`darwin`).
#[cfg(not(target_os = "linux"))]
pub fn pid_domain() -> String {
    match std::env::consts::OS {
        "macos" => "darwin",
        os => os,
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starttime_after_last_paren() {
        let stat = "42 (we ird) (x) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 9989 1000 10";
        assert_eq!(parse_starttime(stat).as_deref(), Some("9989"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn linux_forms() {
        let start = proc_start().expect("procStart");
        assert!(start.parse::<u64>().is_ok(), "clock ticks: {start}");
        assert!(pid_domain().starts_with("linux:"));
    }

    #[cfg(target_os = "macos")]
    #[test]
    fn macos_forms() {
        // `ps -o lstart=` in the C locale: weekday, month, day, clock, year.
        let start = proc_start().expect("procStart");
        let fields: Vec<&str> = start.split_ascii_whitespace().collect();
        assert_eq!(fields.len(), 5, "lstart form: {start:?}");
        assert_eq!(fields[3].split(':').count(), 3, "clock: {start:?}");
        assert_eq!(pid_domain(), "darwin");
    }
}
