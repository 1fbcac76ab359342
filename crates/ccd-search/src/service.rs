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
//!   [`pick_with`] for a caller that keeps a list ([`sources_of`] made
//!   once): the searched ones borrowed from it, never copied, only the
//!   sessions a registry entry names judged for a scope, the folder
//!   compared by bytes ([`is_within`]'s answer), and the index asked for
//!   the candidates' files only ([`Index::search_covered`]);
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
use ccd_claude::transcript::summary_cache::FileStamp;
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
    pub searched: Searched<'a>,
    /// The searched sessions' records (unless `by_id` finds them).
    recs: Vec<&'a SessionRecord>,
    /// The caller's sessions by id: each hit's record looked up, not
    /// searched for among every record.
    by_id: Option<(&'a [SessionRecord], &'a SessionsById)>,
    /// Of the caller's list (`by_id` given) filtered: which sessions are
    /// searched, by position, and how many transcripts the list has.
    chosen: Option<(Vec<bool>, usize)>,
    /// Each session's state.
    state_of: Box<dyn Fn(&SessionRecord) -> Liveness + 'a>,
}

/// The transcripts a request searches.
pub enum Searched<'a> {
    /// Every one of the caller's list, borrowed.
    Every(&'a [Source]),
    /// Some of the caller's list, by reference (no copies).
    Some(Vec<&'a Source>),
    /// Made here (the caller gave no list).
    Owned(Vec<Source>),
}

impl Searched<'_> {
    pub fn len(&self) -> usize {
        match self {
            Searched::Every(s) => s.len(),
            Searched::Some(s) => s.len(),
            Searched::Owned(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Splits `sessions` for `req` (see [`Picked`]), each with its own state.
pub fn pick<'a>(sessions: &'a [SessionRecord], req: &Request) -> Picked<'a> {
    pick_with(sessions, req, |r| r.state, true, None, None, None)
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

    /// The positions in `sessions` (the list this was made of) of every
    /// record of `sid`.
    pub fn positions<'s>(
        &'s self,
        sessions: &'s [SessionRecord],
        sid: &'s str,
    ) -> impl Iterator<Item = usize> + 's {
        let id = move |i: u32| {
            sessions
                .get(i as usize)
                .map_or("", |r| r.session_id.as_str())
        };
        let from = self.0.partition_point(|&i| id(i) < sid);
        self.0[from..]
            .iter()
            .take_while(move |&&i| id(i) == sid)
            .map(|&i| i as usize)
    }
}

/// Every transcript of a session list, in its order, with what a
/// filtered search asks of each (made once per list, [`sources_of`]):
/// its session's position and folder, so a search by scope or folder
/// reads these few compact vectors, not every session's record.
#[derive(Debug, Clone, Default)]
pub struct ListSources {
    pub sources: Vec<Source>,
    /// Each transcript's session: its position in the list.
    at: Vec<u32>,
    /// Each transcript's session's folder: its place in `folders`
    /// ([`NO_FOLDER`]: none).
    folder: Vec<u32>,
    /// The list's folders, each once.
    folders: Vec<String>,
}

const NO_FOLDER: u32 = u32::MAX;

/// Every transcript of `sessions`, in their order: the `sources` that
/// [`pick_with`] takes.
pub fn sources_of(sessions: &[SessionRecord]) -> ListSources {
    let mut l = ListSources::default();
    let mut seen: HashMap<&str, u32> = HashMap::new();
    for (i, r) in sessions.iter().enumerate() {
        let Some(path) = &r.transcript else { continue };
        l.sources.push(Source {
            session_id: r.session_id.clone(),
            path: path.clone(),
        });
        l.at.push(u32::try_from(i).unwrap_or(u32::MAX));
        let folder = r.cwd.as_deref().map_or(NO_FOLDER, |c| {
            *seen.entry(c).or_insert_with(|| {
                l.folders.push(c.to_string());
                u32::try_from(l.folders.len() - 1).unwrap_or(NO_FOLDER)
            })
        });
        l.folder.push(folder);
    }
    l
}

/// [`pick`] with each session's state from `state_of` (re-validated by
/// the caller), and `all` left empty unless `with_all`. `sources`: every
/// transcript of `sessions` in their order ([`sources_of`]), made once by
/// the caller (the searched ones borrowed from it, never copied).
/// `by_id`: `sessions` by id, made once by the caller (the hits' records
/// looked up). `named`: when given, the only sessions whose state may be
/// other than dead (those a registry entry names): with `by_id`, only
/// they are asked of `state_of` for a scope, every other one is dead. A
/// session's state is asked for only when the scope needs it, and for
/// the hits.
pub fn pick_with<'a>(
    sessions: &'a [SessionRecord],
    req: &Request,
    state_of: impl Fn(&SessionRecord) -> Liveness + 'a,
    with_all: bool,
    sources: Option<&'a ListSources>,
    by_id: Option<&'a SessionsById>,
    named: Option<&[&str]>,
) -> Picked<'a> {
    let mut picked = Picked {
        all: Vec::with_capacity(if with_all { sessions.len() } else { 0 }),
        searched: Searched::Owned(Vec::new()),
        recs: Vec::new(),
        by_id: by_id.map(|b| (sessions, b)),
        chosen: None,
        state_of: Box::new(state_of),
    };
    if let (Some(all), SearchScope::All, None, false) =
        (sources, req.scope, req.cwd.as_deref(), with_all)
    {
        picked.searched = Searched::Every(&all.sources);
        if by_id.is_none() {
            picked.recs = sessions.iter().filter(|r| r.transcript.is_some()).collect();
        }
        return picked;
    }
    // The sessions not dead, by position, when only the named ones can be.
    let alive = match (req.scope, named, by_id) {
        (SearchScope::Live | SearchScope::Dead, Some(names), Some(b)) => {
            let mut alive = vec![false; sessions.len()];
            for sid in names {
                for i in b.positions(sessions, sid) {
                    alive[i] = (picked.state_of)(&sessions[i]) != Liveness::Dead;
                }
            }
            Some(alive)
        }
        _ => None,
    };
    let folder = req.cwd.as_deref().map(Folder::new);
    if let (Some(list), false) = (sources, with_all) {
        // Each of the list's folders judged once.
        let holds: Vec<bool> = folder.as_ref().map_or_else(Vec::new, |f| {
            list.folders.iter().map(|c| f.holds(c)).collect()
        });
        let mut chosen = vec![false; if by_id.is_some() { sessions.len() } else { 0 }];
        let mut refs = Vec::new();
        for ((src, &i), &fo) in list.sources.iter().zip(&list.at).zip(&list.folder) {
            let i = i as usize;
            let in_folder = folder.is_none() || holds.get(fo as usize).copied().unwrap_or(false);
            if !in_folder {
                continue;
            }
            let Some(r) = sessions.get(i) else { continue };
            let in_scope = in_scope(req.scope, || match &alive {
                Some(a) => a[i],
                None => (picked.state_of)(r) != Liveness::Dead,
            });
            if in_scope {
                match chosen.get_mut(i) {
                    Some(c) => *c = true,
                    None => picked.recs.push(r),
                }
                refs.push(src);
            }
        }
        picked.searched = Searched::Some(refs);
        if by_id.is_some() {
            picked.chosen = Some((chosen, list.sources.len()));
        }
        return picked;
    }
    let mut chosen = vec![false; if by_id.is_some() { sessions.len() } else { 0 }];
    let (mut refs, mut owned) = (Vec::new(), Vec::new());
    let mut at = 0;
    for (i, r) in sessions.iter().enumerate() {
        let Some(path) = &r.transcript else { continue };
        let src_at = at;
        at += 1;
        let in_scope = in_scope(req.scope, || match &alive {
            Some(a) => a[i],
            None => (picked.state_of)(r) != Liveness::Dead,
        });
        let in_folder = folder
            .as_ref()
            .is_none_or(|f| r.cwd.as_deref().is_some_and(|c| f.holds(c)));
        let src = || Source {
            session_id: r.session_id.clone(),
            path: path.clone(),
        };
        if in_scope && in_folder {
            if by_id.is_none() {
                picked.recs.push(r);
            } else {
                chosen[i] = true;
            }
            match sources.and_then(|s| s.sources.get(src_at)) {
                Some(s) => {
                    debug_assert!(s.session_id == r.session_id, "sources not of sessions");
                    refs.push(s);
                }
                None => owned.push(src()),
            }
        }
        if with_all {
            picked.all.push(src());
        }
    }
    picked.searched = if sources.is_some() && owned.is_empty() {
        Searched::Some(refs)
    } else {
        owned.extend(refs.into_iter().cloned());
        Searched::Owned(owned)
    };
    if by_id.is_some() {
        picked.chosen = Some((chosen, at));
    }
    picked
}

/// A request's folder, made once per search: whether a session's `cwd`
/// is it or inside it, as [`is_within`] answers, mostly from its bytes.
struct Folder<'d> {
    dir: &'d Path,
    /// `dir`'s bytes when it is plain (absolute, no empty or dot
    /// component, no trailing `/` but the root): its components are then
    /// its `/`-separated parts.
    plain: Option<&'d [u8]>,
}

impl<'d> Folder<'d> {
    fn new(dir: &'d Path) -> Self {
        use std::os::unix::ffi::OsStrExt;
        let b = dir.as_os_str().as_bytes();
        let plain = b.starts_with(b"/")
            && !b.windows(2).any(|w| w == b"//" || w == b"/.")
            && (b == b"/" || !b.ends_with(b"/"));
        Self {
            dir,
            plain: plain.then_some(b),
        }
    }

    /// Whether `cwd` is the folder or inside it ([`is_within`]'s answer).
    /// Past their common bytes: the folder's end followed by the end of
    /// `cwd` or a `/` is inside; a difference elsewhere is outside unless
    /// `cwd` has an empty or dot component there (`//`, `/.`), which the
    /// components' comparison decides.
    fn holds(&self, cwd: &str) -> bool {
        let Some(d) = self.plain else {
            return is_within(Path::new(cwd), self.dir);
        };
        let c = cwd.as_bytes();
        let m = c.iter().zip(d).take_while(|(a, b)| a == b).count();
        if m == d.len() {
            return c.len() == m || c[m] == b'/' || d.ends_with(b"/");
        }
        let odd = m > 0 && c[m - 1] == b'/' && c.get(m).is_some_and(|&x| x == b'/' || x == b'.');
        odd && is_within(Path::new(cwd), self.dir)
    }
}

/// Whether a session is in `scope`; `not_dead` judges it (asked only
/// for a live or dead scope).
fn in_scope(scope: SearchScope, not_dead: impl FnOnce() -> bool) -> bool {
    match scope {
        SearchScope::All => true,
        SearchScope::Live => not_dead(),
        SearchScope::Dead => !not_dead(),
    }
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
            let (hits, stats, used) = match &picked.searched {
                // Every listed transcript searched: the index may visit
                // only its candidates' files.
                Searched::Every(all) => {
                    let fresh = match fresh {
                        Freshness::Trusted => Freshness::TrustedAll,
                        f => f,
                    };
                    ix.search_with(all, &req.query, &req.filters, now, want, fresh)
                }
                Searched::Some(some) => {
                    // Some of them: the candidates' files asked whether
                    // they are searched, when the index covers the list.
                    let covered = match (fresh, &picked.chosen, picked.by_id) {
                        (Freshness::Trusted, Some((chosen, listed)), Some((sessions, by_id))) => ix
                            .search_covered(
                                *listed,
                                |sid, path| {
                                    by_id.positions(sessions, sid).any(|i| {
                                        chosen[i]
                                            && sessions[i]
                                                .transcript
                                                .as_deref()
                                                .is_some_and(|t| t.as_os_str() == path)
                                    })
                                },
                                &req.query,
                                &req.filters,
                                now,
                                want,
                            ),
                        _ => None,
                    };
                    // Else each searched transcript looked up (copied for
                    // it: the index not yet covering the list, or a query
                    // with no trigram).
                    covered.unwrap_or_else(|| {
                        let own: Vec<Source> = some.iter().map(|s| (*s).clone()).collect();
                        ix.search_with(&own, &req.query, &req.filters, now, want, fresh)
                    })
                }
                Searched::Owned(own) => {
                    ix.search_with(own, &req.query, &req.filters, now, want, fresh)
                }
            };
            tracing::debug!(
                verified = used.verified,
                scanned = used.scanned,
                "search index used"
            );
            (hits, stats)
        }
        None => match &picked.searched {
            Searched::Every(s) => scan::scan(s, &req.query, &req.filters, now, want),
            Searched::Some(s) => scan::scan(s, &req.query, &req.filters, now, want),
            Searched::Owned(s) => scan::scan(s, &req.query, &req.filters, now, want),
        },
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
/// this call updated the index (every file of `all` was stat'ed for the
/// update a moment ago, by it or by the caller's listing, and read up to
/// that stat, or dropped: one stat a file for the whole search, not a
/// second one in [`answer`]; the answer is the files as that stat found
/// them), [`Freshness::Stat`] for an index as saved by another.
///
/// A first build happens inside the search that finds no index: about
/// 1.4 s per 400 MB of transcripts (docs/architecture.md, "Search"),
/// once; every later search reads only what was appended.
pub fn kept_index(state: &Path, all: &[Source], rebuild: bool) -> Option<(Index, Freshness)> {
    kept_index_stamped(state, all, rebuild, &|_| None)
}

/// [`kept_index`], the update taking each file's stamp from `stamp_of`
/// when it has one (`ccd_claude::index::SessionIndex::stamps`, taken by
/// the session listing of the same search: one stat a transcript).
pub fn kept_index_stamped(
    state: &Path,
    all: &[Source],
    rebuild: bool,
    stamp_of: &dyn Fn(&Path) -> Option<FileStamp>,
) -> Option<(Index, Freshness)> {
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
    let st = ix.update_stamped(all, stamp_of);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_holds_what_is_within_says() {
        let dirs = [
            "/", "/a", "/a/b", "/a/b/", "/a//b", "/a/./b", "/a/.b", "a/b", "/ab",
        ];
        let cwds = [
            "",
            "/",
            "//",
            "/a",
            "/a/",
            "/a/b",
            "/a/b/",
            "/a/bc",
            "/a/b/c",
            "/a//b",
            "/a//b/c",
            "/a/./b",
            "/a/b/.",
            "/a/b/..",
            "/a/../a/b",
            "/a/.b",
            "/a/.b/c",
            "/ab",
            "/ab/c",
            "a/b",
            "a/b/c",
            "/b",
            "/a/b//",
            "/a/b/./c",
        ];
        for d in dirs {
            let f = Folder::new(Path::new(d));
            for c in cwds {
                assert_eq!(
                    f.holds(c),
                    is_within(Path::new(c), Path::new(d)),
                    "{c:?} in {d:?}"
                );
            }
        }
    }
}
