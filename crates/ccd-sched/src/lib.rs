//! ccd-sched: scheduling hints for the threads on the keystroke → echo path.
//!
//! A leaf crate (libc, nix and tracing only): the CLI's terminal client,
//! the daemon's runtime workers and the holder's threads all call it.
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
//! work.
//!
//! Work that only moves a flood along must not compete on those terms: the
//! parse thread runs [`bulk`] (`SCHED_BATCH`: no wakeup preemption), and the
//! PTY reader and output pumps switch to it while their session floods
//! ([`Adaptive`]). Switching back from batch to normal is unprivileged too.
//!
//! Those hints order threads within one scheduling group. A holder leads
//! its own session, which autogroups make a group of its own, and the CPU
//! is shared between groups first: [`FloodGroup`] weighs a flooding
//! holder's whole group down, so a flood yields to other sessions too
//! (see [`group`]), while somebody types into one of them ([`typing`]: a
//! mark the holders share; with nobody typing elsewhere the weight would
//! only slow the flood's own relay).
//!
//! On macOS (see [`qos`]) bulk work runs at a lower quality-of-service
//! class (`QOS_CLASS_UTILITY`) and gets its class back when it is
//! interactive again; there is no short slice to ask for, and no
//! autogroup ([`FloodGroup`] never changes anything there).
//!
//! Best effort: older kernels ignore the field; other systems have no such
//! call. Failures are logged at debug level and otherwise ignored.
//!
//! [`session`] starts a child in a session of its own (the daemon, a
//! holder): the one `pre_exec` of the workspace's programs.

// Unsafe code only where an item allows it, with its reason
// (docs/architecture.md, "Unsafe code").
#![deny(unsafe_code)]

pub mod group;
pub mod qos;
pub mod run_state;
pub mod session;
pub mod typing;

pub use group::FloodGroup;
pub use run_state::is_stopped;
pub use typing::{Typing, TypingLook};

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
    set_policy(libc::SCHED_OTHER, SHORT_SLICE_NS);
}

/// `policy` (normal or batch, both unprivileged) and slice `runtime` (0:
/// the default) for the calling thread, keeping its nice value.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // reason: sched_setattr has no wrapper in nix or std, nor getpriority in nix
fn set_policy(policy: libc::c_int, runtime: u64) {
    // SAFETY: getpriority/sched_setattr on the calling thread (tid 0), with
    // a struct we own whose size field matches its layout; errno is the
    // calling thread's own (cleared so a -1 from getpriority is told apart).
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
        if nice == -1 && *libc::__errno_location() != 0 {
            return;
        }
        let attr = SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            policy: policy as u32,
            nice,
            runtime,
            ..SchedAttr::default()
        };
        let r = libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0);
        if r != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), policy, runtime, "scheduling hint refused");
        }
    }
}

/// Mark the calling thread as bulk work: `SCHED_BATCH` with the default
/// slice, so it never preempts a woken thread (see the module doc). Used for
/// the parser, and by [`Adaptive`] for relays while their session floods.
#[cfg(target_os = "linux")]
pub fn bulk() {
    set_policy(libc::SCHED_BATCH, 0);
}

/// macOS: undoes [`bulk`] (the thread's QoS class back to what it was;
/// see [`qos`]); no change on a thread that is not bulk.
#[cfg(target_os = "macos")]
pub fn short_slice() {
    qos::interactive();
}

/// macOS: the thread at `QOS_CLASS_UTILITY` (see [`qos`]).
#[cfg(target_os = "macos")]
pub fn bulk() {
    qos::bulk();
}

/// No such hint on other systems.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn short_slice() {}

/// No such hint on other systems.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn bulk() {}

/// A relay moving at least this much per wakeup is moving a flood.
const BULK_BYTES: usize = 2048;
/// After this many such wakeups in a row it is treated as bulk work.
const BULK_AFTER: u32 = 8;

/// Switches a relay thread (PTY reader, output pump) between the short
/// slice, while it moves keystrokes and screen updates, and [`bulk`]
/// scheduling while its session floods, so a flooding session's relays do
/// not compete on equal terms with another session's keystroke path.
/// Follows what the thread moves per wakeup: `BULK_AFTER` (8) wakeups of at
/// least `BULK_BYTES` (2 KiB) in a row make it bulk, any smaller one makes it
/// interactive again (one system call per switch).
#[derive(Debug)]
pub struct Adaptive {
    large_in_a_row: u32,
    bulk: bool,
}

impl Adaptive {
    /// Starts the calling thread interactive ([`short_slice`]).
    pub fn start() -> Self {
        short_slice();
        Self {
            large_in_a_row: 0,
            bulk: false,
        }
    }

    /// The thread moved `bytes` in one wakeup.
    pub fn moved(&mut self, bytes: usize) {
        if bytes >= BULK_BYTES {
            self.large_in_a_row = self.large_in_a_row.saturating_add(1);
            if !self.bulk && self.large_in_a_row >= BULK_AFTER {
                bulk();
                self.bulk = true;
            }
        } else {
            self.large_in_a_row = 0;
            if self.bulk {
                short_slice();
                self.bulk = false;
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// The calling thread's (policy, nice value), from
    /// `/proc/thread-self/stat` (fields 41 and 19; the command name, in
    /// parentheses, may hold spaces).
    fn policy_and_nice() -> (i32, i32) {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("stat");
        let rest = stat
            .rfind(')')
            .map(|i| &stat[i + 1..])
            .expect("a command name");
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // `fields[0]` is field 3 (the state).
        let field = |n: usize| fields[n - 3].parse::<i32>().expect("a number");
        (field(41), field(19))
    }

    fn policy() -> i32 {
        policy_and_nice().0
    }

    #[test]
    fn the_call_keeps_the_policy_and_nice_value() {
        std::thread::spawn(|| {
            let before = policy_and_nice();
            super::short_slice();
            assert_eq!(before, policy_and_nice());
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn a_flooding_relay_turns_bulk_and_back() {
        std::thread::spawn(|| {
            let nice = || policy_and_nice().1;
            let before = nice();
            // A kernel (or sandbox) that refuses batch scheduling leaves the
            // thread as it is: the hint is best effort.
            super::bulk();
            let batch_allowed = policy() == libc::SCHED_BATCH;
            super::set_policy(libc::SCHED_OTHER, 0);
            let mut a = super::Adaptive::start();
            for _ in 0..super::BULK_AFTER - 1 {
                a.moved(64 * 1024);
            }
            assert_eq!(policy(), libc::SCHED_OTHER);
            a.moved(64 * 1024);
            let want = if batch_allowed {
                libc::SCHED_BATCH
            } else {
                libc::SCHED_OTHER
            };
            assert_eq!(policy(), want);
            a.moved(3);
            assert_eq!(policy(), libc::SCHED_OTHER);
            assert_eq!(nice(), before);
        })
        .join()
        .expect("thread");
    }
}
