//! Calls on a connection: typed and untyped, each reply waited for within
//! its method's deadline (the peer watched for being stopped meanwhile),
//! notifications met on the way queued or handed over, and the split into
//! halves.

use super::{from_result, to_params, Client, ClientError, Reader, Sent, Writer};
use crate::deadline;
use ccd_protocol::{Id, Incoming, Method, Notification};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::VecDeque;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

impl Client {
    /// Calls a typed method and waits for its result.
    /// The wait is bounded by the method's deadline ([`deadline::deadline_for`]).
    pub fn call<M: Method>(&mut self, params: &M::Params) -> Result<M::Result, ClientError> {
        self.call_as::<M, M::Result>(params)
    }

    /// Calls a typed method and reads its result as `R` rather than
    /// `M::Result`: for a caller that passes the result on as received
    /// (`serde_json::Map`, to print it with fields this client does not
    /// know).
    pub fn call_as<M: Method, R: DeserializeOwned>(
        &mut self,
        params: &M::Params,
    ) -> Result<R, ClientError> {
        let within = deadline::deadline_for::<M>(params);
        let params = to_params::<M>(params)?;
        let v = self.call_value_within(M::NAME, params, within, None)?;
        from_result::<M, R>(v)
    }

    /// [`Client::call`], waiting at most `within` for the reply
    /// ([`ClientError::NotAnswering`] after that, or as soon as the peer
    /// is seen stopped); notifications meanwhile go to `on_note` (else the
    /// queue).
    pub fn call_within<M: Method>(
        &mut self,
        params: &M::Params,
        within: Duration,
        on_note: Option<&mut dyn FnMut(&Notification)>,
    ) -> Result<M::Result, ClientError> {
        let params = to_params::<M>(params)?;
        let v = self.call_value_within(M::NAME, params, within, on_note)?;
        from_result::<M, M::Result>(v)
    }

    /// [`Client::call`], handing every notification that arrives meanwhile
    /// to `on_note` (instead of queueing it).
    pub fn call_with<M: Method>(
        &mut self,
        params: &M::Params,
        on_note: &mut dyn FnMut(&Notification),
    ) -> Result<M::Result, ClientError> {
        let params = to_params::<M>(params)?;
        let v = self.call_value_with(M::NAME, params, on_note)?;
        from_result::<M, M::Result>(v)
    }

    /// [`Client::call`], showing every notification that arrives meanwhile
    /// to `watch` and queueing it too (see [`Client::call_value_watching`]).
    pub fn call_watching<M: Method>(
        &mut self,
        params: &M::Params,
        watch: &mut dyn FnMut(&Notification),
    ) -> Result<M::Result, ClientError> {
        let params = to_params::<M>(params)?;
        let v = self.call_value_watching(M::NAME, params, watch)?;
        from_result::<M, M::Result>(v)
    }

    /// Calls `method` with raw params and waits for its result.
    /// The wait is bounded by the method's deadline ([`deadline::deadline_for`]).
    /// Untyped: for tests and benchmarks that send what no typed client
    /// would (the CLI calls by type, [`Client::call`]).
    pub fn call_value(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        let within = deadline::deadline_of(method, &params);
        self.call_value_within(method, params, within, None)
    }

    /// Calls `method` and waits at most `within` for its reply
    /// ([`ClientError::NotAnswering`] after that, or as soon as the peer
    /// is seen stopped); notifications meanwhile go to `on_note` (else the
    /// queue).
    fn call_value_within(
        &mut self,
        method: &str,
        params: Value,
        within: Duration,
        on_note: Option<&mut dyn FnMut(&Notification)>,
    ) -> Result<Value, ClientError> {
        let id = self.send(method, params)?;
        self.wait_within(&id, on_note, false, within, method)
    }

    /// Sends a typed request (its reply read with [`Self::wait_within`]).
    pub(super) fn send_typed_request<M: Method>(
        &mut self,
        params: &M::Params,
    ) -> Result<Id, ClientError> {
        let params = to_params::<M>(params)?;
        self.send(M::NAME, params)
    }

    /// Sends a request; a write that times out is [`ClientError::NotAnswering`].
    fn send(&mut self, method: &str, params: Value) -> Result<Id, ClientError> {
        match self.writer.send(method, params) {
            Err(ClientError::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(self.peer.not_answering(method, deadline::CALL_TIMEOUT))
            }
            r => r,
        }
    }

    /// Waits for the reply to the call [`Client::connect_sending`] sent
    /// behind `hello`, within that call's deadline, showing every
    /// notification that arrives meanwhile to `watch` and queueing it
    /// too ([`Client::call_watching`]'s wait).
    pub fn wait_sent_watching<M: Method>(
        &mut self,
        sent: Sent,
        watch: &mut dyn FnMut(&Notification),
    ) -> Result<M::Result, ClientError> {
        if sent.method != M::NAME {
            return Err(ClientError::Protocol(format!(
                "waiting for {} as {}",
                sent.method,
                M::NAME
            )));
        }
        let v = self.wait_within(&sent.id, Some(watch), true, sent.within, sent.method)?;
        from_result::<M, M::Result>(v)
    }

    /// Waits for the reply to the call sent behind `hello`
    /// ([`Client::connect_sending`], [`Client::connect_if_running_sending`])
    /// within that call's deadline, as [`Client::call`] waits for its own
    /// (notifications meanwhile queued).
    pub fn wait_sent<M: Method>(&mut self, sent: Sent) -> Result<M::Result, ClientError> {
        if sent.method != M::NAME {
            return Err(ClientError::Protocol(format!(
                "waiting for {} as {}",
                sent.method,
                M::NAME
            )));
        }
        let v = self.wait_within(&sent.id, None, false, sent.within, sent.method)?;
        from_result::<M, M::Result>(v)
    }

    /// Calls `method`, handing every notification that arrives meanwhile
    /// to `on_note` (instead of queueing it).
    fn call_value_with(
        &mut self,
        method: &str,
        params: Value,
        on_note: &mut dyn FnMut(&Notification),
    ) -> Result<Value, ClientError> {
        let within = deadline::deadline_of(method, &params);
        self.call_value_within(method, params, within, Some(on_note))
    }

    /// Calls `method`, showing every notification that arrives meanwhile
    /// to `watch` and queueing it as [`Client::call_value`] does (for a
    /// request whose progress a caller reports while what follows the
    /// reply still reads the stream).
    pub fn call_value_watching(
        &mut self,
        method: &str,
        params: Value,
        watch: &mut dyn FnMut(&Notification),
    ) -> Result<Value, ClientError> {
        let within = deadline::deadline_of(method, &params);
        let id = self.send(method, params)?;
        self.wait_within(&id, Some(watch), true, within, method)
    }

    /// [`Self::wait_for_keeping`] bounded by `within`, the peer's state
    /// checked every [`deadline::STOPPED_CHECK`]; the socket's deadline
    /// is cleared again on the way out.
    pub(super) fn wait_within(
        &mut self,
        id: &Id,
        on_note: Option<&mut dyn FnMut(&Notification)>,
        keep: bool,
        within: Duration,
        during: &str,
    ) -> Result<Value, ClientError> {
        self.wait_within_rest(id, on_note, keep, within, None, during)
    }

    /// [`Self::wait_within`]; with `rest`, once the first bytes have come
    /// the wait ends at most `rest` later (ssh's `hello`: its long
    /// deadline is for a person typing a password, over once bytes come).
    pub(super) fn wait_within_rest(
        &mut self,
        id: &Id,
        on_note: Option<&mut dyn FnMut(&Notification)>,
        keep: bool,
        within: Duration,
        rest: Option<Duration>,
        during: &str,
    ) -> Result<Value, ClientError> {
        let now = Instant::now();
        let mut bound = Bound {
            started: now,
            until: now + within,
            within,
            rest,
            cut: false,
            during,
        };
        let r = self.wait_for_keeping(id, on_note, keep, &mut bound);
        self.reader.stream.get_mut().set_deadline(None);
        self.reader.stream.get_mut().set_read_timeout(None)?;
        r
    }

    /// Before reading with a deadline: waits until a line (or part of one)
    /// is there, the deadline passes, or the peer is seen stopped; then
    /// bounds every read of the line by the deadline (a peer stopped, or
    /// sending a byte now and then, mid-line).
    fn before_read(&mut self, bound: &mut Bound<'_>) -> Result<(), ClientError> {
        loop {
            if self.reader.has_buffered_line() {
                return Ok(());
            }
            let left = bound.until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(bound.not_answering(&self.peer));
            }
            let socket = self.reader.stream.get_ref().socket();
            if deadline::readable(socket.as_fd(), left.min(deadline::STOPPED_CHECK))? {
                if let Some(rest) = bound.rest.take() {
                    let sooner = Instant::now() + rest;
                    if sooner < bound.until {
                        bound.until = sooner;
                        bound.cut = true;
                    }
                }
                let until = bound.until;
                self.reader.stream.get_mut().set_deadline(Some(until));
                return Ok(());
            }
            if self.peer.stopped() {
                return Err(bound.not_answering(&self.peer));
            }
        }
    }

    /// Waits for the reply to `id` within `bound`; each notification
    /// meanwhile goes to `on_note` and, with `keep` or without `on_note`,
    /// to the queue. A line over the bound is the reply too large
    /// ([`ClientError::TooLarge`]), not a wait that ends in a timeout.
    fn wait_for_keeping(
        &mut self,
        id: &Id,
        mut on_note: Option<&mut dyn FnMut(&Notification)>,
        keep: bool,
        bound: &mut Bound<'_>,
    ) -> Result<Value, ClientError> {
        let id = id.clone();
        loop {
            self.before_read(bound)?;
            let next = match self.reader.next_or_oversized() {
                Ok(Ok(m)) => m,
                Ok(Err(o)) => return Err(self.peer.too_large(bound.during, o)),
                Err(ClientError::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(bound.not_answering(&self.peer))
                }
                Err(e) => return Err(e),
            };
            match next {
                Incoming::Response(r) if r.id.as_ref() == Some(&id) => {
                    return r.outcome.map_err(ClientError::Rpc);
                }
                Incoming::Response(r) if r.id.is_none() => {
                    if let Err(e) = r.outcome {
                        return Err(ClientError::Rpc(e));
                    }
                }
                Incoming::Response(_) => {} // an answer to a request not awaited
                Incoming::Notification(n) => {
                    if let Some(f) = on_note.as_mut() {
                        f(&n);
                        if !keep {
                            continue;
                        }
                    }
                    self.queued.push_back(n);
                }
                Incoming::Request(r) => {
                    return Err(ClientError::Protocol(format!(
                        "request {} from the daemon",
                        r.method
                    )))
                }
            }
        }
    }

    /// The next notification: queued ones first, then from the socket.
    /// `timeout` bounds the wait (`None` waits forever); `Ok(None)` on timeout.
    pub fn next_notification(
        &mut self,
        timeout: Option<Duration>,
    ) -> Result<Option<Notification>, ClientError> {
        if let Some(n) = self.queued.pop_front() {
            return Ok(Some(n));
        }
        // The whole wait is bounded, not each read (a peer sending a byte
        // now and then would hold a per-read timeout forever).
        let until = timeout.map(|t| Instant::now() + t);
        self.reader.stream.get_mut().set_deadline(until);
        let result = loop {
            match self.reader.next() {
                Ok(Incoming::Notification(n)) => break Ok(Some(n)),
                Ok(_) => continue,
                Err(ClientError::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    break Ok(None)
                }
                Err(e) => break Err(e),
            }
        };
        self.reader.stream.get_mut().set_deadline(None);
        result
    }

    /// Splits into independent halves (queued notifications are lost: call
    /// this right after the request that starts a stream).
    /// The halves wait without a deadline (an attached session may be
    /// silent for hours).
    pub fn split(mut self) -> (Reader, Writer, VecDeque<Notification>) {
        let stream = self.reader.stream.get_mut();
        stream.set_deadline(None);
        let _ = stream.set_read_timeout(None);
        let _ = stream.socket().set_write_timeout(None);
        (self.reader, self.writer, self.queued)
    }
}

/// Something that makes typed calls and waits for their answers: a
/// [`Client`] (its own connection), or a connection several threads share
/// (the dashboard's link to another machine: one ssh connection carrying
/// its events and its calls). Notifications that arrive meanwhile are not
/// kept.
pub trait Caller {
    fn ask<M: Method>(&mut self, params: &M::Params) -> Result<M::Result, ClientError>;
}

impl Caller for Client {
    fn ask<M: Method>(&mut self, params: &M::Params) -> Result<M::Result, ClientError> {
        self.call_with::<M>(params, &mut |_| {})
    }
}

/// What bounds a wait for a reply ([`Client::wait_within_rest`]).
struct Bound<'a> {
    started: Instant,
    /// No read goes past this: checked while a line is read, not only
    /// between lines.
    until: Instant,
    /// The deadline as given.
    within: Duration,
    /// Once bytes came, the rest within this (taken when applied).
    rest: Option<Duration>,
    /// `rest` moved `until` closer.
    cut: bool,
    /// What is waited for (a method name).
    during: &'a str,
}

impl Bound<'_> {
    /// The peer did not answer in time: the deadline as given, or, when
    /// bytes came and moved the deadline closer ([`Bound::rest`]), how
    /// long the wait lasted (to a tenth of a second).
    fn not_answering(&self, peer: &super::PeerInfo) -> ClientError {
        let waited = if self.cut {
            let ms = self.started.elapsed().min(self.within).as_millis();
            Duration::from_millis(u64::try_from(ms.div_ceil(100) * 100).unwrap_or(u64::MAX))
        } else {
            self.within
        };
        peer.not_answering(self.during, waited)
    }
}
