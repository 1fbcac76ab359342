//! Process stat and run state: what the kernel says about another process
//! by its pid. Whether it exists (signal 0, every system), whether it is
//! stopped (SIGSTOP, job control, a debugger: a stopped daemon or holder
//! still has its sockets accepting but never answers, so whoever waits on
//! it says "stopped, `kill -CONT <pid>`" instead of waiting out a
//! deadline), and the raw facts liveness, costs and pacing read.
//!
//! - Linux (`linux`): `/proc/<pid>/stat`, parsed in one place ([`stat`]:
//!   the fields are counted after the command name's last `)`); the
//!   state letter `T`/`t` is stopped.
//! - macOS (`macos`): the kernel's `proc_bsdinfo`
//!   (`proc_pidinfo(PROC_PIDTBSDINFO)`, [`bsd_info`]: status, parent,
//!   start second); `pbi_status == SSTOP` is stopped.
//! - Elsewhere nothing is known: not stopped.
//!
//! A thread of another process found by name, the bytes it has read and
//! a process's thread count ([`thread_named`], [`thread_bytes_read`],
//! [`thread_count`]: `/proc` on Linux, `None` elsewhere) are the daemon's
//! "did this holder do anything" probe.
//!
//! How many descriptors a process has open ([`fd_count`]: `/proc/<pid>/fd`
//! on Linux, `proc_pidinfo(PROC_PIDLISTFDS)` on macOS) is asked by the
//! tests and benchmarks (`ccd-testkit`).
//!
//! A process that is gone or cannot be read is not stopped.
//!
//! A process's start and parent ([`start_of`], [`parent_of`]) and the
//! machine's pid space ([`pid_space`]) are what liveness compares a
//! registry entry with ([`start`]).

pub mod start;
pub mod stat;

pub use start::{BsdInfo, PidSpace, Start, StartForm, StartState, BSD_SZOMB};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as imp;
#[cfg(target_os = "linux")]
pub use linux::{
    fd_count, parent_of, pid_space, read_stat, read_stat_of, start_of, thread_bytes_read,
    thread_count, thread_named, START_FORM,
};

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as imp;
#[cfg(target_os = "macos")]
pub use macos::{
    bsd_info, fd_count, parent_of, pid_space, start_of, BsdInfoError, SSTOP, START_FORM, SZOMB,
};

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod imp {
    pub fn is_stopped(_pid: u32) -> bool {
        false
    }
}
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub use other::{parent_of, pid_space, start_of, START_FORM};

/// Other systems: no start time, parent or pid space.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod other {
    use super::{PidSpace, StartForm, StartState};
    pub const START_FORM: StartForm = StartForm::None;
    pub fn start_of(_pid: u32) -> StartState {
        StartState::Unverifiable("liveness is not supported on this platform".into())
    }
    pub fn parent_of(_pid: u32) -> Option<u32> {
        None
    }
    pub fn pid_space() -> Option<PidSpace> {
        None
    }
}

/// Outside Linux no thread of another process is looked at by name, its
/// reads or its count (`/proc` only): `None`.
#[cfg(not(target_os = "linux"))]
pub fn thread_named(_pid: u32, _comm: &str) -> Option<u32> {
    None
}

/// See [`thread_named`]: `None` outside Linux.
#[cfg(not(target_os = "linux"))]
pub fn thread_bytes_read(_pid: u32, _tid: u32) -> Option<u64> {
    None
}

/// See [`thread_named`]: `None` outside Linux.
#[cfg(not(target_os = "linux"))]
pub fn thread_count(_pid: u32) -> Option<u64> {
    None
}

/// True when `pid` is stopped (or, on Linux, stopped by tracing).
pub fn is_stopped(pid: u32) -> bool {
    imp::is_stopped(pid)
}

/// Whether a process `pid` exists (a zombie included): signal 0 finds
/// it, on every system (not `/proc`, which macOS has not). A pid that
/// names another user's process (`EPERM`) exists too; 0 and pids past
/// `pid_t` name no process (0 would be our process group).
pub fn exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // Signal 0 (`None`) sends nothing; it only checks the pid.
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(e) => e != nix::errno::Errno::ESRCH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_exists_until_it_is_reaped() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let pid = child.id();
        assert!(exists(pid));
        child.kill().expect("kill");
        child.wait().expect("reaped");
        assert!(!exists(pid), "gone once reaped");
        assert!(exists(1), "init: another user's process");
        assert!(!exists(u32::MAX));
        assert!(!exists(0), "not a process: our group");
    }

    #[cfg(any(target_os = "linux", target_os = "macos"))]
    #[test]
    fn this_process_has_its_standard_descriptors_open_and_no_process_none() {
        assert!(fd_count(std::process::id()) >= 3);
        assert_eq!(fd_count(u32::MAX), 0);
    }

    #[cfg(any(target_os = "linux", target_os = "macos"))]
    #[test]
    fn this_process_runs_since_its_start_and_its_parent_is_ours() {
        let me = std::process::id();
        let StartState::Running(start) = start_of(me) else {
            panic!("this process not running");
        };
        assert_eq!(start_of(me), StartState::Running(start), "the same start");
        match (start, START_FORM) {
            (Start::BootTicks(_), StartForm::BootTicks)
            | (Start::UnixSeconds(_), StartForm::UnixSeconds) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(parent_of(me), Some(std::os::unix::process::parent_id()));
        assert_eq!(start_of(u32::MAX), StartState::Gone);
        assert!(pid_space().is_some());
    }

    #[test]
    fn a_stopped_child_is_stopped_and_a_continued_one_is_not() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let pid = child.id();
        assert!(!is_stopped(pid));
        use nix::sys::signal::{kill, Signal};
        let child_pid = nix::unistd::Pid::from_raw(pid as libc::pid_t);
        kill(child_pid, Signal::SIGSTOP).expect("SIGSTOP");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !is_stopped(pid) {
            assert!(std::time::Instant::now() < deadline, "never seen stopped");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        kill(child_pid, Signal::SIGCONT).expect("SIGCONT");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while is_stopped(pid) {
            assert!(std::time::Instant::now() < deadline, "still stopped");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(!is_stopped(u32::MAX), "no such process");
    }
}
