//! Output fan-out to attached clients: one bounded queue per client.
//!
//! # Invariant: the PTY reader never waits on a client that stopped reading
//!
//! The PTY reader thread pushes every chunk it reads into each client's
//! queue with [`Fanout::push`], which only takes that queue's mutex for a
//! few instructions (the client's writer never holds it while doing I/O) and
//! never blocks on a condition. A queue holds at most `cap` bytes. When a
//! chunk would exceed that, the whole queue is dropped, the bytes are counted
//! in the client's `bytes_dropped`, and the client is marked as needing a
//! resync; until it is resynced, further output for it is dropped and
//! counted too. When the client's writer comes back for more (i.e. the
//! client could take data again), it gets [`Event::Resync`] and asks the
//! session for a full redraw from the screen model ([`ccd_screen::Screen::redraw`]),
//! taken under the session lock together with the stream position, so the
//! redraw and the following output line up exactly. A slow client therefore
//! costs at most `cap` bytes of memory.
//!
//! # Flow control for interactive clients that keep reading
//!
//! Dropping is for clients that *stopped*; an interactive client (a
//! terminal) that keeps taking output loses nothing. Before pushing, and
//! outside the session lock, the reader calls [`ClientQueue::wait_room`] on
//! each interactive queue: while the chunk does not fit, it waits for the
//! client's writer to take some, but only as long as the writer has taken
//! something within [`CLIENT_STALL`] (the clock starts when the queue last
//! went from empty to non-empty or was last taken from). So the session runs
//! at the speed of its slowest *reading* terminal, as it would on a real
//! one, and a terminal that stops costs the session at most [`CLIENT_STALL`]
//! once per overflow before it is dropped as above. Observers never slow
//! the session. Only the reader pushes and only writers take, so room
//! found by `wait_room` is still there when the reader pushes.
//!
//! Chunks are shared between clients (`Arc<[u8]>`): one allocation per PTY
//! read however many clients are attached.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::exit::ExitInfo;

/// How a client is attached, and the per-client counters `holder.info`
/// reports (holder-protocol types).
pub use ccd_protocol::holder::{AttachMode, ClientStats};

/// What a client's writer should send next.
#[derive(Debug)]
pub enum Event {
    /// Output starting at stream offset `seq` (coalesced, at most
    /// [`ccd_protocol::MAX_OUTPUT_CHUNK`] bytes).
    Output {
        /// Stream offset of `data[0]`.
        seq: u64,
        /// The bytes.
        data: Vec<u8>,
    },
    /// The queue overflowed: send a full redraw.
    Resync,
    /// The child exited and all its output was delivered.
    Exited(ExitInfo),
    /// The client was closed.
    Closed,
    /// Nothing within the wait.
    Idle,
}

/// How long an interactive client may take nothing from a full queue
/// before it is treated as stopped (dropped, resynced later) instead of
/// slowing the session down to its pace.
pub const CLIENT_STALL: Duration = Duration::from_millis(500);

#[derive(Debug)]
struct QueueState {
    chunks: VecDeque<(u64, Arc<[u8]>)>,
    bytes: usize,
    overflowed: bool,
    closed: bool,
    exited: Option<ExitInfo>,
    bytes_dropped: u64,
    resyncs: u64,
    /// When the writer last took output, or the queue last went from empty
    /// to non-empty: the start of the current stall, if any.
    last_taken: Instant,
    /// The writer waits on `ready` / the reader on `taken`: a push or a take
    /// signals only then (a signal is a syscall even with no one waiting).
    writer_waits: bool,
    reader_waits: bool,
}

impl Default for QueueState {
    fn default() -> Self {
        Self {
            chunks: VecDeque::new(),
            bytes: 0,
            overflowed: false,
            closed: false,
            exited: None,
            bytes_dropped: 0,
            resyncs: 0,
            last_taken: Instant::now(),
            writer_waits: false,
            reader_waits: false,
        }
    }
}

/// One client's bounded output queue.
#[derive(Debug)]
pub struct ClientQueue {
    id: u64,
    mode: AttachMode,
    cap: usize,
    state: Mutex<QueueState>,
    /// Signalled when there is something for the writer.
    ready: Condvar,
    /// Signalled when the writer took output (room for the reader).
    taken: Condvar,
}

impl ClientQueue {
    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Client id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Attach mode.
    pub fn mode(&self) -> AttachMode {
        self.mode
    }

    /// Counters.
    pub fn stats(&self) -> ClientStats {
        let s = self.lock();
        ClientStats {
            id: self.id,
            mode: self.mode,
            bytes_dropped: s.bytes_dropped,
            resyncs: s.resyncs,
            queued: s.bytes,
        }
    }

    /// Queue a backlog chunk after a redraw (under the session lock, see
    /// [`crate::session`]); like the reader's push, never blocks.
    pub(crate) fn seed(&self, seq: u64, chunk: &Arc<[u8]>) {
        self.push(seq, chunk);
    }

    /// Called by the reader (under the session lock): never blocks on the
    /// client. Returns false once the client is closed.
    fn push(&self, seq: u64, chunk: &Arc<[u8]>) -> bool {
        let mut s = self.lock();
        if s.closed {
            return false;
        }
        let n = chunk.len();
        if s.overflowed {
            s.bytes_dropped += n as u64;
            return true;
        }
        if s.bytes + n > self.cap {
            s.bytes_dropped += (s.bytes + n) as u64;
            s.chunks = VecDeque::new();
            s.bytes = 0;
            s.overflowed = true;
            tracing::debug!(
                client = self.id,
                dropped = s.bytes_dropped,
                "client queue overflowed; will resync"
            );
        } else {
            if s.chunks.is_empty() {
                s.last_taken = Instant::now();
            }
            s.chunks.push_back((seq, Arc::clone(chunk)));
            s.bytes += n;
        }
        let wake = s.writer_waits;
        drop(s);
        if wake {
            self.ready.notify_one();
        }
        true
    }

    /// Flow control (see the module docs): for an interactive client, wait
    /// until `n` more bytes fit, the client stops taking output for
    /// `stall`, or it is closed or already overflowed. Returns at once for
    /// observers. Called by the reader, never under the session lock.
    pub fn wait_room(&self, n: usize, stall: Duration) {
        if self.mode != AttachMode::Interactive {
            return;
        }
        let mut s = self.lock();
        loop {
            if s.closed || s.overflowed || s.bytes == 0 || s.bytes + n <= self.cap {
                return;
            }
            let idle = s.last_taken.elapsed();
            if idle >= stall {
                tracing::debug!(
                    client = self.id,
                    queued = s.bytes,
                    "client took nothing for the stall time; its queue will be dropped"
                );
                return;
            }
            s.reader_waits = true;
            s = self
                .taken
                .wait_timeout(s, stall - idle)
                .unwrap_or_else(|p| p.into_inner())
                .0;
            s.reader_waits = false;
        }
    }

    /// Called by the session, under its lock, when a resync is taken: the
    /// queue restarts empty at the redraw's position.
    pub(crate) fn reset_after_resync(&self, overflow: bool) {
        let mut s = self.lock();
        s.chunks.clear();
        s.bytes = 0;
        if overflow && s.overflowed {
            s.resyncs += 1;
        }
        s.overflowed = false;
        s.last_taken = Instant::now();
        drop(s);
        self.taken.notify_all();
    }

    fn mark_exited(&self, exit: ExitInfo) {
        self.lock().exited = Some(exit);
        self.ready.notify_one();
    }

    /// The client is gone: stop queueing for it and wake its writer.
    pub fn close(&self) {
        let mut s = self.lock();
        s.closed = true;
        s.chunks.clear();
        s.bytes = 0;
        drop(s);
        self.ready.notify_all();
        self.taken.notify_all();
    }

    /// Wait up to `wait` for the next thing to send. Coalesces consecutive
    /// chunks up to `max` bytes.
    pub fn next(&self, wait: Duration, max: usize) -> Event {
        let mut s = self.lock();
        loop {
            if s.closed {
                return Event::Closed;
            }
            if s.overflowed {
                return Event::Resync;
            }
            if let Some((seq, first)) = s.chunks.pop_front() {
                s.bytes -= first.len();
                let mut data = Vec::with_capacity(first.len().min(max).max(1));
                data.extend_from_slice(&first);
                let mut end = seq + first.len() as u64;
                while let Some((next_seq, c)) = s.chunks.front() {
                    if *next_seq != end || data.len() + c.len() > max {
                        break;
                    }
                    data.extend_from_slice(c);
                    end += c.len() as u64;
                    s.bytes -= c.len();
                    s.chunks.pop_front();
                }
                s.last_taken = Instant::now();
                let wake = s.reader_waits;
                drop(s);
                if wake {
                    self.taken.notify_all();
                }
                return Event::Output { seq, data };
            }
            if let Some(exit) = s.exited.clone() {
                return Event::Exited(exit);
            }
            s.writer_waits = true;
            let (guard, timeout) = self
                .ready
                .wait_timeout(s, wait)
                .unwrap_or_else(|p| p.into_inner());
            s = guard;
            s.writer_waits = false;
            let nothing = s.chunks.is_empty() && !s.overflowed && !s.closed;
            if timeout.timed_out() && nothing && s.exited.is_none() {
                return Event::Idle;
            }
        }
    }
}

/// The set of attached clients (owned by the session, under its lock).
#[derive(Debug, Default)]
pub struct Fanout {
    clients: Vec<Arc<ClientQueue>>,
    next_id: u64,
    exited: Option<ExitInfo>,
}

impl Fanout {
    /// Register a client whose queue holds at most `cap` bytes.
    pub fn add(&mut self, mode: AttachMode, cap: usize) -> Arc<ClientQueue> {
        self.next_id += 1;
        let q = Arc::new(ClientQueue {
            id: self.next_id,
            mode,
            cap: cap.max(1),
            state: Mutex::new(QueueState::default()),
            ready: Condvar::new(),
            taken: Condvar::new(),
        });
        if let Some(exit) = &self.exited {
            q.mark_exited(exit.clone());
        }
        self.clients.push(Arc::clone(&q));
        q
    }

    /// Queue `chunk` (starting at `seq`) for every client. Never blocks on a
    /// client; closed clients are forgotten.
    pub fn push(&mut self, seq: u64, chunk: &[u8]) {
        if self.clients.is_empty() {
            return;
        }
        self.push_shared(seq, &Arc::from(chunk));
    }

    /// [`Fanout::push`] of a chunk already shared (with the parse backlog).
    pub fn push_shared(&mut self, seq: u64, chunk: &Arc<[u8]>) {
        self.clients.retain(|c| c.push(seq, chunk));
    }

    /// The interactive clients' queues, for [`ClientQueue::wait_room`]
    /// outside the session lock.
    pub fn interactive(&self) -> Vec<Arc<ClientQueue>> {
        self.clients
            .iter()
            .filter(|c| c.mode == AttachMode::Interactive)
            .cloned()
            .collect()
    }

    /// Tell every client the child exited (after its queued output).
    pub fn mark_exited(&mut self, exit: ExitInfo) {
        for c in &self.clients {
            c.mark_exited(exit.clone());
        }
        self.exited = Some(exit);
    }

    /// Counters of every attached client.
    pub fn stats(&mut self) -> Vec<ClientStats> {
        self.clients.retain(|c| !c.lock().closed);
        self.clients.iter().map(|c| c.stats()).collect()
    }

    /// Close every client (holder shutting down).
    pub fn close_all(&mut self) {
        for c in self.clients.drain(..) {
            c.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Duration = Duration::from_millis(10);

    #[test]
    fn coalesces_in_order() {
        let mut f = Fanout::default();
        let q = f.add(AttachMode::Observe, 100);
        f.push(0, b"ab");
        f.push(2, b"cd");
        f.push(4, b"ef");
        match q.next(W, 5) {
            Event::Output { seq, data } => {
                assert_eq!(seq, 0);
                assert_eq!(data, b"abcd");
            }
            e => panic!("{e:?}"),
        }
        match q.next(W, 5) {
            Event::Output { seq, data } => {
                assert_eq!(seq, 4);
                assert_eq!(data, b"ef");
            }
            e => panic!("{e:?}"),
        }
        assert!(matches!(q.next(W, 5), Event::Idle));
    }

    #[test]
    fn overflow_drops_queue_and_asks_for_resync() {
        let mut f = Fanout::default();
        let slow = f.add(AttachMode::Observe, 10);
        let fast = f.add(AttachMode::Interactive, 1000);
        for i in 0..10u64 {
            f.push(i * 4, b"0123");
            // The fast one keeps up.
            assert!(matches!(fast.next(W, 100), Event::Output { .. }));
        }
        let s = slow.stats();
        // The third chunk overflowed the 10-byte queue: all 40 bytes were dropped.
        assert_eq!(s.bytes_dropped, 40);
        assert!(matches!(slow.next(W, 100), Event::Resync));
        slow.reset_after_resync(true);
        let s = slow.stats();
        assert_eq!(s.resyncs, 1);
        assert_eq!(s.queued, 0);
        f.push(40, b"x");
        assert!(matches!(slow.next(W, 100), Event::Output { seq: 40, .. }));
        assert_eq!(fast.stats().bytes_dropped, 0);
    }

    #[test]
    fn an_interactive_client_that_keeps_reading_loses_nothing() {
        let mut f = Fanout::default();
        let q = f.add(AttachMode::Interactive, 10);
        let reader = {
            let q = Arc::clone(&q);
            std::thread::spawn(move || {
                let mut got = Vec::new();
                while got.len() < 400 {
                    std::thread::sleep(Duration::from_millis(2));
                    match q.next(Duration::from_secs(5), 3) {
                        Event::Output { data, .. } => got.extend(data),
                        e => panic!("{e:?}"),
                    }
                }
                got
            })
        };
        for i in 0..100u64 {
            q.wait_room(4, CLIENT_STALL);
            f.push(i * 4, b"0123");
        }
        let got = reader.join().unwrap();
        assert_eq!(got.len(), 400);
        assert!(got.chunks(4).all(|c| c == b"0123"));
        assert_eq!(q.stats().bytes_dropped, 0);
        assert_eq!(q.stats().resyncs, 0);
    }

    #[test]
    fn a_stopped_interactive_client_delays_the_reader_once_then_is_dropped() {
        let mut f = Fanout::default();
        let q = f.add(AttachMode::Interactive, 10);
        let stall = Duration::from_millis(100);
        let t0 = std::time::Instant::now();
        for i in 0..50u64 {
            q.wait_room(4, stall);
            f.push(i * 4, b"0123");
        }
        let waited = t0.elapsed();
        assert!(waited >= stall, "{waited:?}");
        assert!(waited < stall * 5, "waited more than once: {waited:?}");
        assert!(q.stats().bytes_dropped > 0);
        assert!(matches!(q.next(W, 100), Event::Resync));
    }

    #[test]
    fn observers_never_hold_the_reader() {
        let mut f = Fanout::default();
        let q = f.add(AttachMode::Observe, 10);
        let t0 = std::time::Instant::now();
        for i in 0..50u64 {
            q.wait_room(4, Duration::from_secs(10));
            f.push(i * 4, b"0123");
        }
        assert!(t0.elapsed() < Duration::from_secs(1));
        assert!(q.stats().bytes_dropped > 0);
    }

    #[test]
    fn exit_after_data_and_closed_clients_are_forgotten() {
        let mut f = Fanout::default();
        let q = f.add(AttachMode::Observe, 100);
        let gone = f.add(AttachMode::Observe, 100);
        gone.close();
        f.push(0, b"a");
        f.mark_exited(ExitInfo {
            code: Some(0),
            signal: None,
        });
        assert!(matches!(q.next(W, 100), Event::Output { .. }));
        assert!(matches!(q.next(W, 100), Event::Exited(_)));
        assert_eq!(f.stats().len(), 1);
        assert!(matches!(gone.next(W, 100), Event::Closed));
    }
}
