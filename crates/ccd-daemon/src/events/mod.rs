//! Events: one broadcast hub, fed by the registry watcher (every session on
//! the machine) and by the holder table (sessions ccd holds), drained by a
//! task per subscribed connection.
//!
//! The hub never waits on a subscriber: a subscriber that falls more than
//! [`HUB_CAPACITY`] events behind loses the oldest and is told so
//! (`events.lagged`).

pub mod registry_watch;

use crate::connection::ConnCtx;
use ccd_protocol::methods::events::{Event, SubscribeParams};
use ccd_protocol::{parse_params, RpcError};
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::sync::broadcast;

/// Events kept for slow subscribers.
pub const HUB_CAPACITY: usize = 1024;

/// Where events are published.
#[derive(Clone)]
pub struct EventHub {
    tx: broadcast::Sender<Event>,
}

impl Default for EventHub {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(HUB_CAPACITY).0,
        }
    }
}

impl EventHub {
    /// Publishes an event (no subscriber: dropped).
    pub fn publish(&self, e: Event) {
        tracing::debug!(kind = %e.kind, session = ?e.session, "event");
        let _ = self.tx.send(e);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }
}

/// Unix milliseconds now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `events.subscribe`.
pub async fn subscribe(
    ctx: &Arc<ConnCtx>,
    id: Option<ccd_protocol::Id>,
    params: Option<Value>,
) -> Result<Value, RpcError> {
    let p: SubscribeParams = parse_params(params)?;
    let mut rx = ctx.daemon.events.subscribe();
    let replied = id.as_ref().map(|id| ctx.after_reply(id));
    let conn = ctx.clone();
    let task = tokio::spawn(async move {
        if let Some(r) = replied {
            let _ = r.await;
        }
        loop {
            let e = match rx.recv().await {
                Ok(e) => e,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    let mut e = Event::new("events.lagged", None, now_ms());
                    e.missed = Some(n);
                    e
                }
                Err(broadcast::error::RecvError::Closed) => break,
            };
            if let Some(types) = &p.types {
                if e.kind != "events.lagged" && !types.contains(&e.kind) {
                    continue;
                }
            }
            let v = match serde_json::to_value(&e) {
                Ok(v) => v,
                Err(_) => continue,
            };
            if !conn.notify("event", v).await {
                break;
            }
        }
    });
    let old = ctx
        .subscription
        .lock()
        .ok()
        .and_then(|mut s| s.replace(task));
    if let Some(old) = old {
        old.abort();
    }
    Ok(json!({"subscribed": true}))
}
