//! Method name → handler. The only place that knows every method; each
//! handler lives with its concern in [`crate::handlers`].

use crate::connection::ConnCtx;
use crate::handlers::{attach, daemon_ctl, lifecycle, sessions};
use ccd_protocol::{Id, RpcError};
use serde_json::Value;
use std::sync::Arc;

pub async fn dispatch(
    ctx: Arc<ConnCtx>,
    id: Option<Id>,
    method: &str,
    params: Option<Value>,
) -> Result<Value, RpcError> {
    match method {
        "daemon.status" => daemon_ctl::status(&ctx).await,
        "daemon.stop" => daemon_ctl::stop(&ctx, id, params).await,
        "sessions.list" => sessions::list(&ctx, params).await,
        "sessions.get" => sessions::get(&ctx, params).await,
        "session.new" => lifecycle::new(&ctx, params).await,
        "session.fork" => lifecycle::fork(&ctx, params).await,
        "session.kill" => lifecycle::kill(&ctx, params).await,
        "session.screen" => lifecycle::screen(&ctx, params).await,
        "session.attach" => attach::attach(&ctx, id, params).await,
        "session.detach" => attach::detach(&ctx, params).await,
        "session.input" => attach::input(&ctx, params).await,
        "session.resize" => attach::resize(&ctx, params).await,
        "session.send" => lifecycle::send(&ctx, params).await,
        "session.pin" => lifecycle::pin(&ctx, params).await,
        "events.subscribe" => crate::events::subscribe(&ctx, id, params).await,
        other => Err(RpcError::method_not_found(other)),
    }
}
