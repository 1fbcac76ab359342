//! Accept errors: what to do when `accept(2)` fails, for the holder's and
//! the daemon's accept loops alike (moved here from `ccd-holder`, so the
//! daemon needs no holder code for its accept loop).
//!
//! A listener whose `accept` fails with `EMFILE` stays readable: the
//! connection waits in the backlog. Retrying at once spins (and logs) at
//! full speed until a descriptor frees up. So errors are classified:
//!
//! - [`AcceptAction::Retry`]: the one connection failed (it was aborted
//!   before we took it, a signal interrupted us, the network errors Linux
//!   reports through `accept`): take the next one now.
//! - [`AcceptAction::Pause`]: the process or system is out of something
//!   (descriptors, buffers, memory): wait ([`Backoff`]: 50 ms doubling to
//!   1 s) and try again; an unknown error is treated this way too.
//! - [`AcceptAction::Fatal`]: the listener itself is unusable (`EBADF`,
//!   `EINVAL`, `ENOTSOCK`, `EFAULT`): stop accepting.
//!
//! [`Backoff`] also rations the log: at most one warning a minute, however
//! the failures come (one long run, or runs broken by single successes
//! as descriptors come and go); the end of a run is logged at debug level.
//!
//! The errno values are the same on both systems but for the ones one
//! system alone reports through `accept`: Linux's `ENONET` ("machine is
//! not on the network", a retry; `linux`); macOS has none of its own
//! (`macos`). Nothing here blocks but [`Backoff`]'s caller, which sleeps
//! the pause it is given; a `Backoff` belongs to one loop.

use std::io;
use std::time::{Duration, Instant};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as imp;
#[cfg(not(target_os = "linux"))]
mod macos;
#[cfg(not(target_os = "linux"))]
use macos as imp;

/// What an accept loop should do after an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcceptAction {
    Retry,
    Pause,
    Fatal,
}

/// Classifies an `accept` error.
pub fn classify_accept_error(e: &io::Error) -> AcceptAction {
    match e.raw_os_error() {
        Some(
            libc::ECONNABORTED
            | libc::EINTR
            | libc::EAGAIN
            | libc::EPROTO
            | libc::EPERM
            | libc::ENETDOWN
            | libc::ENOPROTOOPT
            | libc::EHOSTDOWN
            | libc::EHOSTUNREACH
            | libc::EOPNOTSUPP
            | libc::ENETUNREACH,
        ) => AcceptAction::Retry,
        // What this system alone reports for one failed connection.
        Some(n) if imp::RETRY_HERE.contains(&n) => AcceptAction::Retry,
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => AcceptAction::Pause,
        Some(libc::EBADF | libc::EINVAL | libc::ENOTSOCK | libc::EFAULT) => AcceptAction::Fatal,
        _ => match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => AcceptAction::Retry,
            _ => AcceptAction::Pause,
        },
    }
}

/// The first pause after a resource error.
pub const PAUSE_MIN: Duration = Duration::from_millis(50);
/// The longest pause.
pub const PAUSE_MAX: Duration = Duration::from_secs(1);
/// While failures go on, at most one log line per this.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// The pauses of one accept loop, and its log rationing.
#[derive(Debug)]
pub struct Backoff {
    what: &'static str,
    next: Duration,
    /// Failures since the last success (0: not backing off).
    failures: u64,
    /// Failures in all, for the log.
    total: u64,
    /// The last warning, kept across successes.
    logged_at: Option<Instant>,
}

impl Backoff {
    /// `what` names the loop in log lines ("daemon", "holder").
    pub fn new(what: &'static str) -> Self {
        Self {
            what,
            next: PAUSE_MIN,
            failures: 0,
            total: 0,
            logged_at: None,
        }
    }

    /// Records a failure that asks for a pause; returns how long to wait.
    /// Logs at most once a minute.
    pub fn failed(&mut self, error: &io::Error) -> Duration {
        self.failures += 1;
        self.total += 1;
        let now = Instant::now();
        if self
            .logged_at
            .is_none_or(|t| now.duration_since(t) >= LOG_EVERY)
        {
            self.logged_at = Some(now);
            tracing::warn!(
                loop_ = self.what,
                %error,
                failures = self.failures,
                total = self.total,
                pause_max_ms = PAUSE_MAX.as_millis() as u64,
                "accept failing; pausing between attempts (logged at most once a minute)"
            );
        }
        let pause = self.next;
        self.next = (self.next * 2).min(PAUSE_MAX);
        pause
    }

    /// Records a connection taken and served: the pauses start over.
    pub fn succeeded(&mut self) {
        if self.failures > 0 {
            tracing::debug!(
                loop_ = self.what,
                failures = self.failures,
                "accept works again"
            );
        }
        self.failures = 0;
        self.next = PAUSE_MIN;
    }

    /// Failures since the last success.
    pub fn failures(&self) -> u64 {
        self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(errno: i32) -> io::Error {
        io::Error::from_raw_os_error(errno)
    }

    #[test]
    fn out_of_descriptors_pauses_an_aborted_connection_retries_a_bad_listener_stops() {
        assert_eq!(
            classify_accept_error(&os(libc::EMFILE)),
            AcceptAction::Pause
        );
        assert_eq!(
            classify_accept_error(&os(libc::ENFILE)),
            AcceptAction::Pause
        );
        assert_eq!(
            classify_accept_error(&os(libc::ENOMEM)),
            AcceptAction::Pause
        );
        assert_eq!(
            classify_accept_error(&os(libc::ECONNABORTED)),
            AcceptAction::Retry
        );
        assert_eq!(classify_accept_error(&os(libc::EINTR)), AcceptAction::Retry);
        assert_eq!(classify_accept_error(&os(libc::EBADF)), AcceptAction::Fatal);
        assert_eq!(
            classify_accept_error(&os(libc::ENOTSOCK)),
            AcceptAction::Fatal
        );
        assert_eq!(
            classify_accept_error(&io::Error::other("?")),
            AcceptAction::Pause
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn linux_retries_on_enonet() {
        assert_eq!(
            classify_accept_error(&os(libc::ENONET)),
            AcceptAction::Retry
        );
    }

    #[test]
    fn pauses_double_up_to_a_second_and_reset_after_a_success() {
        let mut b = Backoff::new("test");
        let e = os(libc::EMFILE);
        let pauses: Vec<u128> = (0..8).map(|_| b.failed(&e).as_millis()).collect();
        assert_eq!(pauses, [50, 100, 200, 400, 800, 1000, 1000, 1000]);
        assert_eq!(b.failures(), 8);
        b.succeeded();
        assert_eq!(b.failures(), 0);
        assert_eq!(b.failed(&e), PAUSE_MIN);
    }
}
