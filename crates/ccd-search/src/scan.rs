//! Searching transcripts by reading them all: the way search works without
//! an index (and the baseline an index must beat).
//!
//! [`scan`] reads the given transcript files on a bounded number of
//! threads ([`MAX_THREADS`], no more than the machine's cores), each file
//! in [`crate::incremental::CHUNK_BYTES`] chunks with lines bounded by
//! [`crate::incremental::MAX_RECORD_BYTES`], extracts each record's
//! searchable messages ([`crate::extract`]) and matches them against the
//! query ([`crate::query`]). A hit is a *session*: its best matching
//! message (by [`query::message_weight`], the newest on a tie) with its
//! snippet, how many of its messages matched, and its score
//! ([`query::score`]). Hits come back best first, at most `limit` of them.
//!
//! Which files to read (the session's state and folder) is the caller's
//! choice; the roles and `--since` are applied here, per message. A
//! message with no timestamp of its own (titles) takes the last one seen
//! before it in its file.

use crate::extract::{self, Message, Role};
use crate::incremental::{read_appended, MAX_RECORD_BYTES};
use crate::query::{self, Query, Snippet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The most threads a scan uses.
pub const MAX_THREADS: usize = 8;

/// What a scan reads: one session's transcript.
#[derive(Debug, Clone)]
pub struct Source {
    pub session_id: String,
    pub path: PathBuf,
}

/// The filters applied to each message.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// Only these roles (all when empty).
    pub roles: Vec<Role>,
    /// Only messages at or after this time.
    pub since: Option<OffsetDateTime>,
    /// A search's time bound: files not yet read by then are left unread
    /// (counted in [`ScanStats::timed_out`]), what was found answers.
    pub deadline: Option<std::time::Instant>,
}

impl Filters {
    /// Whether the search's time is up.
    pub fn expired(&self) -> bool {
        self.deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
    }
}

/// One session that matched.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Hit {
    pub session_id: String,
    pub path: PathBuf,
    /// The best matching message's role.
    pub role: Role,
    /// The best matching message's time (its record's, else the last one
    /// before it).
    pub timestamp: Option<String>,
    /// The best matching message's record's `cwd`.
    pub cwd: Option<String>,
    /// The byte offset of the best matching message's record.
    pub offset: u64,
    pub snippet: Snippet,
    /// How many messages of the session matched.
    pub matches: usize,
    pub score: f64,
    /// The newest matching message's time.
    #[serde(skip)]
    pub newest: Option<OffsetDateTime>,
}

/// What a scan read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ScanStats {
    pub files: usize,
    pub bytes: u64,
    /// Records skipped for being longer than the bound.
    pub oversized: u64,
    /// Files that could not be read (gone since they were listed, ...).
    pub unreadable: usize,
    /// Files left unread because the search's deadline passed.
    pub timed_out: usize,
}

impl ScanStats {
    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: &ScanStats) {
        self.files += o.files;
        self.bytes += o.bytes;
        self.oversized += o.oversized;
        self.unreadable += o.unreadable;
        self.timed_out += o.timed_out;
    }
}

/// How many threads to use for `items` files.
pub fn threads_for(items: usize) -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, MAX_THREADS)
        .min(items.max(1))
}

/// Searches `sources` for `query`; the best `limit` hits, best first.
/// `sources`: the transcripts themselves or references to them (a
/// caller's list filtered without copies).
pub fn scan<S: std::borrow::Borrow<Source> + Sync>(
    sources: &[S],
    query: &Query,
    filters: &Filters,
    now: OffsetDateTime,
    limit: usize,
) -> (Vec<Hit>, ScanStats) {
    let next = AtomicUsize::new(0);
    let all = Mutex::new((Vec::new(), ScanStats::default()));
    std::thread::scope(|s| {
        for _ in 0..threads_for(sources.len()) {
            s.spawn(|| {
                let mut hits = Vec::new();
                let mut stats = ScanStats::default();
                let mut buf = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(src) = sources.get(i).map(S::borrow) else {
                        break;
                    };
                    if filters.expired() {
                        stats.timed_out += 1;
                        continue;
                    }
                    if let Some(h) = search_file(src, query, filters, now, &mut buf, &mut stats) {
                        hits.push(h);
                    }
                }
                if let Ok(mut all) = all.lock() {
                    all.0.append(&mut hits);
                    all.1.add(&stats);
                }
            });
        }
    });
    let (mut hits, stats) = all.into_inner().unwrap_or_default();
    rank(&mut hits);
    hits.truncate(limit);
    (hits, stats)
}

/// Best first; ties: the newest first, then by id (a stable order).
pub fn rank(hits: &mut [Hit]) {
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.newest.cmp(&a.newest))
            .then(a.session_id.cmp(&b.session_id))
    });
}

fn parse_time(t: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(t, &Rfc3339).ok()
}

/// Matching state of one session while its file is read.
struct Best {
    weight: f64,
    msg: Message,
    found: query::Found,
    time: Option<OffsetDateTime>,
}

/// One session's matching, fed its messages in file order (each with its
/// timestamp already resolved): what the scan and the index's
/// verification share, so both rank and cut snippets the same way.
#[derive(Default)]
pub(crate) struct Matcher {
    best: Option<Best>,
    matches: usize,
    newest: Option<OffsetDateTime>,
}

impl Matcher {
    /// Matches one message (filters applied).
    pub(crate) fn message(&mut self, m: Message, query: &Query, filters: &Filters) {
        if !filters.roles.is_empty() && !filters.roles.contains(&m.role) {
            return;
        }
        let Some(found) = query.find(&m.text) else {
            return;
        };
        let time = m.timestamp.as_deref().and_then(parse_time);
        if let Some(since) = filters.since {
            if time.is_none_or(|t| t < since) {
                return;
            }
        }
        self.matches += 1;
        self.newest = self.newest.max(time);
        let weight = query::message_weight(m.role, &found);
        if self
            .best
            .as_ref()
            .is_none_or(|b| weight > b.weight || (weight == b.weight && time >= b.time))
        {
            self.best = Some(Best {
                weight,
                msg: m,
                found,
                time,
            });
        }
    }

    /// The session's hit, if any message matched.
    pub(crate) fn finish(self, src: &Source, now: OffsetDateTime) -> Option<Hit> {
        let b = self.best?;
        let age_days = self
            .newest
            .map_or(365.0, |t| (now - t).as_seconds_f64() / 86_400.0);
        Some(Hit {
            session_id: src.session_id.clone(),
            path: src.path.clone(),
            role: b.msg.role,
            timestamp: b.msg.timestamp.clone(),
            cwd: b.msg.cwd.clone(),
            offset: b.msg.offset,
            snippet: Snippet::of(&b.msg.text, &b.found),
            matches: self.matches,
            score: query::score(b.weight, self.matches, age_days),
            newest: self.newest,
        })
    }
}

/// Feeds one transcript's lines to a [`Matcher`], each message with its
/// timestamp resolved (a message without one takes the last seen).
struct Feed<'q> {
    msgs: Vec<Message>,
    last_ts: Option<String>,
    matcher: Matcher,
    query: &'q Query,
    filters: &'q Filters,
}

impl<'q> Feed<'q> {
    fn new(query: &'q Query, filters: &'q Filters) -> Self {
        Feed {
            msgs: Vec::new(),
            last_ts: None,
            matcher: Matcher::default(),
            query,
            filters,
        }
    }

    fn line(&mut self, off: u64, line: &[u8]) {
        self.msgs.clear();
        extract::messages(line, off, &mut self.msgs);
        for mut m in self.msgs.drain(..) {
            match &m.timestamp {
                Some(t) => self.last_ts = Some(t.clone()),
                None => m.timestamp = self.last_ts.clone(),
            }
            self.matcher.message(m, self.query, self.filters);
        }
    }
}

/// Searches one transcript read from `reader` whole (an archived one,
/// decompressed as it is read), as [`scan`] searches a file; `src.path`
/// names it in the hit. `None` when nothing matched or it could not be
/// read (counted in `stats`).
pub fn search_reader(
    src: &Source,
    reader: &mut dyn std::io::Read,
    query: &Query,
    filters: &Filters,
    now: OffsetDateTime,
    stats: &mut ScanStats,
) -> Option<Hit> {
    let mut feed = Feed::new(query, filters);
    let mut lines = crate::incremental::Lines::new(0, MAX_RECORD_BYTES);
    let mut buf = vec![0u8; crate::incremental::CHUNK_BYTES];
    let mut bytes = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                stats.unreadable += 1;
                tracing::debug!(path = %src.path.display(), error = %e, "transcript not searched");
                return None;
            }
        };
        bytes += n as u64;
        lines.push(&buf[..n], |off, line| feed.line(off, line));
    }
    stats.files += 1;
    stats.bytes += bytes;
    stats.oversized += lines.oversized();
    feed.matcher.finish(src, now)
}

/// Searches one whole file.
pub(crate) fn search_file(
    src: &Source,
    query: &Query,
    filters: &Filters,
    now: OffsetDateTime,
    buf: &mut Vec<u8>,
    stats: &mut ScanStats,
) -> Option<Hit> {
    let mut feed = Feed::new(query, filters);
    let read = read_appended(&src.path, None, MAX_RECORD_BYTES, buf, |off, line| {
        feed.line(off, line)
    });
    match read {
        Ok(r) => {
            stats.files += 1;
            stats.bytes += r.bytes;
            stats.oversized += r.oversized;
            if r.oversized > 0 {
                tracing::warn!(path = %src.path.display(), records = r.oversized, "transcript records over the search bound skipped");
            }
        }
        Err(e) => {
            stats.unreadable += 1;
            tracing::debug!(path = %src.path.display(), error = %e, "transcript not searched");
            return None;
        }
    }
    feed.matcher.finish(src, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(dir: &std::path::Path, sid: &str, lines: &[&str]) -> Source {
        let p = dir.join(format!("{sid}.jsonl"));
        let mut f = std::fs::File::create(&p).unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
        Source {
            session_id: sid.into(),
            path: p,
        }
    }

    #[test]
    fn a_passed_deadline_leaves_the_files_unread() {
        let d = tempfile::tempdir().unwrap();
        let now = OffsetDateTime::parse("2026-12-01T00:00:00Z", &Rfc3339).unwrap();
        let srcs: Vec<Source> = (0..3)
            .map(|i| {
                file(
                    d.path(),
                    &format!("s{i}"),
                    &[r#"{"type":"user","message":{"content":"the auth bug"}}"#],
                )
            })
            .collect();
        let q = Query::terms("auth").unwrap();
        let (hits, stats) = scan(&srcs, &q, &Filters::default(), now, 10);
        assert_eq!((hits.len(), stats.timed_out), (3, 0));
        let past = Filters {
            deadline: Some(std::time::Instant::now()),
            ..Filters::default()
        };
        let (hits, stats) = scan(&srcs, &q, &past, now, 10);
        assert_eq!((hits.len(), stats.files, stats.timed_out), (0, 0, 3));
    }

    #[test]
    fn threads_are_bounded() {
        assert_eq!(threads_for(0), 1);
        assert_eq!(threads_for(1), 1);
        assert!((1..=MAX_THREADS).contains(&threads_for(1_000_000)));
    }

    #[test]
    fn one_hit_per_session_ranked_with_roles_and_since() {
        let d = tempfile::tempdir().unwrap();
        let now = OffsetDateTime::parse("2026-12-01T00:00:00Z", &Rfc3339).unwrap();
        let old = file(
            d.path(),
            "old",
            &[
                r#"{"type":"user","timestamp":"2026-06-01T00:00:00Z","message":{"content":"the auth bug"}}"#,
            ],
        );
        let new = file(
            d.path(),
            "new",
            &[
                r#"{"type":"ai-title","aiTitle":"auth"}"#,
                r#"{"type":"user","timestamp":"2026-11-30T00:00:00Z","message":{"content":"auth again"}}"#,
                r#"{"type":"assistant","timestamp":"2026-11-30T00:01:00Z","message":{"content":[{"type":"text","text":"auth fixed"}]}}"#,
            ],
        );
        let none = file(
            d.path(),
            "none",
            &[r#"{"type":"user","message":{"content":"x"}}"#],
        );
        let q = Query::terms("AUTH").unwrap();
        let srcs = vec![old, new, none];
        let (hits, stats) = scan(&srcs, &q, &Filters::default(), now, 10);
        assert_eq!(stats.files, 3);
        let ids: Vec<_> = hits.iter().map(|h| h.session_id.as_str()).collect();
        assert_eq!(ids, ["new", "old"]);
        assert_eq!((hits[0].role, hits[0].matches), (Role::Title, 3));
        let roles = Filters {
            roles: vec![Role::Assistant],
            ..Filters::default()
        };
        let (hits, _) = scan(&srcs, &q, &roles, now, 10);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].snippet.after, " fixed");
        let since = Filters {
            roles: vec![],
            since: Some(OffsetDateTime::parse("2026-11-01T00:00:00Z", &Rfc3339).unwrap()),
            ..Filters::default()
        };
        let (hits, _) = scan(&srcs, &q, &since, now, 10);
        assert_eq!(hits.len(), 1);
        let (hits, _) = scan(&srcs, &q, &Filters::default(), now, 1);
        assert_eq!(hits.len(), 1);
    }
}
