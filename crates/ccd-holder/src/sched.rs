//! Scheduling hints for the threads on the keystroke → echo path.
//!
//! A keystroke crosses several threads (terminal client, daemon, holder
//! connection, PTY writer, then PTY reader, pump, daemon, client). Each one
//! sleeps until woken and then works for microseconds. When a sibling
//! session floods, both cores are busy with long-running work (its screen
//! model's parse above all), and under Linux's EEVDF scheduler a woken
//! thread with the default slice may wait out part of the running thread's
//! slice at every hop — milliseconds, summed over the hops.
//!
//! [`short_slice`] asks for a short slice (`sched_setattr` with
//! `sched_runtime` on a normal-policy thread, Linux ≥ 6.12): the thread's
//! virtual deadline comes early, so on wakeup it preempts a long-running
//! thread instead of queueing behind it. It needs no privilege, changes no
//! nice value or policy, and costs the thread nothing while it does little
//! work. The parse thread keeps the default slice (a longest slice for it,
//! tried, showed no gain).
//!
//! Best effort: older kernels ignore the field; other systems have no such
//! call. Failures are logged at debug level and otherwise ignored.

/// The slice asked for, in nanoseconds (the kernel's minimum is 0.1 ms).
#[cfg(target_os = "linux")]
const SHORT_SLICE_NS: u64 = 100_000;

/// `struct sched_attr` (VER1, 56 bytes), as `sched_setattr(2)` takes it.
#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
}

/// Ask for a short scheduler slice for the calling thread (see the module
/// doc). Keeps the thread's policy (normal) and nice value.
#[cfg(target_os = "linux")]
pub fn short_slice() {
    set_slice(SHORT_SLICE_NS);
}

#[cfg(target_os = "linux")]
fn set_slice(runtime: u64) {
    // SAFETY: getpriority/sched_setattr on the calling thread (tid 0), with
    // a struct we own whose size field matches its layout.
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
        if nice == -1 && *libc::__errno_location() != 0 {
            return;
        }
        let attr = SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            policy: libc::SCHED_OTHER as u32,
            nice,
            runtime,
            ..SchedAttr::default()
        };
        let r = libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0);
        if r != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), "short scheduler slice refused");
        }
    }
}

/// No such hint outside Linux.
#[cfg(not(target_os = "linux"))]
pub fn short_slice() {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn the_call_keeps_the_policy_and_nice_value() {
        std::thread::spawn(|| {
            // SAFETY: plain queries of the calling thread.
            let (policy, nice) = unsafe {
                (
                    libc::sched_getscheduler(0),
                    libc::getpriority(libc::PRIO_PROCESS, 0),
                )
            };
            super::short_slice();
            // SAFETY: as above.
            let after = unsafe {
                (
                    libc::sched_getscheduler(0),
                    libc::getpriority(libc::PRIO_PROCESS, 0),
                )
            };
            assert_eq!((policy, nice), after);
        })
        .join()
        .expect("thread");
    }
}
