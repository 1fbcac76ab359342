//! `session.trim`: shrink a dead session's transcript
//! (`ccd_claude::trim`), or put the original back (`undo`).
//!
//! The safety rules live here: the session must be dead — no registry
//! entry naming it may be running (live or unknown, re-read and
//! re-validated each time) and no holder of ccd's may run it. The check is
//! made when the trim starts, right before the trimmed file replaces the
//! original, and (by `ccd_claude::trim`) a writer that appears in between
//! leaves the original in place. Backups go to
//! `<state dir>/trim-backups/<session id>/` (0700). The temporary file a
//! trim killed before its rename left beside the transcript is removed by
//! the next trim or undo of that session (`ccd_claude::trim::leftover`),
//! and every one by the daemon when it starts (`server`).

use crate::conn_ctx::ConnCtx;
use crate::session_ops::resolve::resolve;
use crate::state::Daemon;
use ccd_claude::trim::{self, TrimError, TrimOptions};
use ccd_protocol::error_data::{TranscriptMissingData, TrimRefusal, TrimRefusedData};
use ccd_protocol::methods::session::{TrimCount, TrimParams, TrimResult};
use ccd_protocol::{ErrorCode, RpcError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Test hook: with `CCD_TEST_TRIM_PAUSE_DIR` set (and `ccd-test-hooks`'
/// feature on), a trim creates `<dir>/paused` (and
/// `<dir>/paused.<session id>`) between its two passes and waits (at most
/// 30 s) for `<dir>/go`, so a test can race a writer deterministically.
const PAUSE: ccd_test_hooks::Hook = ccd_test_hooks::Hook::TrimPauseDir;

/// Most trims running at once (each reads its transcript twice and writes
/// a copy: disk-bound; more would only share the disk). Further requests
/// wait for a turn.
const MAX_CONCURRENT_TRIMS: usize = 2;

/// The turns of [`MAX_CONCURRENT_TRIMS`].
static TRIM_TURNS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_CONCURRENT_TRIMS);

/// Where the originals of `sid` are kept.
pub fn backup_dir(state_dir: &Path, sid: &str) -> PathBuf {
    state_dir.join("trim-backups").join(sid)
}

/// Why the session may be running now, if it may.
fn running_now(daemon: &Daemon, sid: &str) -> Option<String> {
    let held =
        daemon.holders.snapshot().into_iter().find(|h| {
            h.session_id() == Some(sid) && h.info.as_ref().is_none_or(|i| i.exit.is_none())
        });
    if let Some(h) = held {
        return Some(format!(
            "ccd runs it (holder {}); end it first with `ccd kill`",
            h.id
        ));
    }
    let probe = ccd_claude::liveness::system_probe();
    let writers = ccd_claude::index::entries_writing(
        &daemon.options.claude_config.sessions_dir(),
        sid,
        probe.as_ref(),
    );
    writers
        .first()
        .map(|(e, l)| format!("pid {} is {}", e.pid, l.as_str()))
}

fn refused(sid: &str, transcript: &Path, reason: TrimRefusal, msg: String) -> RpcError {
    RpcError::new(ErrorCode::TrimRefused, msg).with_data_of(&TrimRefusedData {
        session: sid.to_string(),
        reason,
        transcript: Some(transcript.to_string_lossy().into_owned()),
        types: Vec::new(),
    })
}

fn to_rpc(sid: &str, transcript: &Path, e: TrimError) -> RpcError {
    let msg = format!("session {sid}: {e}");
    let reason = match &e {
        TrimError::Live(_) => TrimRefusal::Live,
        TrimError::WriterAppeared(_) => TrimRefusal::WriterAppeared,
        TrimError::UnknownTypes { types, .. } => {
            let mut err = refused(sid, transcript, TrimRefusal::FormatDrift, msg);
            err = err.with_data_of(&TrimRefusedData {
                session: sid.to_string(),
                reason: TrimRefusal::FormatDrift,
                transcript: Some(transcript.to_string_lossy().into_owned()),
                types: types
                    .iter()
                    .map(|(k, n)| TrimCount {
                        kind: k.clone(),
                        records: *n,
                        bytes: 0,
                    })
                    .collect(),
            });
            return err;
        }
        TrimError::BadRecord { .. } => TrimRefusal::FormatDrift,
        TrimError::LineTooLong { .. } => TrimRefusal::LineTooLong,
        TrimError::NoBackup(_) => TrimRefusal::NoBackup,
        TrimError::ChangedSinceTrim(..) => TrimRefusal::ChangedSinceTrim,
        TrimError::Io { .. } => return RpcError::internal(msg),
    };
    refused(sid, transcript, reason, msg)
}

fn pause_for_tests(sid: &str) {
    let Some(dir) = PAUSE.read().map(PathBuf::from) else {
        return;
    };
    let _ = std::fs::write(dir.join(format!("paused.{sid}")), b"");
    let _ = std::fs::write(dir.join("paused"), b"");
    let until = Instant::now() + Duration::from_secs(30);
    while !dir.join("go").exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub async fn trim(ctx: &ConnCtx, p: TrimParams) -> Result<TrimResult, RpcError> {
    let (info, _) = resolve(&ctx.daemon, &p.session).await?;
    let sid = info.session_id.clone();
    let Some(transcript) = info.transcript.clone().map(PathBuf::from) else {
        return Err(RpcError::new(
            ErrorCode::TranscriptMissing,
            format!("session {sid} has no transcript: nothing to trim"),
        )
        .with_data_of(&TranscriptMissingData {
            session: sid.clone(),
            transcript: None,
            registry_entry: None,
        }));
    };
    let daemon: Arc<Daemon> = ctx.daemon.clone();
    let backups = backup_dir(&daemon.options.state_dir, &sid);
    let opts = TrimOptions {
        drop_file_history: p.drop_file_history,
        before_compact: p.before_compact,
        force: p.force,
        ..TrimOptions::default()
    };
    tracing::info!(session = %sid, transcript = %transcript.display(), dry_run = p.dry_run, undo = p.undo, "trim");
    let (sid2, path) = (sid.clone(), transcript.clone());
    let _turn = TRIM_TURNS
        .acquire()
        .await
        .map_err(|e| RpcError::internal(format!("trim turns: {e}")))?;
    let out = tokio::task::spawn_blocking(move || {
        let guard = || running_now(&daemon, &sid2);
        if p.undo {
            return trim::undo(&path, &backups, &guard).map(|u| TrimResult {
                session: sid2.clone(),
                transcript: path.to_string_lossy().into_owned(),
                undo: true,
                bytes_before: u.bytes_replaced,
                bytes_after: u.bytes_restored,
                backup: Some(u.backup.to_string_lossy().into_owned()),
                ..TrimResult::default()
            });
        }
        let report = if p.dry_run {
            if let Some(why) = guard() {
                return Err(TrimError::Live(why));
            }
            // The index spills beside the backups (`<state dir>/trim-backups`).
            let spill = backups.parent().unwrap_or(&backups);
            trim::plan(&path, &opts, spill)?
        } else {
            let hook = || pause_for_tests(&sid2);
            let hook: &dyn Fn() = &hook;
            trim::trim(&path, &backups, &opts, &guard, Some(hook))?
        };
        Ok(result_of(&sid2, p.dry_run, report))
    })
    .await
    .map_err(|e| RpcError::internal(format!("trim task: {e}")))?;
    out.map_err(|e| to_rpc(&sid, &transcript, e))
}

fn result_of(sid: &str, dry_run: bool, r: trim::TrimReport) -> TrimResult {
    TrimResult {
        session: sid.to_string(),
        transcript: r.transcript.to_string_lossy().into_owned(),
        dry_run,
        undo: false,
        unchanged: r.unchanged,
        bytes_before: r.bytes_before,
        bytes_after: r.bytes_after,
        records_before: r.records_before,
        dropped: r
            .dropped
            .iter()
            .map(|(k, c)| TrimCount {
                kind: k.clone(),
                records: c.records,
                bytes: c.bytes,
            })
            .collect(),
        tool_use_result: (r.tool_use_result.records > 0).then(|| TrimCount {
            kind: "toolUseResult".into(),
            records: r.tool_use_result.records,
            bytes: r.tool_use_result.bytes,
        }),
        relinked: r.relinked,
        rescued_for_tool_pairs: r.rescued_for_tool_pairs,
        versions: r.versions,
        unmeasured_versions: r.unmeasured_versions,
        half_written_tail: r.half_written_tail,
        backup: r.backup.map(|b| b.to_string_lossy().into_owned()),
    }
}
