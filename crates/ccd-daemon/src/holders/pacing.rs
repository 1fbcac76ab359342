//! When the daemon asks a holder how it is (`holder.info`), and when it
//! does not need to.
//!
//! A holder cannot tell the daemon that something changed (the holder
//! protocol has no such notification), so the daemon asks: every
//! [`FAST_TICK`] while a session starts, needs attention, has exited,
//! changed within [`QUIET_REFRESH`] or is flagged ([`HolderEntry::dirty`]:
//! its registry entry moved, a client attached through the daemon, its
//! program or the holder ended). A still session is *checked* every
//! [`QUIET_REFRESH`] instead, without asking it, through `/proc` (reading
//! it wakes nobody): the bytes its PTY reader thread has read — the
//! holder's stream position, which `holder.info` reports as
//! `output_bytes` — and its thread count ([`Probe`]). Whatever `holder.info`
//! reports of a settled session moves with one of them: output (the
//! screen, a permission dialog, the status line) is bytes read from the
//! PTY, and a connection is a thread (an attached client one more, its
//! pump), so a client coming or going changes the count. A resize that
//! matters makes the program redraw; input that matters makes it echo.
//! The reader's count is compared with the `output_bytes` of the info the
//! table holds, so output that came just after the holder answered is
//! not lost in between; the thread count is taken before each request
//! (a request leaves it as it is). Only when either moved is the holder
//! asked. Where `/proc` cannot tell (a holder whose reader thread is not
//! found by its name `holder-pty-reader`, one we may not read), it is
//! asked every [`QUIET_REFRESH`] as before. Outside Linux there is no
//! such probe at all (the `/proc` reads are compiled for Linux only):
//! every holder is [`Probe::Blind`], so a still session is asked every
//! [`QUIET_REFRESH`] — the conservative pace, one small request per
//! holder per period, and nothing it reports is missed.
//!
//! The ends of a session's program and of the holder process are waited
//! for through [`crate::exit_watch`] (pidfds on Linux, kqueue on macOS):
//! each flags the entry and wakes the loop at once. Where no such watch
//! can be had, the old signal-0 probe of the child on every fast tick
//! stays.
//!
//! The loop sleeps until the earliest moment an entry is due, or until
//! [`HolderTable::wake`] is notified (an entry flagged or added, or a
//! still one found changed by a refresh made elsewhere — a request's): with every
//! session still, it wakes once per [`QUIET_REFRESH`] for all of them
//! (checks due within half a period are done together, so they stay in
//! step); with no holder at all, not at all.

use super::{HolderEntry, HolderTable};
use crate::exit_watch::ExitWatch;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The pace of a session that is not still.
pub const FAST_TICK: Duration = Duration::from_millis(500);

/// How often a still session is checked (see the module doc); a change to
/// its registry entry, an attach or the end of its program gets it
/// refreshed at once, and `sessions.get` asks the holder itself.
pub const QUIET_REFRESH: Duration = Duration::from_secs(5);

/// Whether the ends of a holder's processes are waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum ExitWatching {
    /// Not yet (no `holder.info` yet: the pids are not known).
    #[default]
    No,
    Yes,
    /// No pidfd here: the child is probed on every fast tick.
    Unavailable,
}

/// How a holder is looked at in `/proc`: its PTY reader thread, once
/// found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Probe {
    /// Not looked for yet.
    #[default]
    Unknown,
    /// The PTY reader's thread id (Linux only: `ccd_os::process`).
    Reader(u32),
    /// Not found (another holder version, no `/proc`): asked every
    /// period.
    Blind,
}

/// `comm` of the holder's PTY reader thread (15 bytes of its name).
const READER_COMM: &str = "holder-pty-read";

impl Probe {
    /// The PTY reader thread of holder `pid` (`ccd_os::process::thread_named`:
    /// never found outside Linux, see the module doc).
    pub(super) fn find(pid: u32) -> Self {
        ccd_os::process::thread_named(pid, READER_COMM).map_or(Self::Blind, Self::Reader)
    }
}

/// Bytes thread `tid` of `pid` has read (`rchar`), if it can be told
/// (`ccd_os::process`: Linux only).
pub(super) fn bytes_read(pid: u32, tid: u32) -> Option<u64> {
    ccd_os::process::thread_bytes_read(pid, tid)
}

/// `pid`'s thread count (field 20 of its stat), if it can be told
/// (`ccd_os::process`: Linux only).
pub(super) fn threads(pid: u32) -> Option<u64> {
    ccd_os::process::thread_count(pid)
}

/// What a tick does with an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Due {
    /// Nothing.
    No,
    /// Ask the holder.
    Now,
    /// Still, and its check is due: ask only if it did something (see
    /// [`HolderEntry::moved`]).
    Check,
}

impl HolderEntry {
    /// Whether the session is in a state that is refreshed on every fast
    /// tick: starting, needing attention, exited, changed within
    /// [`QUIET_REFRESH`], flagged, or never refreshed.
    pub(super) fn fast(&self, now: Instant) -> bool {
        let (Some(info), Some(_)) = (&self.info, self.refreshed_at) else {
            return true;
        };
        let settled = info.state == ccd_protocol::holder::State::Ready
            && info.needs_attention.is_none()
            && info.exit.is_none();
        self.dirty || !settled || now.duration_since(self.changed_at) < QUIET_REFRESH
    }

    /// When its next quiet check is due (a still session).
    fn check_at(&self) -> Option<Instant> {
        let last = match (self.refreshed_at, self.checked_at) {
            (Some(r), Some(c)) => r.max(c),
            (r, c) => r.or(c)?,
        };
        Some(last + QUIET_REFRESH)
    }

    /// Whether the child is probed on every fast tick (no pidfd on it).
    fn probed(&self) -> bool {
        self.exit_watching == ExitWatching::Unavailable
            && self.info.as_ref().is_some_and(|i| i.exit.is_none())
    }

    /// What a tick at `now` does with it (see the module doc). A check due
    /// within half a period is done now, so still sessions stay in step.
    pub(super) fn due(&self, now: Instant) -> Due {
        if self.fast(now) {
            return Due::Now;
        }
        match self.check_at() {
            Some(at) if now + QUIET_REFRESH / 2 >= at => Due::Check,
            Some(_) => Due::No,
            None => Due::Now,
        }
    }

    /// Whether the holder did something since the info the table holds
    /// (see the module doc), as far as `/proc` tells; with the probe to
    /// keep (its reader thread, once looked for). True when it cannot be
    /// told.
    pub(super) fn moved(&self) -> (bool, Probe) {
        let (Some(info), Some(pid)) = (&self.info, self.holder_pid()) else {
            return (true, self.probe);
        };
        let probe = match self.probe {
            Probe::Unknown => Probe::find(pid),
            p => p,
        };
        let Probe::Reader(tid) = probe else {
            return (true, probe);
        };
        let output = bytes_read(pid, tid);
        let now = threads(pid);
        let still = output == Some(info.output_bytes) && now.is_some() && now == self.threads;
        (!still, probe)
    }

    /// When the loop must look at it next, from `now`.
    fn next_look(&self, now: Instant) -> Instant {
        if self.fast(now) || self.probed() {
            return now + FAST_TICK;
        }
        self.check_at().unwrap_or(now)
    }
}

/// Whether the session's program is known to have ended since the last
/// refresh (no such process: its holder reaps it at once). One signal-0
/// probe, no request: the fallback where no pidfd watches it.
pub(super) fn child_gone(e: &HolderEntry) -> bool {
    let Some(i) = e.info.as_ref().filter(|i| i.exit.is_none()) else {
        return false;
    };
    let Ok(pid) = i32::try_from(i.child_pid) else {
        return false;
    };
    matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

impl HolderTable {
    /// Starts waiting for the end of `e`'s program and of its holder
    /// process (once its pids are known): each flags the entry and wakes
    /// the loop.
    fn watch_exits(self: &Arc<Self>, e: &HolderEntry) {
        let Some(info) = e
            .info
            .as_ref()
            .filter(|_| e.exit_watching == ExitWatching::No)
        else {
            return;
        };
        let mut watching = ExitWatching::Yes;
        let mut gone = false;
        let pids = [
            (info.exit.is_none().then_some(info.child_pid), "program"),
            (Some(info.holder_pid), "holder"),
        ];
        for (pid, what) in pids {
            let Some(pid) = pid else { continue };
            match ExitWatch::open(pid) {
                Ok(w) => {
                    let table = Arc::clone(self);
                    let id = e.id.clone();
                    tokio::spawn(async move {
                        if let Err(error) = w.exited().await {
                            tracing::debug!(holder = %id, what, %error, "cannot wait for the end");
                            table.update(&id, |e| e.exit_watching = ExitWatching::Unavailable);
                        } else {
                            tracing::debug!(holder = %id, what, pid, "ended");
                        }
                        table.mark_dirty_holder(&id);
                    });
                }
                // Already gone.
                Err(err) if err.raw_os_error() == Some(libc::ESRCH) => gone = true,
                Err(error) => {
                    tracing::debug!(holder = %e.id, what, %error, "no pidfd; probing instead");
                    watching = ExitWatching::Unavailable;
                }
            }
        }
        self.update(&e.id, |x| {
            x.exit_watching = watching;
            x.dirty |= gone;
        });
    }

    /// Wakes the refresh watch task: an entry
    /// was flagged or added, or a still one moved.
    pub(super) fn wake(&self) {
        self.wake.notify_one();
    }
}

impl HolderTable {
    /// One pass of the refresh watch task:
    /// refreshes every entry that is due (see the module doc) and returns
    /// when the next one is (at least 10 ms from now); `None`: no holder,
    /// nothing to do until one is added ([`HolderTable::woken`]).
    pub(crate) async fn refresh_due(self: &Arc<Self>) -> Option<Instant> {
        let table = self;
        let now = Instant::now();
        for e in table.snapshot() {
            table.watch_exits(&e);
            let due = if e.probed() && child_gone(&e) {
                Due::Now
            } else {
                e.due(now)
            };
            match due {
                Due::No => {}
                Due::Now => {
                    table.refresh(&e.id).await;
                }
                Due::Check => {
                    let (moved, probe) = e.moved();
                    table.update(&e.id, |x| {
                        x.probe = probe;
                        if !moved {
                            x.checked_at = Some(now);
                        }
                    });
                    if moved {
                        table.refresh(&e.id).await;
                    }
                }
            }
        }
        table.prune_info_conns();
        let now = Instant::now();
        let next = table.snapshot().iter().map(|e| e.next_look(now)).min();
        next.map(|at| at.max(now + Duration::from_millis(10)))
    }

    /// Resolves when [`wake`](Self::wake) is called: an entry was flagged
    /// or added, or a still one moved.
    pub(crate) async fn woken(&self) {
        self.wake.notified().await
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{entry, info};
    use super::*;

    #[test]
    fn a_still_ready_session_is_checked_slowly_and_anything_else_every_tick() {
        let now = Instant::now();
        let later = now + Duration::from_millis(600);
        // Ready, refreshed just now, nothing changed for a while: checked
        // once QUIET_REFRESH has (nearly) passed since its last refresh.
        let mut e = entry(info("ready", 100));
        e.changed_at = now - QUIET_REFRESH * 2;
        e.refreshed_at = Some(now);
        e.exit_watching = ExitWatching::Yes;
        assert_eq!(e.due(later), Due::No);
        assert_eq!(e.due(now + QUIET_REFRESH), Due::Check);
        assert_eq!(e.next_look(later), now + QUIET_REFRESH);
        // A check that found nothing counts like a refresh.
        e.checked_at = Some(now + QUIET_REFRESH);
        assert_eq!(e.due(now + QUIET_REFRESH + FAST_TICK), Due::No);
        assert_eq!(e.next_look(later), now + QUIET_REFRESH * 2);
        // Due within half a period: checked with the others.
        assert_eq!(e.due(now + QUIET_REFRESH + QUIET_REFRESH / 2), Due::Check);
        e.checked_at = None;
        // Its registry entry moved.
        e.dirty = true;
        assert_eq!(e.due(later), Due::Now);
        assert_eq!(e.next_look(later), later + FAST_TICK);
        e.dirty = false;
        // It changed recently.
        e.changed_at = now;
        assert_eq!(e.due(later), Due::Now);
        // Not ready yet (the trust step, say): every tick.
        let mut s = entry(info("starting", 0));
        s.changed_at = now - QUIET_REFRESH * 2;
        s.refreshed_at = Some(now);
        assert_eq!(s.due(later), Due::Now);
        // Never refreshed.
        let mut n = entry(info("ready", 0));
        n.refreshed_at = None;
        assert_eq!(n.due(later), Due::Now);
        // Still, but its program can only be probed: looked at every tick.
        let mut p = entry(info("ready", 0));
        p.changed_at = now - QUIET_REFRESH * 2;
        p.refreshed_at = Some(now);
        p.exit_watching = ExitWatching::Unavailable;
        assert_eq!(p.due(later), Due::No);
        assert_eq!(p.next_look(later), later + FAST_TICK);
    }

    #[test]
    fn a_child_that_ended_is_noticed_without_asking_the_holder() {
        let mut child = std::process::Command::new("true").spawn().expect("true");
        let pid = child.id();
        child.wait().expect("reaped");
        let mut ended = info("ready", 0);
        ended.child_pid = pid;
        assert!(child_gone(&entry(ended)));
        let mut running = info("ready", 0);
        running.child_pid = std::process::id();
        assert!(!child_gone(&entry(running)));
        // Already known to have exited: nothing new to notice.
        let mut known = info("ready", 0);
        known.child_pid = pid;
        known.exit = serde_json::from_value(serde_json::json!({"code": 0, "signal": null})).ok();
        assert!(!child_gone(&entry(known)));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_threads_bytes_read_and_a_processs_threads_are_told() {
        use std::io::Write;
        use std::process::{Command, Stdio};
        // cat: one thread, reading its input.
        let mut cat = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("cat");
        let pid = cat.id();
        let mut input = cat.stdin.take().expect("stdin");
        assert_eq!(threads(pid), Some(1));
        let read = || bytes_read(pid, pid).expect("a child's /proc");
        // Once started (the loader reads too), it waits on its input.
        let settled = || {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let a = read();
                std::thread::sleep(Duration::from_millis(100));
                if read() == a {
                    return a;
                }
                assert!(Instant::now() < deadline, "cat never settled");
            }
        };
        let start = settled();
        input.write_all(b"0123456789").expect("write");
        let deadline = Instant::now() + Duration::from_secs(5);
        while read() < start + 10 {
            assert!(Instant::now() < deadline, "the bytes never read");
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(read(), start + 10, "nothing more read");
        // Not a holder: no reader thread by that name.
        assert_eq!(Probe::find(pid), Probe::Blind);
        drop(input);
        cat.wait().expect("cat ends");
        assert_eq!(Probe::find(u32::MAX), Probe::Blind);
        assert_eq!(threads(u32::MAX), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_holders_reader_thread_is_found_by_its_name() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (up_tx, up) = std::sync::mpsc::channel::<()>();
        let t = std::thread::Builder::new()
            .name("holder-pty-reader".into())
            .spawn(move || {
                // Named by now (std names a thread before running it).
                let _ = up_tx.send(());
                let _ = rx.recv();
            })
            .expect("a thread");
        up.recv().expect("the thread runs");
        let me = std::process::id();
        let Probe::Reader(tid) = Probe::find(me) else {
            panic!("not found");
        };
        let comm = std::fs::read_to_string(format!("/proc/{me}/task/{tid}/comm")).expect("comm");
        assert_eq!(comm.trim_end(), READER_COMM);
        assert!(bytes_read(me, tid).is_some());
        drop(tx);
        t.join().expect("joined");
    }
}
