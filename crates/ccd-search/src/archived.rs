//! Archived conversations searched too (issue 56 §5: `ccd archive` moves
//! a dead conversation into ccd's state dir, and search still sees it).
//!
//! Two ways, the same hits:
//!
//! - [`search_indexed`]: through the index, which covers the archives
//!   (`crate::index`'s `archives`: each indexed once when new or changed,
//!   the archive folder's stamp checked at each update): only the
//!   candidates' archives are decompressed, each up to its last candidate
//!   record, best score bound first with the early stop;
//! - [`search`]: every archive read whole, decompressed as it is read
//!   (`ccd_claude::archive::open_entry`, never past the length its
//!   manifest states), by the scan's own matcher
//!   ([`scan::search_reader`]): what answers without an index (`ccd
//!   search --no-index`, a daemon whose index is not open yet) and when
//!   the index cannot answer (a query with no trigram, a folder changed
//!   since the index listed it).
//!
//! Either way a `live` search reads none, `cwd` is judged on the
//! manifest's folder before anything is decompressed, and the search's
//! deadline leaves the rest unread (counted as timed out); the messages,
//! ranking and snippets are those the transcript had in place.
//!
//! A hit is a row like any other with state `archived`, its folder from
//! the manifest and its path the transcript's original path (where
//! `ccd attach` puts it back; the offset is into that file's bytes).

use crate::index::Index;
use crate::scan::{self, Hit, ScanStats, Source};
use crate::service::Request;
use ccd_claude::archive;
use ccd_claude::paths::{is_within, normalize};
use ccd_protocol::methods::session::{SearchResult, SearchScope, SessionState};
use ccd_protocol::search::SearchHit;
use std::path::{Path, PathBuf};
use time::OffsetDateTime;

/// The archives' part of a search: at most `req.limit + 1` rows, best
/// first, what was read, and how many archives the request kept.
#[derive(Debug, Default)]
pub struct Searched {
    pub hits: Vec<SearchHit>,
    pub stats: ScanStats,
    pub searched: usize,
}

/// The archives under `root` that `req` keeps, searched through `ix`
/// (see the module header); `None` when the index cannot answer for them:
/// the caller reads them all ([`search`]).
pub fn search_indexed(
    ix: &Index,
    root: &Path,
    req: &Request,
    now: OffsetDateTime,
) -> Option<Searched> {
    if req.scope == SearchScope::Live {
        return Some(Searched::default());
    }
    let a = ix.search_archives(
        root,
        &req.query,
        &req.filters,
        req.cwd.as_deref(),
        now,
        req.limit + 1,
    )?;
    tracing::debug!(
        verified = a.used.verified,
        scanned = a.used.scanned,
        unverified = a.used.unverified,
        files = a.stats.files,
        "archives searched through the index"
    );
    Some(Searched {
        hits: rows(a.hits),
        stats: a.stats,
        searched: a.searched,
    })
}

/// The archives under `root` (ccd's `<state>/archive`) that `req` keeps,
/// each read whole.
pub fn search(root: &Path, req: &Request, now: OffsetDateTime) -> Searched {
    let mut stats = ScanStats::default();
    if req.scope == SearchScope::Live {
        return Searched::default();
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
    Searched {
        hits: rows(hits),
        searched: stats.files + stats.unreadable + stats.timed_out,
        stats,
    }
}

fn rows(hits: Vec<(Hit, Option<String>)>) -> Vec<SearchHit> {
    hits.into_iter()
        .map(|(h, cwd)| crate::service::hit_row(h, SessionState::Archived, cwd, None))
        .collect()
}

/// The archives' hits merged into `result`: best first (ties newest
/// first), at most `limit`, `truncated` when more matched or archives
/// were left unread at the deadline; the archives searched counted in
/// `sessions`.
pub fn merge(result: &mut SearchResult, extra: Searched, limit: usize) {
    result.sessions += extra.searched as u64;
    result.truncated |= extra.stats.timed_out > 0;
    result.hits.extend(extra.hits);
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
