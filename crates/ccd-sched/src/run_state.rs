//! Whether a process is stopped (SIGSTOP, job control, a debugger): a
//! stopped daemon or holder still has its sockets accepting connections
//! (the kernel queues them) but never answers, so whoever waits on it
//! looks at this to say "stopped, `kill -CONT <pid>`" instead of waiting
//! out a deadline and blaming the wrong process.
//!
//! Linux reads the state letter of `/proc/<pid>/stat` (`T` stopped, `t`
//! traced); macOS asks the kernel (`proc_pidinfo(PROC_PIDTBSDINFO)`,
//! `pbi_status == SSTOP`); elsewhere nothing is known (`false`). A process
//! that is gone or cannot be read is not stopped.

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

#[cfg(target_os = "linux")]
mod imp {
    pub fn is_stopped(pid: u32) -> bool {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        state_of_stat(&stat).is_some_and(|s| s == "T" || s == "t")
    }

    /// The state field of a `/proc/<pid>/stat` line: after the last `)`,
    /// since the command name may hold spaces and parentheses.
    pub(super) fn state_of_stat(stat: &str) -> Option<&str> {
        stat.rfind(')')
            .and_then(|i| stat.get(i + 1..))
            .and_then(|rest| rest.split_whitespace().next())
    }
}

#[cfg(target_os = "macos")]
mod imp {
    /// `SSTOP` of `<sys/proc.h>`: "process debugging or suspension".
    const SSTOP: u32 = 4;

    pub fn is_stopped(pid: u32) -> bool {
        super::bsd_info(pid).is_ok_and(|info| info.pbi_status == SSTOP)
    }
}

/// Why [`bsd_info`] has no answer.
#[cfg(target_os = "macos")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BsdInfoError {
    /// The call failed with this errno (`ESRCH`: no such process).
    Failed(i32),
    /// The kernel wrote this many bytes, less than a whole `proc_bsdinfo`.
    Short(i32),
}

/// The kernel's `proc_bsdinfo` of `pid` (`proc_pidinfo(PROC_PIDTBSDINFO)`):
/// its status, parent and start time. The one call of it: liveness
/// (`ccd-claude`) and [`is_stopped`] read it here.
#[cfg(target_os = "macos")]
pub fn bsd_info(pid: u32) -> Result<libc::proc_bsdinfo, BsdInfoError> {
    let Ok(pid) = libc::c_int::try_from(pid) else {
        return Err(BsdInfoError::Failed(libc::ESRCH));
    };
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
    let mut info = std::mem::MaybeUninit::<libc::proc_bsdinfo>::zeroed();
    #[allow(unsafe_code)] // reason: proc_pidinfo has no wrapper in nix or std
    //
    // SAFETY: `info` is a writable buffer of `size` bytes; the kernel
    // writes at most that many and returns how many it wrote. It is read
    // only when filled whole (n == size), and zeroed before besides; every
    // field of `proc_bsdinfo` is a plain integer or byte array.
    let (n, info) = unsafe {
        let n = libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            info.as_mut_ptr().cast(),
            size,
        );
        (n, (n == size).then(|| info.assume_init()))
    };
    if n <= 0 {
        return Err(BsdInfoError::Failed(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        ));
    }
    info.ok_or(BsdInfoError::Short(n))
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod imp {
    pub fn is_stopped(_pid: u32) -> bool {
        false
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

    #[cfg(target_os = "linux")]
    #[test]
    fn the_state_is_read_after_the_last_parenthesis() {
        assert_eq!(imp::state_of_stat("42 (a) b) T 1 2"), Some("T"));
        assert_eq!(imp::state_of_stat("42 (x) S 1"), Some("S"));
        assert_eq!(imp::state_of_stat("garbage"), None);
    }
}
