//! The search index the daemon keeps open for `sessions.search` (issue
//! 55), and the bounds on the searches it answers.
//!
//! **Who owns what.** [`SearchService`] owns the in-memory index
//! (`ccd_search::index::Index`) behind an `RwLock`: `None` until the
//! keeper task (`tasks::search_keeper`) has loaded `<state>/search.idx`
//! and brought it up to date (built from the transcripts when absent,
//! another format or damaged) on the blocking pool, in the background:
//! the daemon's start and other requests never wait for it; a search that
//! comes first scans (`indexed: false`), with the same hits.
//!
//! **Kept current.** Each search brings the index up to date with the
//! session list it is answered over (the list `sessions.list` builds,
//! liveness re-validated) before answering: a transcript that grew has
//! only its appended complete lines read, one trimmed or replaced is read
//! again, one gone or no longer listed is dropped (`Index::update`); the
//! write lock is held for that update only. The keeper saves the index
//! when an update changed it, at most every [`SAVE_EVERY`] and once more
//! at shutdown, under the same `flock` a daemon-less `ccd search` takes
//! (`ccd_search::service::save_locked`), written to a temporary file and
//! renamed: neither ever sees the other's half-written file.
//!
//! **What blocks.** Everything here but [`SearchService::slot`] blocks
//! (file reads, the scan's threads) and runs on the blocking pool; no lock
//! is held across an `.await`. A search holds the read lock while it
//! verifies candidates, so a save (which compacts: the write lock) waits
//! for the searches running, and they for it.
//!
//! **Bounds.** At most [`MAX_SEARCHES`] searches run at once; up to
//! [`MAX_WAITING`] more wait for a slot, beyond that a search is refused
//! (`internal`, "busy"). A search reads for at most [`SEARCH_TIME`]:
//! transcripts not read by then are left out (the answer says
//! `truncated`: more may match). Its hits: at most `SEARCH_LIMIT_MAX`. The index's memory:
//! `ccd_search::index::MAX_POSTINGS`.

use ccd_claude::index::SessionRecord;
use ccd_protocol::methods::session::SearchResult;
use ccd_search::index::{Index, UpdateStats};
use ccd_search::service::{self, Request};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::RwLock;
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Searches running at once (the machine's reads and cores are shared
/// with the sessions).
pub const MAX_SEARCHES: usize = 2;

/// Searches waiting for a slot; beyond that, refused.
pub const MAX_WAITING: usize = 64;

/// The longest a search reads transcripts.
pub const SEARCH_TIME: Duration = Duration::from_secs(10);

/// The least time between two saves of the index file.
pub const SAVE_EVERY: Duration = Duration::from_secs(30);

/// Too many searches at once.
#[derive(Debug, thiserror::Error)]
#[error("{MAX_SEARCHES} searches run and {MAX_WAITING} wait: busy, try again")]
pub struct Busy;

/// The daemon's search index and its search slots (module header).
pub struct SearchService {
    state_dir: PathBuf,
    index: RwLock<Option<Index>>,
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
    /// An update changed the index since its last save.
    dirty: AtomicBool,
}

impl SearchService {
    pub fn new(state_dir: PathBuf) -> Self {
        Self {
            state_dir,
            index: RwLock::new(None),
            slots: Arc::new(Semaphore::new(MAX_SEARCHES)),
            waiting: AtomicUsize::new(0),
            dirty: AtomicBool::new(false),
        }
    }

    /// A search slot, waiting for one while [`MAX_SEARCHES`] run (at most
    /// [`MAX_WAITING`] wait). Held by the blocking search itself, so a
    /// search whose client left still counts until it ends.
    pub async fn slot(&self) -> Result<OwnedSemaphorePermit, Busy> {
        if let Ok(p) = self.slots.clone().try_acquire_owned() {
            return Ok(p);
        }
        let before = self.waiting.fetch_add(1, Ordering::AcqRel);
        struct Leave<'a>(&'a AtomicUsize);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let _leave = Leave(&self.waiting);
        if before >= MAX_WAITING {
            tracing::info!(waiting = before, "search refused: busy");
            return Err(Busy);
        }
        tracing::debug!(
            running = MAX_SEARCHES,
            waiting = before + 1,
            "search waits for a slot"
        );
        // The semaphore is never closed.
        self.slots.clone().acquire_owned().await.map_err(|_| Busy)
    }

    /// Whether the index is loaded (searches use it).
    pub fn ready(&self) -> bool {
        self.index.read().is_ok_and(|g| g.is_some())
    }

    /// Answers `req` over `sessions` (blocking): the index brought up to
    /// date and used when loaded, else a scan.
    pub fn answer(
        &self,
        req: &Request,
        sessions: &[SessionRecord],
        now: OffsetDateTime,
    ) -> SearchResult {
        let started = Instant::now();
        let req = req.clone().until(started + SEARCH_TIME);
        let picked = service::pick(sessions, &req);
        if let Ok(mut g) = self.index.write() {
            if let Some(ix) = g.as_mut() {
                let st = ix.update(&picked.all);
                if st != UpdateStats::default() {
                    self.dirty.store(true, Ordering::Release);
                    tracing::debug!(
                        files_read = st.files_read,
                        restarted = st.restarted,
                        dropped = st.dropped,
                        bytes = st.bytes,
                        elapsed_us = started.elapsed().as_micros() as u64,
                        "search index updated"
                    );
                }
            }
        }
        let g = self.index.read().ok();
        let ix = g.as_ref().and_then(|g| g.as_ref());
        let a = service::answer(&req, &picked, ix, now);
        tracing::debug!(
            indexed = a.result.indexed,
            hits = a.result.hits.len(),
            sessions = a.result.sessions,
            files = a.stats.files,
            timed_out = a.stats.timed_out,
            elapsed_us = started.elapsed().as_micros() as u64,
            "search answered"
        );
        a.result
    }

    /// Loads the index file (or starts empty), brings it up to date with
    /// `sessions` and installs it (blocking; the keeper's start). Saved
    /// when that changed it.
    pub fn load(&self, sessions: &[SessionRecord]) {
        let started = Instant::now();
        let mut ix = service::load_or_new(&self.state_dir);
        let all = all_sources(sessions);
        let st = ix.update(&all);
        tracing::info!(
            files_read = st.files_read,
            bytes = st.bytes,
            records = ix.records_len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "search index open"
        );
        if let Ok(mut g) = self.index.write() {
            *g = Some(ix);
        }
        if st != UpdateStats::default() {
            self.dirty.store(true, Ordering::Release);
            self.save_if_changed();
        }
    }

    /// Saves the index when an update changed it since the last save
    /// (blocking; under the index file's lock).
    pub fn save_if_changed(&self) {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return;
        }
        let Ok(mut g) = self.index.write() else {
            return;
        };
        let Some(ix) = g.as_mut() else { return };
        let started = Instant::now();
        match service::save_locked(&self.state_dir, ix) {
            Ok(()) => tracing::debug!(
                elapsed_ms = started.elapsed().as_millis() as u64,
                "search index saved"
            ),
            Err(e) => {
                self.dirty.store(true, Ordering::Release);
                tracing::warn!(error = %e, "search index not saved")
            }
        }
    }
}

/// Every session on the machine, liveness re-validated (blocking): the
/// session index as `sessions.list` builds it.
pub fn sessions_blocking(
    config: &ccd_claude::ClaudeConfigDir,
    windows: &ccd_claude::context::ContextWindows,
    state_dir: &std::path::Path,
) -> std::io::Result<Vec<SessionRecord>> {
    let probe = ccd_claude::liveness::system_probe();
    Ok(ccd_claude::index::build_cached(config, probe.as_ref(), windows, Some(state_dir))?.sessions)
}

/// Every transcript of `sessions` (what the index covers).
fn all_sources(sessions: &[SessionRecord]) -> Vec<ccd_search::Source> {
    sessions
        .iter()
        .filter_map(|r| {
            Some(ccd_search::Source {
                session_id: r.session_id.clone(),
                path: r.transcript.clone()?,
            })
        })
        .collect()
}
