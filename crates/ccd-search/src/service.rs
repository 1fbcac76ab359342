//! One search of this machine's sessions as `ccd search` (without a
//! daemon) and the daemon's `sessions.search` both answer it: the one
//! piece they share, so the two cannot drift apart.
//!
//! - [`Request::parse`]: a [`SearchParams`] checked and parsed (the query,
//!   the roles, `since`, the limit), or the reason it is refused
//!   ([`RequestError`]: the daemon's `invalid_params`, the CLI's error);
//! - [`pick`]: the session list (`ccd_claude::index`, liveness
//!   re-validated by whoever built it) made into the transcripts the index
//!   covers (every one) and those searched (the scope and `cwd` applied
//!   before any transcript is read), with each session's state and folder;
//! - [`answer`]: the search itself, from an index or by scanning, and the
//!   [`SearchResult`] rows ([`SearchHit`]) built from the hits and the
//!   sessions;
//! - [`kept_index`]: the index file in the state dir ([`INDEX_FILE`])
//!   loaded, brought up to date (the transcripts and the archived
//!   conversations in [`ARCHIVE_DIR`]) and saved under the advisory lock
//!   [`LOCK_FILE`] (`flock`), which every writer of the file takes, the
//!   daemon's saves included ([`save_locked`]).
//!
//! Everything here blocks (file reads, the scan's threads): callers on an
//! async runtime run it on their blocking pool.

use crate::index::{Freshness, Index, IndexError, Limits, UpdateStats};
use crate::scan::{self, Filters, Hit, ScanStats, Source};
use crate::{Query, QueryError, Role};
use ccd_claude::index::SessionRecord;
use ccd_claude::liveness::Liveness;
use ccd_claude::paths::{is_within, normalize};
use ccd_protocol::methods::session::{
    SearchParams, SearchResult, SearchScope, SessionState, SEARCH_LIMIT_MAX,
};
use ccd_protocol::search::{SearchHit, SearchSnippet};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The search index's file in the state dir.
pub const INDEX_FILE: &str = "search.idx";

/// The advisory lock (`flock`) held while the index file is updated and
/// saved, beside it in the state dir.
pub const LOCK_FILE: &str = "search.idx.lock";

/// The archived conversations' folder in the state dir (`ccd archive`'s),
/// which the index covers too.
pub const ARCHIVE_DIR: &str = "archive";

/// The `host` of this machine's hits.
pub const LOCAL: &str = "local";

/// Why a search was refused before anything was read.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error(transparent)]
    Query(#[from] QueryError),
    #[error("unknown role {0:?}: one of user, assistant, tool, title, summary")]
    Role(String),
    #[error("bad since {0:?}: an RFC 3339 time")]
    Since(String),
    #[error("limit {0}: 1 to {SEARCH_LIMIT_MAX}")]
    Limit(u32),
    #[error("cwd {0:?} is not an absolute path")]
    RelativeCwd(String),
}

/// A search, parsed.
#[derive(Debug, Clone)]
pub struct Request {
    pub query: Query,
    pub filters: Filters,
    /// Only sessions whose folder is this one or inside it (normalized).
    pub cwd: Option<PathBuf>,
    pub scope: SearchScope,
    /// At most this many hits, 1 to [`SEARCH_LIMIT_MAX`].
    pub limit: usize,
}

impl Request {
    pub fn parse(p: &SearchParams) -> Result<Request, RequestError> {
        let query = if p.regex {
            Query::regex(&p.query)?
        } else {
            Query::terms(&p.query)?
        };
        let roles = p
            .roles
            .iter()
            .map(|r| Role::parse(r).ok_or_else(|| RequestError::Role(r.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        let since = p
            .since
            .as_deref()
            .map(|s| OffsetDateTime::parse(s, &Rfc3339).map_err(|_| RequestError::Since(s.into())))
            .transpose()?;
        if p.limit == 0 || p.limit > SEARCH_LIMIT_MAX {
            return Err(RequestError::Limit(p.limit));
        }
        if let Some(c) = p.cwd.as_deref().filter(|c| !Path::new(c).is_absolute()) {
            return Err(RequestError::RelativeCwd(c.to_string()));
        }
        Ok(Request {
            query,
            filters: Filters {
                roles,
                since,
                deadline: None,
            },
            cwd: p.cwd.as_deref().map(|c| normalize(Path::new(c))),
            scope: p.scope,
            limit: p.limit as usize,
        })
    }

    /// The same search ending at `deadline` (files not read by then are
    /// left unread; see [`Filters::deadline`]).
    pub fn until(mut self, deadline: Instant) -> Request {
        self.filters.deadline = Some(deadline);
        self
    }
}

/// The transcripts of a session list: every one (what the index covers)
/// and those a request searches, with each searched session's record and
/// state.
pub struct Picked<'a> {
    pub all: Vec<Source>,
    pub searched: std::borrow::Cow<'a, [Source]>,
    /// The searched sessions' records (unless `by_id` finds them).
    recs: Vec<&'a SessionRecord>,
    /// The caller's sessions by id: each hit's record looked up, not
    /// searched for among every record.
    by_id: Option<(&'a [SessionRecord], &'a SessionsById)>,
    /// Each session's state.
    state_of: Box<dyn Fn(&SessionRecord) -> Liveness + 'a>,
}

/// Splits `sessions` for `req` (see [`Picked`]), each with its own state.
pub fn pick<'a>(sessions: &'a [SessionRecord], req: &Request) -> Picked<'a> {
    pick_with(sessions, req, |r| r.state, true, None, None)
}

/// A session list's positions sorted by session id (4 bytes a session,
/// made once per list): a hit's record found in O(log n) string
/// comparisons, where hashing every id per search cost ~0.5 ms at 10,000.
#[derive(Debug, Clone, Default)]
pub struct SessionsById(Vec<u32>);

impl SessionsById {
    pub fn new(sessions: &[SessionRecord]) -> Self {
        let n = u32::try_from(sessions.len()).unwrap_or(u32::MAX);
        let mut v: Vec<u32> = (0..n).collect();
        v.sort_unstable_by(|&a, &b| {
            sessions[a as usize]
                .session_id
                .cmp(&sessions[b as usize].session_id)
        });
        Self(v)
    }

    /// `sid`'s record in `sessions` (the list this was made of).
    pub fn get<'a>(&self, sessions: &'a [SessionRecord], sid: &str) -> Option<&'a SessionRecord> {
        let at = |i: u32| sessions.get(i as usize);
        let i = self
            .0
            .binary_search_by(|&i| at(i).map_or("", |r| r.session_id.as_str()).cmp(sid))
            .ok()?;
        at(self.0[i]).filter(|r| r.session_id == sid)
    }
}

/// [`pick`] with each session's state from `state_of` (re-validated by
/// the caller), and `all` left empty unless `with_all`. `sources`: every
/// transcript of `sessions`, made once by the caller (borrowed as the
/// searched ones when the request filters nothing out). `by_id`:
/// `sessions` by id, made once by the caller (the hits' records looked
/// up). A session's state is asked for only when the scope needs it, and
/// for the hits.
pub fn pick_with<'a>(
    sessions: &'a [SessionRecord],
    req: &Request,
    state_of: impl Fn(&SessionRecord) -> Liveness + 'a,
    with_all: bool,
    sources: Option<&'a [Source]>,
    by_id: Option<&'a SessionsById>,
) -> Picked<'a> {
    let mut picked = Picked {
        all: Vec::with_capacity(if with_all { sessions.len() } else { 0 }),
        searched: std::borrow::Cow::Owned(Vec::new()),
        recs: Vec::new(),
        by_id: by_id.map(|b| (sessions, b)),
        state_of: Box::new(state_of),
    };
    if let (Some(all), SearchScope::All, None, false) =
        (sources, req.scope, req.cwd.as_deref(), with_all)
    {
        picked.searched = std::borrow::Cow::Borrowed(all);
        if by_id.is_none() {
            picked.recs = sessions.iter().filter(|r| r.transcript.is_some()).collect();
        }
        return picked;
    }
    let mut searched = Vec::new();
    for r in sessions {
        let Some(path) = &r.transcript else { continue };
        let in_scope = match req.scope {
            SearchScope::All => true,
            SearchScope::Live => (picked.state_of)(r) != Liveness::Dead,
            SearchScope::Dead => (picked.state_of)(r) == Liveness::Dead,
        };
        let in_folder = req.cwd.as_deref().is_none_or(|dir| {
            r.cwd
                .as_deref()
                .is_some_and(|c| is_within(Path::new(c), dir))
        });
        let src = || Source {
            session_id: r.session_id.clone(),
            path: path.clone(),
        };
        if in_scope && in_folder {
            if by_id.is_none() {
                picked.recs.push(r);
            }
            searched.push(src());
        }
        if with_all {
            picked.all.push(src());
        }
    }
    picked.searched = std::borrow::Cow::Owned(searched);
    picked
}

/// A search's answer and what it read.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub result: SearchResult,
    pub stats: ScanStats,
}

/// Answers `req` over `picked`: from `index` when given (its hits equal
/// the scan's; files' freshness judged as the [`Freshness`] says), else
/// by scanning every searched transcript.
pub fn answer(
    req: &Request,
    picked: &Picked<'_>,
    index: Option<(&Index, Freshness)>,
    now: OffsetDateTime,
) -> Answer {
    let started = Instant::now();
    // One more than asked says whether more sessions matched.
    let want = req.limit + 1;
    let (mut hits, stats) = match index {
        Some((ix, fresh)) => {
            // Every listed transcript searched: the index may visit only
            // its candidates' files.
            let fresh = match (fresh, &picked.searched) {
                (Freshness::Trusted, std::borrow::Cow::Borrowed(_)) => Freshness::TrustedAll,
                (f, _) => f,
            };
            let (hits, stats, used) =
                ix.search_with(&picked.searched, &req.query, &req.filters, now, want, fresh);
            tracing::debug!(
                verified = used.verified,
                scanned = used.scanned,
                "search index used"
            );
            (hits, stats)
        }
        None => scan::scan(&picked.searched, &req.query, &req.filters, now, want),
    };
    tracing::debug!(
        files = stats.files,
        bytes = stats.bytes,
        oversized = stats.oversized,
        unreadable = stats.unreadable,
        timed_out = stats.timed_out,
        hits = hits.len(),
        indexed = index.is_some(),
        elapsed_us = started.elapsed().as_micros() as u64,
        "search answered"
    );
    // More may match than shown: past the limit, or left unread when
    // the deadline passed.
    let truncated = hits.len() > req.limit || stats.timed_out > 0;
    hits.truncate(req.limit);
    // The hits' sessions, found in one pass (not a map of every session).
    let wanted: HashMap<&str, usize> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| (h.session_id.as_str(), i))
        .collect();
    let mut of_hit: Vec<Option<(&SessionRecord, Liveness)>> = vec![None; hits.len()];
    if let Some((sessions, by_id)) = picked.by_id {
        // A hit comes from a searched transcript: its session is in scope.
        for (h, o) in hits.iter().zip(&mut of_hit) {
            *o = by_id
                .get(sessions, &h.session_id)
                .map(|r| (r, (picked.state_of)(r)));
        }
    } else if !wanted.is_empty() {
        for r in &picked.recs {
            if let Some(&i) = wanted.get(r.session_id.as_str()) {
                of_hit[i] = Some((*r, (picked.state_of)(r)));
            }
        }
    }
    Answer {
        result: SearchResult {
            hits: hits
                .into_iter()
                .zip(of_hit)
                .map(|(h, rec)| row(h, rec))
                .collect(),
            sessions: picked.searched.len() as u64,
            truncated,
            indexed: index.is_some(),
        },
        stats,
    }
}

/// A hit as the wire shows it: the session's state and folder from the
/// list.
fn row(h: Hit, rec: Option<(&SessionRecord, Liveness)>) -> SearchHit {
    let state = match rec.map_or(Liveness::Dead, |r| r.1) {
        Liveness::Live => SessionState::Live,
        Liveness::Dead => SessionState::Dead,
        Liveness::Unknown => SessionState::Unknown,
    };
    hit_row(
        h,
        state,
        rec.and_then(|r| r.0.cwd.clone()),
        rec.and_then(|r| r.0.last_activity),
    )
}

/// A hit as the wire shows it, of a session in `state`: its folder (the
/// hit's record's `cwd` when not given), its time (a title has no time of
/// its own before the first message: the session's newest match, else
/// `last_activity`).
pub(crate) fn hit_row(
    h: Hit,
    state: SessionState,
    folder: Option<String>,
    last_activity: Option<OffsetDateTime>,
) -> SearchHit {
    let timestamp = h.timestamp.clone().or_else(|| {
        h.newest
            .or(last_activity)
            .and_then(|t| t.format(&Rfc3339).ok())
    });
    SearchHit {
        host: LOCAL.to_string(),
        state,
        folder: folder.or(h.cwd),
        path: h.path.to_string_lossy().into_owned(),
        role: h.role.as_str().to_string(),
        timestamp,
        offset: h.offset,
        snippet: SearchSnippet {
            before: h.snippet.before,
            matched: h.snippet.matched,
            after: h.snippet.after,
        },
        matches: h.matches as u64,
        score: h.score,
        session_id: h.session_id,
    }
}

/// The lock file opened and locked (`wait`: blocking, else `None` when
/// another holds it).
fn lock(state: &Path, wait: bool) -> Option<nix::fcntl::Flock<std::fs::File>> {
    use nix::fcntl::{Flock, FlockArg};
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::create_dir_all(state).and_then(|()| {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(state.join(LOCK_FILE))
    });
    let how = if wait {
        FlockArg::LockExclusive
    } else {
        FlockArg::LockExclusiveNonblock
    };
    match file {
        Ok(f) => match Flock::lock(f, how) {
            Ok(l) => Some(l),
            Err((_, e)) => {
                tracing::info!(dir = %state.display(), error = %e, "search index busy (another search keeps it)");
                None
            }
        },
        Err(e) => {
            tracing::info!(dir = %state.display(), error = %e, "search index lock not opened");
            None
        }
    }
}

/// Saves `ix` to [`INDEX_FILE`] in `state` under [`LOCK_FILE`] (waiting
/// for it: another writer holds it for one update).
pub fn save_locked(state: &Path, ix: &mut Index) -> Result<(), IndexError> {
    let _held = lock(state, true);
    ix.save(&state.join(INDEX_FILE))
}

/// The index in `state` as saved, or empty (absent, another format,
/// damaged: logged) — the daemon's start.
pub fn load_or_new(state: &Path) -> Index {
    Index::open_or_new(&state.join(INDEX_FILE), Limits::default())
}

/// The search index in `state`, kept up to date with `all` (every
/// transcript of the machine) and the archives in [`ARCHIVE_DIR`], and
/// saved when that changed it, under
/// [`LOCK_FILE`]; with the lock held by another search, the index as
/// saved (not updated, not saved). `None`: no index to answer from (the
/// caller scans). `rebuild` starts from empty, waiting for the lock.
///
/// With it, how the search judges the files: [`Freshness::Trusted`] when
/// this call updated the index (every file of `all` was stat'ed by the
/// update a moment ago and read up to that stat, or dropped: one stat a
/// file for the whole search, not a second one in [`answer`]; the answer
/// is the files as that stat found them), [`Freshness::Stat`] for an
/// index as saved by another.
///
/// A first build happens inside the search that finds no index: about
/// 1.4 s per 400 MB of transcripts (docs/architecture.md, "Search"),
/// once; every later search reads only what was appended.
pub fn kept_index(state: &Path, all: &[Source], rebuild: bool) -> Option<(Index, Freshness)> {
    let path = state.join(INDEX_FILE);
    let limits = Limits::default();
    let held = lock(state, rebuild);
    let loaded = if rebuild {
        tracing::info!(path = %path.display(), "search index rebuilt from scratch (--rebuild-index)");
        Err(None)
    } else {
        Index::load(&path, limits).map_err(Some)
    };
    let Some(_held) = held else {
        return match loaded {
            Ok(ix) => Some((ix, Freshness::Stat)),
            Err(e) => {
                if let Some(e) = e.filter(|e| !is_absent(e)) {
                    tracing::info!(path = %path.display(), error = %e, "search index not used: scanning");
                }
                None
            }
        };
    };
    let (mut ix, fresh) = match loaded {
        Ok(ix) => (ix, false),
        Err(e) => {
            if let Some(e) = e.filter(|e| !is_absent(e)) {
                tracing::info!(path = %path.display(), error = %e, "search index unreadable: rebuilt");
            }
            (Index::new(limits), true)
        }
    };
    let started = Instant::now();
    let st = ix.update(all);
    let arch = ix.update_archives(&state.join(ARCHIVE_DIR));
    tracing::debug!(
        files_read = st.files_read,
        restarted = st.restarted,
        dropped = st.dropped,
        left_out = st.left_out,
        bytes = st.bytes,
        archives_read = arch.files_read,
        archives_dropped = arch.dropped,
        archive_listings = arch.listings,
        fresh,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "search index updated"
    );
    if fresh || st != UpdateStats::default() || arch != UpdateStats::default() {
        let started = Instant::now();
        match ix.save(&path) {
            Ok(()) => tracing::debug!(
                path = %path.display(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "search index saved"
            ),
            // Answered from memory all the same; the next search retries.
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "search index not saved")
            }
        }
    }
    Some((ix, Freshness::Trusted))
}

fn is_absent(e: &IndexError) -> bool {
    matches!(e, IndexError::Io(io) if io.kind() == std::io::ErrorKind::NotFound)
}
