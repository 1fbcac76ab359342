//! ccd-sched: scheduling hints for the threads on the keystroke → echo path.
//!
//! What to ask for and when; the calls themselves (`sched_setattr`, the
//! QoS class, the autogroup's file) are `ccd_os::sched`'s, re-exported
//! ([`short_slice`], [`bulk`]). The CLI's terminal client, the daemon's
//! runtime workers and the holder's threads all call it.
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
//! On macOS (see `ccd_os::sched`) bulk work runs at a lower quality-of-service
//! class (`QOS_CLASS_UTILITY`) and gets its class back when it is
//! interactive again; there is no short slice to ask for, and no
//! autogroup ([`FloodGroup`] never changes anything there).
//!
//! Best effort: older kernels ignore the field; other systems have no such
//! call. Failures are logged at debug level and otherwise ignored.
//!
//! [`session`] (`ccd_os::session`) starts a child in a session of its own
//! (the daemon, a holder): the one `pre_exec` of the workspace's programs.

// No unsafe code here, and none may be added (docs/architecture.md,
// "Unsafe code"): the kernel calls are `ccd-os`'s.
#![forbid(unsafe_code)]

pub mod group;
pub mod run_state;
pub mod typing;

pub use ccd_os::sched::{bulk, short_slice};
/// A child in a session of its own: `ccd_os::session`, re-exported.
pub use ccd_os::session;
pub use group::FloodGroup;
pub use run_state::is_stopped;
pub use typing::{Typing, TypingLook};

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
    fn a_flooding_relay_turns_bulk_and_back() {
        std::thread::spawn(|| {
            let nice = || policy_and_nice().1;
            let before = nice();
            // A kernel (or sandbox) that refuses batch scheduling leaves the
            // thread as it is: the hint is best effort.
            super::bulk();
            let batch_allowed = policy() == libc::SCHED_BATCH;
            // Back to the normal policy.
            super::short_slice();
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
