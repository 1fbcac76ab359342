//! macOS's side of [`crate::bulk`] and [`crate::short_slice`]: a thread's
//! quality-of-service class.
//!
//! macOS has neither `SCHED_BATCH` nor a slice to ask for; what it has is
//! the QoS class (`<pthread/qos.h>`), which sets a thread's priority band
//! and, on Apple silicon, which cores it may run on. Bulk work (the
//! parser, a relay moving a flood) drops to `QOS_CLASS_UTILITY` ("long
//! running tasks whose progress the user does not follow closely") with
//! `pthread_set_qos_class_self_np`, so a keystroke's threads, at the
//! class they started with, come first; when it is interactive again the
//! thread gets back the class it had. A thread is never raised above
//! where it started, and one already at or below the bulk class (or with
//! no class: `QOS_CLASS_UNSPECIFIED`, set up through the older priority
//! calls) is left alone.
//!
//! [`Lowered`] holds that bookkeeping (platform-independent, tested on
//! every system); the calls themselves are in `imp`, compiled for macOS
//! only and written against `<pthread/qos.h>`.

/// One thread's class before bulk work lowered it, so that going
/// interactive again restores it. Classes are their `qos_class_t` values,
/// which rank them (higher: more important).
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

#[cfg(target_os = "macos")]
pub use imp::{bulk, interactive};

#[cfg(target_os = "macos")]
mod imp {
    use super::Lowered;
    use libc::qos_class_t;
    use std::cell::Cell;

    thread_local! {
        static LOWERED: Cell<Lowered> = const { Cell::new(Lowered { before: None }) };
    }

    /// The calling thread's class (`QOS_CLASS_UNSPECIFIED` if it cannot
    /// be read).
    #[allow(unsafe_code)] // reason: pthread_get_qos_class_np has no wrapper in nix or std
    fn current() -> qos_class_t {
        let mut class = qos_class_t::QOS_CLASS_UNSPECIFIED;
        let mut relative = 0;
        // SAFETY: the calling thread's own handle and two out-parameters
        // we own.
        let r = unsafe {
            libc::pthread_get_qos_class_np(libc::pthread_self(), &mut class, &mut relative)
        };
        if r != 0 {
            return qos_class_t::QOS_CLASS_UNSPECIFIED;
        }
        class
    }

    /// The class a ranked value stands for (only values read from
    /// [`current`] or the bulk class come back here).
    fn class_of(value: u32) -> Option<qos_class_t> {
        use qos_class_t::*;
        [
            QOS_CLASS_USER_INTERACTIVE,
            QOS_CLASS_USER_INITIATED,
            QOS_CLASS_DEFAULT,
            QOS_CLASS_UTILITY,
            QOS_CLASS_BACKGROUND,
        ]
        .into_iter()
        .find(|c| *c as u32 == value)
    }

    /// Sets the calling thread's class; false (logged) when refused.
    #[allow(unsafe_code)] // reason: pthread_set_qos_class_self_np has no wrapper in nix or std
    fn set(class: qos_class_t) -> bool {
        // SAFETY: no pointers; acts on the calling thread only.
        let r = unsafe { libc::pthread_set_qos_class_self_np(class, 0) };
        if r != 0 {
            tracing::debug!(error = %std::io::Error::from_raw_os_error(r), class = class as u32, "QoS class refused");
        }
        r == 0
    }

    /// Lowers the calling thread to `QOS_CLASS_UTILITY` (see the module
    /// doc).
    pub fn bulk() {
        let mut l = LOWERED.get();
        let bulk = qos_class_t::QOS_CLASS_UTILITY;
        if let Some(to) = l.lower(current() as u32, bulk as u32) {
            if !class_of(to).is_some_and(set) {
                // Not lowered: nothing to restore.
                l.restore();
            }
        }
        LOWERED.set(l);
    }

    /// Puts back the class [`bulk`] lowered the calling thread from.
    pub fn interactive() {
        let mut l = LOWERED.get();
        if let Some(class) = l.restore().and_then(class_of) {
            set(class);
        }
        LOWERED.set(l);
    }
}

#[cfg(test)]
mod tests {
    use super::Lowered;

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
}
