//! Linux: `/proc/<pid>/stat`, read whole in one read and parsed by
//! [`super::stat`].

use super::start::{PidSpace, Start, StartForm, StartState};
use super::stat::Fields;

/// `/proc/<pid>/stat` whole: one read into room for it (procfs reports
/// no size, so `fs::read_to_string` would read in growing pieces).
pub fn read_stat(pid: u32) -> std::io::Result<String> {
    read_small(&format!("/proc/{pid}/stat"))
}

/// `/proc/<pid>/task/<tid>/stat` whole (a thread's own line).
pub fn read_stat_of(pid: u32, tid: u32) -> std::io::Result<String> {
    read_small(&format!("/proc/{pid}/task/{tid}/stat"))
}

/// The id of `pid`'s first thread whose `comm` (its name's first 15
/// bytes) is `comm`: `/proc/<pid>/task/*/comm`.
pub fn thread_named(pid: u32, comm: &str) -> Option<u32> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| t.file_name().to_str()?.parse::<u32>().ok())
        .find(|tid| {
            read_small(&format!("/proc/{pid}/task/{tid}/comm")).is_ok_and(|c| c.trim_end() == comm)
        })
}

/// Bytes thread `tid` of `pid` has read (`rchar` of its `io`).
pub fn thread_bytes_read(pid: u32, tid: u32) -> Option<u64> {
    let io = read_small(&format!("/proc/{pid}/task/{tid}/io")).ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("rchar:"))
        .and_then(|v| v.trim().parse().ok())
}

/// `pid`'s thread count (field 20 of its stat).
pub fn thread_count(pid: u32) -> Option<u64> {
    let stat = read_stat(pid).ok()?;
    Fields::parse(&stat)?.threads()
}

fn read_small(path: &str) -> std::io::Result<String> {
    use std::io::Read;
    let mut s = String::with_capacity(1024);
    std::fs::File::open(path)?.read_to_string(&mut s)?;
    Ok(s)
}

pub(super) fn is_stopped(pid: u32) -> bool {
    let Ok(stat) = read_stat(pid) else {
        return false;
    };
    Fields::parse(&stat)
        .and_then(|f| f.state())
        .is_some_and(|s| s == b'T' || s == b't')
}

/// How many descriptors `pid` has open (0: gone or unreadable): the
/// entries of `/proc/<pid>/fd`.
pub fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// The form [`start_of`] answers in.
pub const START_FORM: StartForm = StartForm::BootTicks;

/// The start of `pid` (`/proc/<pid>/stat` field 22); a zombie is gone.
/// A pid that names no process (signal 0: `ESRCH`) is gone after one
/// system call, with no path opened or `/proc` checked (most registry
/// entries a search judges are of exited processes).
pub fn start_of(pid: u32) -> StartState {
    if pid == 0 || !super::exists(pid) {
        return StartState::Gone;
    }
    match std::fs::read(format!("/proc/{pid}/stat")) {
        Ok(bytes) => {
            let f = Fields::parse_bytes(&bytes);
            match (
                f.as_ref().and_then(|f| f.state()),
                f.as_ref().and_then(|f| f.start_ticks()),
            ) {
                (Some(b'Z' | b'X'), Some(_)) => StartState::Gone,
                (Some(_), Some(ticks)) => StartState::Running(Start::BootTicks(ticks)),
                _ => StartState::Unverifiable(format!("unparsable /proc/{pid}/stat")),
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if std::path::Path::new("/proc/self/stat").exists() {
                StartState::Gone
            } else {
                StartState::Unverifiable("/proc is not mounted".into())
            }
        }
        // ESRCH: the process exited while we read.
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => StartState::Gone,
        Err(e) => StartState::Unverifiable(format!("/proc/{pid}/stat: {e}")),
    }
}

/// The parent of a running process (`None`: gone, or unreadable).
pub fn parent_of(pid: u32) -> Option<u32> {
    let bytes = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    Fields::parse_bytes(&bytes)?.ppid()
}

/// The machine id (`/etc/machine-id`, else dbus's) and this process's pid
/// namespace (`/proc/self/ns/pid`'s link text).
pub fn pid_space() -> Option<PidSpace> {
    let machine_id = ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())?;
    let ns = std::fs::read_link("/proc/self/ns/pid").ok()?;
    Some(PidSpace::Linux {
        machine_id,
        namespace: ns.to_string_lossy().into_owned(),
    })
}
