//! Scheduling class: how the calling thread competes for the CPU, and
//! how much its process's scheduling group weighs. What to ask for and
//! when (a relay turning bulk while it floods, a flooding holder's group
//! weighed down while somebody types elsewhere) is `ccd-sched`'s; the
//! calls are here.
//!
//! - [`short_slice`]: the thread's wakeups preempt long-running work.
//!   Linux (`linux`): `sched_setattr` with a short `sched_runtime` on the
//!   normal policy (EEVDF, ≥ 6.12), its nice value kept. macOS (`macos`):
//!   no slice to ask for; undoes [`bulk`] (the thread's QoS class back to
//!   what it was).
//! - [`bulk`]: the thread never preempts a woken one. Linux:
//!   `SCHED_BATCH`. macOS: `QOS_CLASS_UTILITY`
//!   (`pthread_set_qos_class_self_np`), the class before kept per thread
//!   ([`Lowered`], platform independent and tested everywhere).
//! - [`read_group_nice`], [`write_group_nice`]: the nice value of the
//!   process's autogroup (`/proc/self/autogroup`, Linux only; elsewhere
//!   `Unsupported`: autogroups have no twin).
//!
//! Best effort: older kernels ignore the field, other systems have no
//! such call; failures are logged at debug level and otherwise ignored.

use std::io;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as imp;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as imp;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod imp {
    pub(super) fn short_slice() {}
    pub(super) fn bulk() {}
    pub(super) fn read_group_nice() -> std::io::Result<i32> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
    pub(super) fn write_group_nice(_: i32) -> std::io::Result<()> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

/// Asks for a short scheduler slice for the calling thread (macOS: undoes
/// [`bulk`]). Keeps the thread's policy (normal) and nice value.
pub fn short_slice() {
    imp::short_slice();
}

/// Marks the calling thread as bulk work (`SCHED_BATCH`; macOS:
/// `QOS_CLASS_UTILITY`), so it never preempts a woken thread.
pub fn bulk() {
    imp::bulk();
}

/// The nice value of the calling process's scheduling group (its
/// autogroup). Err: no autogroups here, or unreadable.
pub fn read_group_nice() -> io::Result<i32> {
    imp::read_group_nice()
}

/// Sets the nice value of the calling process's scheduling group. The
/// kernel answers `EAGAIN` within 100 ms of another unprivileged change,
/// machine-wide (the caller retries).
pub fn write_group_nice(nice: i32) -> io::Result<()> {
    imp::write_group_nice(nice)
}

/// The nice value in `/proc/<pid>/autogroup` ("/autogroup-12 nice 0").
pub fn parse_nice(text: &str) -> Option<i32> {
    let mut words = text.split_whitespace();
    words.find(|w| *w == "nice")?;
    words.next()?.parse().ok()
}

/// One thread's QoS class before bulk work lowered it, so that going
/// interactive again restores it (macOS's side of [`bulk`] and
/// [`short_slice`]; platform independent). Classes are their
/// `qos_class_t` values, which rank them (higher: more important). A
/// thread is never raised above where it started, and one already at or
/// below the bulk class (or with no class: `QOS_CLASS_UNSPECIFIED`) is
/// left alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lowered {
    before: Option<u32>,
}

impl Lowered {
    /// Bulk work starts on a thread now at class `current`: the class to
    /// set (`bulk`), or `None` when nothing is to change (already lowered,
    /// or not above `bulk`).
    pub fn lower(&mut self, current: u32, bulk: u32) -> Option<u32> {
        if self.before.is_some() || current <= bulk {
            return None;
        }
        self.before = Some(current);
        Some(bulk)
    }

    /// The thread is interactive again: the class to put back, if bulk
    /// work lowered it.
    pub fn restore(&mut self) -> Option<u32> {
        self.before.take()
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_nice, Lowered};

    // `qos_class_t`'s values (`<sys/qos.h>`), spelled out so the
    // bookkeeping is tested on every system.
    const USER_INTERACTIVE: u32 = 0x21;
    const DEFAULT: u32 = 0x15;
    const UTILITY: u32 = 0x11;
    const BACKGROUND: u32 = 0x09;
    const UNSPECIFIED: u32 = 0x00;

    #[test]
    fn bulk_work_lowers_a_thread_once_and_its_end_restores_its_class() {
        let mut l = Lowered::default();
        assert_eq!(l.restore(), None, "interactive from the start: no change");
        assert_eq!(l.lower(DEFAULT, UTILITY), Some(UTILITY));
        assert_eq!(l.lower(UTILITY, UTILITY), None, "already lowered");
        assert_eq!(l.restore(), Some(DEFAULT));
        assert_eq!(l.restore(), None, "restored once");
        assert_eq!(l.lower(USER_INTERACTIVE, UTILITY), Some(UTILITY));
        assert_eq!(l.restore(), Some(USER_INTERACTIVE), "the class it had");
    }

    #[test]
    fn a_thread_at_or_below_the_bulk_class_or_without_one_is_left_alone() {
        for class in [UTILITY, BACKGROUND, UNSPECIFIED] {
            let mut l = Lowered::default();
            assert_eq!(l.lower(class, UTILITY), None, "class {class:#x}");
            assert_eq!(l.restore(), None, "class {class:#x}: nothing to restore");
        }
    }

    #[test]
    fn the_nice_value_is_read_from_the_proc_line() {
        assert_eq!(parse_nice("/autogroup-25084 nice 0\n"), Some(0));
        assert_eq!(parse_nice("/autogroup-7 nice -5\n"), Some(-5));
        assert_eq!(parse_nice("/autogroup-7 nice\n"), None);
        assert_eq!(parse_nice(""), None);
    }
}
