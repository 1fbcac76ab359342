//! Linux: `/proc/<pid>/stat` field 22 (parsed by `ccd_os::process::stat`)
//! and the pid-namespace domain.

use super::{ProcessProbe, ProcessState};

/// Reads `/proc` directly; the pid domain is computed once per probe.
pub(super) struct ProcProbe {
    domain: Option<String>,
}

impl ProcProbe {
    pub(super) fn new() -> Self {
        Self {
            domain: our_pid_domain(),
        }
    }
}

impl ProcessProbe for ProcProbe {
    fn process(&self, pid: u32) -> ProcessState {
        if pid == 0 {
            return ProcessState::Gone;
        }
        match std::fs::read(format!("/proc/{pid}/stat")) {
            Ok(bytes) => match parse_stat(&bytes) {
                Some(stat) if stat.state == b'Z' || stat.state == b'X' => ProcessState::Gone,
                Some(stat) => ProcessState::Running { start: stat.start },
                None => ProcessState::Unverifiable(format!("unparsable /proc/{pid}/stat")),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if std::path::Path::new("/proc/self/stat").exists() {
                    ProcessState::Gone
                } else {
                    ProcessState::Unverifiable("/proc is not mounted".into())
                }
            }
            // ESRCH: the process exited while we read.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => ProcessState::Gone,
            Err(e) => ProcessState::Unverifiable(format!("/proc/{pid}/stat: {e}")),
        }
    }

    fn pid_domain(&self) -> Option<String> {
        self.domain.clone()
    }

    fn same_start(&self, entry_stamp: &str, current: &str) -> Option<bool> {
        let ours: u64 = entry_stamp.trim().parse().ok()?;
        let now: u64 = current.parse().ok()?;
        Some(ours == now)
    }
}

/// The fields of `/proc/<pid>/stat` liveness needs.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    pub state: u8,
    /// Field 4, the parent's pid.
    pub ppid: u32,
    /// Field 22, `starttime`, as written.
    pub start: String,
}

/// Parses `/proc/<pid>/stat` (through `ccd_os::process::stat`, which
/// counts the fields after the command name's *last* `)`).
pub(crate) fn parse_stat(bytes: &[u8]) -> Option<Stat> {
    let f = ccd_os::process::stat::Fields::parse_bytes(bytes)?;
    Some(Stat {
        state: f.state()?,
        ppid: f.ppid()?,
        start: f
            .field(22)
            .filter(|_| f.start_ticks().is_some())?
            .to_string(),
    })
}

/// The parent of a running process (`None`: gone, or unreadable).
pub(super) fn parent_pid(pid: u32) -> Option<u32> {
    let bytes = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&bytes).map(|s| s.ppid)
}

/// `linux:<machine-id>:pid:[<pid namespace inode>]`, as Claude Code writes it.
fn our_pid_domain() -> Option<String> {
    let machine_id = ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())?;
    let ns = std::fs::read_link("/proc/self/ns/pid").ok()?;
    Some(format!("linux:{machine_id}:{}", ns.to_string_lossy()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_hostile_comm() {
        let line = b"1234 (a) b ) (c) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10 18446744073709551615";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.state, b'S');
        assert_eq!(s.ppid, 1);
        assert_eq!(s.start, "98765");
    }

    #[test]
    fn stat_truncated() {
        assert_eq!(parse_stat(b"1234 (x) S 1 2 3"), None);
        assert_eq!(parse_stat(b"garbage"), None);
    }

    #[test]
    fn own_process_is_running_with_matching_start() {
        let probe = ProcProbe::new();
        let me = std::process::id();
        let ProcessState::Running { start } = probe.process(me) else {
            panic!("self not running");
        };
        assert_eq!(probe.same_start(&start, &start), Some(true));
        assert_eq!(probe.same_start("Thu Jul  9 04:18:26 2026", &start), None);
    }
}
