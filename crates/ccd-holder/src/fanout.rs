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
//! Chunks are shared between clients ([`Bytes`]): one piece of the PTY
//! reader's slab (`crate::pty_io`) per read however many clients are
//! attached.
//!
//! # Direct delivery: a small chunk to an idle client without its pump
//!
//! A keystroke's echo would otherwise cost a thread hand-off (reader →
//! the client's pump). When a chunk of at most [`DIRECT_MAX`] bytes finds
//! a client's queue empty, its pump waiting and the client's socket
//! enabled for it ([`ClientQueue::enable_direct`], after the attach reply
//! and redraw are written), [`ClientQueue::push`] leaves it out of the
//! queue and marks the client `direct_busy`; the reader, after dropping
//! the session lock, encodes the line and tries it with one non-blocking
//! `send` ([`ClientQueue::deliver_direct`], [`crate::line_socket`]), only
//! if the socket's mutex is free. If nothing went, the chunk goes back to
//! the front of the queue for the pump; if part of the line went, its
//! tail stays on the socket and the pump is woken to finish it
//! ([`Event::Finish`]). While `direct_busy` the pump takes nothing (not
//! even a resync or the exit), so lines reach the socket in stream order;
//! the reader never waits on a client here either (a full socket buffer
//! is `EAGAIN`, a busy mutex is a miss).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;

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
    /// A direct delivery left part of a line on the socket: finish it
    /// ([`crate::line_socket::LineSocket::finish`]).
    Finish,
}

/// Longest chunk delivered by the PTY reader itself (see the module docs).
pub const DIRECT_MAX: usize = 4096;

use crate::line_socket::{self, OutputLine, Tried};

/// How long an interactive client may take nothing from a full queue
/// before it is treated as stopped (dropped, resynced later) instead of
/// slowing the session down to its pace.
pub const CLIENT_STALL: Duration = Duration::from_millis(500);

#[derive(Debug)]
struct QueueState {
    chunks: VecDeque<(u64, Bytes)>,
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
    /// The reader is delivering a chunk directly: the pump takes nothing.
    direct_busy: bool,
    /// A direct delivery left a line's tail on the socket for the pump.
    partial: bool,
    /// The writer sent the exit notice ([`ClientQueue::exit_sent`]).
    exit_sent: bool,
    /// A redraw was asked for ([`ClientQueue::request_redraw`]).
    redraw: bool,
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
            direct_busy: false,
            partial: false,
            exit_sent: false,
            redraw: false,
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
    /// The client's socket, once its attach reply is written.
    direct: std::sync::OnceLock<line_socket::Shared>,
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
    /// the session module's doc); like the reader's push, never blocks.
    pub(crate) fn seed(&self, seq: u64, chunk: &Bytes) {
        self.push(seq, chunk, false);
    }

    /// Let the PTY reader deliver small chunks straight to `socket` (see
    /// the module docs); called once the attach reply and redraw are on it.
    pub fn enable_direct(&self, socket: line_socket::Shared) {
        let _ = self.direct.set(socket);
    }

    /// Called by the reader (under the session lock): never blocks on the
    /// client.
    fn push(&self, seq: u64, chunk: &Bytes, may_direct: bool) -> Pushed {
        let mut s = self.lock();
        if s.closed {
            return Pushed::Closed;
        }
        let n = chunk.len();
        if may_direct
            && n <= DIRECT_MAX
            && s.writer_waits
            && !s.direct_busy
            && !s.overflowed
            && !s.redraw
            && s.chunks.is_empty()
            && !s.partial
            && s.exited.is_none()
            && self.direct.get().is_some()
        {
            s.direct_busy = true;
            s.last_taken = Instant::now();
            return Pushed::Direct;
        }
        if s.overflowed {
            s.bytes_dropped += n as u64;
            return Pushed::Queued;
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
            s.chunks.push_back((seq, chunk.clone()));
            s.bytes += n;
        }
        let wake = s.writer_waits;
        drop(s);
        if wake {
            self.ready.notify_one();
        }
        Pushed::Queued
    }

    /// The reader's half of a direct delivery ([`Pushed::Direct`]), outside
    /// every session lock: send `out` (`chunk` at `seq`, its line encoded
    /// once for every direct client that needs one) without waiting; what
    /// did not go is queued for the pump, in front of anything pushed since.
    pub(crate) fn deliver_direct(&self, out: &OutputLine<'_>, seq: u64, chunk: &Bytes) {
        let tried = match self.direct.get().map(|sock| sock.try_lock()) {
            Some(Ok(mut sock)) => sock.try_output(out),
            _ => Tried::Nothing,
        };
        let mut s = self.lock();
        s.direct_busy = false;
        if s.closed {
            return;
        }
        if tried == Tried::Nothing {
            // Nothing went: the chunk heads the queue, as if pushed there.
            let n = chunk.len();
            if s.overflowed || s.bytes + n > self.cap {
                s.bytes_dropped += n as u64;
                if !s.overflowed {
                    s.bytes_dropped += s.bytes as u64;
                    s.chunks = VecDeque::new();
                    s.bytes = 0;
                    s.overflowed = true;
                }
            } else {
                s.chunks.push_front((seq, chunk.clone()));
                s.bytes += n;
            }
        } else if tried == Tried::Partial {
            s.partial = true;
        }
        let wake = s.writer_waits
            && (s.partial
                || !s.chunks.is_empty()
                || s.overflowed
                || s.redraw
                || s.exited.is_some());
        drop(s);
        if wake {
            self.ready.notify_one();
        }
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

    /// The client's next output is a full redraw (not counted as a
    /// resync after an overflow): its terminal was handed over while
    /// output it had not drawn was on its way.
    pub fn request_redraw(&self) {
        let mut s = self.lock();
        s.redraw = true;
        let wake = s.writer_waits;
        drop(s);
        if wake {
            self.ready.notify_one();
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
        s.redraw = false;
        s.last_taken = Instant::now();
        drop(s);
        self.taken.notify_all();
    }

    fn mark_exited(&self, exit: ExitInfo) {
        self.lock().exited = Some(exit);
        self.ready.notify_one();
    }

    /// The writer wrote [`Event::Exited`]'s notice (or gave up on it): the
    /// holder may stop without cutting it off ([`Fanout::exit_notices_sent`]).
    pub fn exit_sent(&self) {
        self.lock().exit_sent = true;
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
            if !s.direct_busy && std::mem::take(&mut s.partial) {
                s.last_taken = Instant::now();
                return Event::Finish;
            }
            if s.direct_busy {
                // The reader is sending: wait for it (it wakes us).
            } else if s.overflowed || s.redraw {
                return Event::Resync;
            } else if let Some((seq, first)) = s.chunks.pop_front() {
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
            } else if let Some(exit) = s.exited.clone() {
                return Event::Exited(exit);
            }
            s.writer_waits = true;
            let (guard, timeout) = self
                .ready
                .wait_timeout(s, wait)
                .unwrap_or_else(|p| p.into_inner());
            s = guard;
            s.writer_waits = false;
            let nothing =
                s.chunks.is_empty() && !s.overflowed && !s.redraw && !s.closed && !s.partial;
            if timeout.timed_out() && nothing && s.exited.is_none() && !s.direct_busy {
                return Event::Idle;
            }
        }
    }
}

/// What [`ClientQueue::push`] did with a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pushed {
    /// Queued (or dropped and counted: the queue overflowed).
    Queued,
    /// Left for the caller to deliver directly.
    Direct,
    /// The client is gone.
    Closed,
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
            direct: std::sync::OnceLock::new(),
        });
        if let Some(exit) = &self.exited {
            q.mark_exited(exit.clone());
        }
        self.clients.push(Arc::clone(&q));
        q
    }

    /// Queue `chunk` (starting at `seq`) for every client. Never blocks on a
    /// client; closed clients are forgotten. Returns the clients the caller
    /// delivers it to directly ([`ClientQueue::deliver_direct`], after
    /// dropping the session lock).
    #[must_use]
    pub fn push(&mut self, seq: u64, chunk: &[u8]) -> Vec<Arc<ClientQueue>> {
        if self.clients.is_empty() {
            return Vec::new();
        }
        self.push_shared(seq, &Bytes::copy_from_slice(chunk))
    }

    /// [`Fanout::push`] of a chunk already shared (with the parse backlog).
    #[must_use]
    pub fn push_shared(&mut self, seq: u64, chunk: &Bytes) -> Vec<Arc<ClientQueue>> {
        let mut direct = Vec::new();
        self.clients.retain(|c| match c.push(seq, chunk, true) {
            Pushed::Closed => false,
            Pushed::Queued => true,
            Pushed::Direct => {
                direct.push(Arc::clone(c));
                true
            }
        });
        direct
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

    /// Whether every attached client has its exit notice: each was sent
    /// it ([`ClientQueue::exit_sent`]) or is gone. The holder stops only
    /// then (or after a bounded wait), since stopping shuts the sockets:
    /// a notice still queued would be lost.
    pub fn exit_notices_sent(&self) -> bool {
        self.clients.iter().all(|c| {
            let s = c.lock();
            s.closed || s.exit_sent
        })
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
        assert!(f.push(0, b"ab").is_empty());
        assert!(f.push(2, b"cd").is_empty());
        assert!(f.push(4, b"ef").is_empty());
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
            assert!(f.push(i * 4, b"0123").is_empty());
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
        assert!(f.push(40, b"x").is_empty());
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
            assert!(f.push(i * 4, b"0123").is_empty());
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
            assert!(f.push(i * 4, b"0123").is_empty());
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
            assert!(f.push(i * 4, b"0123").is_empty());
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
        assert!(f.push(0, b"a").is_empty());
        f.mark_exited(ExitInfo {
            code: Some(0),
            signal: None,
        });
        assert!(matches!(q.next(W, 100), Event::Output { .. }));
        assert!(matches!(q.next(W, 100), Event::Exited(_)));
        assert_eq!(f.stats().len(), 1);
        assert!(matches!(gone.next(W, 100), Event::Closed));
    }

    /// A pump parked in `next` on `q` (what the reader's direct path needs).
    fn parked_pump(q: &Arc<ClientQueue>) -> std::thread::JoinHandle<Event> {
        let pq = Arc::clone(q);
        let h = std::thread::spawn(move || pq.next(Duration::from_secs(5), 100_000));
        while !q.lock().writer_waits {
            std::thread::yield_now();
        }
        h
    }

    fn read_line(r: &mut std::io::BufReader<std::os::unix::net::UnixStream>) -> String {
        use std::io::BufRead;
        let mut l = String::new();
        r.read_line(&mut l).unwrap();
        l
    }

    #[test]
    fn a_small_chunk_for_an_idle_client_goes_straight_to_its_socket() {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut peer = std::io::BufReader::new(b);
        let mut f = Fanout::default();
        let q = f.add(AttachMode::Interactive, 100_000);
        // Not before the attach reply is written: queued.
        assert!(f.push(0, b"a").is_empty());
        assert!(matches!(q.next(W, 100), Event::Output { seq: 0, .. }));
        q.enable_direct(crate::line_socket::LineSocket::shared(a));
        // A pump parked in `next`: the chunk is left to the reader.
        let pump = parked_pump(&q);
        let chunk = Bytes::from_static(b"b");
        let direct = f.push_shared(1, &chunk);
        assert_eq!(direct.len(), 1);
        // Pushed meanwhile: queued behind the one in flight.
        assert!(f.push(2, b"c").is_empty());
        direct[0].deliver_direct(&OutputLine::new("sid", 1, &chunk), 1, &chunk);
        let line = read_line(&mut peer);
        assert_eq!(
            line.as_bytes(),
            ccd_protocol::stream::encode_output_line("sid", 1, b"b")
        );
        // The pump then sends the queued one, after.
        match pump.join().unwrap() {
            Event::Output { seq, data } => assert_eq!((seq, data.as_slice()), (2, &b"c"[..])),
            e => panic!("{e:?}"),
        }
        // Too big for the direct path: queued.
        let big = vec![b'x'; DIRECT_MAX + 1];
        let pump = parked_pump(&q);
        assert!(f.push(3, &big).is_empty());
        assert!(matches!(pump.join().unwrap(), Event::Output { seq: 3, .. }));
        assert_eq!(q.stats().bytes_dropped, 0);
    }

    #[test]
    fn a_direct_chunk_the_socket_cannot_take_goes_to_the_pump_in_order() {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let sock = crate::line_socket::LineSocket::shared(a);
        // Fill the socket's buffer.
        let filler = vec![b'f'; 64 * 1024];
        let mut filled = 0usize;
        loop {
            match crate::line_socket::lock(&sock).try_line(&filler) {
                crate::line_socket::Tried::Sent => filled += filler.len(),
                crate::line_socket::Tried::Partial => {
                    // Finish it later, from the reading side's point of view.
                    filled += filler.len();
                    break;
                }
                crate::line_socket::Tried::Nothing => break,
            }
        }
        let mut f = Fanout::default();
        let q = f.add(AttachMode::Interactive, 1000);
        q.enable_direct(Arc::clone(&sock));
        let pump = parked_pump(&q);
        let chunk = Bytes::from_static(b"echo");
        let direct = f.push_shared(7, &chunk);
        assert_eq!(direct.len(), 1);
        direct[0].deliver_direct(&OutputLine::new("sid", 7, &chunk), 7, &chunk);
        // Nothing went (or the filler's tail waits): the pump gets to write.
        let ev = pump.join().unwrap();
        let mut peer = std::io::BufReader::new(b);
        let drain = std::thread::spawn(move || {
            use std::io::Read;
            let mut skip = vec![0u8; filled];
            peer.read_exact(&mut skip).unwrap();
            read_line(&mut peer)
        });
        match ev {
            Event::Output { seq, data } => {
                assert_eq!((seq, data.as_slice()), (7, &b"echo"[..]));
                let line = ccd_protocol::stream::encode_output_line("sid", 7, &data);
                crate::line_socket::lock(&sock).write_line(&line).unwrap();
            }
            e => panic!("{e:?}"),
        }
        let line = drain.join().unwrap();
        assert_eq!(
            line.as_bytes(),
            ccd_protocol::stream::encode_output_line("sid", 7, b"echo")
        );
    }
}
