//! Archived conversations searched too (issue 56 §5: `ccd archive` moves
//! a dead conversation into ccd's state dir, and search still sees it).
//!
//! An archive is read whole on each search, decompressed as it is read
//! (`ccd_claude::archive::open_entry`, never past the length its manifest
//! states), by the scan's own matcher ([`scan::search_reader`]): the same
//! messages, ranking and snippets as the transcript had in place. Archives
//! are not in the index (their bytes are compressed; offsets are those of
//! the transcript as it was), so a search reads every archive its filters
//! keep: a `live` search reads none, `cwd` is judged on the manifest's
//! folder before anything is decompressed, and the search's deadline
//! leaves the rest unread (counted as timed out).
//!
//! A hit is a row like any other with state `archived`, its folder from
//! the manifest and its path the transcript's original path (where
//! `ccd attach` puts it back; the offset is into that file's bytes).

use crate::scan::{self, Hit, ScanStats, Source};
use crate::service::Request;
use ccd_claude::archive;
use ccd_claude::paths::{is_within, normalize};
use ccd_protocol::methods::session::{SearchResult, SearchScope, SessionState};
use ccd_protocol::search::SearchHit;
use std::path::{Path, PathBuf};
use time::OffsetDateTime;

/// The archives under `root` (ccd's `<state>/archive`) that `req` keeps,
/// searched; at most `req.limit + 1` hits, best first, and what was read.
pub fn search(root: &Path, req: &Request, now: OffsetDateTime) -> (Vec<SearchHit>, ScanStats) {
    let mut stats = ScanStats::default();
    if req.scope == SearchScope::Live {
        return (Vec::new(), stats);
    }
    let mut hits: Vec<(Hit, Option<String>)> = Vec::new();
    for m in archive::list(root) {
        let Some(entry) = m.files.first() else {
            continue;
        };
        if let Some(cwd) = &req.cwd {
            let inside = m
                .cwd
                .as_deref()
                .is_some_and(|c| is_within(&normalize(Path::new(c)), cwd));
            if !inside {
                continue;
            }
        }
        if req.filters.expired() {
            stats.timed_out += 1;
            continue;
        }
        let src = Source {
            session_id: m.session_id.clone(),
            path: PathBuf::from(&entry.path),
        };
        match archive::open_entry(root, &m, entry) {
            Ok(mut r) => {
                if let Some(h) =
                    scan::search_reader(&src, &mut r, &req.query, &req.filters, now, &mut stats)
                {
                    hits.push((h, m.cwd.clone()));
                }
            }
            Err(e) => {
                stats.unreadable += 1;
                tracing::warn!(session = %m.session_id, error = %e, "archived transcript not searched");
            }
        }
    }
    hits.sort_by(|a, b| {
        b.0.score
            .total_cmp(&a.0.score)
            .then(b.0.newest.cmp(&a.0.newest))
            .then(a.0.session_id.cmp(&b.0.session_id))
    });
    hits.truncate(req.limit + 1);
    let rows = hits
        .into_iter()
        .map(|(h, cwd)| crate::service::hit_row(h, SessionState::Archived, cwd, None))
        .collect();
    (rows, stats)
}

/// [`search`]'s hits and what it read merged into `result`: best first
/// (ties newest first), at most `limit`, `truncated` when more matched or
/// archives were left unread at the deadline.
pub fn merge(result: &mut SearchResult, extra: Vec<SearchHit>, stats: &ScanStats, limit: usize) {
    result.sessions += (stats.files + stats.unreadable + stats.timed_out) as u64;
    result.truncated |= stats.timed_out > 0;
    result.hits.extend(extra);
    result.hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| b.timestamp.cmp(&a.timestamp))
    });
    if result.hits.len() > limit {
        result.truncated = true;
        result.hits.truncate(limit);
    }
}
