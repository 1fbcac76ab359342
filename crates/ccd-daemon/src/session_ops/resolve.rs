//! Resolving what a client names — a full session id, a unique prefix, a
//! session name, a holder id — to one session and, when ccd holds it, its
//! holder: from the holder table when that is enough, from the session
//! index (built on the blocking pool) otherwise; and the errors saying why
//! nothing or several match, or why a session ccd does not hold cannot be
//! acted on ([`held`]).

use crate::conn_ctx::ConnCtx;
use crate::holders::HolderEntry;
use crate::state::Daemon;
use crate::views;
use ccd_protocol::error_data::{
    AmbiguousData, LiveElsewhereData, NotRunningData, SessionData, TranscriptMissingData,
};
use ccd_protocol::methods::session::SessionInfo;
use ccd_protocol::{ErrorCode, RpcError};
use std::path::Path;

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
        let mut info = views::holder_only_info(&h);
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
        if let Some(e) = finished_before_first_turn(daemon, query) {
            return Err(e);
        }
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

/// A session ccd held that ended — stopped by ccd (the memory budget, the
/// idle limit), exited, failed — and that no listing shows: Claude Code
/// writes a transcript only at the first turn, so one that ended before it
/// has nothing to resume. ccd still has its record (the last
/// `FINISHED_KEPT` of this daemon's run): the error says what happened and
/// how to start again, where "no session matches" would deny the id ccd
/// itself printed.
fn finished_before_first_turn(daemon: &Daemon, query: &str) -> Option<RpcError> {
    let f = daemon.holders.finished().into_iter().rev().find(|f| {
        let sid = f.session_id.as_deref().unwrap_or("");
        f.meta.id == query
            || sid == query
            || (query.len() >= 4 && sid.starts_with(query))
            || f.meta.name.as_deref() == Some(query)
    })?;
    let sid = f.session_id.clone().unwrap_or_else(|| f.meta.id.clone());
    Some(ended_before_first_turn_error(
        &sid,
        &f.state,
        f.failure.as_deref(),
        &f.meta.cwd,
    ))
}

/// `transcript_missing` for a session ccd held that ended before its
/// first turn (see [`finished_before_first_turn`]).
pub fn ended_before_first_turn_error(
    sid: &str,
    state: &ccd_protocol::methods::session::Lifecycle,
    failure: Option<&str>,
    cwd: &str,
) -> RpcError {
    use ccd_protocol::methods::session::Lifecycle;
    let how = match state {
        Lifecycle::Reaped => {
            let why = match failure {
                Some(f) if f.contains("memory budget") => "memory budget",
                Some(f) if f.contains("idle") => "idle with no client",
                _ => "reaped",
            };
            format!("was stopped by ccd ({why})")
        }
        other => format!("ended ({})", other.as_str()),
    };
    RpcError::new(
        ErrorCode::TranscriptMissing,
        format!(
            "session {sid} {how} before its first turn; it has no conversation to resume (Claude Code writes one at the first turn); start a new one with `ccd new --cwd {}`",
            sh_word(cwd)
        ),
    )
    .with_data_of(&TranscriptMissingData {
        session: sid.to_string(),
        transcript: None,
        registry_entry: None,
    })
}

/// `s` as one POSIX shell word (single quotes unless plain).
fn sh_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
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

/// [`resolve`] (`for_attach`: [`resolve_for_attach`]) that, when nothing
/// answers to `query` but an archived conversation does (its id, or a
/// prefix only one archived id starts with: `ccd archive` moved it into
/// `<state dir>/archive`), puts that conversation back where it was
/// (`ccd_claude::archive::restore`, on the blocking pool) and resolves
/// again: `session.attach` and `session.fork` of an archived session
/// resume it in its own folder, from any client. A put-back that fails
/// says why (the archive stays as it was).
pub async fn resolve_putting_back(
    daemon: &Daemon,
    query: &str,
    for_attach: bool,
) -> Result<(SessionInfo, Option<HolderEntry>), RpcError> {
    let first = resolve_with(daemon, query, !for_attach).await;
    match first {
        Err(e) if e.code == ErrorCode::SessionNotFound.code() => {
            let root = daemon.options.state_dir.join("archive");
            let q = query.trim().to_string();
            let put_back = tokio::task::spawn_blocking(move || {
                let ids: Vec<String> = ccd_claude::archive::list(&root)
                    .into_iter()
                    .map(|m| m.session_id)
                    .filter(|sid| sid.starts_with(&q))
                    .collect();
                let sid = match ids.iter().find(|sid| **sid == q) {
                    Some(sid) => sid.clone(),
                    None if ids.len() == 1 && !q.is_empty() => ids[0].clone(),
                    None => return Ok(None),
                };
                ccd_claude::archive::restore(&root, &sid)
                    .map(|_| Some(sid.clone()))
                    .map_err(|e| format!("putting back archived session {sid}: {e}"))
            })
            .await
            .map_err(|e| RpcError::internal(e.to_string()))?
            .map_err(RpcError::internal)?;
            match put_back {
                Some(sid) => {
                    tracing::info!(session = %sid, "archived conversation put back");
                    resolve_with(daemon, &sid, !for_attach).await
                }
                None => Err(e),
            }
        }
        r => r,
    }
}

/// The holder of `query`, or the error saying why there is none.
pub async fn held(ctx: &ConnCtx, query: &str) -> Result<HolderEntry, RpcError> {
    let (info, holder) = resolve(&ctx.daemon, query).await?;
    holder.ok_or_else(|| {
        if info.state == ccd_protocol::methods::session::SessionState::Dead {
            return not_running(&info);
        }
        let data = LiveElsewhereData {
            session: info.session_id.clone(),
            state: info.state,
            pid: info.pid,
            cwd: info.cwd.clone(),
            since: None,
            kind: None,
            started_meanwhile: false,
        };
        RpcError::new(
            ErrorCode::SessionLiveElsewhere,
            format!(
                "ccd does not hold session {}: it runs outside ccd{}",
                info.session_id,
                info.pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
            ),
        )
        .with_data_of(&data)
    })
}

/// `session_not_running` for a dead session; one that a held process
/// wrote before says which process moved on from it and the id that
/// reaches that process now.
pub fn not_running(info: &ccd_protocol::methods::session::SessionInfo) -> RpcError {
    let sid = &info.session_id;
    match &info.superseded_by {
        Some(s) => {
            let why = match s.reason.as_str() {
                "clear" => "after `/clear`",
                "resume" => "after resuming another conversation inside claude",
                _ => "since",
            };
            let now = s.writes_now.get(..8).unwrap_or(&s.writes_now);
            RpcError::new(
                ErrorCode::SessionNotRunning,
                format!(
                    "session {sid} is not running: the process ccd holds in {} writes {} {why}; `ccd attach {now}` reaches it, `ccd attach {}` resumes this one",
                    s.holder,
                    s.writes_now,
                    sid.get(..8).unwrap_or(sid),
                ),
            )
            .with_data_of(&NotRunningData {
                session: sid.clone(),
                superseded_by: Some(s.clone()),
            })
        }
        None => RpcError::new(
            ErrorCode::SessionNotRunning,
            format!("session {sid} is not running (`ccd attach` resumes it)"),
        )
        .with_data_of(&NotRunningData {
            session: sid.clone(),
            superseded_by: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccd_protocol::methods::session::Lifecycle;

    #[test]
    fn a_session_ended_before_its_first_turn_says_what_happened() {
        let e = ended_before_first_turn_error(
            "5e6f7a8b-9c0d",
            &Lifecycle::Reaped,
            Some("stopped to keep held sessions under the memory budget (…)"),
            "/w/my project",
        );
        assert_eq!(e.code, ErrorCode::TranscriptMissing.code());
        assert!(
            e.message
                .contains("stopped by ccd (memory budget) before its first turn")
                && e.message.contains("no conversation to resume")
                && e.message.contains("`ccd new --cwd '/w/my project'`"),
            "{}",
            e.message
        );
        let e = ended_before_first_turn_error(
            "s",
            &Lifecycle::Reaped,
            Some("stopped after 3 s idle with no client (resumable)"),
            "/w",
        );
        assert!(e.message.contains("(idle with no client)"), "{}", e.message);
        let e = ended_before_first_turn_error("s", &Lifecycle::Exited, None, "/w");
        assert!(
            e.message.contains("ended (exited) before its first turn")
                && e.message.contains("`ccd new --cwd /w`"),
            "{}",
            e.message
        );
        assert_eq!(sh_word("it's"), "'it'\\''s'");
    }
}
