//! macOS: a process's start time from the kernel, `proc_pidinfo` with
//! `PROC_PIDTBSDINFO` (libproc.h; `pbi_start_tvsec` is the start in unix
//! seconds, `pbi_status` its `p_stat`), written in the `ps -o lstart=`
//! form the CLI writes there ([`super::lstart`]). One system call per
//! check, no `ps` process.
//!
//! What the kernel answers is turned into a [`ProcessState`] by
//! [`state_of`], which is platform independent and tested everywhere; the
//! call itself (`kernel`) is compiled for macOS only and has not run on a
//! Mac in this project's tests.

use super::lstart::{format_lstart, parse_lstart};
#[cfg(target_os = "macos")]
use super::ProcessProbe;
use super::ProcessState;

/// The `pidDomain` the CLI writes on macOS, as public sources give it
/// (docs/claude-cli-compat.md): the platform's name. A Mac has one pid
/// namespace, so this machine's is that one.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(super) const PID_DOMAIN: &str = "darwin";

/// `p_stat` of a zombie (sys/proc.h `SZOMB`): it has exited.
const SZOMB: u32 = 5;

/// What `proc_pidinfo(pid, PROC_PIDTBSDINFO)` gave.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BsdInfo {
    /// The process: its `pbi_status`, `pbi_start_tvsec` and `pbi_ppid`.
    Found {
        status: u32,
        start_secs: u64,
        ppid: u32,
    },
    /// The call failed with this errno.
    Failed(i32),
    /// The call returned this many bytes, not a whole `proc_bsdinfo`.
    Short(i32),
}

/// The state of a pid from what the kernel said about it.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(super) fn state_of(info: BsdInfo) -> ProcessState {
    match info {
        BsdInfo::Found { status, .. } if status == SZOMB => ProcessState::Gone,
        BsdInfo::Found { start_secs, .. } => {
            match i64::try_from(start_secs).ok().and_then(format_lstart) {
                Some(start) => ProcessState::Running { start },
                None => {
                    ProcessState::Unverifiable(format!("start time {start_secs} s is out of range"))
                }
            }
        }
        BsdInfo::Failed(errno) if errno == libc::ESRCH => ProcessState::Gone,
        BsdInfo::Failed(errno) => ProcessState::Unverifiable(format!(
            "proc_pidinfo: {}",
            std::io::Error::from_raw_os_error(errno)
        )),
        BsdInfo::Short(n) => ProcessState::Unverifiable(format!("proc_pidinfo returned {n} bytes")),
    }
}

/// The parent of a running process (`None`: gone, a zombie, or no parent).
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(super) fn parent_of(info: BsdInfo) -> Option<u32> {
    match info {
        BsdInfo::Found { status, ppid, .. } if status != SZOMB && ppid > 0 => Some(ppid),
        _ => None,
    }
}

/// The parent pid of `pid`, from the kernel.
#[cfg(target_os = "macos")]
pub(super) fn parent_pid(pid: u32) -> Option<u32> {
    parent_of(KernelProbe::bsd_info(pid))
}

/// Reads the kernel's `proc_bsdinfo` of a pid.
#[cfg(target_os = "macos")]
pub(super) struct KernelProbe;

#[cfg(target_os = "macos")]
impl KernelProbe {
    fn bsd_info(pid: u32) -> BsdInfo {
        match ccd_os::process::bsd_info(pid) {
            Ok(info) => BsdInfo::Found {
                status: info.pbi_status,
                start_secs: info.pbi_start_tvsec,
                ppid: info.pbi_ppid,
            },
            Err(ccd_os::process::BsdInfoError::Failed(errno)) => BsdInfo::Failed(errno),
            Err(ccd_os::process::BsdInfoError::Short(n)) => BsdInfo::Short(n),
        }
    }
}

#[cfg(target_os = "macos")]
impl ProcessProbe for KernelProbe {
    fn process(&self, pid: u32) -> ProcessState {
        state_of(Self::bsd_info(pid))
    }

    fn pid_domain(&self) -> Option<String> {
        Some(PID_DOMAIN.to_string())
    }

    fn same_start(&self, entry_stamp: &str, current: &str) -> Option<bool> {
        same_start(entry_stamp, current)
    }
}

/// Whether two `lstart` stamps name the same second (`None`: one is not
/// in that form).
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(super) fn same_start(entry_stamp: &str, current: &str) -> Option<bool> {
    Some(parse_lstart(entry_stamp)? == parse_lstart(current)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_process_has_its_parent_a_zombie_or_a_missing_one_none() {
        let found = |status, ppid| BsdInfo::Found {
            status,
            start_secs: 1,
            ppid,
        };
        assert_eq!(parent_of(found(2, 4242)), Some(4242));
        assert_eq!(parent_of(found(SZOMB, 4242)), None);
        assert_eq!(parent_of(found(2, 0)), None);
        assert_eq!(parent_of(BsdInfo::Failed(libc::ESRCH)), None);
    }

    #[test]
    fn a_running_process_has_its_start_in_the_clis_form() {
        let s = state_of(BsdInfo::Found {
            status: 2, // SRUN
            start_secs: 1_783_570_706,
            ppid: 1,
        });
        assert_eq!(
            s,
            ProcessState::Running {
                start: "Thu Jul  9 04:18:26 2026".into()
            }
        );
        // The CLI's stamp for it, however it spaced the fields, is the same start.
        assert_eq!(
            same_start("Thu Jul 9 04:18:26 2026", "Thu Jul  9 04:18:26 2026"),
            Some(true)
        );
        assert_eq!(
            same_start("Thu Jul  9 04:18:27 2026", "Thu Jul  9 04:18:26 2026"),
            Some(false)
        );
        assert_eq!(same_start("9989", "Thu Jul  9 04:18:26 2026"), None);
    }

    #[test]
    fn zombies_and_missing_pids_are_gone_anything_else_unverifiable() {
        let zombie = BsdInfo::Found {
            status: SZOMB,
            start_secs: 1,
            ppid: 7,
        };
        assert_eq!(state_of(zombie), ProcessState::Gone);
        assert_eq!(state_of(BsdInfo::Failed(libc::ESRCH)), ProcessState::Gone);
        assert!(matches!(
            state_of(BsdInfo::Failed(libc::EPERM)),
            ProcessState::Unverifiable(_)
        ));
        assert!(matches!(
            state_of(BsdInfo::Short(12)),
            ProcessState::Unverifiable(_)
        ));
        assert!(matches!(
            state_of(BsdInfo::Found {
                status: 2,
                start_secs: u64::MAX,
                ppid: 1,
            }),
            ProcessState::Unverifiable(_)
        ));
    }
}
