//! `events.subscribe`: a task per subscribed connection forwards the
//! event hub's broadcast (`events`) to the client, filtered by type, after
//! the reply (which carries the registry view the events start from).

use crate::conn_ctx::{notify, ConnCtx};
use crate::conn_slots::TaskGuard;
use crate::events::now_ms;
use ccd_protocol::methods::events::{
    Event, EventKind, EventNotification, SubscribeParams, SubscribeResult,
};
use ccd_protocol::RpcError;
use std::sync::Arc;
use tokio::sync::broadcast;

/// `events.subscribe`.
pub async fn subscribe(
    ctx: &Arc<ConnCtx>,
    id: Option<ccd_protocol::Id>,
    p: SubscribeParams,
) -> Result<SubscribeResult, RpcError> {
    let (mut rx, writers) = ctx.daemon.events.subscribe_with_view();
    let replied = id.as_ref().map(|id| ctx.after_reply(id));
    let out = ctx.out();
    let task = tokio::spawn(async move {
        if let Some(r) = replied {
            let _ = r.await;
        }
        loop {
            let e = match rx.recv().await {
                Ok(e) => e,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    let mut e = Event::new(EventKind::Lagged, None, now_ms());
                    e.missed = Some(n);
                    e
                }
                Err(broadcast::error::RecvError::Closed) => break,
            };
            if let Some(types) = &p.types {
                if e.kind != EventKind::Lagged && !types.iter().any(|t| t == e.kind.as_str()) {
                    continue;
                }
            }
            if !notify::<EventNotification>(&out, &e).await {
                break;
            }
        }
    });
    // Replaces (and so ends) an earlier subscription of this connection.
    let old = ctx
        .subscription
        .lock()
        .ok()
        .and_then(|mut s| s.replace(TaskGuard::new(task)));
    drop(old);
    Ok(SubscribeResult {
        subscribed: true,
        writers,
    })
}
