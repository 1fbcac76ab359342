//! A link: one connection (a local socket or an ssh-stdio pipe) shared by
//! any number of threads, carrying concurrent calls, each with its own id
//! and deadline, and the notifications that arrive, each routed to
//! whoever subscribed to its method. A front end that shows several
//! machines (the dashboard, a web server) keeps one link per machine.
//!
//! ```no_run
//! use ccd_client::{Client, Link, SocketDir};
//! use ccd_protocol::methods::events::{EventNotification, EventsSubscribe, SubscribeParams};
//! use ccd_protocol::methods::daemon::DaemonStatus;
//! use ccd_protocol::NotificationKind;
//! # fn main() -> Result<(), ccd_client::ClientError> {
//! let client = Client::connect(&SocketDir::resolve(None), "my-front-end/1")?;
//! let link = Link::builder()
//!     // Runs on the link's reader thread: must not block (try_send).
//!     .subscribe(EventNotification::NAME, |n| {
//!         println!("event {:?}", n.params);
//!         true // false: unsubscribe
//!     })
//!     .on_close(|why| eprintln!("link closed: {why}"))
//!     .start(client)?;
//! link.call::<EventsSubscribe>(&SubscribeParams { types: None })?;
//! // From any thread, concurrently (`Link` is `Clone`):
//! let status = link.call::<DaemonStatus>(&Default::default())?;
//! # let _ = status;
//! link.close(); // or drop every clone
//! # Ok(()) }
//! ```
//!
//! Who owns what, and what may block:
//! - the [`Link`] handles (cheap clones) share the writing half behind a
//!   mutex and the [`Router`] behind another. A call takes the writer's
//!   lock for its one write (each write bounded by
//!   [`deadline::CALL_TIMEOUT`]: a peer that stops reading fails it as
//!   not answering), registers its id with its deadline in the router,
//!   and blocks its own thread on its own channel until the reply, the
//!   deadline ([`deadline::deadline_for`]; the peer is checked for being
//!   stopped every [`deadline::STOPPED_CHECK`] meanwhile), or the end of
//!   the connection. Calls from several threads are in flight at once.
//! - the reader thread (one per link) owns the reading half (and with it
//!   the ssh process under a remote link, ended when the thread ends). It
//!   hands each reply to the call registered under its id (a reply to a
//!   call given up on, or to no call, is dropped), a line over the
//!   client's bound to the oldest call waiting (as too large, not a
//!   timeout), and each notification to the sinks subscribed to its
//!   method, in order, on this thread: a sink must not block, and must not
//!   call the link (a full queue is the sink's to handle: drop, and ask
//!   for a fresh listing, say). Notifications that came before the link
//!   started (the client's queue) go first.
//! - at the end of the stream (the peer closed, a read error, or
//!   [`Link::close`]), every pending call fails with
//!   [`ClientError::LinkClosed`] naming the peer, the method and why, the
//!   `on_close` callbacks run once (on the reader thread), and every later
//!   call fails the same way at once. A link is never reopened: make a new
//!   one.
//!
//! The routing is sans-IO in [`Router`] (pending calls by id with their
//! deadlines), so it is tested without a connection.

use super::{from_result, to_params, Client, ClientError, Oversized, PeerInfo, Reader, Writer};
use crate::deadline;
use ccd_protocol::{Id, Incoming, Method, Notification, Response, RpcError};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What a call waiting on a link is told.
#[derive(Debug)]
pub enum Outcome {
    /// The peer's reply: a result or its JSON-RPC error.
    Reply(Result<Value, RpcError>),
    /// A line over the client's bound came while this call was the oldest
    /// waiting (most likely its reply); it was dropped.
    TooLarge(Oversized),
    /// The deadline passed (after `waited`), or the peer was seen stopped.
    Expired { waited: Duration },
    /// The connection ended before the reply (why).
    Closed(String),
}

/// One call waiting.
struct Pending<W> {
    method: String,
    started: Instant,
    until: Instant,
    waiter: W,
    /// Registration order: the oldest is told of a line over the bound.
    seq: u64,
}

/// The calls in flight on one connection, by id, with their deadlines:
/// sans-IO (times are given, waiters are whatever the caller uses to be
/// woken: a channel in [`Link`]). Every method returns the waiters to
/// tell and what to tell them; nothing here blocks.
pub struct Router<W> {
    pending: HashMap<Id, Pending<W>>,
    next_seq: u64,
    /// Why the connection ended, once it has.
    closed: Option<String>,
}

impl<W> Default for Router<W> {
    fn default() -> Self {
        Router {
            pending: HashMap::new(),
            next_seq: 0,
            closed: None,
        }
    }
}

impl<W> Router<W> {
    /// A call sent as `id`, waited for until `until`. A closed router
    /// gives the waiter back with why it closed.
    pub fn register(
        &mut self,
        id: Id,
        method: &str,
        now: Instant,
        until: Instant,
        waiter: W,
    ) -> Result<(), (W, String)> {
        if let Some(why) = &self.closed {
            return Err((waiter, why.clone()));
        }
        self.next_seq += 1;
        self.pending.insert(
            id,
            Pending {
                method: method.to_string(),
                started: now,
                until,
                waiter,
                seq: self.next_seq,
            },
        );
        Ok(())
    }

    /// Gives up on `id` (its write failed); its reply, if one comes, is
    /// dropped.
    pub fn cancel(&mut self, id: &Id) -> Option<W> {
        self.pending.remove(id).map(|p| p.waiter)
    }

    /// The waiter of the call `r` answers, with the reply; `None` when no
    /// call waits under its id (given up on: late; or never made).
    pub fn on_response(&mut self, r: Response) -> Option<(W, Outcome)> {
        let id = r.id.as_ref()?;
        let p = self.pending.remove(id)?;
        Some((p.waiter, Outcome::Reply(r.outcome)))
    }

    /// A line over the bound came: the oldest call waiting is told (its
    /// reply, most likely); `None` when none waits.
    pub fn on_oversized(&mut self, o: Oversized) -> Option<(W, String, Outcome)> {
        let id = self
            .pending
            .iter()
            .min_by_key(|(_, p)| p.seq)
            .map(|(id, _)| id.clone())?;
        let p = self.pending.remove(&id)?;
        Some((p.waiter, p.method, Outcome::TooLarge(o)))
    }

    /// Every call whose deadline is at or before `now`, removed, each
    /// with its method and how long it was waited for.
    pub fn expire(&mut self, now: Instant) -> Vec<(W, String, Outcome)> {
        let due: Vec<Id> = self
            .pending
            .iter()
            .filter(|(_, p)| p.until <= now)
            .map(|(id, _)| id.clone())
            .collect();
        due.into_iter()
            .filter_map(|id| self.pending.remove(&id))
            .map(|p| {
                let waited = p.until.saturating_duration_since(p.started);
                (p.waiter, p.method, Outcome::Expired { waited })
            })
            .collect()
    }

    /// Ends `id`'s wait now as expired (its peer was seen stopped): told
    /// as its whole deadline, as [`Client::call`] tells it.
    pub fn expire_now(&mut self, id: &Id) -> Option<(W, String, Outcome)> {
        let p = self.pending.remove(id)?;
        let waited = p.until.saturating_duration_since(p.started);
        Some((p.waiter, p.method, Outcome::Expired { waited }))
    }

    /// The connection ended (why): every call waiting, each with its
    /// method; later registrations are refused. Only the first close
    /// counts.
    pub fn close(&mut self, why: &str) -> Vec<(W, String, Outcome)> {
        if self.closed.is_none() {
            self.closed = Some(why.to_string());
        }
        let why = self.closed.clone().unwrap_or_default();
        self.pending
            .drain()
            .map(|(_, p)| (p.waiter, p.method, Outcome::Closed(why.clone())))
            .collect()
    }

    /// Why the connection ended, once it has.
    pub fn closed(&self) -> Option<&str> {
        self.closed.as_deref()
    }

    /// How many calls wait.
    pub fn waiting(&self) -> usize {
        self.pending.len()
    }
}

/// A sink for one notification method: runs on the reader thread; false
/// unsubscribes it.
type Sink = Box<dyn FnMut(Notification) -> bool + Send>;
/// Told once, on the reader thread, why the link closed.
type OnClose = Box<dyn FnOnce(&str) + Send>;
/// A call's own channel.
type Waiter = mpsc::SyncSender<Outcome>;

/// What a link's reader routes to, besides the calls.
#[derive(Default)]
struct Subscribers {
    sinks: Vec<(String, Sink)>,
    on_close: Vec<OnClose>,
}

struct Shared {
    peer: PeerInfo,
    writer: Mutex<Writer>,
    router: Mutex<Router<Waiter>>,
    subscribers: Mutex<Subscribers>,
}

/// One connection shared by many callers: see the module header.
#[derive(Clone)]
pub struct Link {
    shared: Arc<Shared>,
}

/// How a [`Link`] is made: the subscriptions that must see the
/// notifications already queued on the client, then [`LinkBuilder::start`].
#[derive(Default)]
pub struct LinkBuilder {
    subscribers: Subscribers,
}

impl LinkBuilder {
    /// Every notification named `method` goes to `sink`, on the reader
    /// thread (it must not block, nor call the link); `sink` returning
    /// false unsubscribes it.
    pub fn subscribe(
        mut self,
        method: &str,
        sink: impl FnMut(Notification) -> bool + Send + 'static,
    ) -> Self {
        self.subscribers
            .sinks
            .push((method.to_string(), Box::new(sink)));
        self
    }

    /// `f` is told, once, why the link closed (on the reader thread).
    pub fn on_close(mut self, f: impl FnOnce(&str) + Send + 'static) -> Self {
        self.subscribers.on_close.push(Box::new(f));
        self
    }

    /// Takes `client` over: its writing half into the link, its reading
    /// half to the reader thread (started here), the notifications it
    /// queued first to the sinks.
    pub fn start(self, client: Client) -> Result<Link, ClientError> {
        let peer = client.peer.clone();
        let (reader, writer, queued) = client.split();
        writer.set_write_timeout(Some(deadline::CALL_TIMEOUT))?;
        let shared = Arc::new(Shared {
            peer,
            writer: Mutex::new(writer),
            router: Mutex::new(Router::default()),
            subscribers: Mutex::new(self.subscribers),
        });
        let link = Link {
            shared: shared.clone(),
        };
        let name = format!("ccd-link {}", shared.peer.name());
        std::thread::Builder::new().name(name).spawn(move || {
            for n in queued {
                shared.note(n);
            }
            read(&shared, reader);
        })?;
        Ok(link)
    }
}

impl Link {
    /// A link made step by step ([`LinkBuilder`]).
    pub fn builder() -> LinkBuilder {
        LinkBuilder::default()
    }

    /// `client` as a link with no subscription yet.
    pub fn start(client: Client) -> Result<Link, ClientError> {
        LinkBuilder::default().start(client)
    }

    /// Subscribes `sink` to `method` from now on ([`LinkBuilder::subscribe`]).
    pub fn subscribe(&self, method: &str, sink: impl FnMut(Notification) -> bool + Send + 'static) {
        lock(&self.shared.subscribers)
            .sinks
            .push((method.to_string(), Box::new(sink)));
    }

    /// Calls a typed method and waits for its result, within the method's
    /// deadline ([`deadline::deadline_for`]); other calls on the link go
    /// on meanwhile.
    pub fn call<M: Method>(&self, params: &M::Params) -> Result<M::Result, ClientError> {
        let within = deadline::deadline_for::<M>(params);
        let v = self.call_value_within(M::NAME, to_params::<M>(params)?, within)?;
        from_result::<M, M::Result>(v)
    }

    /// Calls `method` with raw params, waiting at most `within`.
    pub fn call_value_within(
        &self,
        method: &str,
        params: Value,
        within: Duration,
    ) -> Result<Value, ClientError> {
        let (tx, rx) = mpsc::sync_channel::<Outcome>(1);
        let started = Instant::now();
        let until = started + within;
        let id = {
            let mut writer = lock(&self.shared.writer);
            let id = writer.peek_id();
            if let Err((_, why)) =
                lock(&self.shared.router).register(id.clone(), method, started, until, tx)
            {
                return Err(self.shared.closed_error(method, &why));
            }
            match writer.send(method, params) {
                Ok(sent) => sent,
                Err(e) => {
                    lock(&self.shared.router).cancel(&id);
                    drop(writer);
                    return Err(match e {
                        ClientError::Io(e)
                            if matches!(
                                e.kind(),
                                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                            ) =>
                        {
                            self.shared
                                .peer
                                .not_answering(method, deadline::CALL_TIMEOUT)
                        }
                        e => e,
                    });
                }
            }
        };
        let outcome = loop {
            // Woken at the deadline, and every STOPPED_CHECK before it.
            let left = until.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left.min(deadline::STOPPED_CHECK)) {
                Ok(o) => break o,
                Err(RecvTimeoutError::Disconnected) => {
                    break Outcome::Closed("the link is gone".into())
                }
                Err(RecvTimeoutError::Timeout) => {
                    let now = Instant::now();
                    if self.shared.peer.stopped() {
                        if let Some((w, _, o)) = lock(&self.shared.router).expire_now(&id) {
                            let _ = w.try_send(o);
                        }
                    }
                    let due = lock(&self.shared.router).expire(now);
                    for (w, _, o) in due {
                        let _ = w.try_send(o);
                    }
                }
            }
        };
        self.shared.outcome(method, outcome)
    }

    /// Ends the connection: the reader wakes at the end of the stream,
    /// every pending call fails, the ssh under a remote link ends.
    pub fn close(&self) {
        let _ = lock(&self.shared.writer).shutdown_both();
    }

    /// Why the link closed, once it has.
    pub fn closed(&self) -> Option<String> {
        lock(&self.shared.router).closed().map(str::to_string)
    }

    /// True when the other end is a ccd on another machine.
    pub fn is_remote(&self) -> bool {
        self.shared.peer.kind == deadline::Peer::Remote
    }

    /// The process at the other end (the daemon; for another machine the
    /// local ssh).
    pub fn peer_pid(&self) -> Option<u32> {
        self.shared.peer.pid
    }
}

/// Any [`Link`] clone makes typed calls for code written against
/// [`super::Caller`].
impl super::Caller for Link {
    fn ask<M: Method>(&mut self, params: &M::Params) -> Result<M::Result, ClientError> {
        self.call::<M>(params)
    }
}

impl Shared {
    /// A call's outcome as its result.
    fn outcome(&self, method: &str, o: Outcome) -> Result<Value, ClientError> {
        match o {
            Outcome::Reply(r) => r.map_err(ClientError::Rpc),
            Outcome::TooLarge(o) => Err(self.peer.too_large(method, o)),
            Outcome::Expired { waited } => Err(self.peer.not_answering(method, waited)),
            Outcome::Closed(why) => Err(self.closed_error(method, &why)),
        }
    }

    fn closed_error(&self, method: &str, why: &str) -> ClientError {
        ClientError::LinkClosed {
            from: self.peer.name(),
            during: method.to_string(),
            why: why.to_string(),
        }
    }

    /// Hands `n` to the sinks subscribed to its method (in order).
    fn note(&self, n: Notification) {
        let mut seen = false;
        lock(&self.subscribers).sinks.retain_mut(|(method, sink)| {
            if *method != n.method {
                return true;
            }
            seen = true;
            sink(n.clone())
        });
        if !seen {
            tracing::trace!(peer = %self.peer.name(), method = %n.method, "a notification no one subscribed to, dropped");
        }
    }

    /// The end of the stream (why): every call fails, `on_close` runs.
    fn end(&self, why: &str) {
        let failed = lock(&self.router).close(why);
        for (w, _, o) in failed {
            let _ = w.try_send(o);
        }
        let on_close = std::mem::take(&mut lock(&self.subscribers).on_close);
        for f in on_close {
            f(why);
        }
    }
}

/// The reader thread: routes every message until the end of the stream.
fn read(shared: &Shared, mut reader: Reader) {
    let why = loop {
        match reader.next_or_oversized() {
            Ok(Err(o)) => {
                let told = lock(&shared.router).on_oversized(o);
                match told {
                    Some((w, method, o)) => {
                        tracing::warn!(peer = %shared.peer.name(), %method, outcome = ?o, "a reply over the client's bound, dropped");
                        let _ = w.try_send(o);
                    }
                    None => {
                        tracing::warn!(peer = %shared.peer.name(), "a line over the client's bound with no call waiting, dropped")
                    }
                }
            }
            Ok(Ok(Incoming::Response(r))) => {
                let routed = lock(&shared.router).on_response(r);
                match routed {
                    Some((w, o)) => {
                        let _ = w.try_send(o);
                    }
                    None => {
                        tracing::debug!(peer = %shared.peer.name(), "a reply no call waits for (late, or unasked), dropped")
                    }
                }
            }
            Ok(Ok(Incoming::Notification(n))) => shared.note(n),
            Ok(Ok(Incoming::Request(r))) => {
                tracing::debug!(peer = %shared.peer.name(), method = %r.method, "a request from the peer, ignored")
            }
            Err(ClientError::Closed) => break "the connection closed".to_string(),
            Err(e) => break e.to_string(),
        }
    };
    tracing::debug!(peer = %shared.peer.name(), %why, "a link ended");
    shared.end(&why);
    // `reader` goes here, and the ssh under it.
}

/// A lock that a panicked holder does not poison for the others (every
/// critical section here leaves its state whole).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::tests::{listening, status_reply};

    fn reply(id: i64, v: Value) -> Response {
        serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": v}))
            .expect("response")
    }

    #[test]
    fn replies_are_routed_by_id_whatever_their_order() {
        let mut r: Router<&str> = Router::default();
        let now = Instant::now();
        let later = now + Duration::from_secs(5);
        r.register(Id::Number(1), "a", now, later, "first").unwrap();
        r.register(Id::Number(2), "b", now, later, "second")
            .unwrap();
        let (w, o) = r.on_response(reply(2, Value::from(22))).expect("routed");
        assert_eq!(w, "second");
        assert!(matches!(o, Outcome::Reply(Ok(v)) if v == 22));
        let (w, o) = r.on_response(reply(1, Value::from(11))).expect("routed");
        assert_eq!(w, "first");
        assert!(matches!(o, Outcome::Reply(Ok(v)) if v == 11));
        assert_eq!(r.waiting(), 0);
    }

    #[test]
    fn a_deadline_expires_only_its_own_call() {
        let mut r: Router<&str> = Router::default();
        let now = Instant::now();
        r.register(
            Id::Number(1),
            "short",
            now,
            now + Duration::from_secs(1),
            "s",
        )
        .unwrap();
        r.register(
            Id::Number(2),
            "long",
            now,
            now + Duration::from_secs(30),
            "l",
        )
        .unwrap();
        assert!(r.expire(now + Duration::from_millis(999)).is_empty());
        let due = r.expire(now + Duration::from_secs(2));
        assert_eq!(due.len(), 1);
        let (w, method, o) = &due[0];
        assert_eq!((*w, method.as_str()), ("s", "short"));
        assert!(matches!(o, Outcome::Expired { waited } if *waited == Duration::from_secs(1)));
        assert_eq!(r.waiting(), 1);
    }

    #[test]
    fn a_reply_after_its_deadline_is_dropped() {
        let mut r: Router<&str> = Router::default();
        let now = Instant::now();
        r.register(Id::Number(7), "m", now, now + Duration::from_secs(1), "w")
            .unwrap();
        assert_eq!(r.expire(now + Duration::from_secs(1)).len(), 1);
        assert!(r.on_response(reply(7, Value::Null)).is_none());
        // A reply to an id never sent is dropped too.
        assert!(r.on_response(reply(99, Value::Null)).is_none());
    }

    #[test]
    fn closing_fails_every_pending_call_and_refuses_later_ones() {
        let mut r: Router<u8> = Router::default();
        let now = Instant::now();
        let later = now + Duration::from_secs(5);
        r.register(Id::Number(1), "a", now, later, 1).unwrap();
        r.register(Id::Number(2), "b", now, later, 2).unwrap();
        let mut failed = r.close("the connection closed");
        failed.sort_by_key(|(w, _, _)| *w);
        assert_eq!(failed.len(), 2);
        for (_, _, o) in &failed {
            assert!(matches!(o, Outcome::Closed(why) if why == "the connection closed"));
        }
        assert_eq!(r.closed(), Some("the connection closed"));
        let (w, why) = r
            .register(Id::Number(3), "c", now, later, 3)
            .expect_err("closed");
        assert_eq!((w, why.as_str()), (3, "the connection closed"));
        // A second close keeps the first reason.
        assert!(r.close("other").is_empty());
        assert_eq!(r.closed(), Some("the connection closed"));
    }

    #[test]
    fn a_line_over_the_bound_goes_to_the_oldest_call() {
        let mut r: Router<&str> = Router::default();
        let now = Instant::now();
        let later = now + Duration::from_secs(5);
        assert!(r
            .on_oversized(Oversized {
                len: 9,
                whole: true
            })
            .is_none());
        r.register(Id::Number(5), "old", now, later, "old").unwrap();
        r.register(Id::Number(4), "new", now, later, "new").unwrap();
        let (w, method, o) = r
            .on_oversized(Oversized {
                len: 9,
                whole: true,
            })
            .expect("told");
        assert_eq!((w, method.as_str()), ("old", "old"));
        assert!(matches!(
            o,
            Outcome::TooLarge(Oversized {
                len: 9,
                whole: true
            })
        ));
    }

    /// Over a real connection: two calls from two threads in flight at
    /// once, answered in the reverse order, each get their own reply; a
    /// notification goes to its subscriber; the peer hanging up fails the
    /// call still waiting with the link's error, runs `on_close`, and
    /// refuses the next call at once.
    #[test]
    fn a_link_carries_concurrent_calls_and_fails_them_when_closed() {
        use ccd_protocol::methods::daemon::DaemonStatus;
        use ccd_protocol::methods::Empty;
        use std::io::{BufRead, Write};

        let (_tmp, dir, listener) = listening();
        let peer = std::thread::spawn(move || {
            let (s, _) = listener.accept().expect("accept");
            s.set_read_timeout(Some(Duration::from_secs(10)))
                .expect("timeout");
            let mut r = std::io::BufReader::new(s.try_clone().expect("clone"));
            let mut w = s;
            let mut ids = Vec::new();
            let mut line = String::new();
            r.read_line(&mut line).expect("hello");
            writeln!(
                w,
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"daemon_version":"9","protocol":1,"server":"ccd"}}}}"#
            )
            .expect("write");
            for _ in 0..2 {
                line.clear();
                r.read_line(&mut line).expect("a call");
                let v: Value = serde_json::from_str(&line).expect("json");
                ids.push(v["id"].as_i64().expect("id"));
            }
            // Answered in the reverse order, a notification between.
            writeln!(w, "{}", status_reply(ids[1], 200 + ids[1] as u32)).expect("write");
            writeln!(
                w,
                r#"{{"jsonrpc":"2.0","method":"events.event","params":{{"n":1}}}}"#
            )
            .expect("write");
            writeln!(w, "{}", status_reply(ids[0], 200 + ids[0] as u32)).expect("write");
            // A third call, never answered: the peer hangs up.
            line.clear();
            r.read_line(&mut line).expect("a third call");
        });
        let client = Client::connect(&dir, "test/0").expect("connect");
        let (noted_tx, noted) = mpsc::channel();
        let (closed_tx, closed) = mpsc::channel();
        let link = Link::builder()
            .subscribe("events.event", move |n| noted_tx.send(n.method).is_ok())
            .on_close(move |why| {
                let _ = closed_tx.send(why.to_string());
            })
            .start(client)
            .expect("link");
        let calls: Vec<_> = (0..2)
            .map(|_| {
                let link = link.clone();
                std::thread::spawn(move || link.call::<DaemonStatus>(&Empty {}))
            })
            .collect();
        let mut pids: Vec<u32> = calls
            .into_iter()
            .map(|h| h.join().expect("thread").expect("status").pid)
            .collect();
        pids.sort_unstable();
        assert_eq!(pids, [202, 203]);
        assert_eq!(
            noted.recv_timeout(Duration::from_secs(5)).expect("noted"),
            "events.event"
        );
        let e = link.call::<DaemonStatus>(&Empty {}).expect_err("closed");
        assert!(
            matches!(&e, ClientError::LinkClosed { during, .. } if during == "daemon.status"),
            "{e:?}"
        );
        assert!(
            e.to_string().starts_with(
                "the connection to the ccd daemon ended before it answered `daemon.status`"
            ),
            "{e}"
        );
        assert_eq!(
            closed
                .recv_timeout(Duration::from_secs(5))
                .expect("on_close"),
            "the connection closed"
        );
        assert!(link.closed().is_some());
        let again = link.call::<DaemonStatus>(&Empty {}).expect_err("refused");
        assert!(matches!(again, ClientError::LinkClosed { .. }), "{again:?}");
        peer.join().expect("peer");
    }

    /// Over a real connection: a call past its deadline is not answering
    /// (its deadline told, not how long the thread slept), the reply
    /// that comes after is dropped, and the next call gets its own.
    #[test]
    fn a_late_reply_over_a_link_is_dropped_after_the_deadline() {
        use ccd_protocol::methods::daemon::DaemonStatus;
        use std::io::{BufRead, Write};

        let (_tmp, dir, listener) = listening();
        let (late_tx, late) = mpsc::channel::<()>();
        let peer = std::thread::spawn(move || {
            let (s, _) = listener.accept().expect("accept");
            s.set_read_timeout(Some(Duration::from_secs(10)))
                .expect("timeout");
            let mut r = std::io::BufReader::new(s.try_clone().expect("clone"));
            let mut w = s;
            let mut line = String::new();
            r.read_line(&mut line).expect("hello");
            writeln!(
                w,
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"daemon_version":"9","protocol":1,"server":"ccd"}}}}"#
            )
            .expect("write");
            let mut next_id = || {
                line.clear();
                r.read_line(&mut line).expect("a call");
                let v: Value = serde_json::from_str(&line).expect("json");
                v["id"].as_i64().expect("id")
            };
            let first = next_id();
            // Answered only once the caller gave up.
            late.recv_timeout(Duration::from_secs(10))
                .expect("given up");
            writeln!(w, "{}", status_reply(first, 1)).expect("write");
            let second = next_id();
            writeln!(w, "{}", status_reply(second, 2)).expect("write");
        });
        let link = Link::start(Client::connect(&dir, "test/0").expect("connect")).expect("link");
        let within = Duration::from_millis(300);
        let started = Instant::now();
        let e = link
            .call_value_within(DaemonStatus::NAME, serde_json::json!({}), within)
            .expect_err("no reply in time");
        assert!(started.elapsed() >= within, "{:?}", started.elapsed());
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        let n = e.not_answering().expect("not answering");
        assert_eq!((n.during.as_str(), n.waited), (DaemonStatus::NAME, within));
        late_tx.send(()).expect("peer");
        let v = link
            .call_value_within(
                DaemonStatus::NAME,
                serde_json::json!({}),
                Duration::from_secs(5),
            )
            .expect("the second call's own reply");
        assert_eq!(v["pid"], 2, "{v}");
        peer.join().expect("peer");
    }
}
