//! Conversions from what the daemon knows to the wire's `SessionInfo`
//! (exactly the fields of `ccd ls --json`).

pub use crate::holders::attention_text;
use crate::holders::{lifecycle_of, Finished, HolderEntry};
use ccd_claude::index::{SessionRecord, Writer};
use ccd_claude::Liveness;
use ccd_protocol::methods::session::{
    ActivityStatus, ClientCounters, ContextWindow, EarlierConversation, Lifecycle, OwnedInfo,
    SessionInfo, SessionState, Superseded, WriterInfo,
};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

fn rfc3339(t: Option<OffsetDateTime>) -> Option<String> {
    t.and_then(|t| t.format(&Rfc3339).ok())
}

/// Unix milliseconds as RFC 3339.
pub fn millis(ms: i64) -> Option<String> {
    rfc3339(OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok())
}

pub fn state_of(l: Liveness) -> SessionState {
    match l {
        Liveness::Live => SessionState::Live,
        Liveness::Dead => SessionState::Dead,
        Liveness::Unknown => SessionState::Unknown,
    }
}

fn status_of(s: Option<&str>) -> Option<ActivityStatus> {
    s.map(|s| match s {
        "idle" => ActivityStatus::Idle,
        "busy" => ActivityStatus::Busy,
        "waiting" => ActivityStatus::Waiting,
        _ => ActivityStatus::Other,
    })
}

fn writer_info(w: &Writer) -> WriterInfo {
    WriterInfo {
        pid: w.pid,
        liveness: state_of(w.liveness),
        kind: w.kind.clone(),
        cwd: w.cwd.clone(),
        started_at: rfc3339(w.started_at),
        status: status_of(w.status.as_deref()),
        waiting_for: w.waiting_for.clone(),
        version: w.version.clone(),
    }
}

/// A registry entry judged `l`, as a writer on the wire.
pub fn writer_of_entry(e: &ccd_claude::registry::RegistryEntry, l: Liveness) -> WriterInfo {
    writer_info(&ccd_claude::index::writer_of(e, l))
}

/// One index record on the wire.
pub fn record_to_info(r: &SessionRecord) -> SessionInfo {
    SessionInfo {
        session_id: r.session_id.clone(),
        state: state_of(r.state),
        pid: r.pid,
        cwd: r.cwd.clone(),
        status: status_of(r.status.as_deref()),
        waiting_for: r.waiting_for.clone(),
        kind: r.kind.clone(),
        name: r.name.clone(),
        version: r.version.clone(),
        started_at: rfc3339(r.started_at),
        last_activity: rfc3339(r.last_activity),
        title: r.title.clone(),
        model: r.model.clone(),
        context_tokens: r.context_tokens,
        context_percent: r.context_percent,
        context_window: r.context_window.map(|w| ContextWindow {
            tokens: w.tokens,
            source: match w.source {
                ccd_claude::context::WindowSource::Config => "config",
                ccd_claude::context::WindowSource::BuiltIn => "built-in",
                ccd_claude::context::WindowSource::Default => "default",
                ccd_claude::context::WindowSource::Screen => "screen",
            }
            .into(),
        }),
        transcript: r
            .transcript
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
        transcript_bytes: r.transcript_bytes,
        writers: r.writers.iter().map(writer_info).collect(),
        several_writers: r.several_writers,
        superseded_by: None,
        ccd: None,
        cost: None,
        usage: None,
    }
}

/// ccd's part of a session it holds.
pub fn owned_info(e: &HolderEntry) -> OwnedInfo {
    OwnedInfo {
        holder: e.id.clone(),
        lifecycle: e.lifecycle(),
        attention: e
            .info
            .as_ref()
            .and_then(|i| i.needs_attention.as_ref())
            .map(|a| attention_text(&a.reason)),
        permission: e
            .info
            .as_ref()
            .filter(|i| i.exit.is_none())
            .and_then(|i| i.permission.as_ref())
            .map(permission_text),
        permission_prompt: e
            .info
            .as_ref()
            .filter(|i| i.exit.is_none())
            .and_then(|i| i.permission.as_ref())
            .map(crate::holders::permission_prompt_id),
        stated_context_window: e.info.as_ref().and_then(|i| i.context_window),
        permission_mode: e.info.as_ref().and_then(|i| i.permission_mode.clone()),
        attached: e.info.as_ref().map(|i| i.clients.len() as u32).unwrap_or(0),
        exit_code: e
            .info
            .as_ref()
            .and_then(|i| i.exit.as_ref())
            .and_then(|x| x.code),
        pinned: e.meta.pinned,
        clients: e
            .info
            .as_ref()
            .map(|i| {
                i.clients
                    .iter()
                    .map(|c| ClientCounters {
                        mode: serde_json::to_value(c.mode)
                            .ok()
                            .and_then(|v| v.as_str().map(String::from))
                            .unwrap_or_default(),
                        bytes_dropped: c.bytes_dropped,
                        resyncs: c.resyncs,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        earlier: e
            .info
            .as_ref()
            .map(|i| {
                i.earlier_ids
                    .iter()
                    .map(|x| EarlierConversation {
                        session: x.session_id.clone(),
                        next: x.superseded_by.clone(),
                        reason: x.reason.as_str().into(),
                        until: millis(x.until),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// A held session whose CLI states its context window (the welcome
/// banner's "(1M context)") is measured against that window, not an
/// assumed one: `context_window` says `source: "screen"` and
/// `context_percent` follows.
pub fn apply_stated_window(r: &mut SessionInfo) {
    let Some(tokens) = r.ccd.as_ref().and_then(|c| c.stated_context_window) else {
        return;
    };
    r.context_window = Some(ContextWindow {
        tokens,
        source: "screen".into(),
    });
    r.context_percent = r.context_tokens.map(|used| {
        ccd_claude::context::ContextWindows::percent(
            used,
            ccd_claude::context::Window {
                tokens,
                source: ccd_claude::context::WindowSource::Screen,
            },
        )
    });
}

/// Joins ccd's own rows (`held`: [`holder_only_info`] of each holder,
/// then [`finished_only_info`] of sessions it held that ended, newest
/// first) into the index's `rows`. One rule for the daemon's
/// `sessions.list` and `ccd ls` (which builds the index itself and asks the
/// daemon for the held rows only):
///
/// - a process is not a conversation: a running holder holds the row whose
///   writers include its child's pid — the id the child's registry entry
///   names now — whatever id the holder last reported;
/// - a holder whose child writes no listed row (starting, exited) and an
///   ended session annotate the row of the id they report, unless another
///   process writes that id now (an ended holder is then no part of it);
/// - a dead row that a running holder's process wrote before says what it
///   moved on to (`superseded_by`), and carries no ended-holder record;
/// - held rows the index does not show yet (before the registry entry)
///   come first.
pub fn join_held(rows: Vec<SessionInfo>, held: Vec<SessionInfo>) -> Vec<SessionInfo> {
    let mut rows = rows;
    let running = |h: &SessionInfo| h.state != SessionState::Dead && h.ccd.is_some();
    let mut used = vec![false; held.len()];
    // What each running holder's process left, by the holder's own account
    // and by the registry's when the holder has not told yet.
    let mut left: Vec<Left> = held
        .iter()
        .filter(|h| running(h))
        .filter_map(|h| Some((h.ccd.as_ref()?, h)))
        .flat_map(|(c, h)| {
            c.earlier.iter().map(|x| Left {
                earlier: x.clone(),
                holder: c.holder.clone(),
                writes_now: h.session_id.clone(),
            })
        })
        .collect();
    // The child's pid first.
    for (i, h) in held.iter().enumerate() {
        let Some(pid) = h.pid.filter(|_| running(h)) else {
            continue;
        };
        if let Some(r) = rows
            .iter_mut()
            .find(|r| r.ccd.is_none() && r.writers.iter().any(|w| w.pid == pid))
        {
            r.ccd = h.ccd.clone();
            apply_stated_window(r);
            used[i] = true;
            if r.session_id != h.session_id {
                // The registry names another id than the holder last
                // reported: the process moved on (its holder says why at
                // its next refresh).
                let holder = h.ccd.as_ref().map(|c| c.holder.clone()).unwrap_or_default();
                for x in left.iter_mut().filter(|x| x.holder == holder) {
                    x.writes_now = r.session_id.clone();
                }
                left.push(Left {
                    earlier: EarlierConversation {
                        session: h.session_id.clone(),
                        next: r.session_id.clone(),
                        reason: "unknown".into(),
                        until: None,
                    },
                    holder,
                    writes_now: r.session_id.clone(),
                });
            }
        }
    }
    // Then the id a holder reports, running holders before ended ones.
    for pass_running in [true, false] {
        for (i, h) in held.iter().enumerate() {
            if used[i] || running(h) != pass_running {
                continue;
            }
            let Some(r) = rows.iter_mut().find(|r| r.session_id == h.session_id) else {
                continue;
            };
            used[i] = true;
            if r.ccd.is_some() || (!pass_running && !r.writers.is_empty()) {
                continue;
            }
            if !pass_running && r.state == SessionState::Dead {
                if let Some(s) = superseded(&r.session_id, &left) {
                    r.superseded_by = Some(s);
                    continue;
                }
            }
            r.ccd = h.ccd.clone();
            apply_stated_window(r);
        }
    }
    for r in rows.iter_mut() {
        if r.state == SessionState::Dead && r.ccd.is_none() && r.superseded_by.is_none() {
            r.superseded_by = superseded(&r.session_id, &left);
        }
    }
    let mut out: Vec<SessionInfo> = held
        .into_iter()
        .zip(used)
        .filter(|(h, used)| !used && h.state != SessionState::Dead)
        .map(|(h, _)| h)
        .collect();
    out.append(&mut rows);
    out
}

/// An id a running holder's process wrote before, with that holder and the
/// id its process writes now.
struct Left {
    earlier: EarlierConversation,
    holder: String,
    writes_now: String,
}

/// What superseded `session_id` if a running holder's process wrote it
/// before (the latest such switch when several did).
fn superseded(session_id: &str, left: &[Left]) -> Option<Superseded> {
    left.iter()
        .filter(|x| x.earlier.session == session_id)
        .max_by(|a, b| a.earlier.until.cmp(&b.earlier.until))
        .map(|x| Superseded {
            session: x.earlier.next.clone(),
            reason: x.earlier.reason.clone(),
            at: x.earlier.until.clone(),
            holder: x.holder.clone(),
            writes_now: x.writes_now.clone(),
        })
}

/// ccd's part of a session whose holder is gone.
pub fn finished_info(f: &Finished) -> OwnedInfo {
    OwnedInfo {
        holder: f.meta.id.clone(),
        lifecycle: f.state.clone(),
        attention: f.failure.clone(),
        permission: None,
        permission_prompt: None,
        stated_context_window: None,
        permission_mode: None,
        attached: 0,
        exit_code: f.exit.as_ref().and_then(|x| x.code),
        pinned: f.meta.pinned,
        clients: Vec::new(),
        earlier: Vec::new(),
    }
}

/// A session ccd holds that the index does not show yet (before its
/// registry entry and transcript exist).
pub fn holder_only_info(e: &HolderEntry) -> SessionInfo {
    let info = e.info.as_ref();
    let exited = info.is_some_and(|i| i.exit.is_some());
    let status = info.and_then(|i| i.status.as_ref());
    SessionInfo {
        state: if exited {
            SessionState::Dead
        } else {
            SessionState::Live
        },
        pid: info.filter(|_| !exited).map(|i| i.child_pid),
        status: status.and_then(|s| status_of(s.status.as_deref())),
        waiting_for: status.and_then(|s| s.waiting_for.clone()),
        started_at: millis(info.map(|i| i.started_at).unwrap_or(e.meta.created_at)),
        last_activity: millis(e.meta.created_at),
        ccd: Some(owned_info(e)),
        ..known_to_ccd_only(e.session_id().unwrap_or(&e.id), &e.meta)
    }
}

/// A session as far as ccd's own records tell it: no file was read.
fn known_to_ccd_only(session_id: &str, meta: &crate::holders::spec::HolderMeta) -> SessionInfo {
    SessionInfo {
        session_id: session_id.to_string(),
        state: SessionState::Dead,
        pid: None,
        cwd: Some(meta.cwd.clone()),
        status: None,
        waiting_for: None,
        kind: Some("interactive".into()),
        name: meta.name.clone(),
        version: None,
        started_at: millis(meta.created_at),
        last_activity: None,
        title: None,
        model: None,
        context_tokens: None,
        context_percent: None,
        context_window: None,
        transcript: None,
        transcript_bytes: None,
        writers: Vec::new(),
        several_writers: false,
        superseded_by: None,
        ccd: None,
        cost: None,
        usage: None,
    }
}

/// A permission dialog in a line: `<tool> <detail>`.
pub fn permission_text(p: &ccd_protocol::holder::PermissionInfo) -> String {
    let tool = crate::holders::permission_tool(p);
    match p.detail.as_deref().filter(|d| !d.is_empty()) {
        Some(d) => format!("{tool} {d}"),
        None => tool,
    }
}

/// Whether `lifecycle` means the start is over, one way or another.
pub fn start_settled(e: &HolderEntry) -> bool {
    match &e.info {
        None => false,
        Some(i) => !matches!(lifecycle_of(i), Lifecycle::Starting | Lifecycle::Trust),
    }
}

/// A session ccd held that ended, as far as ccd knows it (no file scan).
pub fn finished_only_info(f: &Finished) -> Option<SessionInfo> {
    Some(SessionInfo {
        ccd: Some(finished_info(f)),
        ..known_to_ccd_only(f.session_id.as_deref()?, &f.meta)
    })
}

/// The conversations `ccd archive` moved under `root` (`<state
/// dir>/archive`), state `archived`, newest archived first (blocking: reads
/// each archive's manifest). `ccd ls` and `sessions.list` both list them
/// after the sessions in Claude Code's folder, leaving out any id listed
/// there.
pub fn archived_info(root: &std::path::Path) -> Vec<SessionInfo> {
    ccd_claude::archive::list(root)
        .into_iter()
        .map(|m| SessionInfo {
            transcript: Some(root.join(&m.session_id).display().to_string()),
            transcript_bytes: Some(m.bytes()),
            session_id: m.session_id,
            state: SessionState::Archived,
            pid: None,
            cwd: m.cwd,
            status: None,
            waiting_for: None,
            kind: None,
            name: None,
            version: None,
            started_at: None,
            last_activity: m.last_written,
            title: None,
            model: None,
            context_tokens: None,
            context_percent: None,
            context_window: None,
            writers: vec![],
            several_writers: false,
            superseded_by: None,
            ccd: None,
            cost: None,
            usage: None,
        })
        .collect()
}

/// `rows` with the archived conversations of `archived` added after them,
/// but for ids `rows` lists already.
pub fn with_archived(mut rows: Vec<SessionInfo>, archived: Vec<SessionInfo>) -> Vec<SessionInfo> {
    let known: std::collections::HashSet<&str> =
        rows.iter().map(|r| r.session_id.as_str()).collect();
    let extra: Vec<SessionInfo> = archived
        .into_iter()
        .filter(|a| !known.contains(a.session_id.as_str()))
        .collect();
    rows.extend(extra);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A row as the index lists it: `writers` are pids.
    fn row(sid: &str, writers: &[u32]) -> SessionInfo {
        serde_json::from_value(json!({
            "session_id": sid,
            "state": if writers.is_empty() { "dead" } else { "live" },
            "pid": writers.first(), "cwd": "/w", "status": null, "waiting_for": null,
            "kind": null, "name": null, "version": null, "started_at": null,
            "last_activity": null, "title": null, "model": null, "context_tokens": null,
            "context_percent": null, "context_window": null, "transcript": null,
            "transcript_bytes": null,
            "writers": writers.iter().map(|p| json!({
                "pid": p, "liveness": "live", "kind": null, "cwd": null, "started_at": null,
                "status": null, "waiting_for": null, "version": null
            })).collect::<Vec<_>>(),
            "several_writers": writers.len() > 1, "ccd": null
        }))
        .expect("a row")
    }

    /// A held row as the daemon reports it: the id the holder last saw, its
    /// child's pid, and the ids it wrote before.
    fn held(
        holder: &str,
        sid: &str,
        child: Option<u32>,
        earlier: &[(&str, &str, &str)],
    ) -> SessionInfo {
        let mut r = row(sid, &[]);
        r.state = if child.is_some() {
            SessionState::Live
        } else {
            SessionState::Dead
        };
        r.pid = child;
        r.ccd = Some(OwnedInfo {
            holder: holder.into(),
            lifecycle: if child.is_some() {
                Lifecycle::Idle
            } else {
                Lifecycle::Exited
            },
            attention: None,
            permission: None,
            permission_prompt: None,
            stated_context_window: None,
            permission_mode: None,
            attached: 0,
            exit_code: None,
            pinned: false,
            clients: Vec::new(),
            earlier: earlier
                .iter()
                .map(|(s, next, reason)| EarlierConversation {
                    session: (*s).into(),
                    next: (*next).into(),
                    reason: (*reason).into(),
                    until: Some("2026-12-01T00:00:00Z".into()),
                })
                .collect(),
        });
        r
    }

    fn find<'a>(rows: &'a [SessionInfo], sid: &str) -> &'a SessionInfo {
        rows.iter().find(|r| r.session_id == sid).expect(sid)
    }

    #[test]
    fn a_window_the_cli_states_replaces_the_assumed_one() {
        // The transcript says 200k tokens are in use of an assumed 200k
        // window; the banner of the held process says 1M.
        let mut r = row("s", &[7]);
        r.context_tokens = Some(200_000);
        r.context_percent = Some(100.0);
        r.context_window = Some(ContextWindow {
            tokens: 200_000,
            source: "default".into(),
        });
        let mut h = held("h1", "s", Some(7), &[]);
        if let Some(c) = h.ccd.as_mut() {
            c.stated_context_window = Some(1_000_000);
        }
        let out = join_held(vec![r.clone()], vec![h]);
        let s = find(&out, "s");
        assert_eq!(
            s.context_window,
            Some(ContextWindow {
                tokens: 1_000_000,
                source: "screen".into()
            })
        );
        assert_eq!(s.context_percent, Some(20.0));
        // A holder that read no stated window leaves the row as it was.
        let out = join_held(vec![r], vec![held("h1", "s", Some(7), &[])]);
        assert_eq!(find(&out, "s").context_percent, Some(100.0));
    }

    #[test]
    fn a_held_process_holds_the_id_its_entry_names_even_before_its_holder_says_so() {
        // The holder still reports "old"; the registry says its child (pid
        // 7) writes "new".
        let rows = vec![row("new", &[7]), row("old", &[])];
        let out = join_held(rows, vec![held("h1", "old", Some(7), &[])]);
        assert_eq!(out.len(), 2, "no extra row for the stale id");
        assert_eq!(
            find(&out, "new").ccd.as_ref().map(|c| c.holder.as_str()),
            Some("h1")
        );
        let old = find(&out, "old");
        assert!(old.ccd.is_none());
        let s = old.superseded_by.as_ref().expect("superseded");
        assert_eq!((s.session.as_str(), s.reason.as_str()), ("new", "unknown"));
        assert_eq!((s.holder.as_str(), s.writes_now.as_str()), ("h1", "new"));
    }

    #[test]
    fn earlier_ids_name_the_id_that_reaches_the_process_now() {
        // a -> b (clear) -> c (resume): both earlier ids point at c.
        let rows = vec![row("c", &[7]), row("a", &[]), row("b", &[])];
        let h = held(
            "h1",
            "c",
            Some(7),
            &[("a", "b", "clear"), ("b", "c", "resume")],
        );
        let out = join_held(rows, vec![h]);
        let a = find(&out, "a").superseded_by.clone().expect("a superseded");
        assert_eq!(
            (a.session.as_str(), a.writes_now.as_str(), a.reason.as_str()),
            ("b", "c", "clear")
        );
        let b = find(&out, "b").superseded_by.clone().expect("b superseded");
        assert_eq!((b.session.as_str(), b.reason.as_str()), ("c", "resume"));
        assert!(find(&out, "c").superseded_by.is_none());
    }

    #[test]
    fn an_ended_holder_never_marks_a_row_another_process_writes() {
        // ccd's copy of "s" ended; pid 9 (not ccd's) writes "s" now.
        let rows = vec![row("s", &[9])];
        let out = join_held(rows, vec![held("h1", "s", None, &[])]);
        assert_eq!(out.len(), 1);
        assert!(out[0].ccd.is_none(), "{:?}", out[0].ccd);
        // With nobody writing it, the ended holder annotates it.
        let out = join_held(vec![row("s", &[])], vec![held("h1", "s", None, &[])]);
        assert_eq!(
            out[0].ccd.as_ref().map(|c| c.lifecycle.as_str()),
            Some("exited")
        );
    }

    #[test]
    fn a_held_session_the_files_do_not_show_yet_comes_first() {
        let out = join_held(
            vec![row("x", &[])],
            vec![held("h1", "starting", Some(5), &[])],
        );
        assert_eq!(out[0].session_id, "starting");
        assert_eq!(out.len(), 2);
    }
}
