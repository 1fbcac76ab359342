//! `session.attach` / `detach` / `input` / `resize` / `focus`: being
//! inside a session. (`focus` only records what the client's terminal
//! says, `events::focus`: the connection may be attached directly.)
//!
//! An attachment is one connection from the daemon to the session's holder,
//! owned by the client connection that attached. Its forwarder task copies
//! the holder's notifications (output, resync, exited) to the client in
//! whole-line batches, without decoding them, and drops the holder's replies
//! to the input/resize requests sent on it (`holders::relay`). Dropping
//! the attachment closes the holder connection, which detaches it there.
//! The attachment itself, its forwarder and the socket plumbing of a
//! direct stream are `holders::attachment`.
//!
//! With `direct`, the daemon hands the client a connection to the holder
//! instead (passed with the reply, `SCM_RIGHTS`), on which it has already
//! sent the client's `session.attach` (id [`DIRECT_ATTACH_ID`]): the
//! holder's reply and first redraw are on their way while the client
//! reads the daemon's reply, and its output and keys no longer pass
//! through the daemon, which keeps nothing of that attachment.
//!
//! Size policy (kept by the holder, per holder connection): the most
//! recently active client sets the size. A client's size is remembered
//! from attach and resize; when a client types and its size differs from
//! the session's, its size is applied first.

use crate::conn_ctx::ConnCtx;
use crate::holders::attachment::{attachment_of, connect_sending, read_first_line, Attachment};
use crate::holders::rpc::{stopped, HolderConn, HolderError, CALL_TIMEOUT};
use crate::holders::HolderEntry;
use crate::session_ops::resolve::{held, resolve_putting_back};
use crate::session_ops::resume::{fresh_instead, live_elsewhere, resume};
use ccd_protocol::error_data::CapRefusedData;
use ccd_protocol::holder as h;
use ccd_protocol::methods::attach::{
    AttachMode, AttachParams, AttachResult, DetachResult, FocusParams, InputParams, InputResult,
    ResizeParams, DIRECT_ATTACH_ID,
};
use ccd_protocol::methods::session::{SessionInfo, SessionState};
use ccd_protocol::methods::Method;
use ccd_protocol::methods::{Empty, SessionRef, TermSize};
use ccd_protocol::{ErrorCode, Id, RpcError};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

fn internal(e: impl std::fmt::Display) -> RpcError {
    RpcError::internal(e.to_string())
}

pub async fn attach(
    ctx: &Arc<ConnCtx>,
    id: Option<Id>,
    p: AttachParams,
) -> Result<AttachResult, RpcError> {
    // Checked whatever the mode: an observer's size is echoed back.
    p.size.map(TermSize::checked).transpose()?;
    if p.mode == AttachMode::Other {
        return Err(RpcError::invalid_params(
            "mode must be interactive or observe",
        ));
    }
    // An archived conversation is put back first, then resumed.
    let (info, holder) = resolve_putting_back(&ctx.daemon, &p.session, true).await?;
    let mut resumed = false;
    let mut fresh = None;
    let running = holder
        .as_ref()
        .is_some_and(|h| h.info.as_ref().is_none_or(|i| i.exit.is_none()));
    let holder = match (plan(running, info.state, p.mode), holder) {
        (AttachPlan::Held, Some(h)) => h,
        (AttachPlan::Resume, _) => match resume(ctx, &info, p.size).await {
            Ok(h) => {
                resumed = true;
                h
            }
            Err(e) if p.fresh_on_failure && e.code == ErrorCode::SpawnFailed.code() => {
                let (h, f) = fresh_instead(ctx, &info, &e.message, p.size).await?;
                fresh = Some(f);
                h
            }
            Err(e) => return Err(e),
        },
        (AttachPlan::FollowTranscript, _) => {
            return crate::handlers::observe::follow(ctx, id, &info, p.last.unwrap_or(10), p.size)
                .await;
        }
        (AttachPlan::NothingToObserve, _) => return Err(nothing_to_observe(&info)),
        (AttachPlan::RefuseLiveElsewhere | AttachPlan::Held, _) => {
            return Err(live_elsewhere(&info))
        }
    };
    let session = holder.session_id().unwrap_or(&holder.id).to_string();
    let mut direct_to = id.as_ref().filter(|_| p.direct);
    let (size, holder_protocol) = match direct_to {
        Some(to) => match direct(ctx, to, &holder, &p).await? {
            Some(done) => done,
            // Its holder cannot serve a direct stream: through the daemon.
            None => {
                direct_to = None;
                relayed(ctx, id.as_ref(), &holder, &p, &session).await?
            }
        },
        None => relayed(ctx, id.as_ref(), &holder, &p, &session).await?,
    };
    // Its client list changed: the table's view catches up on the next tick.
    ctx.daemon.holders.mark_dirty_holder(&holder.id);
    tracing::info!(session = %session, holder = %holder.id, mode = ?p.mode, resumed, direct = direct_to.is_some(), "client attached");
    Ok(AttachResult {
        session,
        mode: p.mode,
        size,
        resumed,
        fresh_instead_of: fresh,
        direct: direct_to.is_some(),
        holder_protocol: Some(holder_protocol),
    })
}

/// What `session.attach` does, decided from what is known before any I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachPlan {
    /// ccd holds it and its process runs: attach to the holder.
    Held,
    /// Dead, interactive: resume it in its original cwd under a new holder.
    Resume,
    /// Running outside ccd (or maybe), observe: follow its transcript.
    FollowTranscript,
    /// Dead, observe: refuse (`session_not_found`), nothing runs to watch.
    NothingToObserve,
    /// Running outside ccd (or maybe), interactive: refuse
    /// (`session_live_elsewhere`); ccd never resumes a live session.
    RefuseLiveElsewhere,
}

/// The attach decision table. `held_running`: a holder of ccd's holds
/// the session and its process has not exited (a holder whose state is
/// not known yet counts as running). `state` is the session's registry
/// state, which for a session ccd holds is `live`.
pub fn plan(held_running: bool, state: SessionState, mode: AttachMode) -> AttachPlan {
    if held_running {
        return AttachPlan::Held;
    }
    match (state, mode) {
        (SessionState::Dead, AttachMode::Observe) => AttachPlan::NothingToObserve,
        (SessionState::Dead, _) => AttachPlan::Resume,
        (_, AttachMode::Observe) => AttachPlan::FollowTranscript,
        _ => AttachPlan::RefuseLiveElsewhere,
    }
}

/// `session_not_found` for observing a dead session; one a held process
/// wrote before names the process and the id it writes now.
fn nothing_to_observe(info: &SessionInfo) -> RpcError {
    let moved = info
        .superseded_by
        .as_ref()
        .map(|s| {
            format!(
                "; the process ccd holds in {} writes {} now (`ccd observe {}`)",
                s.holder,
                s.writes_now,
                s.writes_now.get(..8).unwrap_or(&s.writes_now)
            )
        })
        .unwrap_or_default();
    RpcError::new(
        ErrorCode::SessionNotFound,
        format!(
            "session {} is not running: nothing to observe{moved}",
            info.session_id
        ),
    )
}

/// Attaches through the daemon: a holder connection of this client
/// connection's, whose notifications a task relays (see the module doc).
/// The session's size after the attach, and the holder protocol version
/// of the connection (it says hello first: the connection is kept).
async fn relayed(
    ctx: &Arc<ConnCtx>,
    id: Option<&Id>,
    holder: &HolderEntry,
    p: &AttachParams,
    session: &str,
) -> Result<(TermSize, u32), RpcError> {
    let mut conn = HolderConn::connect_hello(&holder.socket)
        .await
        .map_err(|e| holder.rpc_error(e))?;
    let protocol = conn.protocol.unwrap_or(h::PRE_VERSIONING);
    let r = conn
        .call::<h::Attach>(&holder_attach_params(p))
        .await
        .map_err(|e| holder.rpc_error(e))?;
    let mut size = r.size;
    if let (AttachMode::Interactive, Some(want)) = (p.mode, p.size) {
        // A version-0 holder may ignore the attach's size.
        if protocol == h::PRE_VERSIONING && want != size {
            conn.call::<h::Resize>(&want)
                .await
                .map_err(|e| holder.rpc_error(e))?;
            size = want;
        }
    }
    let replied = id.map(|id| ctx.after_reply(id));
    let slot = ctx.attachments.key(session);
    let own = slot.clone();
    // The holder went away: forget this attachment.
    let attachment = Attachment::relay(holder, p.mode, conn, ctx.out(), replied, move || {
        own.release()
    });
    // Replaces (and so ends) an earlier attachment to the same session.
    ctx.attachments.put(&slot, attachment);
    Ok((size, protocol))
}

/// The holder's attach params for a client's `session.attach`: its mode,
/// and for an interactive one its size (an observer's is not applied).
fn holder_attach_params(p: &AttachParams) -> h::AttachParams {
    let mode = match p.mode {
        AttachMode::Observe => AttachMode::Observe,
        _ => AttachMode::Interactive,
    };
    h::AttachParams {
        mode,
        size: p.size.filter(|_| mode == AttachMode::Interactive),
    }
}

/// Connects to `holder`, says hello there (as a direct stream, see
/// below), attaches as the client asked, and passes the connection with
/// the reply to `id`; the size the session will have once the holder has
/// handled that attach, and the holder protocol version of the
/// connection. `None` when the holder speaks a version older than
/// [`h::DIRECT_STREAM_VERSION`] (it was started by an older ccd): nothing
/// was passed, the caller attaches through the daemon instead.
///
/// The hello (id [`h::DIRECT_HELLO_ID`]) says `direct`: the holder takes
/// the connection only within the connections it serves besides the
/// daemon's own (`ccd_holder::rpc::slots::admit_direct`), so direct
/// streams never take the slots kept for the daemon's calls. Its reply is
/// read here, before anything is passed ([`read_first_line`], which reads
/// nothing past it): a holder that refuses the stream (that rule, or its
/// cap) makes the attach fail with its reason, never a passed connection
/// that turns out to be a refusal. With the holder's version known (the
/// table learnt it at adoption or on its kept info connection; the same
/// ranges negotiate the same version) the attach goes out in the same
/// write as the hello, so the holder's reply and first redraw follow the
/// hello's at once; not known yet, the attach is sent once the reply says
/// the holder serves direct streams. The wait for the reply is bounded by
/// [`CALL_TIMEOUT`], and a stopped holder is reported as such. At most
/// [`crate::holders::DIRECT_OPENS_AT_ONCE`] are opened to a holder at
/// once (`HolderTable::direct_opening`): until its hello is answered a
/// direct stream holds one of the slots the holder keeps for the daemon.
async fn direct(
    ctx: &ConnCtx,
    id: &Id,
    holder: &HolderEntry,
    p: &AttachParams,
) -> Result<Option<(TermSize, u32)>, RpcError> {
    ctx.daemon.holders.verify_dir_rpc()?;
    let serves_direct = |v: u32| match holder.require_at(
        v,
        h::DIRECT_STREAM_VERSION,
        "serve a direct stream",
    ) {
        Ok(()) => true,
        Err(e) => {
            tracing::info!(holder = %holder.id, protocol = v, reason = %e.message, "attaching through the daemon instead");
            false
        }
    };
    if holder.protocol.is_some_and(|v| !serves_direct(v)) {
        return Ok(None);
    }
    let hello = h::HelloParams {
        protocol: h::HOLDER_PROTOCOL_RANGE,
        direct: true,
    };
    let hello = crate::holders::rpc::to_params(&hello).map_err(|e| holder.rpc_error(e))?;
    let mut lines = ccd_protocol::encode(&ccd_protocol::Request::new(
        Id::String(h::DIRECT_HELLO_ID.into()),
        h::Hello::NAME,
        Some(hello),
    ))
    .map_err(internal)?;
    let params = crate::holders::rpc::to_params(&holder_attach_params(p))
        .map_err(|e| holder.rpc_error(e))?;
    let attach = ccd_protocol::encode(&ccd_protocol::Request::new(
        Id::String(DIRECT_ATTACH_ID.into()),
        ccd_protocol::methods::attach::SessionAttach::NAME,
        Some(params),
    ))
    .map_err(internal)?;
    let attach_sent = holder.protocol.is_some();
    if attach_sent {
        lines.extend_from_slice(&attach);
    }
    // Until its hello is answered the stream takes one of the slots the
    // holder keeps for the daemon: only a few at once.
    let turn = ctx
        .daemon
        .holders
        .direct_opening(&holder.id, CALL_TIMEOUT)
        .await
        .ok_or_else(|| holder.rpc_error(HolderError::Timeout))?;
    let stream = connect_sending(&holder.socket, &lines)
        .await
        .map_err(|e| holder.rpc_error(e.into()))?;
    let mut stream = tokio::net::UnixStream::from_std(stream).map_err(internal)?;
    let protocol = match hello_reply(holder, &stream).await? {
        Some(v) => v,
        None => {
            tracing::info!(holder = %holder.id, "the holder predates versions: attaching through the daemon instead");
            return Ok(None);
        }
    };
    drop(turn);
    if !serves_direct(protocol) {
        return Ok(None);
    }
    if !attach_sent {
        stream
            .write_all(&attach)
            .await
            .map_err(|e| holder.rpc_error(e.into()))?;
    }
    let stream = stream.into_std().map_err(internal)?;
    // The client gets the same open file: give it the blocking mode a
    // fresh socket has (non-blocking here).
    stream.set_nonblocking(false).map_err(internal)?;
    ctx.pass_with_reply(id, stream.into());
    let now = holder.info.as_ref().map(|i| TermSize {
        cols: i.size.cols,
        rows: i.size.rows,
    });
    let size = match (p.mode, p.size) {
        (AttachMode::Interactive, Some(want)) => want,
        _ => now.unwrap_or(TermSize {
            cols: 120,
            rows: 40,
        }),
    };
    Ok(Some((size, protocol)))
}

/// The holder's answer to a direct stream's hello on `stream`: the
/// negotiated version, `None` for a holder from before versions
/// (`method_not_found`), or the error the attach fails with — a refusal
/// (the holder's error line: `too_many_connections` when its connections
/// besides the daemon's, or all of them, are taken) named as the direct
/// stream's, the holder closed or stopped, no answer within
/// [`CALL_TIMEOUT`].
async fn hello_reply(
    holder: &HolderEntry,
    stream: &tokio::net::UnixStream,
) -> Result<Option<u32>, RpcError> {
    let pid = stream
        .peer_cred()
        .ok()
        .and_then(|c| c.pid())
        .and_then(|p| u32::try_from(p).ok());
    let line = tokio::select! {
        r = tokio::time::timeout(CALL_TIMEOUT, read_first_line(stream)) => r
            .map_err(|_| holder.rpc_error(HolderError::Timeout))?
            .map_err(|e| holder.rpc_error(e.into()))?
            .ok_or_else(|| holder.rpc_error(HolderError::Closed))?,
        pid = stopped(pid) => return Err(stopped_error(holder, pid)),
    };
    let decode = |why: String| holder.rpc_error(HolderError::Decode(why));
    let text = String::from_utf8(line).map_err(|e| decode(e.to_string()))?;
    let reply = match ccd_protocol::parse_incoming(&text) {
        Ok(ccd_protocol::Incoming::Response(r)) => r,
        _ => return Err(decode(format!("not a reply to the hello: {text:.200}"))),
    };
    match reply.outcome {
        Ok(v) => serde_json::from_value::<h::HelloResult>(v)
            .map(|r| Some(r.protocol))
            .map_err(|e| decode(format!("{}: {e}", h::Hello::NAME))),
        Err(e) if e.code == ErrorCode::MethodNotFound.code() => Ok(None),
        Err(e) if CapRefusedData::of_refusal(&e).is_some() => Err(refused(holder, e)),
        Err(e) => Err(holder.rpc_error(HolderError::Rpc(e))),
    }
}

/// A direct stream the holder did not take (`e`, its refusal): the
/// attach's error, naming the session and holder, keeping the holder's
/// reason and limit.
fn refused(holder: &HolderEntry, e: RpcError) -> RpcError {
    let session = holder.session_id().unwrap_or(&holder.id);
    let mut data = e.data.unwrap_or_else(|| serde_json::json!({}));
    if let Some(d) = data.as_object_mut() {
        d.insert("session".into(), session.into());
        d.insert("holder".into(), holder.id.clone().into());
    }
    tracing::info!(session = %session, holder = %holder.id, reason = %e.message, "direct stream refused by the holder");
    RpcError::new(
        ErrorCode::InternalError,
        format!(
            "session {session}: its holder {} takes no more direct streams: {}",
            holder.id, e.message
        ),
    )
    .with_data(data)
}

/// A stopped holder met by a direct attach: named by its pid, with the way
/// to resume it.
fn stopped_error(holder: &HolderEntry, pid: u32) -> RpcError {
    let session = holder.session_id().unwrap_or(&holder.id);
    RpcError::new(
        ErrorCode::InternalError,
        format!(
            "session {session}: the session's ccd holder (pid {pid}) is stopped (process state \
             T), so it cannot answer; the daemon is fine. Resume it with `kill -CONT {pid}`, \
             then attach again"
        ),
    )
    .with_data(serde_json::json!({
        "session": session,
        "holder": holder.id,
        "holder_pid": pid,
        "stopped": true,
    }))
}

pub async fn detach(ctx: &ConnCtx, p: SessionRef) -> Result<DetachResult, RpcError> {
    // An empty prefix would match any attachment of the connection.
    if p.session.is_empty() {
        return Err(RpcError::new(
            ErrorCode::InvalidParams,
            "session.detach: `session` is empty; name the session to detach (its id, a unique \
             id prefix or its holder id)",
        ));
    }
    let a = ctx
        .attachments
        .take_first(|k, a| k.starts_with(&p.session) || a.holder.id == p.session);
    let follower = ctx.followers.take_first(|k, _| k.starts_with(&p.session));
    // Dropping them ends them.
    Ok(DetachResult {
        detached: a.is_some() || follower.is_some(),
    })
}

pub async fn input(ctx: &ConnCtx, p: InputParams) -> Result<InputResult, RpcError> {
    let n = p.data.len() as u64;
    let data = h::InputParams { data: p.data };
    if let Some(to) = attachment_of(&ctx.attachments, &p.session) {
        if to.mode != AttachMode::Interactive {
            return Err(RpcError::new(
                ErrorCode::PermissionDenied,
                "this attachment only observes",
            ));
        }
        to.send::<h::Input>(&data).await?;
        return Ok(InputResult { written: n });
    }
    let entry = held(ctx, &p.session).await?;
    ctx.daemon
        .holders
        .call_serialized::<h::Input>(&entry, &data)
        .await
        .map_err(|e| entry.rpc_error(e))?;
    Ok(InputResult { written: n })
}

pub async fn resize(ctx: &ConnCtx, p: ResizeParams) -> Result<Empty, RpcError> {
    TermSize {
        cols: p.cols,
        rows: p.rows,
    }
    .checked()?;
    let size = TermSize {
        cols: p.cols,
        rows: p.rows,
    };
    if let Some(to) = attachment_of(&ctx.attachments, &p.session) {
        // The holder remembers it for this attachment (size policy).
        to.send::<h::Resize>(&size).await?;
    } else {
        let entry = held(ctx, &p.session).await?;
        ctx.daemon
            .holders
            .call_serialized::<h::Resize>(&entry, &size)
            .await
            .map_err(|e| entry.rpc_error(e))?;
    }
    Ok(Empty {})
}

/// Longest session id `session.focus` takes (an id is 36 bytes).
const FOCUS_SESSION_MAX: usize = 128;

/// `session.focus`: this connection's terminal has (or lost) the focus of
/// `session` (see `events::focus`).
pub fn focus(ctx: &ConnCtx, p: FocusParams) -> Result<Empty, RpcError> {
    if p.session.is_empty() || p.session.len() > FOCUS_SESSION_MAX {
        return Err(RpcError::invalid_params(format!(
            "session.focus: the session must be a session id (1 to {FOCUS_SESSION_MAX} bytes)"
        )));
    }
    let mut f = ctx.focus.lock().unwrap_or_else(|p| p.into_inner());
    f.set(&p.session, p.focused, std::time::Instant::now())
        .map_err(|e| RpcError::invalid_params(e.to_string()))?;
    tracing::debug!(session = %p.session, focused = p.focused, "client focus");
    Ok(Empty {})
}

#[cfg(test)]
mod tests {
    use super::*;
    use AttachMode::{Interactive, Observe};
    use SessionState::{Dead, Live, Unknown};

    #[test]
    fn the_attach_decision_table() {
        // (held and running, state, mode) -> plan
        let table = [
            (true, Live, Interactive, AttachPlan::Held),
            (true, Live, Observe, AttachPlan::Held),
            // A holder whose child exited: decided by the session's state.
            (false, Dead, Interactive, AttachPlan::Resume),
            (false, Dead, Observe, AttachPlan::NothingToObserve),
            (false, Live, Interactive, AttachPlan::RefuseLiveElsewhere),
            (false, Live, Observe, AttachPlan::FollowTranscript),
            // Liveness that cannot be verified is treated as live: never
            // resumed (two writers would split the conversation).
            (false, Unknown, Interactive, AttachPlan::RefuseLiveElsewhere),
            (false, Unknown, Observe, AttachPlan::FollowTranscript),
        ];
        for (held, state, mode, want) in table {
            assert_eq!(plan(held, state, mode), want, "{held} {state:?} {mode:?}");
        }
    }

    #[test]
    fn a_session_ccd_holds_is_attached_whatever_the_registry_says() {
        for state in [Dead, Live, Unknown] {
            for mode in [Interactive, Observe] {
                assert_eq!(plan(true, state, mode), AttachPlan::Held);
            }
        }
    }
}
