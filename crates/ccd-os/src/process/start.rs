//! A process's start, as the kernel tells it, and the machine's pid space:
//! what liveness (`ccd-claude`) compares with a registry entry's
//! `procStart` and `pidDomain`. The form of each is the system's own
//! ([`Start`], [`PidSpace`]); writing them the way Claude Code does is
//! liveness's business.
//!
//! - Linux: `/proc/<pid>/stat` field 22, clock ticks since boot; a zombie
//!   (`Z`, `X`) has ended. The pid space is the machine id and the pid
//!   namespace (`/proc/self/ns/pid`).
//! - macOS: `proc_bsdinfo`'s `pbi_start_tvsec`, unix seconds; a zombie
//!   (`SZOMB`) has ended. One pid space per machine.
//!
//! What the macOS kernel answers is turned into a [`StartState`] by
//! [`BsdInfo::start_state`], platform independent and tested on every
//! system; the call itself is `macos`'s.

/// A process's start, in its system's own form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Linux: clock ticks since boot (`/proc/<pid>/stat` field 22).
    BootTicks(u64),
    /// macOS: seconds since the epoch (`pbi_start_tvsec`).
    UnixSeconds(u64),
}

/// The form [`start_of`](super::start_of) answers in on this system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartForm {
    BootTicks,
    UnixSeconds,
    /// Not known here.
    None,
}

/// What the system says about a pid's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartState {
    /// Running (not a zombie), started then.
    Running(Start),
    /// No such process, or a zombie (it has exited).
    Gone,
    /// The system could not be asked (no `/proc`, permission denied, ...).
    Unverifiable(String),
}

/// The machine's pid space, as the system names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PidSpace {
    /// Linux: the machine id and the pid namespace's link text
    /// (`pid:[4026531836]`).
    Linux {
        machine_id: String,
        namespace: String,
    },
    /// macOS: one pid space per machine.
    Darwin,
}

/// `p_stat` of a zombie (`<sys/proc.h>` `SZOMB`): it has exited.
pub const BSD_SZOMB: u32 = 5;

/// What `proc_pidinfo(pid, PROC_PIDTBSDINFO)` gave (macOS; the mapping
/// is tested everywhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BsdInfo {
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

impl BsdInfo {
    /// The start state of the pid from what the kernel said about it.
    pub fn start_state(self) -> StartState {
        match self {
            BsdInfo::Found { status, .. } if status == BSD_SZOMB => StartState::Gone,
            BsdInfo::Found { start_secs, .. } => {
                StartState::Running(Start::UnixSeconds(start_secs))
            }
            BsdInfo::Failed(errno) if errno == libc::ESRCH => StartState::Gone,
            BsdInfo::Failed(errno) => StartState::Unverifiable(format!(
                "proc_pidinfo: {}",
                std::io::Error::from_raw_os_error(errno)
            )),
            BsdInfo::Short(n) => {
                StartState::Unverifiable(format!("proc_pidinfo returned {n} bytes"))
            }
        }
    }

    /// The parent of a running process (`None`: gone, a zombie, or no
    /// parent).
    pub fn parent(self) -> Option<u32> {
        match self {
            BsdInfo::Found { status, ppid, .. } if status != BSD_SZOMB && ppid > 0 => Some(ppid),
            _ => None,
        }
    }
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
        assert_eq!(found(2, 4242).parent(), Some(4242));
        assert_eq!(found(BSD_SZOMB, 4242).parent(), None);
        assert_eq!(found(2, 0).parent(), None);
        assert_eq!(BsdInfo::Failed(libc::ESRCH).parent(), None);
    }

    #[test]
    fn zombies_and_missing_pids_are_gone_anything_else_unverifiable() {
        let zombie = BsdInfo::Found {
            status: BSD_SZOMB,
            start_secs: 1,
            ppid: 7,
        };
        assert_eq!(zombie.start_state(), StartState::Gone);
        assert_eq!(BsdInfo::Failed(libc::ESRCH).start_state(), StartState::Gone);
        assert!(matches!(
            BsdInfo::Failed(libc::EPERM).start_state(),
            StartState::Unverifiable(_)
        ));
        assert!(matches!(
            BsdInfo::Short(12).start_state(),
            StartState::Unverifiable(_)
        ));
        assert_eq!(
            BsdInfo::Found {
                status: 2, // SRUN
                start_secs: 1_783_570_706,
                ppid: 1,
            }
            .start_state(),
            StartState::Running(Start::UnixSeconds(1_783_570_706))
        );
    }
}
