//! The environment variables that exist only for tests and benchmarks
//! ([`Hook`]): shorter timers, a holder that plays an older one, a pause
//! in the middle of a trim, a dashboard that exits after its first frame,
//! a machine that rebooted.
//! Each is read through [`Hook::read`], which reads the environment only
//! when this crate's `test-hooks` feature is on ([`ENABLED`]); without it
//! every hook is absent, whatever the environment says, so a ccd built
//! without the feature (`cargo install`, `cargo build --release -p ccd`)
//! behaves as configured and nothing else.
//!
//! Who turns it on: `ccd`'s dev-dependency on this crate (so the `ccd`
//! binary that `cargo test` builds for the integration tests has it) and
//! `ccd-bench`'s dependency (a build of `-p ccd -p ccd-bench` unifies it
//! into the `ccd` binary beside the benchmarks). `ccd`'s own `test-hooks`
//! feature turns it on by hand.
//!
//! Real configuration read from the environment is not here:
//! `CCD_CONFIG`, `CCD_STATE_DIR`, `CCD_SOCKET_DIR`, `CCD_CLAUDE_BIN`,
//! `CCD_MEMORY_BUDGET`, `CCD_HOST`, `CCD_SSH_COMMAND`, `CCD_LOG`,
//! `CCD_TERMINAL_HANDOFF` (documented for users).

#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::str::FromStr;

/// Whether hooks are read (the `test-hooks` feature).
pub const ENABLED: bool = cfg!(feature = "test-hooks");

/// One test hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// `CCD_TRUST_STABLE_MS`: how long the trust dialog must be unchanged
    /// before the first key (default 1000).
    TrustStableMs,
    /// `CCD_REAP_IDLE_SECS`: the reaper's idle time, over the config's
    /// `reap_idle_minutes`.
    ReapIdleSecs,
    /// `CCD_REAP_MIN_IDLE_SECS`: the memory reaper's least idle time, over
    /// the config's `reap_min_idle_minutes`.
    ReapMinIdleSecs,
    /// `CCD_COST_INTERVAL_MS`: how often the cost board samples.
    CostIntervalMs,
    /// `CCD_RESUME_SETTLE_MS`: the window a resume is checked in.
    ResumeSettleMs,
    /// `CCD_HOLDER_LOG_CAP`: a holder log's cap, in bytes.
    HolderLogCap,
    /// `CCD_HOLDER_PROTOCOL_MAX`: the highest holder protocol a holder
    /// agrees to (a current holder run as an older one).
    HolderProtocolMax,
    /// `CCD_TEST_TRIM_PAUSE_DIR`: a trim pauses between its passes until
    /// `<dir>/go` exists.
    TrimPauseDir,
    /// `CCD_UI_EXIT_AFTER_FIRST_FRAME=1`: `ccd ui` exits after its first
    /// frame that shows the list, printing how long it took
    /// (`ccd-bench ui`).
    UiExitAfterFirstFrame,
    /// `CCD_UI_TEST_ATTACH_DELAY_MS`: `ccd ui` waits this long between
    /// leaving its screen and attaching.
    UiAttachDelayMs,
    /// `CCD_UI_PANIC_FOR_TEST=1`: `ccd ui` panics after its first frame
    /// that shows the list (the terminal must come back).
    UiPanic,
    /// `CCD_TEST_BOOT_ID`: the daemon takes this as the machine's boot id
    /// instead of the system's (`ccd_os::boot`): a new value simulates a
    /// reboot.
    BootId,
}

impl Hook {
    /// Every hook.
    pub const ALL: [Hook; 12] = [
        Hook::TrustStableMs,
        Hook::ReapIdleSecs,
        Hook::ReapMinIdleSecs,
        Hook::CostIntervalMs,
        Hook::ResumeSettleMs,
        Hook::HolderLogCap,
        Hook::HolderProtocolMax,
        Hook::TrimPauseDir,
        Hook::UiExitAfterFirstFrame,
        Hook::UiAttachDelayMs,
        Hook::UiPanic,
        Hook::BootId,
    ];

    /// The environment variable.
    pub const fn name(self) -> &'static str {
        match self {
            Hook::TrustStableMs => "CCD_TRUST_STABLE_MS",
            Hook::ReapIdleSecs => "CCD_REAP_IDLE_SECS",
            Hook::ReapMinIdleSecs => "CCD_REAP_MIN_IDLE_SECS",
            Hook::CostIntervalMs => "CCD_COST_INTERVAL_MS",
            Hook::ResumeSettleMs => "CCD_RESUME_SETTLE_MS",
            Hook::HolderLogCap => "CCD_HOLDER_LOG_CAP",
            Hook::HolderProtocolMax => "CCD_HOLDER_PROTOCOL_MAX",
            Hook::TrimPauseDir => "CCD_TEST_TRIM_PAUSE_DIR",
            Hook::UiExitAfterFirstFrame => "CCD_UI_EXIT_AFTER_FIRST_FRAME",
            Hook::UiAttachDelayMs => "CCD_UI_TEST_ATTACH_DELAY_MS",
            Hook::UiPanic => "CCD_UI_PANIC_FOR_TEST",
            Hook::BootId => "CCD_TEST_BOOT_ID",
        }
    }

    /// The variable's value, when hooks are read and it is set.
    pub fn read(self) -> Option<OsString> {
        if ENABLED {
            std::env::var_os(self.name())
        } else {
            None
        }
    }

    /// The value as a number (or any `FromStr`), surrounding blanks
    /// ignored; `None` when absent, not UTF-8 or not one.
    pub fn parse<T: FromStr>(self) -> Option<T> {
        self.read()?.to_str()?.trim().parse().ok()
    }

    /// Set to `1`.
    pub fn is_on(self) -> bool {
        self.read().is_some_and(|v| v == "1")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hook_is_listed_once_with_a_ccd_name() {
        let mut names: Vec<_> = Hook::ALL.iter().map(|h| h.name()).collect();
        assert!(names.iter().all(|n| n.starts_with("CCD_")));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Hook::ALL.len());
    }

    /// A build without the feature (`cargo test -p ccd-test-hooks`) reads
    /// nothing; one with it (`--features test-hooks`, or any build that
    /// includes ccd's tests or ccd-bench) reads the environment.
    #[test]
    fn a_hook_is_read_only_with_the_feature() {
        // The only test here that touches the environment.
        std::env::set_var(Hook::HolderLogCap.name(), " 4096 ");
        std::env::set_var(Hook::UiPanic.name(), "1");
        if ENABLED {
            assert_eq!(Hook::HolderLogCap.parse::<u64>(), Some(4096));
            assert!(Hook::UiPanic.is_on());
        } else {
            assert_eq!(Hook::HolderLogCap.read(), None);
            assert_eq!(Hook::HolderLogCap.parse::<u64>(), None);
            assert!(!Hook::UiPanic.is_on());
        }
        assert_eq!(Hook::ReapIdleSecs.parse::<u64>(), None, "unset");
    }
}
