//! macOS: the calling thread's quality-of-service class
//! (`<pthread/qos.h>`), which sets its priority band and, on Apple
//! silicon, which cores it may run on. Bulk work drops to
//! `QOS_CLASS_UTILITY` ("long running tasks whose progress the user does
//! not follow closely"); [`short_slice`] gives the thread back the class
//! it had ([`Lowered`] keeps it, per thread). No autogroups: the group
//! calls answer `Unsupported`. Compiled for macOS only; not run on a Mac
//! in this project's tests.

use super::Lowered;
use libc::qos_class_t;
use std::cell::Cell;

thread_local! {
    static LOWERED: Cell<Lowered> = const { Cell::new(Lowered { before: None }) };
}

/// The calling thread's class (`QOS_CLASS_UNSPECIFIED` if it cannot
/// be read).
#[allow(unsafe_code)] // reason: pthread_get_qos_class_np has no wrapper in nix, rustix or std
fn current() -> qos_class_t {
    let mut class = qos_class_t::QOS_CLASS_UNSPECIFIED;
    let mut relative = 0;
    let (c, rel) = (&mut class, &mut relative);
    // SAFETY: the calling thread's own handle and two out-parameters
    // we own.
    let r = unsafe { libc::pthread_get_qos_class_np(libc::pthread_self(), c, rel) };
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
#[allow(unsafe_code)] // reason: pthread_set_qos_class_self_np has no wrapper in nix, rustix or std
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
pub(super) fn bulk() {
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
pub(super) fn short_slice() {
    let mut l = LOWERED.get();
    if let Some(class) = l.restore().and_then(class_of) {
        set(class);
    }
    LOWERED.set(l);
}

pub(super) fn read_group_nice() -> std::io::Result<i32> {
    Err(std::io::ErrorKind::Unsupported.into())
}

pub(super) fn write_group_nice(_: i32) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}
