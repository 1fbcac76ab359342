//! One record per session id, merged from the registry and the transcripts.
//!
//! Built afresh on every call ([`build`]): liveness is re-validated against
//! the process table each time, transcripts are re-read (bounded) — or, with
//! [`build_cached`], only those whose size, mtime or inode changed since a
//! summary was kept. Rules:
//!
//! - A session with a transcript and no live process is `dead` (resumable).
//! - A registry entry that may be running (`live` or `unknown`) makes its
//!   session `live`/`unknown`; every such entry is a *writer*. Two writers on
//!   one id (someone resumed a running session by hand) are both reported
//!   and the record says so (`several_writers`).
//! - A process writes the conversation its registry entry names *now*:
//!   after `/clear` (or a conversation picked inside the TUI) the entry
//!   names another id at once, which is then that process's session, and
//!   the id it wrote before is written by nobody (`dead`, resumable). No
//!   guess from transcript times overrides the registry: the versions
//!   checked (2.1.173, 2.1.332) never leave it behind, and a guess made the
//!   old conversation look live right after `/clear`.
//! - A dead entry with no transcript (a process killed before its first
//!   turn) leaves nothing to resume: it is not listed, only counted.
//! - An empty transcript (0 bytes, or no parsable record) is no transcript:
//!   nothing to resume, so it is not listed on its own (only counted, in
//!   [`SessionIndex::empty_transcripts`]), and a dead entry whose only
//!   transcript is empty counts as stale. A running writer is still listed.
//!
//! Recorded cwds come from the CLI's own `getcwd`, already resolved, so they
//! are only cleaned lexically here (no file-system calls per session); paths
//! given by a user go through [`crate::paths::normalize`].

use crate::config::ClaudeConfigDir;
use crate::context::{ContextWindows, Window};
use crate::liveness::{self, Liveness, ProcessProbe};
use crate::paths::lexical_clean;
use crate::registry::{self, RegistryEntry};
use crate::transcript::summary_cache::{self, FileStamp, SummaryCache};
use crate::transcript::{self, TranscriptFile, TranscriptSummary};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use time::OffsetDateTime;

/// A process that holds (may be writing) a session.
#[derive(Debug, Clone, Serialize)]
pub struct Writer {
    pub pid: u32,
    pub liveness: Liveness,
    pub kind: Option<String>,
    pub cwd: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub started_at: Option<OffsetDateTime>,
    pub status: Option<String>,
    pub waiting_for: Option<String>,
    pub version: Option<String>,
}

/// Everything known about one session id.
#[derive(Debug, Clone, Serialize)]
pub struct SessionRecord {
    pub session_id: String,
    pub state: Liveness,
    /// The primary writer's pid; `None` when dead.
    pub pid: Option<u32>,
    /// The original cwd (the transcript's first), else the registry's.
    pub cwd: Option<String>,
    /// `idle` / `busy` / `waiting` from the registry; `None` when dead.
    pub status: Option<String>,
    pub waiting_for: Option<String>,
    pub kind: Option<String>,
    pub name: Option<String>,
    pub version: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub started_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_activity: Option<OffsetDateTime>,
    pub title: Option<String>,
    pub model: Option<String>,
    pub context_tokens: Option<u64>,
    pub context_percent: Option<f64>,
    /// The window the percentage assumes, and where that figure came from.
    pub context_window: Option<Window>,
    pub transcript: Option<PathBuf>,
    pub transcript_bytes: Option<u64>,
    pub writers: Vec<Writer>,
    pub several_writers: bool,
}

/// The merged view of every session under one config dir.
#[derive(Debug, Default, Serialize)]
pub struct SessionIndex {
    /// Newest activity first.
    pub sessions: Vec<SessionRecord>,
    /// Dead registry entries with no transcript (not listed).
    pub stale_entries: usize,
    /// Transcripts with no parsable record (0-byte files included): not
    /// sessions, not listed; their paths, for saying why an id is missing.
    pub empty_transcripts: Vec<PathBuf>,
    /// Each transcript's stamp as [`build_cached_stamped`] took it to judge its
    /// kept summary (none without a cache, or when no summary was kept
    /// yet): what another reader of the same files in the same command
    /// may take instead of a stat of its own (`ccd search`'s index
    /// update). Not liveness: a file's size, mtime and inode.
    #[serde(skip)]
    pub stamps: HashMap<PathBuf, FileStamp>,
}

impl SessionIndex {
    /// Records whose id is `query`, starts with `query`, or whose name is
    /// `query`. An exact id match wins over prefixes.
    pub fn find(&self, query: &str) -> Vec<&SessionRecord> {
        if let Some(r) = self.sessions.iter().find(|r| r.session_id == query) {
            return vec![r];
        }
        let by_prefix: Vec<_> = self
            .sessions
            .iter()
            .filter(|r| r.session_id.starts_with(query))
            .collect();
        if !by_prefix.is_empty() || query.is_empty() {
            return by_prefix;
        }
        self.sessions
            .iter()
            .filter(|r| r.name.as_deref() == Some(query))
            .collect()
    }
}

/// Builds the index from `config` as the OS is now.
pub fn build(
    config: &ClaudeConfigDir,
    probe: &dyn ProcessProbe,
    windows: &ContextWindows,
) -> std::io::Result<SessionIndex> {
    build_cached(config, probe, windows, None)
}

/// [`build`], keeping transcript summaries between calls in `cache_dir`
/// (see [`transcript::summary_cache`]): an unchanged transcript is not read
/// again.
pub fn build_cached(
    config: &ClaudeConfigDir,
    probe: &dyn ProcessProbe,
    windows: &ContextWindows,
    cache_dir: Option<&Path>,
) -> std::io::Result<SessionIndex> {
    build_cached_with(config, probe, windows, cache_dir, false)
}

/// [`build_cached`] that keeps each transcript's stamp in
/// [`SessionIndex::stamps`] (a path and 40 bytes a transcript, for a
/// caller that reads the same files next: `ccd search`).
pub fn build_cached_stamped(
    config: &ClaudeConfigDir,
    probe: &dyn ProcessProbe,
    windows: &ContextWindows,
    cache_dir: Option<&Path>,
) -> std::io::Result<SessionIndex> {
    build_cached_with(config, probe, windows, cache_dir, true)
}

fn build_cached_with(
    config: &ClaudeConfigDir,
    probe: &dyn ProcessProbe,
    windows: &ContextWindows,
    cache_dir: Option<&Path>,
    keep_stamps: bool,
) -> std::io::Result<SessionIndex> {
    let entries = registry::read_all(&config.sessions_dir())?;
    let projects = config.projects_dir();
    let files = transcript::list_all(&projects);
    let summaries = match cache_dir {
        None => read_summaries(&files, &mut SummaryCache::none()).0,
        Some(dir) => {
            let mut cache =
                SummaryCache::load(&summary_cache::cache_file(dir, &projects), &projects);
            let (summaries, stamps, read) = read_summaries(&files, &mut cache);
            let now: Vec<(FileStamp, &TranscriptSummary)> = stamps
                .iter()
                .zip(&summaries)
                .filter_map(|(st, s)| Some(((*st)?, s)))
                .collect();
            cache.save(&now, read);
            let stamps = if keep_stamps {
                now.iter().map(|(st, s)| (s.path.clone(), *st)).collect()
            } else {
                HashMap::new()
            };
            drop(now);
            return Ok(SessionIndex {
                stamps,
                ..merge(entries, summaries, probe, windows)
            });
        }
    };
    Ok(merge(entries, summaries, probe, windows))
}

/// Runs `f` over `items` on a few threads; results in any order.
fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T, &mut Vec<u8>) -> Option<R> + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
        .min(items.len().max(1));
    let next = AtomicUsize::new(0);
    let out = Mutex::new(Vec::with_capacity(items.len()));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut mine = Vec::new();
                let mut buf = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    if let Some(r) = f(item, &mut buf) {
                        mine.push(r);
                    }
                }
                if let Ok(mut all) = out.lock() {
                    all.append(&mut mine);
                }
            });
        }
    });
    out.into_inner().unwrap_or_default()
}

/// The summaries of `files` (unreadable ones skipped), each with its file's
/// stamp when it could be taken, and how many were read afresh: unchanged
/// files' summaries are taken out of `cache`, the rest read on a few
/// threads.
fn read_summaries(
    files: &[TranscriptFile],
    cache: &mut SummaryCache,
) -> (Vec<TranscriptSummary>, Vec<Option<FileStamp>>, usize) {
    // Without a cache there is nothing to compare: no stat per file.
    let stamps: Vec<Option<FileStamp>> = if cache.is_empty() {
        vec![None; files.len()]
    } else {
        let mut by_index = in_parallel(
            &files.iter().enumerate().collect::<Vec<_>>(),
            |(i, f), _| {
                Some((
                    *i,
                    std::fs::metadata(&f.path).ok().map(|m| FileStamp::of(&m)),
                ))
            },
        );
        by_index.sort_unstable_by_key(|(i, _)| *i);
        by_index.into_iter().map(|(_, st)| st).collect()
    };
    let mut out = Vec::with_capacity(files.len());
    let mut out_stamps = Vec::with_capacity(files.len());
    let mut misses = Vec::new();
    for (f, st) in files.iter().zip(&stamps) {
        match st.and_then(|st| cache.take(&f.path, st)) {
            Some(hit) => {
                out.push(hit);
                out_stamps.push(*st);
            }
            None => misses.push((f, *st)),
        }
    }
    let keeps = cache.keeps();
    let read = in_parallel(&misses, |(f, st), buf| {
        // Stamped above when there was a cache to compare with; else now,
        // if the cache is kept.
        let stamp = st.or_else(|| {
            keeps
                .then(|| std::fs::metadata(&f.path).ok().map(|m| FileStamp::of(&m)))
                .flatten()
        });
        match transcript::summary::read_summary_with(&f.path, buf) {
            // Stamped only when the read saw the stamped size (a file that
            // grew meanwhile is read again next time).
            Ok(sum) => Some((stamp.filter(|st| st.size == sum.size), sum)),
            Err(error) => {
                tracing::debug!(path = %f.path.display(), %error, "transcript skipped");
                None
            }
        }
    });
    let n = read.len();
    for (st, sum) in read {
        out.push(sum);
        out_stamps.push(st);
    }
    (out, out_stamps, n)
}

fn millis_to_time(ms: i64) -> Option<OffsetDateTime> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()
}

/// The registry entries under `sessions_dir` that name `sid` and may be
/// running (`live` or `unknown`), judged now, most recently started first:
/// the processes writing that conversation at this moment.
pub fn entries_writing(
    sessions_dir: &Path,
    sid: &str,
    probe: &dyn ProcessProbe,
) -> Vec<(RegistryEntry, Liveness)> {
    let mut entries: Vec<(RegistryEntry, Liveness)> = registry::read_all(sessions_dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.session_id == sid)
        .map(|e| {
            let l = liveness::check(&e, probe).liveness;
            (e, l)
        })
        .filter(|(_, l)| l.may_be_running())
        .collect();
    entries.sort_by_key(|(e, _)| std::cmp::Reverse(e.started_at));
    entries
}

/// A registry entry judged `liveness`, as a writer.
pub fn writer_of(e: &RegistryEntry, liveness: Liveness) -> Writer {
    Writer {
        pid: e.pid,
        liveness,
        kind: e.kind.clone(),
        cwd: e.cwd.clone(),
        started_at: e.started_at.and_then(millis_to_time),
        status: e.status.clone(),
        waiting_for: e.waiting_for.clone(),
        version: e.version.clone(),
    }
}

fn clean_cwd(cwd: &str) -> String {
    lexical_clean(Path::new(cwd)).to_string_lossy().into_owned()
}

fn merge(
    entries: Vec<RegistryEntry>,
    summaries: Vec<TranscriptSummary>,
    probe: &dyn ProcessProbe,
    windows: &ContextWindows,
) -> SessionIndex {
    let mut by_sid: HashMap<String, TranscriptSummary> = HashMap::with_capacity(summaries.len());
    let (summaries, empty): (Vec<_>, Vec<_>) = summaries.into_iter().partition(|s| !s.empty);
    let empty_transcripts: Vec<PathBuf> = empty.into_iter().map(|s| s.path).collect();
    for s in summaries {
        // Two folders holding one id is unusual; keep the newest.
        match by_sid.get(&s.session_id) {
            Some(old) if old.last_activity >= s.last_activity => {}
            _ => {
                by_sid.insert(s.session_id.clone(), s);
            }
        }
    }
    let mut writers: HashMap<String, Vec<(Writer, &RegistryEntry)>> = HashMap::new();
    let mut names: HashMap<String, (Option<i64>, String)> = HashMap::new();
    let mut stale = 0usize;
    // Every entry judged once, now.
    for e in &entries {
        let live = liveness::check(e, probe).liveness;
        if let Some(n) = &e.name {
            let newer = names
                .get(&e.session_id)
                .is_none_or(|(t, _)| e.started_at > *t);
            if newer {
                names.insert(e.session_id.clone(), (e.started_at, n.clone()));
            }
        }
        if !live.may_be_running() {
            if !by_sid.contains_key(&e.session_id) {
                stale += 1;
            }
            continue;
        }
        writers
            .entry(e.session_id.clone())
            .or_default()
            .push((writer_of(e, live), e));
    }

    let mut sids: HashSet<String> = by_sid.keys().cloned().collect();
    sids.extend(writers.keys().cloned());
    let mut sessions: Vec<SessionRecord> = sids
        .into_iter()
        .map(|sid| {
            // Moved out, not copied: each summary serves one record.
            let summary = by_sid.remove(&sid);
            let mut ws = writers.remove(&sid).unwrap_or_default();
            // Most recently started writer first.
            ws.sort_by_key(|w| std::cmp::Reverse(w.0.started_at));
            let state = if ws.iter().any(|(w, _)| w.liveness == Liveness::Live) {
                Liveness::Live
            } else if ws.is_empty() {
                Liveness::Dead
            } else {
                Liveness::Unknown
            };
            let primary = ws.first().map(|(_, e)| *e);
            let s = summary.as_ref();
            let window = s
                .and_then(|s| s.context_tokens)
                .map(|_| windows.window_for(s.and_then(|s| s.model.as_deref())));
            let context_tokens = s.and_then(|s| s.context_tokens);
            let cwd = s
                .and_then(|s| s.cwd.as_deref())
                .or(primary.and_then(|e| e.cwd.as_deref()))
                .map(clean_cwd);
            let started_at = primary
                .and_then(|e| e.started_at)
                .and_then(millis_to_time)
                .or(s.and_then(|s| s.created));
            let last_activity = s.and_then(|s| s.last_activity).or_else(|| {
                primary.and_then(|e| e.updated_at.or(e.started_at).and_then(millis_to_time))
            });
            let transcript_bytes = s.map(|s| s.size);
            let (title, model, transcript) = match summary {
                Some(s) => (s.title, s.model, Some(s.path)),
                None => (None, None, None),
            };
            SessionRecord {
                state,
                pid: primary.map(|e| e.pid),
                cwd,
                status: primary.and_then(|e| e.status.clone()),
                waiting_for: primary.and_then(|e| e.waiting_for.clone()),
                kind: primary.and_then(|e| e.kind.clone()),
                name: primary
                    .and_then(|e| e.name.clone())
                    .or_else(|| names.get(&sid).map(|(_, n)| n.clone())),
                version: primary.and_then(|e| e.version.clone()),
                started_at,
                last_activity,
                title,
                model,
                context_tokens,
                context_percent: context_tokens
                    .zip(window)
                    .map(|(t, w)| ContextWindows::percent(t, w)),
                context_window: window,
                transcript,
                transcript_bytes,
                several_writers: ws.len() > 1,
                writers: ws.into_iter().map(|(w, _)| w).collect(),
                session_id: sid,
            }
        })
        .collect();
    sessions.sort_by(|a, b| {
        b.last_activity
            .cmp(&a.last_activity)
            .then_with(|| a.session_id.cmp(&b.session_id))
    });
    SessionIndex {
        sessions,
        stale_entries: stale,
        empty_transcripts,
        stamps: HashMap::new(),
    }
}
