//! `sessions.list`, `sessions.get`, and resolving what a client names.

use crate::conn_ctx::ConnCtx;
use crate::holders::HolderEntry;
use crate::state::Daemon;
use crate::views;
use ccd_claude::paths::{is_within, normalize};
use ccd_protocol::error_data::{AmbiguousData, SessionData, TranscriptMissingData};
use ccd_protocol::methods::session::{ListParams, ListResult, SessionInfo, SessionState};
use ccd_protocol::methods::SessionRef;
use ccd_protocol::{ErrorCode, RpcError};

use std::path::Path;

/// Largest page of `sessions.list`.
pub const MAX_PAGE: u32 = 500;

/// Every session on the machine as the wire shows it, newest first: the
/// index (built now, on the blocking pool) with ccd's holders merged in.
pub async fn all_sessions(
    daemon: &Daemon,
) -> Result<Vec<(SessionInfo, Option<HolderEntry>)>, RpcError> {
    let config = daemon.options.claude_config.clone();
    let windows = daemon.options.context_windows.clone();
    let cache = daemon.options.state_dir.clone();
    let index = tokio::task::spawn_blocking(move || {
        let probe = ccd_claude::liveness::system_probe();
        ccd_claude::index::build_cached(&config, probe.as_ref(), &windows, Some(&cache))
    })
    .await
    .map_err(|e| RpcError::internal(e.to_string()))?
    .map_err(|e| RpcError::internal(format!("reading Claude Code's files: {e}")))?;
    let holders = daemon.holders.snapshot();
    let mut held: Vec<SessionInfo> = holders.iter().map(views::holder_only_info).collect();
    held.extend(
        daemon
            .holders
            .finished()
            .into_iter()
            .rev()
            .filter_map(|f| views::finished_only_info(&f)),
    );
    let rows = index.sessions.iter().map(views::record_to_info).collect();
    Ok(views::join_held(rows, held)
        .into_iter()
        .map(|info| {
            let h = info
                .ccd
                .as_ref()
                .and_then(|c| holders.iter().find(|h| h.id == c.holder))
                .cloned();
            (info, h)
        })
        .collect())
}

pub async fn list(ctx: &ConnCtx, p: ListParams) -> Result<ListResult, RpcError> {
    let cwd = p.cwd.as_deref().map(|c| normalize(Path::new(c)));
    let all = if p.held_only {
        let mut held: Vec<(SessionInfo, Option<HolderEntry>)> = ctx
            .daemon
            .holders
            .snapshot()
            .into_iter()
            .map(|h| (views::holder_only_info(&h), Some(h)))
            .collect();
        // Sessions ccd held that ended (exited, failed, reaped), newest first.
        held.extend(
            ctx.daemon
                .holders
                .finished()
                .into_iter()
                .rev()
                .filter_map(|f| views::finished_only_info(&f))
                .map(|i| (i, None)),
        );
        held
    } else {
        all_sessions(&ctx.daemon).await?
    };
    let matching: Vec<SessionInfo> = all
        .into_iter()
        .map(|(i, _)| i)
        .filter(|i| !p.live_only || i.state != SessionState::Dead)
        .filter(|i| match (&cwd, &i.cwd) {
            (None, _) => true,
            (Some(dir), Some(c)) => is_within(Path::new(c), dir),
            (Some(_), None) => false,
        })
        .collect();
    let total = matching.len() as u32;
    let offset = p.offset.unwrap_or(0);
    let limit = p.limit.unwrap_or(MAX_PAGE).clamp(1, MAX_PAGE);
    let page: Vec<SessionInfo> = matching
        .into_iter()
        .skip(offset as usize)
        .take(limit as usize)
        .collect();
    let mut page = page;
    if !p.no_cost {
        crate::cost::fill(&ctx.daemon.costs, &mut page).await;
    }
    let end = offset.saturating_add(page.len() as u32);
    Ok(ListResult {
        sessions: page,
        total,
        next_offset: (end < total).then_some(end),
    })
}

pub async fn costs(
    ctx: &ConnCtx,
    p: ccd_protocol::methods::session::CostsParams,
) -> Result<ccd_protocol::methods::session::CostsResult, RpcError> {
    use ccd_protocol::methods::session::MAX_COST_PIDS;
    let pids = match p.pids {
        Some(pids) if pids.len() > MAX_COST_PIDS => {
            return Err(RpcError::invalid_params(format!(
                "sessions.costs names {} pids; at most {MAX_COST_PIDS}",
                pids.len()
            )))
        }
        Some(pids) => pids,
        None => crate::cost::live_roots(&ctx.daemon.holders, &ctx.daemon.events),
    };
    let costs = crate::cost::costs_of(&ctx.daemon.costs, &pids).await;
    let mut costs: Vec<_> = costs
        .into_iter()
        .map(|(pid, cost)| ccd_protocol::methods::session::PidCost { pid, cost })
        .collect();
    costs.sort_by_key(|c| c.pid);
    Ok(ccd_protocol::methods::session::CostsResult { costs })
}

pub async fn get(ctx: &ConnCtx, p: SessionRef) -> Result<SessionInfo, RpcError> {
    let (mut info, holder) = resolve(&ctx.daemon, &p.session).await?;
    // ccd's part (lifecycle, per-client counters) as the holder tells it
    // now, not as the last periodic refresh saw it.
    if let Some(mut h) = holder {
        if let Some(now) = ctx.daemon.holders.refresh(&h.id).await {
            h.info = Some(now);
            info.ccd = Some(views::owned_info(&h));
        }
    }
    crate::cost::fill(&ctx.daemon.costs, std::slice::from_mut(&mut info)).await;
    Ok(info)
}

/// The held session whose id alone starts with `query`, judged from what
/// names session ids without reading transcripts: the holder table,
/// transcript file names and registry entries (a few directory reads, where
/// the full index reads every transcript's head and tail). `None` sends the
/// caller to the full index (no held match, several, or any doubt).
async fn held_by_unique_prefix(
    daemon: &Daemon,
    held: &[HolderEntry],
    query: &str,
) -> Option<HolderEntry> {
    let mut hits = held
        .iter()
        .filter(|h| h.session_id().is_some_and(|s| s.starts_with(query)));
    let hit = hits.next()?;
    if hits.next().is_some() {
        return None;
    }
    let sid = hit.session_id()?.to_string();
    let config = daemon.options.claude_config.clone();
    let q = query.to_string();
    let others = tokio::task::spawn_blocking(move || {
        let other = |id: &str| id != sid && id.starts_with(&q);
        let transcripts = ccd_claude::transcript::list_all(&config.projects_dir());
        if transcripts.iter().any(|t| other(&t.session_id)) {
            return true;
        }
        match ccd_claude::registry::read_all(&config.sessions_dir()) {
            Ok(entries) => entries.iter().any(|e| other(&e.session_id)),
            Err(_) => true,
        }
    })
    .await
    .unwrap_or(true);
    (!others).then(|| hit.clone())
}

/// The processes whose registry entries name `sid` and may be running
/// (live or unknown), judged now, most recently started first.
fn writers_of(sessions_dir: &Path, sid: &str) -> Vec<ccd_protocol::methods::session::WriterInfo> {
    let probe = ccd_claude::liveness::system_probe();
    ccd_claude::index::entries_writing(sessions_dir, sid, probe.as_ref())
        .iter()
        .map(|(e, l)| views::writer_of_entry(e, *l))
        .collect()
}

/// Whether `h`'s child still writes the id the table has for it: its
/// registry entry names it, or there is no entry to say otherwise (before
/// ready, after the exit).
///
/// The one small file is read in the calling task: handing it to the
/// blocking pool and back costs two thread wake-ups, more than the read,
/// on the way to every attach's first frame.
fn still_writes(daemon: &Daemon, h: &HolderEntry) -> bool {
    let (Some(info), Some(sid)) = (h.info.as_ref(), h.session_id()) else {
        return true;
    };
    if info.exit.is_some() {
        return true;
    }
    let path = daemon
        .options
        .claude_config
        .sessions_dir()
        .join(format!("{}.json", info.child_pid));
    match ccd_claude::registry::read_entry(&path) {
        Ok(e) => e.session_id == sid,
        Err(_) => true,
    }
}

/// Finds the one session `query` names: a full id, a unique id prefix, a
/// session name, or a holder id.
pub async fn resolve(
    daemon: &Daemon,
    query: &str,
) -> Result<(SessionInfo, Option<HolderEntry>), RpcError> {
    resolve_with(daemon, query, true).await
}

/// [`resolve`] for an attach: a session whose holder still runs it is
/// attached as it is, so its transcript is not looked for (with hundreds
/// of project folders that search is most of the daemon's part of an
/// attach); an exited one, which an attach resumes, gets it.
pub async fn resolve_for_attach(
    daemon: &Daemon,
    query: &str,
) -> Result<(SessionInfo, Option<HolderEntry>), RpcError> {
    resolve_with(daemon, query, false).await
}

async fn resolve_with(
    daemon: &Daemon,
    query: &str,
    running_needs_transcript: bool,
) -> Result<(SessionInfo, Option<HolderEntry>), RpcError> {
    let query = query.trim();
    if query.is_empty() {
        return Err(RpcError::invalid_params("empty session id"));
    }
    // Fast path: a full id or a holder id of a session ccd holds needs no
    // index (and cannot be ambiguous); nor does a prefix of a held
    // session's id that no other session id on the machine starts with.
    let hit = match daemon
        .holders
        .find(|h| h.id == query || h.session_id() == Some(query))
    {
        Some(h) => Some(h),
        None => held_by_unique_prefix(daemon, &daemon.holders.snapshot(), query).await,
    };
    // A held process may have moved to another conversation since the
    // table's last refresh (`/clear`): an id hit stands only while the
    // child's registry entry still names it (one small file read).
    let hit = match hit {
        Some(h) if h.id != query && !still_writes(daemon, &h) => {
            daemon.holders.refresh(&h.id).await;
            None
        }
        hit => hit,
    };
    if let Some(h) = hit {
        let mut info = crate::views::holder_only_info(&h);
        let running = h.info.as_ref().is_none_or(|i| i.exit.is_none());
        // Fork and resume need the transcript (looked for in the session's
        // own cwd folder first: a search of every folder costs ~0.4 ms with
        // 250 of them).
        if let Some(sid) = h
            .session_id()
            .filter(|_| running_needs_transcript || !running)
        {
            let projects = daemon.options.claude_config.projects_dir();
            let sessions = daemon.options.claude_config.sessions_dir();
            let sid = sid.to_string();
            let cwd = h.meta.cwd.clone();
            let (found, writers) = tokio::task::spawn_blocking(move || {
                (
                    ccd_claude::transcript::locate::find_by_session_id_in_cwd(
                        &projects, &sid, &cwd,
                    ),
                    writers_of(&sessions, &sid),
                )
            })
            .await
            .unwrap_or((None, Vec::new()));
            if let Some(p) = found {
                info.transcript_bytes = std::fs::metadata(&p).ok().map(|m| m.len());
                info.transcript = Some(p.to_string_lossy().into_owned());
            }
            // Every process writing it now (someone may have resumed it by
            // hand: two writers split a conversation).
            if !writers.is_empty() {
                info.several_writers = writers.len() > 1;
                info.writers = writers;
            }
        }
        return Ok((info, Some(h)));
    }
    let all = all_sessions(daemon).await?;
    if let Some(hit) = all
        .iter()
        .find(|(i, h)| i.session_id == query || h.as_ref().is_some_and(|h| h.id == query))
    {
        return Ok(hit.clone());
    }
    let mut hits: Vec<&(SessionInfo, Option<HolderEntry>)> = all
        .iter()
        .filter(|(i, _)| i.session_id.starts_with(query))
        .collect();
    if hits.is_empty() {
        hits = all
            .iter()
            .filter(|(i, h)| {
                i.name.as_deref() == Some(query)
                    || h.as_ref().and_then(|h| h.meta.name.as_deref()) == Some(query)
            })
            .collect();
    }
    if hits.is_empty() {
        if let Some(e) = empty_transcript(daemon, query).await {
            return Err(e);
        }
        if let Some(e) = registry_only(daemon, query).await {
            return Err(e);
        }
    }
    match hits.len() {
        0 => Err(RpcError::new(
            ErrorCode::SessionNotFound,
            format!("no session matches {query:?}"),
        )
        .with_data_of(&SessionData {
            session: query.to_string(),
        })),
        1 => Ok(hits[0].clone()),
        _ => Err(RpcError::new(
            ErrorCode::AmbiguousSessionId,
            format!("{query:?} matches {} sessions", hits.len()),
        )
        .with_data_of(&AmbiguousData {
            session: query.to_string(),
            candidates: hits
                .iter()
                .take(20)
                .map(|(i, _)| i.session_id.clone())
                .collect(),
        })),
    }
}

/// A registry entry names `query` but no transcript exists for it (a
/// process that died before its first turn, or a deleted transcript).
/// An id no listing shows because its transcript is empty (0 bytes, or no
/// parsable record): the error saying so, naming the file.
async fn empty_transcript(daemon: &Daemon, query: &str) -> Option<RpcError> {
    let projects = daemon.options.claude_config.projects_dir();
    let q = query.to_string();
    let (sid, path) = tokio::task::spawn_blocking(move || {
        ccd_claude::transcript::list_all(&projects)
            .into_iter()
            .filter(|f| f.session_id == q || (q.len() >= 4 && f.session_id.starts_with(&q)))
            .find(|f| ccd_claude::transcript::summary::read_summary(&f.path).is_ok_and(|s| s.empty))
            .map(|f| (f.session_id, f.path))
    })
    .await
    .ok()??;
    Some(empty_transcript_error(&sid, &path.to_string_lossy()))
}

/// `transcript_missing` for a transcript with nothing to resume in it.
pub fn empty_transcript_error(sid: &str, transcript: &str) -> RpcError {
    RpcError::new(
        ErrorCode::TranscriptMissing,
        format!(
            "session {sid}'s transcript {transcript} is empty (no record in it): nothing to resume"
        ),
    )
    .with_data_of(&TranscriptMissingData {
        session: sid.to_string(),
        transcript: Some(transcript.to_string()),
        registry_entry: None,
    })
}

async fn registry_only(daemon: &Daemon, query: &str) -> Option<RpcError> {
    let dir = daemon.options.claude_config.sessions_dir();
    let q = query.to_string();
    let entry = tokio::task::spawn_blocking(move || {
        ccd_claude::registry::read_all(&dir)
            .ok()?
            .into_iter()
            .find(|e| e.session_id == q || (q.len() >= 4 && e.session_id.starts_with(&q)))
    })
    .await
    .ok()??;
    Some(
        RpcError::new(
            ErrorCode::TranscriptMissing,
            format!(
                "session {} has no transcript (its process {} died before a first turn, or the file was deleted): nothing to resume",
                entry.session_id, entry.pid
            ),
        )
        .with_data_of(&TranscriptMissingData {
            session: entry.session_id.clone(),
            transcript: None,
            registry_entry: Some(entry.path.to_string_lossy().into_owned()),
        }),
    )
}
