//! Output fan-out to attached clients: one bounded queue per client.
//!
//! # Invariant: the PTY reader never waits on a client
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
//! costs at most `cap` bytes of memory and never slows the session or the
//! other clients.
//!
//! Chunks are shared between clients (`Arc<[u8]>`): one allocation per PTY
//! read however many clients are attached.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::exit::ExitInfo;

/// How a client is attached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachMode {
    /// May send input and resize.
    #[default]
    Interactive,
    /// Read only.
    Observe,
}

/// Per-client counters, as reported by `holder.info`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientStats {
    /// Client id (unique within this holder).
    pub id: u64,
    /// Attach mode.
    pub mode: AttachMode,
    /// Output bytes this client never received (replaced by a resync).
    pub bytes_dropped: u64,
    /// Resyncs sent after an overflow (the initial attach resync not counted).
    pub resyncs: u64,
    /// Bytes currently queued.
    pub queued: usize,
}

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

#[derive(Debug, Default)]
struct QueueState {
    chunks: VecDeque<(u64, Arc<[u8]>)>,
    bytes: usize,
    overflowed: bool,
    closed: bool,
    exited: Option<ExitInfo>,
    bytes_dropped: u64,
    resyncs: u64,
}

/// One client's bounded output queue.
#[derive(Debug)]
pub struct ClientQueue {
    id: u64,
    mode: AttachMode,
    cap: usize,
    state: Mutex<QueueState>,
    ready: Condvar,
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
            s.chunks.push_back((seq, Arc::clone(chunk)));
            s.bytes += n;
        }
        drop(s);
        self.ready.notify_one();
        true
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
                return Event::Output { seq, data };
            }
            if let Some(exit) = s.exited.clone() {
                return Event::Exited(exit);
            }
            let (guard, timeout) = self
                .ready
                .wait_timeout(s, wait)
                .unwrap_or_else(|p| p.into_inner());
            s = guard;
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
        let chunk: Arc<[u8]> = Arc::from(chunk);
        self.clients.retain(|c| c.push(seq, &chunk));
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
