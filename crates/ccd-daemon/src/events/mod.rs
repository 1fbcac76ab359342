//! Events: one broadcast hub, fed by the registry watcher (every session on
//! the machine) and by the holder table (sessions ccd holds), drained by a
//! task per subscribed connection (`events.subscribe`, in
//! `handlers::events`). A service: it imports nothing of the crate.
//!
//! The hub never waits on a subscriber: a subscriber that falls more than
//! [`HUB_CAPACITY`] events behind loses the oldest and is told so
//! (`events.lagged`).
//!
//! The hub also keeps the registry watcher's view (every process that may
//! be writing a session, by pid). The watcher replaces the view and
//! publishes the events that lead to it under one lock, and a subscription
//! copies the view and joins the broadcast under the same lock: the
//! snapshot in the subscribe reply followed by the events gives exactly
//! the watcher's view at every later moment (the fold `ccd events` and
//! editors rely on; tested in `crates/ccd/tests/fold.rs`).
//!
//! [`focus`]: the clients' terminal focus (`session.focus`) folded into
//! one fact a session, published as `session.focus` events.

pub mod dir_watch;

pub mod focus;

use ccd_protocol::methods::events::{Event, EventKind, LiveWriter};
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// Events kept for slow subscribers.
pub const HUB_CAPACITY: usize = 1024;

/// Where events are published.
#[derive(Clone)]
pub struct EventHub {
    tx: broadcast::Sender<Event>,
    /// The registry watcher's view, as of the last event it published (see
    /// the module doc). Held only to copy or replace it and to send on the
    /// broadcast channel (which never blocks).
    view: Arc<Mutex<Vec<LiveWriter>>>,
    /// How many connections say each session's terminal has the focus
    /// ([`focus`]); its changes are published under this lock, in order.
    focus: Arc<Mutex<focus::FocusCounts>>,
}

impl std::fmt::Debug for EventHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventHub").finish_non_exhaustive()
    }
}

impl Default for EventHub {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(HUB_CAPACITY).0,
            view: Arc::new(Mutex::new(Vec::new())),
            focus: Arc::default(),
        }
    }
}

impl EventHub {
    /// Publishes an event (no subscriber: dropped).
    pub fn publish(&self, e: Event) {
        tracing::debug!(kind = %e.kind, session = ?e.session, "event");
        let _ = self.tx.send(e);
    }

    /// Publishes the events that turn the registry view into `view`, and
    /// keeps `view`, as one step for subscribers.
    pub fn publish_view(&self, events: Vec<Event>, view: Vec<LiveWriter>) {
        let mut v = self.view.lock().unwrap_or_else(|p| p.into_inner());
        for e in events {
            self.publish(e);
        }
        *v = view;
    }

    /// The registry watcher's view now: every process that may be writing
    /// a session.
    pub fn view(&self) -> Vec<LiveWriter> {
        self.view.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// One connection more (`true`) or less says `session`'s terminal has
    /// the focus: publishes `session.focus` when the session's focus
    /// changes ([`focus::ConnFocus`] calls it).
    pub(crate) fn focus_change(&self, session: &str, more: bool) {
        let mut counts = self.focus.lock().unwrap_or_else(|p| p.into_inner());
        let changed = if more {
            counts.add(session)
        } else {
            counts.remove(session)
        };
        if changed {
            let mut e = Event::new(EventKind::Focus, Some(session.to_string()), now_ms());
            e.focused = Some(more);
            self.publish(e);
        }
    }

    /// Whether an attached terminal has `session`'s focus now.
    pub fn is_focused(&self, session: &str) -> bool {
        self.focus
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_focused(session)
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }

    /// A receiver of every event from now on, and the registry view those
    /// events start from.
    pub fn subscribe_with_view(&self) -> (broadcast::Receiver<Event>, Vec<LiveWriter>) {
        let v = self.view.lock().unwrap_or_else(|p| p.into_inner());
        (self.tx.subscribe(), v.clone())
    }
}

/// Unix milliseconds now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
