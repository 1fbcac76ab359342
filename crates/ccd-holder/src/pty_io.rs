//! The threads that own the PTY and the child:
//!
//! - the **reader** reads the master into the session ([`Session::on_output`]:
//!   screen model + fan-out; see [`crate::fanout`] for the invariant that it
//!   never waits on a client);
//! - the **parser** feeds the output to the screen model beside the stream
//!   ([`Session::parse_step`]; see [`crate::session`] for why and how the
//!   redraws still line up);
//! - the **writer** owns PTY input: everything typed (clients, the trust
//!   step) goes through [`PtyInput`]: straight to the PTY from the sender's
//!   thread when nothing is queued and the PTY takes it now (a keystroke:
//!   one thread hand-off less), else through the writer's bounded channel,
//!   in order;
//! - the **waiter** waits for the child, records its exit, reaps it.

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use portable_pty::Child;

use crate::exit;
use crate::session::{ParseStep, Session, FLOOD_BACKLOG, IDLE_SAFETY};

/// Most bytes per PTY read.
const READ_BUF: usize = 64 * 1024;
/// Bytes of each slab the reader reads into (see [`Slab`]).
const SLAB: usize = 256 * 1024;
/// A slab with less room than this left is done with: the last bytes of
/// each are read into in reads this short at most, not left unused.
const SLAB_TAIL: usize = 4 * 1024;
/// After the child exits, how long to wait for the rest of its output before
/// telling clients (a descendant may keep the PTY open).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// Start the reader thread.
pub fn spawn_reader(
    session: Arc<Session>,
    mut reader: Box<dyn Read + Send>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("holder-pty-reader".into())
        .spawn(move || {
            let mut sched = crate::sched::Adaptive::start();
            let mut slab = Slab::default();
            loop {
                match slab.read(&mut reader) {
                    Ok(None) => break,
                    Ok(Some(chunk)) => {
                        sched.moved(chunk.len());
                        session.on_output(chunk);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    // EIO: every slave fd closed.
                    Err(e) => {
                        tracing::debug!(error = %e, "pty read ended");
                        break;
                    }
                }
            }
            session.lock().output_eof = true;
            session.notify();
            session.wake_parser();
            tracing::debug!("pty reader done");
        })
}

/// Where the reader reads: one allocation of [`SLAB`] bytes cut into the
/// chunks it reads, each shared ([`Bytes`]) by the parse backlog and the
/// clients' queues, the allocation freed with its last chunk.
///
/// A flood keeps up to the backlog's cap (48 MiB) of chunks alive at once:
/// read into an allocation of their own each, they grew and shrank the
/// allocator's heap a chunk at a time (an `mprotect` and the copy per
/// read, docs/architecture.md, "Where a holder's CPU goes in a flood").
/// What a slab costs beyond its chunks: the part of it not read into yet,
/// zeroed at most [`READ_BUF`] ahead of the reads (so an idle session's
/// slab is resident only as far as it was read, and a slab is read into
/// to its last [`SLAB_TAIL`] bytes: what was zeroed is used); the chunks
/// alive pin at most two slabs more than their own bytes, since they are
/// consecutive.
#[derive(Default)]
struct Slab(BytesMut);

impl Slab {
    /// One read of `reader` into the slab: the chunk read, `None` at the
    /// end of the output.
    fn read(&mut self, reader: &mut dyn Read) -> std::io::Result<Option<Bytes>> {
        if self.0.capacity() < SLAB_TAIL {
            self.0 = BytesMut::with_capacity(SLAB);
        }
        let window = self.0.capacity().min(READ_BUF);
        // Zeroes only the bytes a previous read did not leave zeroed.
        self.0.resize(window, 0);
        let n = reader.read(&mut self.0[..])?;
        if n == 0 {
            return Ok(None);
        }
        Ok(Some(self.0.split_to(n).freeze()))
    }
}

/// Start the parser thread.
///
/// It yields the CPU after each batch (at most
/// [`crate::session::PARSE_BATCH`] bytes, with no lock held): a batch
/// thread is not preempted by a thread woken on its CPU, so without a
/// yield whatever was woken there — the kernel worker that moves every
/// PTY's input and output on this machine, a keystroke's thread — waited
/// for the next scheduler tick, up to 5 ms in a flood (`perf sched`). With
/// nothing else to run, the yield returns at once.
///
/// A yield only reaches threads of the holder's own scheduling group, so
/// the parser also owns the group's weight ([`crate::sched::FloodGroup`]):
/// down once it takes a batch from a backlog of at least
/// [`FLOOD_BACKLOG`] (the session floods) while another session of the
/// daemon was typed into lately ([`crate::sched::typing`], looked at once
/// per 100 ms at most), back once it has caught up or nobody types
/// elsewhere (asked for at once rather than after a wait for work; a
/// change the kernel defers is retried when its interval has passed).
pub fn spawn_parser(session: Arc<Session>) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("holder-parser".into())
        .spawn(move || {
            crate::sched::bulk();
            let mut group = crate::sched::FloodGroup::own();
            let mut look = crate::sched::TypingLook::default();
            // The session floods (the group is weighed down only while
            // somebody also types into another session).
            let mut floods = false;
            loop {
                let idle_wait = if group.flooding() {
                    None
                } else {
                    Some(group.retry_in().unwrap_or(IDLE_SAFETY))
                };
                match session.parse_step(idle_wait) {
                    ParseStep::Parsed { backlog } => {
                        floods = floods || backlog >= FLOOD_BACKLOG;
                        if group.enabled() {
                            group
                                .set_flooding(floods && look.other_typed_recently(&session.typing));
                        }
                        std::thread::yield_now();
                    }
                    ParseStep::CaughtUp => {
                        floods = false;
                        group.set_flooding(false);
                    }
                    ParseStep::Done => break,
                }
            }
            tracing::debug!("parser done");
        })
}

/// Longest input written straight from the sender's thread (keystrokes;
/// more goes through the writer thread).
const DIRECT_MAX: usize = 256;

/// PTY input, shared by the writer thread and every sender.
///
/// Order: `queued` counts chunks handed to the writer thread and not yet
/// written; it drops only under the `pty` lock, right after the write. A
/// sender writes directly only under that lock and while `queued` is 0 —
/// so everything it queued before is already on the PTY — and only when
/// the lock is free and the PTY polls writable (a short write then does not
/// wait for the child). Otherwise it queues (blocking while the channel is
/// full: the child is not reading), never under a session lock.
pub struct PtyInput {
    pty: Mutex<Box<dyn Write + Send>>,
    queued: AtomicUsize,
    tx: SyncSender<Vec<u8>>,
    fd: Option<OwnedFd>,
}

impl PtyInput {
    /// Input for the PTY behind `writer` (`fd`: the master, to poll; see
    /// [`crate::spawn::master_fd`]).
    pub fn new(
        writer: Box<dyn Write + Send>,
        fd: Option<OwnedFd>,
        tx: SyncSender<Vec<u8>>,
    ) -> Self {
        Self {
            pty: Mutex::new(writer),
            queued: AtomicUsize::new(0),
            tx,
            fd,
        }
    }

    /// Write `bytes` to the PTY, directly or through the writer thread (see
    /// the type docs). Err: the PTY no longer takes input.
    pub(crate) fn send(&self, bytes: Vec<u8>) -> Result<(), ()> {
        if bytes.len() <= DIRECT_MAX && self.queued.load(Ordering::Acquire) == 0 {
            if let Ok(mut w) = self.pty.try_lock() {
                if self.queued.load(Ordering::Acquire) == 0 && self.writable() {
                    return w.write_all(&bytes).and_then(|()| w.flush()).map_err(|e| {
                        tracing::debug!(error = %e, "pty write failed");
                    });
                }
            }
        }
        self.queued.fetch_add(1, Ordering::AcqRel);
        self.tx.send(bytes).map_err(|_| {
            self.queued.fetch_sub(1, Ordering::AcqRel);
        })
    }

    /// The PTY takes input now (poll, no wait).
    fn writable(&self) -> bool {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let Some(fd) = &self.fd else {
            return false;
        };
        let mut p = [PollFd::new(fd.as_fd(), PollFlags::POLLOUT)];
        let r = poll(&mut p, PollTimeout::ZERO);
        let revents = p[0].revents().unwrap_or(PollFlags::empty());
        r.is_ok_and(|n| n == 1)
            && revents.contains(PollFlags::POLLOUT)
            && !revents.intersects(PollFlags::POLLERR | PollFlags::POLLHUP)
    }
}

/// Start the writer thread (it writes what [`PtyInput`] queues).
pub fn spawn_writer(
    input: Arc<PtyInput>,
    queue: Receiver<Vec<u8>>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("holder-pty-writer".into())
        .spawn(move || {
            crate::sched::short_slice();
            for bytes in queue {
                let mut w = input.pty.lock().unwrap_or_else(|p| p.into_inner());
                let r = w.write_all(&bytes).and_then(|()| w.flush());
                input.queued.fetch_sub(1, Ordering::AcqRel);
                drop(w);
                if let Err(e) = r {
                    tracing::debug!(error = %e, "pty write failed; input writer stops");
                    break;
                }
            }
        })
}

/// Start the waiter thread.
pub fn spawn_waiter(
    session: Arc<Session>,
    child: Box<dyn Child + Send + Sync>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("holder-child-waiter".into())
        .spawn(move || {
            let pid = session.fixed.pid;
            let waited = exit::wait_exited_no_reap(pid);
            if waited {
                // A zombie now: from here on no signal is sent (crate::exit).
                session.lock().child_gone = true;
            }
            let info = exit::reap(child);
            session.lock().child_gone = true;
            tracing::info!(pid, code = ?info.code, signal = ?info.signal, "child exited");
            let (g, _) = session.wait_for(DRAIN_AFTER_EXIT, |g| g.output_eof);
            drop(g);
            // The last output parsed too (on demand, here: the backlog is
            // bounded): the final screen is what is kept.
            session.catch_up();
            let mut g = session.lock();
            g.exit = Some(info.clone());
            g.fanout.mark_exited(info);
            drop(g);
            session.notify();
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader handing out `pieces` one per read, then the end.
    struct Pieces(std::collections::VecDeque<Vec<u8>>);

    impl Read for Pieces {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some(mut p) = self.0.pop_front() else {
                return Ok(0);
            };
            let n = p.len().min(buf.len());
            buf[..n].copy_from_slice(&p[..n]);
            if n < p.len() {
                self.0.push_front(p.split_off(n));
            }
            Ok(n)
        }
    }

    #[test]
    fn the_slab_cuts_reads_from_one_allocation_and_takes_a_new_one_when_short() {
        // 300 reads of 4000 bytes: several slabs' worth.
        let pieces: Vec<Vec<u8>> = (0..300u32)
            .map(|i| vec![u8::try_from(i % 251).unwrap_or(0); 4000])
            .collect();
        let mut reader = Pieces(pieces.iter().cloned().collect());
        let mut slab = Slab::default();
        let mut chunks = Vec::new();
        while let Some(c) = slab.read(&mut reader).expect("read") {
            chunks.push(c);
        }
        assert_eq!(chunks.len(), pieces.len());
        for (c, p) in chunks.iter().zip(&pieces) {
            assert_eq!(&c[..], &p[..], "every chunk holds what was read");
        }
        // Consecutive chunks of one slab are adjacent in memory; a new slab
        // starts once fewer than SLAB_TAIL bytes are left.
        let mut slabs = 1;
        let mut used = chunks[0].len();
        for w in chunks.windows(2) {
            if w[0].as_ptr().wrapping_add(w[0].len()) == w[1].as_ptr() {
                used += w[1].len();
            } else {
                assert!(SLAB - used < SLAB_TAIL, "a slab left early");
                slabs += 1;
                used = w[1].len();
            }
        }
        // Reads of 4000 bytes go on in a slab while SLAB_TAIL is left.
        let per_slab = (SLAB - SLAB_TAIL) / 4000 + 1;
        assert_eq!(slabs, pieces.len().div_ceil(per_slab), "slabs used");
        assert!(slabs > 1);
    }

    #[test]
    fn a_read_larger_than_the_window_is_cut_at_it() {
        let mut reader = Pieces([vec![7u8; READ_BUF + 10]].into_iter().collect());
        let mut slab = Slab::default();
        let first = slab.read(&mut reader).expect("read").expect("chunk");
        let second = slab.read(&mut reader).expect("read").expect("chunk");
        assert_eq!((first.len(), second.len()), (READ_BUF, 10));
        assert!(slab.read(&mut reader).expect("read").is_none());
    }
}
