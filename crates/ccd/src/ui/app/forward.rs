//! A machine's events on their way to the main loop: the sink a machine's
//! [`ccd_client::Link`] calls for each `events.event`, on the link's
//! reader thread, so it never blocks: a full queue (an attached session
//! has the terminal and nothing drains it) drops the event and asks for
//! a listing instead, once for the whole spell, as after `events.lagged`.
//!
//! Held (closed) at first when asked: what comes while a machine's first
//! listing is read waits here until [`Forward::open`], which sends it in
//! order behind that listing; nothing is lost between the two.

use super::Msg;
use ccd_protocol::methods::events::Event as DaemonEvent;
use ccd_protocol::Notification;
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

/// Asks the machine's listing again (its loader, or its link thread).
pub(super) type Reload = Box<dyn Fn() + Send>;

pub(super) struct Forward {
    label: String,
    tx: SyncSender<Msg>,
    reload: Reload,
    /// Events were dropped and a listing asked: one listing per spell.
    lagging: bool,
    /// Events held until [`Forward::open`] (`None`: passed on at once).
    held: Option<Vec<DaemonEvent>>,
}

/// A forwarder shared by a link's sink and the thread that opens it.
pub(super) type Shared = Arc<Mutex<Forward>>;

impl Forward {
    /// A forwarder for `label`'s events, holding them until opened when
    /// `hold`.
    pub(super) fn new(label: &str, tx: SyncSender<Msg>, reload: Reload, hold: bool) -> Shared {
        Arc::new(Mutex::new(Forward {
            label: label.to_string(),
            tx,
            reload,
            lagging: false,
            held: hold.then(Vec::new),
        }))
    }

    /// The link's sink: false (unsubscribe) once the dashboard is gone.
    pub(super) fn sink(shared: Shared) -> impl FnMut(Notification) -> bool + Send + 'static {
        move |n: Notification| {
            let e = match n.params_as::<DaemonEvent>() {
                Ok(e) => e,
                Err(e) => {
                    let label = lock(&shared).label.clone();
                    tracing::warn!(host = %label, error = %e.message, "skipping an event that does not read");
                    return true;
                }
            };
            let mut f = lock(&shared);
            match f.held.as_mut() {
                Some(held) => {
                    held.push(e);
                    true
                }
                None => f.pass(e),
            }
        }
    }

    /// Sends what was held, in order, and passes every later event on at
    /// once; false when the dashboard is gone.
    pub(super) fn open(shared: &Shared) -> bool {
        let mut f = lock(shared);
        let held = f.held.take().unwrap_or_default();
        held.into_iter().all(|e| f.pass(e))
    }

    /// Passes an event on; false when the dashboard is gone.
    fn pass(&mut self, e: DaemonEvent) -> bool {
        match self
            .tx
            .try_send(Msg::Event(self.label.clone(), Box::new(e)))
        {
            Ok(()) => {
                self.lagging = false;
                true
            }
            // The main thread is not taking messages (an attached session
            // has the terminal): this event is dropped and the machine
            // listed again instead, as after `events.lagged` (once for
            // the whole spell).
            Err(TrySendError::Full(_)) => {
                if !self.lagging {
                    self.lagging = true;
                    (self.reload)();
                }
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }
}

fn lock(f: &Mutex<Forward>) -> std::sync::MutexGuard<'_, Forward> {
    f.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn event(n: u64) -> Notification {
        serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "method": "event",
            "params": {"type": "session.status", "session": format!("s{n}"), "at": n}
        }))
        .expect("notification")
    }

    /// Held events come out behind what was sent before opening, in
    /// order; a full queue drops events and asks one listing for the
    /// spell.
    #[test]
    fn held_events_follow_in_order_and_a_full_queue_asks_one_listing() {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Msg>(3);
        let reloads = Arc::new(AtomicUsize::new(0));
        let r = reloads.clone();
        let f = Forward::new(
            "far",
            tx.clone(),
            Box::new(move || {
                r.fetch_add(1, Ordering::SeqCst);
            }),
            true,
        );
        let mut sink = Forward::sink(f.clone());
        assert!(sink(event(1)));
        assert!(sink(event(2)));
        assert!(rx.try_recv().is_err(), "held until opened");
        tx.send(Msg::Signal(0)).expect("the listing's place");
        assert!(Forward::open(&f));
        assert!(matches!(rx.try_recv(), Ok(Msg::Signal(0))));
        for n in [1, 2] {
            match rx.try_recv() {
                Ok(Msg::Event(host, e)) => {
                    assert_eq!(host, "far");
                    assert_eq!(e.session.as_deref(), Some(format!("s{n}").as_str()));
                }
                _ => panic!("event {n}"),
            }
        }
        for n in 3..10 {
            assert!(sink(event(n)));
        }
        assert_eq!(reloads.load(Ordering::SeqCst), 1, "one listing a spell");
        drop(rx);
        assert!(!sink(event(11)), "the dashboard is gone");
    }
}
