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

pub mod dir_watch;

use ccd_protocol::methods::events::{Event, LiveWriter};
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
}

impl Default for EventHub {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(HUB_CAPACITY).0,
            view: Arc::new(Mutex::new(Vec::new())),
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
