//! Bringing back the sessions lost when the machine went down
//! ([`restore`], for `sessions.restore` and `restore = "auto"`): each
//! resumed as `session_ops::resume` does, in its folder, with the flags,
//! name and pin the restore record kept; at most the config's
//! `restore_at_once` at a time (`Restore::turns`, shared by every restore
//! running), counted while each is *starting*: a slot is let go once
//! the session's start settles (at its prompt, or failed), not after
//! the 1.5 s settle check that follows — what the bound spares the
//! machine is many `claude`s starting at once, and a session at its
//! prompt costs only the check's `holder.info` and registry read every
//! 100 ms; one report at the end (the reply, and events
//! `session.restored` per session and `sessions.restore_report`).
//!
//! A session whose folder or transcript is gone is reported with the
//! reason and forgotten; it is never replaced by a fresh conversation.

use super::resolve::resolve;
use super::resume::resume_in_slot;
use crate::conn_ctx::ConnCtx;
use crate::events::now_ms;
use crate::state::Daemon;
use ccd_protocol::methods::events::{Event, EventKind};
use ccd_protocol::methods::session::{
    Lifecycle, NotRestored, RecordEntry, RestoreResult, Restored,
};
use ccd_protocol::{ErrorCode, RpcError};
use std::sync::Arc;

/// Out-queue budget of the detached context the resumes report into
/// (nobody reads it: the report is the reply).
const DETACHED_QUEUE: usize = 64 * 1024;

/// The lost sessions `wanted` names (full ids, unique prefixes or
/// names; every lost one when empty).
fn chosen(lost: Vec<RecordEntry>, wanted: &[String]) -> Result<Vec<RecordEntry>, RpcError> {
    if wanted.is_empty() {
        return Ok(lost);
    }
    let mut out: Vec<RecordEntry> = Vec::new();
    for w in wanted {
        let hits: Vec<&RecordEntry> = lost
            .iter()
            .filter(|e| e.session == *w || e.name.as_deref() == Some(w))
            .collect();
        let hits = if hits.is_empty() {
            lost.iter()
                .filter(|e| e.session.starts_with(w.as_str()))
                .collect()
        } else {
            hits
        };
        match hits.as_slice() {
            [one] => {
                if !out.iter().any(|e| e.session == one.session) {
                    out.push((*one).clone());
                }
            }
            [] => {
                return Err(RpcError::new(
                    ErrorCode::SessionNotFound,
                    format!("{w} names no lost session (`ccd ls` shows them as lost)"),
                ))
            }
            _ => {
                return Err(RpcError::new(
                    ErrorCode::AmbiguousSessionId,
                    format!(
                        "{w} names {} lost sessions; give more of the id",
                        hits.len()
                    ),
                ))
            }
        }
    }
    Ok(out)
}

/// Whether a resume that failed with `code` can never work (the folder
/// or the conversation is gone): the session is forgotten then.
fn for_good(code: i64) -> bool {
    [
        ErrorCode::CwdMissing,
        ErrorCode::TranscriptMissing,
        ErrorCode::SessionNotFound,
    ]
    .iter()
    .any(|c| c.code() == code)
}

/// Resumes the lost sessions `wanted` names (see the module doc).
pub async fn restore(daemon: Arc<Daemon>, wanted: &[String]) -> Result<RestoreResult, RpcError> {
    let targets = chosen(daemon.restore.lost(), wanted)?;
    if targets.is_empty() {
        return Ok(RestoreResult::default());
    }
    tracing::info!(
        sessions = targets.len(),
        at_once = daemon.restore.at_once,
        "restoring lost sessions"
    );
    let (out, _unread) = crate::out_queue::channel(DETACHED_QUEUE);
    let ctx = Arc::new(ConnCtx::new(daemon.clone(), out));
    let mut set = tokio::task::JoinSet::new();
    for e in targets {
        let (ctx, turns) = (ctx.clone(), daemon.restore.turns.clone());
        set.spawn(async move {
            // A closed semaphore (never closed) would mean no bound: go on.
            let turn = turns.acquire_owned().await.ok();
            let r = one(&ctx, &e, turn).await;
            (e, r)
        });
    }
    let mut report = RestoreResult::default();
    while let Some(done) = set.join_next().await {
        let Ok((e, r)) = done else { continue };
        let mut ev = Event::new(EventKind::Restored, Some(e.session.clone()), now_ms());
        ev.cwd = Some(e.cwd.clone());
        match r {
            Ok((holder, args)) => {
                tracing::info!(session = %e.session, %holder, "restored");
                ev.held = Some(true);
                ev.holder = Some(holder.clone());
                ev.status = Some(Lifecycle::Ready);
                report.restored.push(Restored {
                    session: e.session.clone(),
                    holder,
                    cwd: e.cwd.clone(),
                    args,
                });
            }
            Err(err) => {
                let kept = !for_good(err.code);
                let code = ErrorCode::from_code(err.code)
                    .map(|c| c.name().to_string())
                    .unwrap_or_else(|| err.code.to_string());
                tracing::warn!(session = %e.session, cwd = %e.cwd, %code, reason = %err.message, kept, "not restored");
                if !kept {
                    daemon.restore.drop_lost(&e.session);
                    daemon.holders.unlist_lost(&e.session);
                }
                ev.held = Some(false);
                ev.status = Some(Lifecycle::Lost);
                ev.reason = Some(err.message.clone());
                report.failed.push(NotRestored {
                    session: e.session.clone(),
                    cwd: e.cwd.clone(),
                    code,
                    reason: err.message,
                    kept,
                });
            }
        }
        daemon.events.publish(ev);
    }
    report.restored.sort_by(|a, b| a.session.cmp(&b.session));
    report.failed.sort_by(|a, b| a.session.cmp(&b.session));
    let mut summary = Event::new(EventKind::RestoreReport, None, now_ms());
    summary.reason = Some(format!(
        "{} restored, {} not restored",
        report.restored.len(),
        report.failed.len()
    ));
    summary.missed = Some(report.failed.len() as u64);
    daemon.events.publish(summary);
    daemon.holders.changed.notify_one();
    Ok(report)
}

/// One lost session resumed: its new holder and claude's arguments.
/// `turn` (its restore slot) is let go as soon as its start settles
/// (`resume_in_slot`), not after the settle check.
async fn one(
    ctx: &Arc<ConnCtx>,
    e: &RecordEntry,
    turn: Option<tokio::sync::OwnedSemaphorePermit>,
) -> Result<(String, Vec<String>), RpcError> {
    let (info, held) = resolve(&ctx.daemon, &e.session).await?;
    if let Some(h) = held.filter(|h| !h.lifecycle().ended()) {
        // Held again already (an attach or another restore came first).
        let args = h
            .info
            .map(|i| i.argv.into_iter().skip(1).collect())
            .unwrap_or_default();
        return Ok((h.id, args));
    }
    let entry = resume_in_slot(ctx, &info, None, turn).await?;
    let args = entry
        .info
        .map(|i| i.argv.into_iter().skip(1).collect())
        .unwrap_or_default();
    Ok((entry.id, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lost(session: &str, name: Option<&str>) -> RecordEntry {
        RecordEntry {
            holder: "h".into(),
            session: session.into(),
            cwd: "/w".into(),
            args: vec![],
            permission_mode: None,
            model: None,
            name: name.map(String::from),
            pinned: false,
            origin: "new".into(),
            created_at: 0,
        }
    }

    #[test]
    fn a_restore_names_lost_sessions_by_id_prefix_or_name() {
        let all = vec![
            lost("aaa1", None),
            lost("aab2", Some("web")),
            lost("bbb3", None),
        ];
        assert_eq!(chosen(all.clone(), &[]).expect("all").len(), 3);
        let one = chosen(all.clone(), &["web".into(), "bb".into()]).expect("two");
        assert_eq!(
            one.iter().map(|e| e.session.as_str()).collect::<Vec<_>>(),
            ["aab2", "bbb3"]
        );
        let amb = chosen(all.clone(), &["aa".into()]).expect_err("ambiguous");
        assert_eq!(amb.code, ErrorCode::AmbiguousSessionId.code());
        let none = chosen(all, &["zz".into()]).expect_err("none");
        assert_eq!(none.code, ErrorCode::SessionNotFound.code());
    }
}
