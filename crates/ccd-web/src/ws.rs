//! The page's WebSocket (`GET /api/ws`): the session list whenever it
//! changes, and the watched session's screen (a session ccd holds) or its
//! conversation's tail (one it does not).
//!
//! # Who owns what
//! - The socket task ([`serve`]) owns the receiving half: it reads the
//!   page's `watch`/`unwatch` (each at most [`limits::WS_MESSAGE_BYTES`]),
//!   follows the list (`State::list`, a `watch`: latest wins), and starts
//!   and stops the watcher, and re-checks its cookie every
//!   [`limits::WS_COOKIE_RECHECK`] (revoked: it ends). It holds one slot of
//!   [`limits::WEBSOCKETS`] until it ends.
//! - The writer task owns the sending half and drains the socket's
//!   [`Outbox`]: every message goes through it, bounded by
//!   [`limits::WS_QUEUE_BYTES`]. Past the bound the queued screen frames
//!   are dropped (the watcher then sends a full frame) and, if that is not
//!   enough, the socket is closed.
//! - The watcher ([`watch_session`]) is a plain thread that owns one
//!   connection to the watched session's own machine (its socket, or ssh
//!   for another machine) attached in `observe` mode and the session's
//!   `Screen`; it blocks on the socket (waking every 250 ms to see whether
//!   it should stop or owes a full frame), renders with
//!   [`crate::render::frame`] and pushes frames to the outbox. At most
//!   [`limits::WATCHED_PER_SOCKET`] per socket: a new `watch` stops the
//!   last. Closing its connection ends the attachment.

use crate::api::State;
use crate::guard::json_error;
use crate::limits;
use crate::render::{self, Cursor, Run};
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::StatusCode;
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit};

/// What a queued message is (screen frames may be dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Screen,
    Other,
}

/// One socket's bounded queue of outgoing text messages.
#[derive(Debug, Default)]
pub struct Outbox {
    q: Mutex<(VecDeque<(Kind, String)>, usize)>,
    ready: Notify,
    /// Set once the queue could not be held to its bound: the socket ends.
    closed: AtomicBool,
    lagged: Notify,
    /// Screen frames were dropped: the next one must be whole.
    need_full: AtomicBool,
    /// Screen frames dropped so far.
    dropped: std::sync::atomic::AtomicU64,
}

impl Outbox {
    /// Queues `text`; `false` once the socket is to close.
    pub fn push(&self, kind: Kind, text: String) -> bool {
        if self.closed.load(Ordering::Acquire) {
            return false;
        }
        let over = {
            let mut g = self.q.lock().unwrap_or_else(|p| p.into_inner());
            g.1 += text.len();
            g.0.push_back((kind, text));
            if g.1 > limits::WS_QUEUE_BYTES {
                let before = g.0.len();
                g.0.retain(|(k, _)| *k != Kind::Screen);
                let dropped = before - g.0.len();
                g.1 = g.0.iter().map(|(_, t)| t.len()).sum();
                if dropped > 0 {
                    self.need_full.store(true, Ordering::Release);
                    self.dropped.fetch_add(dropped as u64, Ordering::Relaxed);
                    tracing::debug!(dropped, "a slow page: screen frames dropped");
                }
            }
            g.1 > limits::WS_QUEUE_BYTES
        };
        if over {
            tracing::warn!(
                limit = limits::WS_QUEUE_BYTES,
                "a page lags past its queue: its socket is closed"
            );
            self.closed.store(true, Ordering::Release);
            self.lagged.notify_one();
            return false;
        }
        self.ready.notify_one();
        true
    }

    fn pop(&self) -> Option<String> {
        let mut g = self.q.lock().unwrap_or_else(|p| p.into_inner());
        let (_, t) = g.0.pop_front()?;
        g.1 -= t.len();
        Some(t)
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Bytes queued now.
    pub fn queued(&self) -> usize {
        self.q.lock().unwrap_or_else(|p| p.into_inner()).1
    }

    fn take_need_full(&self) -> bool {
        self.need_full.swap(false, Ordering::AcqRel)
    }
}

/// `GET /api/ws`: upgrades within [`limits::WEBSOCKETS`] (503 past it).
pub async fn upgrade(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    headers: axum::http::HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    // The guard let it in with this cookie; the socket lives while it is
    // valid (a `--revoke` ends it too).
    let cookie = crate::guard::cookie(&headers)
        .unwrap_or_default()
        .to_string();
    let Ok(slot) = state.websockets.clone().try_acquire_owned() else {
        tracing::warn!(
            limit = limits::WEBSOCKETS,
            "WebSocket refused: at the limit"
        );
        return json_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many pages are open",
            "websockets",
        );
    };
    ws.max_message_size(limits::WS_MESSAGE_BYTES)
        .max_frame_size(limits::WS_MESSAGE_BYTES)
        .on_upgrade(move |socket| serve(state, socket, slot, cookie))
}

/// The list JSON as a `{"t":"sessions", …}` message.
fn sessions_message(list: &str) -> String {
    match list.strip_prefix('{') {
        Some(rest) if rest.trim_start().starts_with('"') => format!("{{\"t\":\"sessions\",{rest}"),
        _ => json!({"t": "sessions", "machines": [], "sessions": []}).to_string(),
    }
}

fn error_message(message: &str) -> String {
    json!({"t": "error", "message": message}).to_string()
}

/// One watcher: the flag that stops it.
struct Watching {
    stop: Arc<AtomicBool>,
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

async fn serve(state: Arc<State>, socket: WebSocket, slot: OwnedSemaphorePermit, cookie: String) {
    let _slot = slot;
    // Whether the cookie still holds is checked every few seconds: a
    // socket never outlives a `--revoke` by more than that.
    let mut recheck = tokio::time::interval(limits::WS_COOKIE_RECHECK);
    recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut sink, mut stream) = socket.split();
    let out = Arc::new(Outbox::default());
    let writer = {
        let out = out.clone();
        tokio::spawn(async move {
            loop {
                while let Some(text) = out.pop() {
                    if sink.send(Message::Text(text.into())).await.is_err() {
                        return;
                    }
                }
                if out.is_closed() {
                    let _ = sink.send(Message::Close(None)).await;
                    return;
                }
                out.ready.notified().await;
            }
        })
    };
    let mut list = state.list.subscribe();
    let first = list.borrow_and_update().clone();
    let first = if first.is_empty() {
        Arc::new(crate::api::list_json(&state).await)
    } else {
        first
    };
    out.push(Kind::Other, sessions_message(&first));
    let mut watching: Option<Watching> = None;
    tracing::debug!("a page connected");
    loop {
        tokio::select! {
            msg = stream.next() => {
                let text = match msg {
                    Some(Ok(Message::Text(t))) => t,
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Binary(_))) => {
                        out.push(Kind::Other, error_message("text messages only"));
                        break;
                    }
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                };
                match page_message(text.as_str()) {
                    Ok(PageMessage::Watch { machine, session: sid }) => {
                        // One watched session per socket: the last one stops.
                        watching = None;
                        let Some(m) = state.machine(machine.as_deref()).cloned() else {
                            out.push(Kind::Other, error_message("this ccd web serves no machine of that name"));
                            continue;
                        };
                        let stop = Arc::new(AtomicBool::new(false));
                        let spawned = {
                            let (d, out, stop) = (m, out.clone(), stop.clone());
                            std::thread::Builder::new()
                                .name("ccd-web-watch".into())
                                .spawn(move || watch_session(&d, &sid, &out, &stop))
                        };
                        match spawned {
                            Ok(_) => watching = Some(Watching { stop }),
                            Err(e) => {
                                tracing::error!(error = %e, "could not start a watcher");
                                out.push(Kind::Other, error_message("could not watch the session"));
                            }
                        }
                    }
                    Ok(PageMessage::Unwatch) => watching = None,
                    Err(why) => {
                        out.push(Kind::Other, error_message(why));
                    }
                }
            }
            r = list.changed() => {
                if r.is_err() {
                    break;
                }
                let now = list.borrow_and_update().clone();
                out.push(Kind::Other, sessions_message(&now));
            }
            () = out.lagged.notified() => break,
            _ = recheck.tick() => {
                if !state.cookie_valid(&cookie) {
                    tracing::info!("a page's cookie was revoked: its socket is closed");
                    out.push(Kind::Other, error_message("logged out"));
                    break;
                }
            }
        }
        if out.is_closed() {
            break;
        }
    }
    drop(watching);
    // Let the writer send what is queued (and a close) unless the page
    // is gone; it ends with the socket.
    out.closed.store(true, Ordering::Release);
    out.ready.notify_one();
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
    tracing::debug!("a page left");
}

#[derive(Debug, PartialEq, Eq)]
pub enum PageMessage {
    /// A session of `machine` (`None`: the first machine served).
    Watch {
        machine: Option<String>,
        session: String,
    },
    Unwatch,
}

/// A message from the page, checked.
pub fn page_message(text: &str) -> Result<PageMessage, &'static str> {
    let v: Value = serde_json::from_str(text).map_err(|_| "not JSON")?;
    match v.get("t").and_then(Value::as_str) {
        Some("watch") => {
            let sid = v
                .get("session")
                .and_then(Value::as_str)
                .ok_or("watch needs a session")?;
            if sid.is_empty()
                || sid.len() > 128
                || !sid
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
            {
                return Err("not a session id");
            }
            let machine = match v.get("machine") {
                None | Some(Value::Null) => None,
                Some(Value::String(m)) if !m.is_empty() && m.len() <= 256 => Some(m.clone()),
                Some(_) => return Err("not a machine name"),
            };
            Ok(PageMessage::Watch {
                machine,
                session: sid.to_string(),
            })
        }
        Some("unwatch") => Ok(PageMessage::Unwatch),
        _ => Err("unknown message"),
    }
}

/// The watcher thread: the session's screen (or tail) into `out` until
/// `stop` or the session ends, from a connection of its own to the
/// session's machine (an observe attachment ends with its connection).
fn watch_session(d: &crate::daemon::Machine, sid: &str, out: &Outbox, stop: &AtomicBool) {
    let mut c = match d.connect() {
        Ok(c) => c,
        Err(e) => {
            out.push(Kind::Other, error_message(&e.to_string()));
            return;
        }
    };
    let attached = c.call_value(
        "session.attach",
        json!({"session": sid, "mode": "observe", "last": limits::TAIL_ITEMS}),
    );
    if let Err(e) = attached {
        // A dead session has nothing to observe: its transcript's tail.
        if e.rpc().is_some_and(|r| r.code == -32003) {
            match c.call_value(
                "session.tail",
                json!({"session": sid, "items": limits::TAIL_ITEMS}),
            ) {
                Ok(v) => {
                    let items = v.get("items").cloned().unwrap_or(json!([]));
                    out.push(
                        Kind::Other,
                        json!({"t": "tail", "session": sid, "items": items}).to_string(),
                    );
                }
                Err(e) => {
                    out.push(Kind::Other, error_message(&e.to_string()));
                }
            }
        } else {
            out.push(Kind::Other, error_message(&e.to_string()));
        }
        return;
    }
    tracing::debug!(session = sid, "watching");
    let mut screen: Option<ccd_screen::Screen> = None;
    let mut last: Option<(Vec<Vec<Run>>, Cursor)> = None;
    let mut items: VecDeque<Value> = VecDeque::new();
    while !stop.load(Ordering::Acquire) && !out.is_closed() {
        let mut dirty = false;
        let mut wait = Some(Duration::from_millis(250));
        loop {
            let n = match c.next_notification(wait) {
                Ok(Some(n)) => n,
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(session = sid, error = %e, "the observe connection ended");
                    out.push(Kind::Other, error_message(&e.to_string()));
                    return;
                }
            };
            // Drain what is already there before drawing (a burst is one
            // frame).
            wait = Some(Duration::ZERO);
            let p = n.params.unwrap_or(Value::Null);
            match n.method.as_str() {
                "session.resync" => {
                    let size = p.get("size");
                    let dim = |k: &str| {
                        size.and_then(|s| s.get(k))
                            .and_then(Value::as_u64)
                            .and_then(|n| u16::try_from(n).ok())
                            .filter(|n| *n > 0)
                    };
                    let (cols, rows) = (dim("cols").unwrap_or(80), dim("rows").unwrap_or(24));
                    let mut s = ccd_screen::Screen::new(rows, cols);
                    if let Some(bytes) = data(&p) {
                        s.process(&bytes);
                    }
                    screen = Some(s);
                    last = None;
                    dirty = true;
                }
                "session.output" => {
                    if let (Some(s), Some(bytes)) = (screen.as_mut(), data(&p)) {
                        s.process(&bytes);
                        dirty = true;
                    }
                }
                "session.transcript" => {
                    if let Some(a) = p.get("items").and_then(Value::as_array) {
                        items.extend(a.iter().cloned());
                        while items.len() > limits::TAIL_ITEMS {
                            items.pop_front();
                        }
                        out.push(
                            Kind::Other,
                            json!({"t": "tail", "session": sid, "items": items}).to_string(),
                        );
                    }
                }
                "session.exited" => {
                    if let Some(s) = screen.as_ref() {
                        push_frame(out, sid, s, &mut last);
                    }
                    tracing::debug!(session = sid, "the watched session ended");
                    return;
                }
                _ => {}
            }
        }
        // A page that moved on gets nothing more of this session.
        if stop.load(Ordering::Acquire) {
            return;
        }
        if out.take_need_full() {
            last = None;
            dirty = true;
        }
        if dirty {
            if let Some(s) = screen.as_ref() {
                push_frame(out, sid, s, &mut last);
            }
        }
    }
}

fn data(p: &Value) -> Option<Vec<u8>> {
    p.get("data")
        .and_then(Value::as_str)
        .and_then(|d| ccd_protocol::b64::decode(d).ok())
}

fn push_frame(
    out: &Outbox,
    sid: &str,
    s: &ccd_screen::Screen,
    last: &mut Option<(Vec<Vec<Run>>, Cursor)>,
) {
    let (frame, now) = render::frame(sid, s, last.as_ref().map(|(r, c)| (r.as_slice(), *c)));
    let cursor = render::cursor(s);
    *last = Some((now, cursor));
    if let Some(f) = frame {
        if let Ok(text) = serde_json::to_string(&f) {
            out.push(Kind::Screen, text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_messages() {
        assert_eq!(
            page_message(r#"{"t":"watch","session":"ab-12"}"#),
            Ok(PageMessage::Watch {
                machine: None,
                session: "ab-12".into()
            })
        );
        assert_eq!(
            page_message(r#"{"t":"watch","session":"ab-12","machine":"far"}"#),
            Ok(PageMessage::Watch {
                machine: Some("far".into()),
                session: "ab-12".into()
            })
        );
        assert!(page_message(r#"{"t":"watch","session":"ab","machine":3}"#).is_err());
        assert_eq!(page_message(r#"{"t":"unwatch"}"#), Ok(PageMessage::Unwatch));
        assert!(page_message(r#"{"t":"watch","session":"../x"}"#).is_err());
        assert!(page_message(r#"{"t":"watch"}"#).is_err());
        assert!(page_message("nope").is_err());
        assert!(page_message(r#"{"t":"exec"}"#).is_err());
    }

    #[test]
    fn sessions_messages_carry_the_list() {
        assert_eq!(
            sessions_message(r#"{"machines":[],"sessions":[]}"#),
            r#"{"t":"sessions","machines":[],"sessions":[]}"#
        );
        let bad: Value = serde_json::from_str(&sessions_message("")).unwrap();
        assert_eq!(bad["t"], "sessions");
    }

    #[test]
    fn a_lagging_page_loses_screen_frames_first_then_its_socket() {
        let out = Outbox::default();
        let frame = "x".repeat(300 * 1024);
        for _ in 0..3 {
            assert!(out.push(Kind::Screen, frame.clone()));
        }
        assert!(out.push(Kind::Other, "list".into()));
        // A fourth frame passes the bound: every queued frame goes, the
        // list stays, and the next frame must be whole.
        assert!(out.push(Kind::Screen, frame.clone()));
        assert_eq!(out.queued(), 4);
        assert!(out.take_need_full());
        assert!(!out.take_need_full());
        assert_eq!(out.dropped.load(Ordering::Relaxed), 4);
        // Messages that cannot be dropped past the bound: closed.
        assert!(out.push(Kind::Other, "y".repeat(600 * 1024)));
        assert!(!out.push(Kind::Other, "y".repeat(600 * 1024)));
        assert!(out.is_closed());
        assert!(!out.push(Kind::Other, "z".into()));
    }
}
