//! Method → handler. The list of methods is `ccd_protocol`'s
//! [`MethodId`]; the `match` below is exhaustive over it, so a method the
//! protocol gains does not compile until it has a handler here. Each
//! handler lives with its concern in [`crate::handlers`] and takes its
//! method's typed params and returns its typed result ([`typed`] does the
//! decoding and encoding once for all).

use crate::conn_ctx::ConnCtx;
use crate::handlers::{
    attach, daemon_ctl, dirs, events, lifecycle, observe, respond, sessions, trim,
};
use ccd_protocol::methods::{attach as a, daemon as d, dirs as f, events as e, session as s};
use ccd_protocol::methods::{Method, MethodId};
use ccd_protocol::{parse_params, Id, RpcError};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

/// Runs the handler of `method`, or answers `method_not_found`.
pub async fn dispatch(
    ctx: Arc<ConnCtx>,
    id: Option<Id>,
    method: &str,
    params: Option<Value>,
) -> Result<Value, RpcError> {
    let Some(m) = MethodId::from_name(method) else {
        return Err(RpcError::method_not_found(method));
    };
    let ctx = &ctx;
    match m {
        // Answered by the connection itself, before any other method.
        MethodId::Hello => typed::<d::Hello, _>(params, |p| async { daemon_ctl::hello(p) }).await,
        MethodId::DaemonStatus => {
            typed::<d::DaemonStatus, _>(params, |_| daemon_ctl::status(ctx)).await
        }
        MethodId::DaemonStop => {
            typed::<d::DaemonStop, _>(params, |p| daemon_ctl::stop(ctx, id, p)).await
        }
        MethodId::SessionsList => {
            typed::<s::SessionsList, _>(params, |p| sessions::list(ctx, p)).await
        }
        MethodId::SessionsCosts => {
            typed::<s::SessionsCosts, _>(params, |p| sessions::costs(ctx, p)).await
        }
        MethodId::SessionsRestore => {
            typed::<s::SessionsRestore, _>(params, |p| sessions::restore(ctx, p)).await
        }
        MethodId::SessionsSearch => {
            typed::<s::SessionsSearch, _>(params, |p| sessions::search(ctx, p)).await
        }
        MethodId::SessionsGet => {
            typed::<s::SessionsGet, _>(params, |p| sessions::get(ctx, p)).await
        }
        MethodId::SessionNew => typed::<s::SessionNew, _>(params, |p| lifecycle::new(ctx, p)).await,
        MethodId::SessionFork => {
            typed::<s::SessionFork, _>(params, |p| lifecycle::fork(ctx, p)).await
        }
        MethodId::SessionKill => {
            typed::<s::SessionKill, _>(params, |p| lifecycle::kill(ctx, p)).await
        }
        MethodId::SessionScreen => {
            typed::<s::SessionScreen, _>(params, |p| lifecycle::screen(ctx, p)).await
        }
        MethodId::SessionTail => {
            typed::<s::SessionTail, _>(params, |p| observe::tail(ctx, p)).await
        }
        MethodId::SessionAttach => {
            typed::<a::SessionAttach, _>(params, |p| attach::attach(ctx, id, p)).await
        }
        MethodId::SessionDetach => {
            typed::<a::SessionDetach, _>(params, |p| attach::detach(ctx, p)).await
        }
        MethodId::SessionInput => {
            typed::<a::SessionInput, _>(params, |p| attach::input(ctx, p)).await
        }
        MethodId::SessionResize => {
            typed::<a::SessionResize, _>(params, |p| attach::resize(ctx, p)).await
        }
        MethodId::SessionFocus => {
            typed::<a::SessionFocus, _>(params, |p| async { attach::focus(ctx, p) }).await
        }
        MethodId::SessionSend => {
            typed::<s::SessionSend, _>(params, |p| lifecycle::send(ctx, p)).await
        }
        MethodId::SessionPin => typed::<s::SessionPin, _>(params, |p| lifecycle::pin(ctx, p)).await,
        MethodId::SessionRespond => {
            typed::<s::SessionRespond, _>(params, |p| respond::respond(ctx, p)).await
        }
        MethodId::SessionTrim => typed::<s::SessionTrim, _>(params, |p| trim::trim(ctx, p)).await,
        MethodId::DirsComplete => typed::<f::DirsComplete, _>(params, dirs::complete).await,
        MethodId::EventsSubscribe => {
            typed::<e::EventsSubscribe, _>(params, |p| events::subscribe(ctx, id, p)).await
        }
    }
}

/// Decodes `M`'s params (absent params decode like `{}`; a mismatch is
/// `invalid_params`), runs `handler` and encodes its result.
async fn typed<M, Fut>(
    params: Option<Value>,
    handler: impl FnOnce(M::Params) -> Fut,
) -> Result<Value, RpcError>
where
    M: Method,
    Fut: Future<Output = Result<M::Result, RpcError>>,
{
    let p: M::Params = parse_params(params)?;
    let r = handler(p).await?;
    serde_json::to_value(r)
        .map_err(|e| RpcError::internal(format!("encoding the result of {}: {e}", M::NAME)))
}

#[cfg(test)]
mod tests {
    use ccd_protocol::methods::{MethodId, ALL_METHODS};

    #[test]
    fn every_method_has_one_id_and_round_trips_its_name() {
        assert_eq!(MethodId::ALL.len(), ALL_METHODS.len());
        for m in MethodId::ALL {
            assert_eq!(MethodId::from_name(m.name()), Some(*m));
        }
        assert_eq!(MethodId::from_name("session.frobnicate"), None);
    }
}
