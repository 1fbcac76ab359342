//! The system's [`ProcessProbe`]: a pid's start and the machine's pid
//! space from `ccd_os::process`, written as the CLI writes `procStart`
//! and `pidDomain` on the system it runs on.
//!
//! - Linux: the start is `/proc/<pid>/stat` field 22 (clock ticks since
//!   boot) as a decimal number, compared as a number; the domain is
//!   `linux:<machine-id>:pid:[<pid namespace inode>]`.
//! - macOS: the start second written in the `ps -o lstart=` form
//!   ([`super::lstart`]), compared by instant (however the CLI spaced its
//!   fields); the domain is `darwin` (the platform's name, as public
//!   sources give it: docs/claude-cli-compat.md; a Mac has one pid
//!   namespace).
//! - Elsewhere nothing can be verified: every pid is unverifiable (so
//!   treated as live).

use super::lstart::{format_lstart, parse_lstart};
use super::{ProcessProbe, ProcessState};
use ccd_os::process::{PidSpace, Start, StartForm, StartState};

/// The `pidDomain` the CLI writes on macOS.
const DARWIN_PID_DOMAIN: &str = "darwin";

/// Asks the kernel on each call; the pid domain is computed once.
pub(super) struct SystemProbe {
    domain: Option<String>,
}

impl SystemProbe {
    pub(super) fn new() -> Self {
        Self {
            domain: ccd_os::process::pid_space().map(|s| pid_domain(&s)),
        }
    }
}

/// The `pidDomain` the CLI writes for a pid space.
fn pid_domain(space: &PidSpace) -> String {
    match space {
        PidSpace::Linux {
            machine_id,
            namespace,
        } => format!("linux:{machine_id}:{namespace}"),
        PidSpace::Darwin => DARWIN_PID_DOMAIN.to_string(),
    }
}

/// A start as the CLI writes it on its system.
fn written(start: Start) -> ProcessState {
    match start {
        Start::BootTicks(ticks) => ProcessState::Running {
            start: ticks.to_string(),
        },
        Start::UnixSeconds(secs) => match i64::try_from(secs).ok().and_then(format_lstart) {
            Some(start) => ProcessState::Running { start },
            None => ProcessState::Unverifiable(format!("start time {secs} s is out of range")),
        },
    }
}

/// Whether two stamps of `form` name the same start (`None`: one is not
/// in that form).
fn same_start(form: StartForm, entry_stamp: &str, current: &str) -> Option<bool> {
    match form {
        StartForm::BootTicks => {
            let ours: u64 = entry_stamp.trim().parse().ok()?;
            let now: u64 = current.parse().ok()?;
            Some(ours == now)
        }
        StartForm::UnixSeconds => Some(parse_lstart(entry_stamp)? == parse_lstart(current)?),
        StartForm::None => None,
    }
}

impl ProcessProbe for SystemProbe {
    fn process(&self, pid: u32) -> ProcessState {
        match ccd_os::process::start_of(pid) {
            StartState::Running(start) => written(start),
            StartState::Gone => ProcessState::Gone,
            StartState::Unverifiable(why) => ProcessState::Unverifiable(why),
        }
    }

    fn pid_domain(&self) -> Option<String> {
        self.domain.clone()
    }

    fn same_start(&self, entry_stamp: &str, current: &str) -> Option<bool> {
        same_start(ccd_os::process::START_FORM, entry_stamp, current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_running_with_matching_start() {
        let probe = SystemProbe::new();
        let me = std::process::id();
        let ProcessState::Running { start } = probe.process(me) else {
            panic!("self not running");
        };
        assert_eq!(probe.same_start(&start, &start), Some(true));
        assert!(probe.pid_domain().is_some());
    }

    #[test]
    fn linux_starts_are_numbers_compared_as_numbers() {
        let s = written(Start::BootTicks(98765));
        assert_eq!(
            s,
            ProcessState::Running {
                start: "98765".into()
            }
        );
        let f = StartForm::BootTicks;
        assert_eq!(same_start(f, "98765", "98765"), Some(true));
        assert_eq!(same_start(f, " 98765\n", "98765"), Some(true));
        assert_eq!(same_start(f, "98766", "98765"), Some(false));
        assert_eq!(same_start(f, "Thu Jul  9 04:18:26 2026", "98765"), None);
    }

    #[test]
    fn a_running_process_has_its_start_in_the_clis_form() {
        let s = written(Start::UnixSeconds(1_783_570_706));
        assert_eq!(
            s,
            ProcessState::Running {
                start: "Thu Jul  9 04:18:26 2026".into()
            }
        );
        // The CLI's stamp for it, however it spaced the fields, is the same start.
        let f = StartForm::UnixSeconds;
        assert_eq!(
            same_start(f, "Thu Jul 9 04:18:26 2026", "Thu Jul  9 04:18:26 2026"),
            Some(true)
        );
        assert_eq!(
            same_start(f, "Thu Jul  9 04:18:27 2026", "Thu Jul  9 04:18:26 2026"),
            Some(false)
        );
        assert_eq!(same_start(f, "9989", "Thu Jul  9 04:18:26 2026"), None);
        assert!(matches!(
            written(Start::UnixSeconds(u64::MAX)),
            ProcessState::Unverifiable(_)
        ));
        assert_eq!(same_start(StartForm::None, "1", "1"), None);
    }

    #[test]
    fn the_pid_domain_is_written_as_the_cli_writes_it() {
        let linux = PidSpace::Linux {
            machine_id: "abc".into(),
            namespace: "pid:[4026531836]".into(),
        };
        assert_eq!(pid_domain(&linux), "linux:abc:pid:[4026531836]");
        assert_eq!(pid_domain(&PidSpace::Darwin), "darwin");
    }
}
