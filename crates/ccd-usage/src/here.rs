//! The IO edge: this machine's transcripts read through the cache, and the
//! report over them. Used by `ccd usage`, by `ccd ls` (each session's
//! row) and by the daemon's usage board. The transcripts are those under
//! Claude Code's folder and those of the conversations `ccd archive` moved
//! into the state dir (the [`ARCHIVE_DIR`] beside the cache: both live
//! in the state dir), counted as if they were still in place
//! ([`crate::files::archived`]). Blocking: the transcripts are read on the cache's threads, and
//! the cache is written on a scoped thread while the report is built;
//! every thread is joined before [`report`] returns.

use crate::cache::{Refresh, UsageCache};
use crate::files::{archived, transcripts, with_archived, Transcript, Unreadable};
use crate::prices::PriceTable;
use crate::report::{build, By, Query, Report, Row};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The archives' folder in the state dir (`ccd archive` writes there).
pub const ARCHIVE_DIR: &str = "archive";

/// The archives' folder beside the cache at `cache_path`.
pub fn archive_root(cache_path: &Path) -> PathBuf {
    cache_path
        .parent()
        .unwrap_or(Path::new("."))
        .join(ARCHIVE_DIR)
}

/// Every transcript usage reads: those under `config_root` and the
/// archived ones beside the cache at `cache_path`, in the order of their
/// places; and the archives whose manifest could not be read.
pub fn sources(config_root: &Path, cache_path: &Path) -> (Vec<Transcript>, Vec<Unreadable>) {
    let (arch, bad) = archived(&archive_root(cache_path));
    (with_archived(transcripts(config_root), arch), bad)
}

/// Every transcript ([`sources`]), the cache at `cache_path` brought up
/// to date (and written back when anything changed), and the report `q`
/// asks for. The archived conversations that could not be read, whole or
/// in part, are named in the refresh's `unreadable`.
pub fn report(
    config_root: &Path,
    cache_path: &Path,
    prices: &PriceTable,
    q: &Query,
) -> (Report, Refresh) {
    let (files, bad) = sources(config_root, cache_path);
    let mut cache = UsageCache::load(cache_path);
    let before = cache.len();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut r = cache.refresh(&files, threads);
    r.unreadable.extend(bad);
    r.unreadable.sort_by(|a, b| a.session.cmp(&b.session));
    r.unreadable.dedup_by(|a, b| a.session == b.session);
    tracing::trace!(
        files = files.len(),
        unchanged = r.unchanged,
        appended = r.appended,
        full = r.full,
        bytes = r.bytes,
        failed = r.failed,
        unreadable = r.unreadable.len(),
        "usage cache refreshed"
    );
    let changed = r.full + r.appended > 0 || cache.len() != before;
    // The cache is written on a thread of its own while the report is
    // built: both only read it.
    let cache = &cache;
    let report = std::thread::scope(|s| {
        let saving = changed.then(|| s.spawn(|| cache.save(cache_path)));
        let with: Vec<_> = files
            .iter()
            .filter_map(|t| cache.get(&t.path).map(|u| (t, u)))
            .collect();
        let report = build(&with, prices, q);
        let saved = match saving.map(|h| h.join()) {
            None => Ok(()),
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(std::io::Error::other("the thread writing it panicked")),
        };
        if let Err(e) = saved {
            tracing::warn!(path = %cache_path.display(), error = %e, "usage cache not written");
        }
        report
    });
    (report, r)
}

/// Each session's totals (all dates), by session id.
pub fn by_session(
    config_root: &Path,
    cache_path: &Path,
    prices: &PriceTable,
) -> HashMap<String, Row> {
    let q = Query {
        by: By::Session,
        since: None,
        until: None,
        offset: time::UtcOffset::UTC,
    };
    let (r, _) = report(config_root, cache_path, prices, &q);
    r.rows
        .into_iter()
        .map(|row| (row.key.clone(), row))
        .collect()
}
