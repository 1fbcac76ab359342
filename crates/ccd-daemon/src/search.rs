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
//! **Kept current.** The transcript watch ([`crate::transcript_watch`],
//! started by the keeper before its first update) says which transcripts
//! were written and whether any came or went. A search takes what it saw:
//! the written files are brought up to date (only their appended complete
//! lines read; a trimmed or replaced one read again) and nothing else is
//! stat'ed, the index trusted for the rest (`Freshness::Trusted`); the
//! session list of the last search is reused with each session's state
//! judged again from the registry (as the session index judges it):
//! [`Registry`] lists `sessions/` and stats each file when its inotify
//! watch saw a change since the last search (at every search where there
//! is no watch), re-reading only a file whose identity or stamps changed
//! (`ccd_claude::registry::RegistryCache`: a cached parse, never a cached
//! verdict), and [`States`] judges a session (pid and start time through
//! the probe, made once) only when the answer asks for it: the hits'
//! sessions when the request filters by neither scope nor folder, every
//! session an entry names when it filters by scope (every other one is
//! dead, no probe asked); once per search. A filtered search borrows the
//! kept list's transcripts (`service::pick_with`), never copies them. When
//! a transcript came or went, or the watch cannot tell (none on this
//! system, an overflow, a lost watch), the session list is built again as
//! `sessions.list` builds it and the whole index updated against it
//! (every transcript stat'ed; gone or unlisted ones dropped), and without
//! a watch every file's freshness is checked by a stat. The write lock is
//! held for the update only. The keeper saves the index when an update
//! changed it, at most every [`SAVE_EVERY`] and once more at shutdown,
//! under the same `flock` a daemon-less `ccd search` takes
//! (`ccd_search::service::save_locked`), written to a temporary file and
//! renamed: neither ever sees the other's half-written file.
//!
//! **Archived conversations** (`<state>/archive`): each search's update
//! also stats the archive folder (`Index::update_archives`: listed again
//! only when an archive came or went, a new one indexed whole), and the
//! archives are searched through the index under the same read lock;
//! until the index is open they are read whole, decompressed, with no
//! lock held.
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
//! `ccd_search::index::MAX_POSTINGS`. The registry's kept parses:
//! `ccd_claude::registry::MAX_CACHED` files of at most
//! `MAX_CACHED_ENTRY_BYTES` (further ones parsed at every search); the
//! registry's watch: one inotify instance with one watch.

use crate::transcript_watch::TranscriptWatch;
use ccd_claude::context::ContextWindows;
use ccd_claude::index::SessionRecord;
use ccd_claude::liveness::{Liveness, ProcessProbe};
use ccd_claude::registry::{RegistryCache, RegistryEntry};
use ccd_claude::ClaudeConfigDir;
use ccd_protocol::methods::session::SearchResult;
use ccd_search::index::{Freshness, Index, UpdateStats};
use ccd_search::service::{self, Request};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::{Mutex, RwLock};
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
    config: ClaudeConfigDir,
    windows: ContextWindows,
    /// The registry's parses, kept between searches, and the probe.
    registry: Registry,
    index: RwLock<Option<Index>>,
    /// The session list of the last search, reused while the watch says
    /// no transcript came or went (states re-validated each time).
    list: Mutex<Option<Arc<Listed>>>,
    /// Which transcripts changed; `None`: no watch (every search lists
    /// the sessions again and stats every transcript).
    watch: Mutex<Option<TranscriptWatch>>,
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
    /// An update changed the index since its last save.
    dirty: AtomicBool,
    /// A search listed the sessions again since the keeper last released
    /// freed heap (the old list and the listing's garbage are freed).
    relisted: AtomicBool,
}

impl SearchService {
    pub fn new(state_dir: PathBuf, config: ClaudeConfigDir, windows: ContextWindows) -> Self {
        Self {
            registry: Registry::new(config.sessions_dir(), ccd_claude::liveness::system_probe()),
            state_dir,
            config,
            windows,
            index: RwLock::new(None),
            list: Mutex::new(None),
            watch: Mutex::new(None),
            slots: Arc::new(Semaphore::new(MAX_SEARCHES)),
            waiting: AtomicUsize::new(0),
            dirty: AtomicBool::new(false),
            relisted: AtomicBool::new(false),
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

    /// Starts the transcript watch if there is none (blocking; the
    /// keeper's). Its first changes say `everything`, so whatever came
    /// before it is seen by the next search.
    pub fn watch(&self) {
        let mut g = self.watch.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_some() {
            return;
        }
        match TranscriptWatch::start(&self.config.projects_dir()) {
            Ok(w) => *g = Some(w),
            Err(error) => {
                tracing::debug!(%error, "no transcript watch: searches list and stat every transcript")
            }
        }
    }

    /// Answers `req` (blocking): the session list (kept while no
    /// transcript came or went, states re-validated), the index brought
    /// up to date with what changed and used when loaded, else a scan.
    pub fn answer(&self, req: &Request, now: OffsetDateTime) -> std::io::Result<SearchResult> {
        let started = Instant::now();
        let req = req.clone().until(started + SEARCH_TIME);
        let changes = self
            .watch
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(TranscriptWatch::take);
        let watched = changes.as_ref().is_some_and(|c| !c.everything);
        let kept = self.list.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let (sessions, relisted) = match (&changes, kept) {
            (Some(c), Some(l)) if !c.everything && !c.listing => (l, false),
            _ => {
                let sessions = self.sessions_now()?;
                let sources = service::sources_of(&sessions);
                let by_id = service::SessionsById::new(&sessions);
                let l = Arc::new(Listed {
                    sessions,
                    sources,
                    by_id,
                });
                *self.list.lock().unwrap_or_else(|p| p.into_inner()) = Some(l.clone());
                self.relisted.store(true, Ordering::Release);
                (l, true)
            }
        };
        let listed_us = started.elapsed().as_micros() as u64;
        // A list just built has its states judged now; a kept one is
        // judged again from the registry, each session when the answer
        // needs it (the hits' sessions; every candidate when the request
        // filters by scope or folder).
        let states = (!relisted).then(|| self.registry.states());
        let states_us = started.elapsed().as_micros() as u64;
        let state_of = |r: &SessionRecord| match &states {
            None => r.state,
            Some(s) => s.of(&r.session_id),
        };
        // Only the sessions a registry entry names may be other than dead.
        let named: Option<Vec<&str>> = states.as_ref().map(States::named);
        let picked = service::pick_with(
            &sessions.sessions,
            &req,
            state_of,
            false,
            Some(&sessions.sources),
            Some(&sessions.by_id),
            named.as_deref(),
        );
        let picked_us = started.elapsed().as_micros() as u64;
        if let Ok(mut g) = self.index.write() {
            if let Some(ix) = g.as_mut() {
                let st = if relisted {
                    ix.update(&sessions.sources.sources)
                } else {
                    let files = changes.as_ref().map(|c| &c.files);
                    let changed: Vec<ccd_search::Source> = match files {
                        Some(f) if !f.is_empty() => sessions
                            .sources
                            .sources
                            .iter()
                            .filter(|s| f.contains(&s.path))
                            .cloned()
                            .collect(),
                        _ => Vec::new(),
                    };
                    ix.update_some(&changed)
                };
                // The archived conversations: one stat of their folder
                // when none came or went.
                let arch = ix.update_archives(&self.state_dir.join(service::ARCHIVE_DIR));
                if arch != UpdateStats::default() {
                    self.dirty.store(true, Ordering::Release);
                }
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
        let updated_us = started.elapsed().as_micros() as u64;
        let g = self.index.read().ok();
        let freshness = if watched {
            Freshness::Trusted
        } else {
            Freshness::Stat
        };
        let ix = g
            .as_ref()
            .and_then(|g| g.as_ref())
            .map(|ix| (ix, freshness));
        let mut a = service::answer(&req, &picked, ix, now);
        // Archived conversations through the index (it covers them), else
        // each read decompressed with the index's lock released.
        let root = self.state_dir.join(service::ARCHIVE_DIR);
        let arch = g
            .as_ref()
            .and_then(|g| g.as_ref())
            .and_then(|ix| ccd_search::archived::search_indexed(ix, &root, &req, now));
        drop(g);
        let arch = arch.unwrap_or_else(|| ccd_search::archived::search(&root, &req, now));
        let archives = arch.stats.files;
        ccd_search::archived::merge(&mut a.result, arch, req.limit);
        tracing::debug!(
            indexed = a.result.indexed,
            relisted,
            watched,
            hits = a.result.hits.len(),
            sessions = a.result.sessions,
            files = a.stats.files,
            timed_out = a.stats.timed_out,
            archives,
            registry_listed = states.as_ref().is_some_and(|s| s.listed),
            registry_read = states.as_ref().map_or(0, |s| s.read),
            judged = states.as_ref().map_or(0, States::judged),
            listed_us,
            states_us,
            picked_us,
            updated_us,
            elapsed_us = started.elapsed().as_micros() as u64,
            "search answered"
        );
        Ok(a.result)
    }

    /// Every session on the machine now, as `sessions.list` builds it
    /// (blocking), judged with the service's probe.
    fn sessions_now(&self) -> std::io::Result<Vec<SessionRecord>> {
        sessions_blocking(
            &self.config,
            &self.windows,
            &self.state_dir,
            self.registry.probe.as_ref(),
        )
    }

    /// Loads the index file (or starts empty), brings it up to date with
    /// every transcript and installs it (blocking; the keeper's start).
    /// Saved when that changed it.
    pub fn load(&self) -> std::io::Result<()> {
        let started = Instant::now();
        let sessions = self.sessions_now()?;
        let mut ix = service::load_or_new(&self.state_dir);
        let all = service::sources_of(&sessions).sources;
        let st = ix.update(&all);
        let arch = ix.update_archives(&self.state_dir.join(service::ARCHIVE_DIR));
        tracing::info!(
            files_read = st.files_read,
            bytes = st.bytes,
            archives_read = arch.files_read,
            records = ix.records_len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "search index open"
        );
        if let Ok(mut g) = self.index.write() {
            *g = Some(ix);
        }
        if st != UpdateStats::default() || arch != UpdateStats::default() {
            self.dirty.store(true, Ordering::Release);
            self.save_if_changed();
        }
        release_freed();
        Ok(())
    }

    /// Saves the index when an update changed it since the last save
    /// (blocking; under the index file's lock), then releases the heap
    /// that freed; else releases it when a search listed the sessions
    /// again since.
    pub fn save_if_changed(&self) {
        let relisted = self.relisted.swap(false, Ordering::AcqRel);
        if !self.dirty.swap(false, Ordering::AcqRel) {
            if relisted {
                release_freed();
            }
            return;
        }
        let Ok(mut g) = self.index.write() else {
            return;
        };
        let Some(ix) = g.as_mut() else { return };
        let started = Instant::now();
        match service::save_locked(&self.state_dir, ix) {
            Ok(()) => {
                tracing::debug!(
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "search index saved"
                );
                drop(g);
                release_freed();
            }
            Err(e) => {
                self.dirty.store(true, Ordering::Release);
                tracing::warn!(error = %e, "search index not saved")
            }
        }
    }
}

/// Hands the heap that a build, a load or a save freed back to the
/// system (`ccd_os::heap`): glibc keeps freed memory in the arena of the
/// blocking thread that freed it, and over a hundred thousand
/// transcripts the index's build and save left ~300 MB there
/// (docs/architecture.md, the daemon's search bounds). Blocking; called
/// by the keeper (its load, its saves, its tick after a relist), never
/// on a search's path.
fn release_freed() {
    let started = Instant::now();
    ccd_os::heap::release_freed();
    tracing::debug!(
        elapsed_us = started.elapsed().as_micros() as u64,
        "freed heap released"
    );
}

/// A session list and its transcripts (made once per list).
struct Listed {
    sessions: Vec<SessionRecord>,
    sources: service::ListSources,
    /// The hits' records found by id (4 bytes a session).
    by_id: service::SessionsById,
}

/// The registry as the searches read it: each file's parse kept while
/// its [`ccd_claude::registry::FileKey`] holds (a cached parse, never a
/// cached verdict), and the system's probe, made once (it reads the
/// machine id and the pid namespace).
///
/// On Linux an inotify watch on `sessions/` (drained at each search
/// before anything is read: the kernel queues an event within the write
/// itself) lets a search that finds no event since the last listing
/// reuse that listing's entries, with no listing and no stat; any event,
/// an overflow or a lost watch lists again (and re-places the watch
/// before listing). Elsewhere, or while the folder is missing, every
/// search lists.
pub struct Registry {
    dir: PathBuf,
    cache: Mutex<Listing>,
    probe: Box<dyn ProcessProbe + Send + Sync>,
}

/// The kept parses, the last listing's entries and the watch (one lock,
/// held for a drain and a listing only).
struct Listing {
    cache: RegistryCache,
    /// The last listing's entries by session id.
    last: Option<Arc<BySid>>,
    watch: Option<registry_watch::RegistryWatch>,
}

impl Registry {
    pub fn new(dir: PathBuf, probe: Box<dyn ProcessProbe + Send + Sync>) -> Self {
        Self::with_cache(dir, RegistryCache::new(), probe)
    }

    fn with_cache(
        dir: PathBuf,
        cache: RegistryCache,
        probe: Box<dyn ProcessProbe + Send + Sync>,
    ) -> Self {
        Self {
            dir,
            cache: Mutex::new(Listing {
                cache,
                last: None,
                watch: None,
            }),
            probe,
        }
    }

    /// The registry now (blocking: the watch drained; unless it is
    /// quiet, the directory listed, each file stat'ed, the changed ones
    /// read), its sessions' states judged later, on demand
    /// ([`States::of`]). An unreadable directory names no session (every
    /// one dead, as the session index has it).
    pub fn states(&self) -> States<'_> {
        let mut k = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let quiet = match k.watch.as_mut().map(|w| w.quiet()) {
            Some(Some(q)) => q,
            Some(None) => {
                k.watch = None;
                false
            }
            None => false,
        };
        if k.watch.is_none() {
            // Placed before the listing: nothing after it goes unseen.
            k.watch = registry_watch::RegistryWatch::start(&self.dir);
        }
        let (by_sid, read, listed) = match (&k.last, quiet) {
            (Some(last), true) => (last.clone(), 0, false),
            _ => {
                let entries = k.cache.read_all(&self.dir);
                let read = k.cache.read_last();
                let ok = entries.is_ok();
                let mut by_sid = BySid::new();
                for e in entries.unwrap_or_else(|error| {
                    tracing::debug!(dir = %self.dir.display(), %error, "registry unreadable: no session running");
                    Vec::new()
                }) {
                    by_sid.entry(e.session_id.clone()).or_default().push(e);
                }
                let by_sid = Arc::new(by_sid);
                k.last = ok.then(|| by_sid.clone());
                (by_sid, read, true)
            }
        };
        drop(k);
        States {
            by_sid,
            probe: self.probe.as_ref(),
            judged: RefCell::new(HashMap::new()),
            read,
            listed,
        }
    }
}

/// A registry's entries by session id.
type BySid = HashMap<String, Vec<Arc<RegistryEntry>>>;

/// The registry's entries by session, each session judged when first
/// asked, against the process table as it is then (once per search).
pub struct States<'a> {
    by_sid: Arc<BySid>,
    probe: &'a dyn ProcessProbe,
    judged: RefCell<HashMap<String, Liveness>>,
    /// Registry files read (not from the cache) for this search.
    read: usize,
    /// Whether this search listed the registry (else the watch was quiet).
    listed: bool,
}

impl States<'_> {
    /// `sid`'s state as the session index judges it: live if one of its
    /// entries' processes is, unknown if one may be, dead otherwise (no
    /// entry names it: dead, no probe asked).
    pub fn of(&self, sid: &str) -> Liveness {
        let Some(entries) = self.by_sid.get(sid) else {
            return Liveness::Dead;
        };
        if let Some(l) = self.judged.borrow().get(sid) {
            return *l;
        }
        let mut state = Liveness::Dead;
        for e in entries {
            match ccd_claude::liveness::check(e, self.probe).liveness {
                Liveness::Live => {
                    state = Liveness::Live;
                    break;
                }
                Liveness::Unknown => state = Liveness::Unknown,
                Liveness::Dead => {}
            }
        }
        self.judged.borrow_mut().insert(sid.to_string(), state);
        state
    }

    /// The sessions an entry names: every other one is dead.
    pub fn named(&self) -> Vec<&str> {
        self.by_sid.keys().map(String::as_str).collect()
    }

    /// Sessions judged so far (probes asked for their entries).
    pub fn judged(&self) -> usize {
        self.judged.borrow().len()
    }
}

/// The registry folder's inotify watch (Linux); elsewhere none.
mod registry_watch {
    #[cfg(target_os = "linux")]
    pub use linux::RegistryWatch;

    #[cfg(target_os = "linux")]
    mod linux {
        use nix::errno::Errno;
        use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
        use std::path::Path;

        /// Any change of an entry, or of the folder itself (the registry
        /// watcher's mask); never opens or reads (the listings' own reads
        /// raise nothing); the folder itself, not a symlink to one.
        const MASK: u32 = crate::events::dir_watch::TARGET_MASK | libc::IN_DONT_FOLLOW;
        /// The watch cannot be trusted any more.
        const LOST: u32 =
            libc::IN_IGNORED | libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_Q_OVERFLOW;

        /// One inotify instance on `sessions/` (its descriptor closed
        /// when dropped).
        pub struct RegistryWatch(Inotify);

        impl RegistryWatch {
            /// `None`: the folder is missing, a symlink, or no watch can
            /// be added (the caller lists at every search).
            pub fn start(dir: &Path) -> Option<Self> {
                let q = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
                match q.add_watch(dir, AddWatchFlags::from_bits_truncate(MASK)) {
                    Ok(_) => Some(Self(q)),
                    Err(error) => {
                        tracing::trace!(dir = %dir.display(), %error, "no registry watch: searches list it");
                        None
                    }
                }
            }

            /// Drains the queue: `Some(true)` nothing happened since the
            /// last drain, `Some(false)` something did, `None` the watch
            /// is lost (overflow, folder gone or moved, a read error).
            pub fn quiet(&mut self) -> Option<bool> {
                let mut quiet = true;
                loop {
                    match self.0.read_events() {
                        Ok(events) if events.is_empty() => break,
                        Ok(events) => {
                            if events.iter().any(|e| e.mask.bits() & LOST != 0) {
                                return None;
                            }
                            quiet = false;
                        }
                        Err(Errno::EAGAIN) => break,
                        Err(Errno::EINTR) => continue,
                        Err(_) => return None,
                    }
                }
                Some(quiet)
            }
        }
    }

    /// No watch here: every search lists the registry.
    #[cfg(not(target_os = "linux"))]
    pub struct RegistryWatch;

    #[cfg(not(target_os = "linux"))]
    impl RegistryWatch {
        pub fn start(_dir: &std::path::Path) -> Option<Self> {
            None
        }
        pub fn quiet(&mut self) -> Option<bool> {
            None
        }
    }
}

/// Every session on the machine, liveness re-validated (blocking): the
/// session index as `sessions.list` builds it.
pub fn sessions_blocking(
    config: &ccd_claude::ClaudeConfigDir,
    windows: &ccd_claude::context::ContextWindows,
    state_dir: &std::path::Path,
    probe: &dyn ProcessProbe,
) -> std::io::Result<Vec<SessionRecord>> {
    Ok(ccd_claude::index::build_cached(config, probe, windows, Some(state_dir))?.sessions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccd_claude::liveness::ProcessState;
    use std::sync::atomic::AtomicU64;

    /// Every pid running since `start` (or gone when it is empty);
    /// counts the questions.
    struct Fake {
        start: Mutex<String>,
        asked: AtomicU64,
    }
    impl ProcessProbe for &'static Fake {
        fn process(&self, _: u32) -> ProcessState {
            self.asked.fetch_add(1, Ordering::Relaxed);
            match self.start.lock().unwrap().clone() {
                s if s.is_empty() => ProcessState::Gone,
                start => ProcessState::Running { start },
            }
        }
        fn pid_domain(&self) -> Option<String> {
            None
        }
        fn same_start(&self, a: &str, b: &str) -> Option<bool> {
            Some(a == b)
        }
    }

    fn registry(dir: &std::path::Path, fake: &'static Fake) -> Registry {
        // Files just written are trusted at once: a verdict that
        // changes below must come from judging, not from a re-read.
        Registry::with_cache(
            dir.to_path_buf(),
            RegistryCache::with_margin(Duration::ZERO),
            Box::new(fake),
        )
    }

    #[test]
    fn each_search_judges_again_only_the_sessions_it_asks_for() {
        let dir = tempfile::tempdir().unwrap();
        for (pid, sid) in [(7, "s7"), (8, "s8")] {
            std::fs::write(
                dir.path().join(format!("{pid}.json")),
                format!(r#"{{"pid":{pid},"sessionId":"{sid}","procStart":"100"}}"#),
            )
            .unwrap();
        }
        let fake: &'static Fake = Box::leak(Box::new(Fake {
            start: Mutex::new("100".into()),
            asked: AtomicU64::new(0),
        }));
        let r = registry(dir.path(), fake);
        let s = r.states();
        assert_eq!(s.read, 2);
        assert_eq!(s.of("s7"), Liveness::Live);
        assert_eq!(s.of("s7"), Liveness::Live);
        // No entry names it: dead, no probe asked.
        assert_eq!(s.of("nobody"), Liveness::Dead);
        // Judged once per search, and only what was asked.
        assert_eq!(fake.asked.load(Ordering::Relaxed), 1);
        assert_eq!(s.judged(), 1);
        drop(s);

        // The pid now another process's (reused): dead at the next
        // search, though no file changed (nothing read again).
        *fake.start.lock().unwrap() = "200".into();
        let s = r.states();
        assert_eq!(s.read, 0);
        assert_eq!(s.of("s7"), Liveness::Dead);
        drop(s);
        // Gone: dead too; back (same start): live again.
        *fake.start.lock().unwrap() = String::new();
        assert_eq!(r.states().of("s8"), Liveness::Dead);
        *fake.start.lock().unwrap() = "100".into();
        assert_eq!(r.states().of("s8"), Liveness::Live);
        // Nothing changed: no listing (where the folder is watched).
        let s = r.states();
        assert_eq!((s.listed, s.read), (!cfg!(target_os = "linux"), 0));
        drop(s);

        // An entry that appears, or one rewritten, is in the next search.
        std::fs::write(
            dir.path().join("9.json"),
            r#"{"pid":9,"sessionId":"s9","procStart":"100"}"#,
        )
        .unwrap();
        let s = r.states();
        assert!(s.listed);
        assert_eq!(s.of("s9"), Liveness::Live);
        drop(s);
        std::fs::write(
            dir.path().join("9.json"),
            r#"{"pid":9,"sessionId":"s9","procStart":"300"}"#,
        )
        .unwrap();
        assert_eq!(r.states().of("s9"), Liveness::Dead);
        std::fs::remove_file(dir.path().join("9.json")).unwrap();
        let s = r.states();
        assert!(s.listed);
        assert_eq!(s.of("s9"), Liveness::Dead);
    }
}
