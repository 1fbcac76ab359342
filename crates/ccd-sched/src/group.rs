//! [`FloodGroup`]: a flooding holder's scheduling group weighs less.
//!
//! Linux's autogroups (`kernel.sched_autogroup_enabled`, on by default in
//! most distributions' kernels) make every session (`setsid`) one
//! scheduling group: the CPU is shared between groups first, then between a
//! group's threads. A holder leads a session of its own, so its threads
//! form a group of their own, and the per-thread hints of this crate only
//! order them among themselves: a flooding holder's parser (batch policy,
//! yielding after each batch) yielded to its own relays but not to another
//! session's keystroke. That keystroke's threads, woken on the parser's
//! CPU, waited behind it for up to 6 ms while the other CPU idled (seen
//! with `perf sched` and the bench's `--echo-trace`; `SCHED_IDLE` for the
//! parser did not help either: the pick between groups comes first).
//!
//! A group's weight is its nice value, which its owner may raise and lower
//! between 0 and 19 without privilege through `/proc/self/autogroup`. While
//! the holder floods, [`FloodGroup`] sets it to [`BULK_NICE`] (weight 110
//! against 1024: the flood keeps whatever CPU nobody else wants, and yields
//! the rest); once the flood is parsed it goes back to where it was. The
//! holder asks for it only while another session is typed into
//! ([`crate::typing`]): the weight covers the whole group, the flood's own
//! relay too, and with nobody typing elsewhere it would only slow that.
//!
//! The kernel takes such a write from an unprivileged process at most once
//! per 100 ms, machine-wide, and answers `EAGAIN` sooner: the change is
//! then pending, and the owner retries it within [`FloodGroup::retry_in`].
//! Only a process that leads its session touches its group (otherwise the
//! group is shared with whoever started it); without autogroups the file
//! is missing or the write changes nothing, and the thread hints remain.

use std::io;
use std::time::{Duration, Instant};

/// The group's nice value while it floods (weight 110; nice 0 is 1024).
pub const BULK_NICE: i32 = 10;

/// The kernel's interval between two unprivileged changes, machine-wide.
pub const RETRY: Duration = Duration::from_millis(100);

/// The calling process's scheduling group, weighed down while it floods
/// (see the module doc). Owned by one thread; every call is cheap when
/// nothing changes.
#[derive(Debug)]
pub struct FloodGroup {
    core: Option<Core>,
}

impl FloodGroup {
    /// The process's own group: enabled only if the process leads its
    /// session and `/proc/self/autogroup` reads, and its nice value is below
    /// [`BULK_NICE`] (a group already lower is left alone).
    pub fn own() -> Self {
        Self {
            core: own_base().map(Core::new),
        }
    }

    /// A group that never changes (tests, other systems).
    pub fn disabled() -> Self {
        Self { core: None }
    }

    /// Whether changes are made at all.
    pub fn enabled(&self) -> bool {
        self.core.is_some()
    }

    /// Whether the owner last said the process floods.
    pub fn flooding(&self) -> bool {
        self.core.as_ref().is_some_and(|c| c.want)
    }

    /// The process floods (or no longer does): applied at once when the
    /// kernel takes it, else pending (see [`FloodGroup::retry_in`]).
    pub fn set_flooding(&mut self, flooding: bool) {
        if let Some(c) = &mut self.core {
            c.step(flooding, Instant::now(), &mut write_nice);
        }
    }

    /// When to call [`FloodGroup::set_flooding`] again to apply a pending
    /// change; `None` when nothing is pending.
    pub fn retry_in(&self) -> Option<Duration> {
        self.core.as_ref().and_then(|c| c.retry_in(Instant::now()))
    }
}

/// The decisions, apart from the file they write (unit-tested with a fake
/// writer).
#[derive(Debug)]
struct Core {
    /// The group's nice value before any change, restored after a flood.
    base: i32,
    /// What the owner last asked for.
    want: bool,
    /// What the group is set to.
    applied: bool,
    /// The last write attempted (the kernel's rate limit counts from it).
    last_try: Option<Instant>,
    /// The kernel refused a change for a reason other than its rate limit:
    /// none is tried again.
    refused: bool,
}

impl Core {
    fn new(base: i32) -> Self {
        Self {
            base,
            want: false,
            applied: false,
            last_try: None,
            refused: false,
        }
    }

    fn step(&mut self, want: bool, now: Instant, write: &mut dyn FnMut(i32) -> io::Result<()>) {
        self.want = want;
        if self.refused || self.want == self.applied || self.retry_in(now).is_some() {
            return;
        }
        self.last_try = Some(now);
        let nice = if want { BULK_NICE } else { self.base };
        match write(nice) {
            Ok(()) => {
                self.applied = want;
                tracing::debug!(nice, "scheduling group weight set");
            }
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                tracing::debug!(
                    nice,
                    "scheduling group change deferred by the kernel's rate limit"
                );
            }
            Err(e) => {
                // Nothing else will be taken either: stop asking. A group
                // left weighed down stays so only while this process lives.
                tracing::debug!(error = %e, nice, "scheduling group change refused; no more");
                self.refused = true;
            }
        }
    }

    fn retry_in(&self, now: Instant) -> Option<Duration> {
        if self.refused || self.want == self.applied {
            return None;
        }
        let t = self.last_try?;
        let next = t.checked_add(RETRY)?;
        (next > now).then(|| next - now)
    }
}

/// The group's nice value if this process may change it (see
/// [`FloodGroup::own`]).
fn own_base() -> Option<i32> {
    let leads = nix::unistd::getsid(None).is_ok_and(|sid| sid == nix::unistd::getpid());
    if !leads {
        tracing::debug!("not a session leader: the scheduling group is not this process's alone");
        return None;
    }
    let nice = ccd_os::sched::read_group_nice()
        .map_err(|e| tracing::debug!(error = %e, "no autogroup"))
        .ok()?;
    (nice < BULK_NICE).then_some(nice)
}

/// The nice value in `/proc/<pid>/autogroup` ("/autogroup-12 nice 0"):
/// `ccd_os::sched::parse_nice`.
pub use ccd_os::sched::parse_nice;

fn write_nice(nice: i32) -> io::Result<()> {
    ccd_os::sched::write_group_nice(nice)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that records what it was asked and answers from a script.
    struct Fake {
        asked: Vec<i32>,
        answers: Vec<Option<i32>>,
    }

    impl Fake {
        /// `answers`: per call, `None` for success or an errno.
        fn new(answers: &[Option<i32>]) -> Self {
            Self {
                asked: Vec::new(),
                answers: answers.iter().rev().copied().collect(),
            }
        }

        fn write(&mut self) -> impl FnMut(i32) -> io::Result<()> + '_ {
            |nice| {
                self.asked.push(nice);
                match self.answers.pop().flatten() {
                    None => Ok(()),
                    Some(errno) => Err(io::Error::from_raw_os_error(errno)),
                }
            }
        }
    }

    #[test]
    fn a_flood_weighs_the_group_down_and_its_end_restores_the_base() {
        let mut f = Fake::new(&[None, None]);
        let mut c = Core::new(3);
        let t = Instant::now();
        c.step(false, t, &mut f.write());
        c.step(true, t, &mut f.write());
        c.step(true, t + RETRY / 2, &mut f.write());
        c.step(false, t + RETRY * 2, &mut f.write());
        c.step(false, t + RETRY * 3, &mut f.write());
        assert_eq!(f.asked, [BULK_NICE, 3], "one write per change");
        assert_eq!(c.retry_in(t + RETRY * 3), None);
    }

    #[test]
    fn a_change_the_kernel_defers_is_retried_after_its_interval() {
        let mut f = Fake::new(&[None, Some(libc::EAGAIN), None]);
        let mut c = Core::new(0);
        let t = Instant::now();
        c.step(true, t, &mut f.write());
        // Within the kernel's interval of the last write: not tried.
        c.step(false, t + RETRY / 2, &mut f.write());
        assert_eq!(f.asked, [BULK_NICE]);
        assert_eq!(c.retry_in(t + RETRY / 2), Some(RETRY / 2));
        c.step(false, t + RETRY, &mut f.write());
        assert_eq!(f.asked, [BULK_NICE, 0], "tried once its interval passed");
        assert_eq!(c.retry_in(t + RETRY), Some(RETRY), "deferred: pending");
        c.step(false, t + RETRY * 2, &mut f.write());
        assert_eq!(f.asked, [BULK_NICE, 0, 0]);
        assert_eq!(c.retry_in(t + RETRY * 2), None, "applied");
    }

    #[test]
    fn a_flood_that_ends_before_its_change_was_taken_changes_nothing() {
        let mut f = Fake::new(&[None, Some(libc::EAGAIN)]);
        let mut c = Core::new(0);
        let t = Instant::now();
        c.step(true, t, &mut f.write());
        c.step(false, t + RETRY, &mut f.write());
        c.step(true, t + RETRY + RETRY / 2, &mut f.write());
        assert_eq!(c.retry_in(t + RETRY + RETRY / 2), None, "back where it is");
        c.step(true, t + RETRY * 5, &mut f.write());
        assert_eq!(f.asked, [BULK_NICE, 0]);
    }

    #[test]
    fn a_refusal_stops_all_further_writes() {
        let mut f = Fake::new(&[Some(libc::EACCES)]);
        let mut c = Core::new(0);
        let t = Instant::now();
        c.step(true, t, &mut f.write());
        for k in 1..5 {
            c.step(k % 2 == 0, t + RETRY * 10 * k, &mut f.write());
        }
        assert_eq!(f.asked, [BULK_NICE]);
    }

    /// Marks the re-executed child of the test below.
    #[cfg(target_os = "linux")]
    const CHILD: &str = "CCD_SCHED_GROUP_TEST_CHILD";

    /// Applies a change, retrying while the kernel defers it (another
    /// process on the machine may have written within its interval).
    #[cfg(target_os = "linux")]
    fn settle(g: &mut FloodGroup, flooding: bool) {
        g.set_flooding(flooding);
        let deadline = Instant::now() + Duration::from_secs(10);
        while let Some(wait) = g.retry_in() {
            assert!(Instant::now() < deadline, "the kernel kept deferring");
            std::thread::sleep(wait);
            g.set_flooding(flooding);
        }
    }

    /// Real `/proc`: run again as a child that leads its own session (a
    /// test process never does: its group is the test runner's).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_session_leader_weighs_its_own_group_down_while_flooding() {
        const NAME: &str =
            "group::tests::a_session_leader_weighs_its_own_group_down_while_flooding";
        let read = || ccd_os::sched::read_group_nice().ok();
        if std::env::var_os(CHILD).is_none() {
            assert!(
                !FloodGroup::own().enabled(),
                "the test process leads no session: its group is not its own"
            );
            let out = std::process::Command::new(std::env::current_exe().expect("exe"))
                .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
                .env(CHILD, "1")
                .output()
                .expect("run the child");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && stdout.contains("1 passed"),
                "child: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        // The child was spawned by Command: not a process group leader, so
        // setsid succeeds.
        nix::unistd::setsid().expect("setsid");
        let Some(base) = read() else {
            // A kernel without autogroups: the group is left alone.
            assert!(!FloodGroup::own().enabled());
            eprintln!("no /proc/self/autogroup: checked that nothing is changed");
            return;
        };
        let mut g = FloodGroup::own();
        assert!(g.enabled(), "a session leader with an autogroup");
        settle(&mut g, true);
        assert_eq!(read(), Some(BULK_NICE));
        settle(&mut g, false);
        assert_eq!(read(), Some(base));
    }
}
