//! Is the process named by a registry entry the one that wrote it?
//!
//! Computed on every call, never cached: the pid must exist, its current
//! start time must equal the entry's `procStart`, and the entry's
//! `pidDomain` (when present) must name this machine's pid namespace.
//! Anything that cannot be verified is [`Liveness::Unknown`], which callers
//! treat as live (never resume what might be running).
//!
//! The operating system is reached only through [`ProcessProbe`], so tests
//! can inject a fake one. The system's probe ([`system_probe`], `system`)
//! asks `ccd_os::process` for a pid's start and the machine's pid space,
//! and writes them as the CLI writes `procStart` and `pidDomain` on that
//! system: Linux's start in clock ticks since boot as a number, macOS's
//! start second in the `ps -o lstart=` form ([`lstart`]).

pub mod lstart;
mod system;

use crate::registry::RegistryEntry;
use serde::Serialize;
use std::path::Path;

/// Liveness of one registry entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Liveness {
    /// The entry's process is running.
    Live,
    /// The pid is gone, or now belongs to another process.
    Dead,
    /// Could not be verified; treated as live.
    Unknown,
}

impl Liveness {
    /// `live` or `unknown`: something may be writing this session.
    pub fn may_be_running(self) -> bool {
        !matches!(self, Liveness::Dead)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Liveness::Live => "live",
            Liveness::Dead => "dead",
            Liveness::Unknown => "unknown",
        }
    }
}

/// A liveness verdict with the reason behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub liveness: Liveness,
    pub reason: Reason,
}

/// Why a verdict was reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    StartTimeMatches,
    PidGone,
    PidReused { now: String },
    ForeignPidDomain { entry: String, ours: Option<String> },
    NoProcStart,
    UnknownProcStartFormat(String),
    Unverifiable(String),
}

/// What the OS says about a pid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessState {
    /// Running (not a zombie), with its start stamp in the platform's
    /// `procStart` form.
    Running { start: String },
    /// No such process, or a zombie (it has exited).
    Gone,
    /// The OS could not be asked (no `/proc`, permission denied, ...).
    Unverifiable(String),
}

/// The OS facts liveness depends on.
pub trait ProcessProbe {
    /// The state of `pid` now.
    fn process(&self, pid: u32) -> ProcessState;
    /// This machine's `pidDomain`, if it can be determined.
    fn pid_domain(&self) -> Option<String>;
    /// Whether `entry_stamp` (an entry's `procStart`) and `current` (from
    /// [`ProcessProbe::process`]) name the same process start; `None` when
    /// `entry_stamp` is in a form this platform does not know.
    fn same_start(&self, entry_stamp: &str, current: &str) -> Option<bool>;
}

/// Judges `entry` against the OS as it is now.
pub fn check(entry: &RegistryEntry, probe: &dyn ProcessProbe) -> Verdict {
    let v = |liveness, reason| Verdict { liveness, reason };
    if let Some(theirs) = &entry.pid_domain {
        let ours = probe.pid_domain();
        if ours.as_deref() != Some(theirs.as_str()) {
            return v(
                Liveness::Unknown,
                Reason::ForeignPidDomain {
                    entry: theirs.clone(),
                    ours,
                },
            );
        }
    }
    match probe.process(entry.pid) {
        ProcessState::Gone => v(Liveness::Dead, Reason::PidGone),
        ProcessState::Unverifiable(why) => v(Liveness::Unknown, Reason::Unverifiable(why)),
        ProcessState::Running { start } => match &entry.proc_start {
            None => v(Liveness::Unknown, Reason::NoProcStart),
            Some(stamp) => match probe.same_start(stamp, &start) {
                Some(true) => v(Liveness::Live, Reason::StartTimeMatches),
                Some(false) => v(Liveness::Dead, Reason::PidReused { now: start }),
                None => v(
                    Liveness::Unknown,
                    Reason::UnknownProcStartFormat(stamp.clone()),
                ),
            },
        },
    }
}

/// The entries of the registry in `sessions_dir` whose process may still
/// be running ([`Liveness::may_be_running`]: live, or not verifiable), by
/// pid. An unreadable registry gives none: a caller that must count it as
/// live reads it itself.
pub fn running_entries(sessions_dir: &Path, probe: &dyn ProcessProbe) -> Vec<RegistryEntry> {
    crate::registry::read_all(sessions_dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| check(e, probe).liveness.may_be_running())
        .collect()
}

/// The probe for the platform ccd runs on.
pub fn system_probe() -> Box<dyn ProcessProbe + Send + Sync> {
    Box::new(system::SystemProbe::new())
}

/// The start stamp of a running process, in the platform's `procStart` form
/// (what Claude Code would write for it). `None` when it cannot be read.
pub fn current_proc_start(pid: u32) -> Option<String> {
    match system_probe().process(pid) {
        ProcessState::Running { start } => Some(start),
        _ => None,
    }
}

/// The parent pid of a running process, where the platform tells it
/// cheaply (Linux: `/proc`; macOS: `proc_pidinfo`; `ccd_os::process`);
/// `None` elsewhere, or when `pid` is gone.
pub fn parent_pid(pid: u32) -> Option<u32> {
    ccd_os::process::parent_of(pid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    struct Fake {
        state: ProcessState,
        domain: Option<String>,
    }
    impl ProcessProbe for Fake {
        fn process(&self, _: u32) -> ProcessState {
            self.state.clone()
        }
        fn pid_domain(&self) -> Option<String> {
            self.domain.clone()
        }
        fn same_start(&self, a: &str, b: &str) -> Option<bool> {
            a.bytes().all(|c| c.is_ascii_digit()).then(|| a == b)
        }
    }

    fn entry(stamp: Option<&str>, domain: Option<&str>) -> RegistryEntry {
        crate::registry::parse_entry(br#"{"pid":1,"sessionId":"s"}"#, &PathBuf::from("1.json"))
            .map(|mut e| {
                e.proc_start = stamp.map(String::from);
                e.pid_domain = domain.map(String::from);
                e
            })
            .unwrap()
    }

    fn running(s: &str) -> Fake {
        Fake {
            state: ProcessState::Running { start: s.into() },
            domain: Some("d".into()),
        }
    }

    #[test]
    fn running_entries_are_the_ones_that_may_be_running() {
        let dir = tempfile::tempdir().unwrap();
        for (pid, stamp) in [(11, "5"), (12, "6"), (13, "Thu")] {
            std::fs::write(
                dir.path().join(format!("{pid}.json")),
                format!(r#"{{"pid":{pid},"sessionId":"s{pid}","procStart":"{stamp}"}}"#),
            )
            .unwrap();
        }
        // 11 matches the running start, 12 is a reused pid, 13's stamp
        // cannot be compared (unknown: counted as running).
        let got: Vec<String> = running_entries(dir.path(), &running("5"))
            .into_iter()
            .map(|e| e.session_id)
            .collect();
        assert_eq!(got, ["s11", "s13"]);
        assert!(running_entries(&dir.path().join("none"), &running("5")).is_empty());
    }

    #[test]
    fn table() {
        let l = |e: &RegistryEntry, p: &Fake| check(e, p).liveness;
        assert_eq!(
            l(&entry(Some("5"), Some("d")), &running("5")),
            Liveness::Live
        );
        assert_eq!(l(&entry(Some("5"), None), &running("5")), Liveness::Live);
        assert_eq!(
            l(&entry(Some("5"), Some("d")), &running("6")),
            Liveness::Dead
        );
        assert_eq!(
            l(&entry(Some("5"), Some("other")), &running("5")),
            Liveness::Unknown
        );
        assert_eq!(
            l(&entry(Some("Thu"), Some("d")), &running("5")),
            Liveness::Unknown
        );
        assert_eq!(l(&entry(None, Some("d")), &running("5")), Liveness::Unknown);
        let gone = Fake {
            state: ProcessState::Gone,
            domain: Some("d".into()),
        };
        assert_eq!(l(&entry(Some("5"), Some("d")), &gone), Liveness::Dead);
        // A foreign domain says nothing about our pids, even a gone one.
        assert_eq!(l(&entry(Some("5"), Some("x")), &gone), Liveness::Unknown);
        let blind = Fake {
            state: ProcessState::Unverifiable("no /proc".into()),
            domain: None,
        };
        assert_eq!(l(&entry(Some("5"), None), &blind), Liveness::Unknown);
        // Our own domain unknown: an entry that names one cannot be verified.
        assert_eq!(l(&entry(Some("5"), Some("d")), &blind), Liveness::Unknown);
    }
}
