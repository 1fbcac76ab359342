//! Which transcripts changed: a watch on Claude Code's projects folder
//! and each project folder in it, for the daemon's search index
//! ([`crate::search`]), so a search reads what changed and stats nothing
//! else.
//!
//! On Linux: one inotify instance, drained by a thread of its own
//! (blocking in `poll` on a duplicate of its descriptor with a 500 ms
//! timeout, to see the stop flag) and by every [`TranscriptWatch::take`]
//! before it answers — so a write that returned before a search began is
//! always among what the search takes (the kernel queues the event in
//! the write itself). The one lock (the watcher's state) is held only to
//! drain the queue or take the changes, never across the `poll`. It watches the
//! projects folder (folders created, removed, moved) and every project
//! folder in it (a `*.jsonl` written, created, removed, moved). What it
//! saw piles up in [`Changes`] until a search takes it: the files written
//! (bounded: past [`MAX_FILES`] it says `everything` instead), whether
//! the list of transcripts changed (`listing`), and `everything` when it
//! cannot tell (a queue overflow, a watch that could not be added, the
//! folder itself gone). Elsewhere, or when the projects folder does not
//! exist at start, there is no watch ([`TranscriptWatch::start`] is an
//! error) and the caller treats every search as `everything`.
//!
//! The watch is started before the index's first update, so nothing
//! written between that update and the first search goes unseen.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
#[cfg(target_os = "linux")]
use std::sync::Mutex;

/// The most distinct changed files remembered between two searches;
/// beyond, `everything`.
pub const MAX_FILES: usize = 4096;

/// What changed since the last [`TranscriptWatch::take`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Changes {
    /// Transcripts written (appended, truncated).
    pub files: HashSet<PathBuf>,
    /// Transcripts or project folders created, removed or moved.
    pub listing: bool,
    /// Anything may have changed (overflow, a watch lost).
    pub everything: bool,
}

impl Changes {
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn file(&mut self, p: PathBuf) {
        if self.files.len() >= MAX_FILES {
            self.everything = true;
        } else {
            self.files.insert(p);
        }
    }
}

/// A running watch (see the module header); stops when dropped.
pub struct TranscriptWatch {
    #[cfg(target_os = "linux")]
    watcher: Arc<Mutex<linux::Watcher>>,
    stop: Arc<AtomicBool>,
    /// Set once a watch is lost for good: every change is `everything`.
    lost: Arc<AtomicBool>,
}

impl TranscriptWatch {
    /// Starts watching `projects` (Err: no watch here; see the module
    /// header).
    pub fn start(projects: &Path) -> std::io::Result<TranscriptWatch> {
        let stop = Arc::new(AtomicBool::new(false));
        let lost = Arc::new(AtomicBool::new(false));
        #[cfg(target_os = "linux")]
        {
            let watcher = linux::start(projects, stop.clone(), lost.clone())?;
            Ok(TranscriptWatch {
                watcher,
                stop,
                lost,
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (projects, &stop, &lost);
            Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "no transcript watch on this system",
            ))
        }
    }

    /// What changed since the last call.
    pub fn take(&self) -> Changes {
        #[cfg(target_os = "linux")]
        let mut c = {
            let mut w = self.watcher.lock().unwrap_or_else(|p| p.into_inner());
            w.drain();
            std::mem::take(&mut w.changes)
        };
        #[cfg(not(target_os = "linux"))]
        let mut c = Changes {
            everything: true,
            ..Changes::default()
        };
        c.everything |= self.lost.load(Ordering::Acquire);
        c
    }
}

impl Drop for TranscriptWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::Changes;
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
    use std::collections::HashMap;
    use std::os::fd::AsFd;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    fn root_mask() -> AddWatchFlags {
        AddWatchFlags::IN_CREATE
            | AddWatchFlags::IN_DELETE
            | AddWatchFlags::IN_MOVED_FROM
            | AddWatchFlags::IN_MOVED_TO
            | AddWatchFlags::IN_DELETE_SELF
            | AddWatchFlags::IN_MOVE_SELF
            | AddWatchFlags::IN_ONLYDIR
    }

    fn folder_mask() -> AddWatchFlags {
        root_mask() | AddWatchFlags::IN_MODIFY | AddWatchFlags::IN_CLOSE_WRITE
    }

    pub(super) struct Watcher {
        fd: Inotify,
        root: PathBuf,
        root_wd: WatchDescriptor,
        dirs: HashMap<WatchDescriptor, PathBuf>,
        pub(super) changes: Changes,
        lost: Arc<AtomicBool>,
    }

    pub(super) fn start(
        projects: &Path,
        stop: Arc<AtomicBool>,
        lost: Arc<AtomicBool>,
    ) -> std::io::Result<Arc<Mutex<Watcher>>> {
        let fd = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)?;
        let root_wd = fd.add_watch(projects, root_mask())?;
        let waker = nix::unistd::dup(fd.as_fd())?;
        let mut w = Watcher {
            fd,
            root: projects.to_path_buf(),
            root_wd,
            dirs: HashMap::new(),
            // Whatever came before the watch: the first search looks.
            changes: Changes {
                everything: true,
                ..Changes::default()
            },
            lost,
        };
        for e in std::fs::read_dir(projects)?.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                w.add_folder(&e.path());
            }
        }
        let w = Arc::new(Mutex::new(w));
        let shared = w.clone();
        std::thread::Builder::new()
            .name("ccd-transcript-watch".into())
            .spawn(move || run(&shared, &waker, &stop))?;
        Ok(w)
    }

    /// Waits for events on `waker` (the inotify descriptor's duplicate)
    /// and drains them into the watcher, until `stop`.
    fn run(w: &Mutex<Watcher>, waker: &std::os::fd::OwnedFd, stop: &AtomicBool) {
        while !stop.load(Ordering::Acquire) {
            let mut fds = [PollFd::new(waker.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(500u16)) {
                Ok(0) => continue,
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(error) => {
                    tracing::warn!(%error, "transcript watch broke: searches stat every transcript");
                    w.lock().unwrap_or_else(|p| p.into_inner()).lost();
                    return;
                }
            }
            let mut g = w.lock().unwrap_or_else(|p| p.into_inner());
            if !g.drain() {
                return;
            }
        }
    }

    impl Watcher {
        fn note(&mut self, f: impl FnOnce(&mut Changes)) {
            f(&mut self.changes);
        }

        fn add_folder(&mut self, dir: &Path) {
            match self.fd.add_watch(dir, folder_mask()) {
                Ok(wd) => {
                    self.dirs.insert(wd, dir.to_path_buf());
                }
                Err(error) => {
                    tracing::warn!(dir = %dir.display(), %error, "project folder not watched: searches stat every transcript");
                    self.lost();
                }
            }
        }

        /// A watch lost for good: every search from now on stats.
        fn lost(&mut self) {
            self.note(|c| c.everything = true);
            self.lost.store(true, Ordering::Release);
        }

        /// Reads every queued event. False: the watch broke (lost).
        pub(super) fn drain(&mut self) -> bool {
            loop {
                match self.fd.read_events() {
                    Ok(events) if events.is_empty() => return true,
                    Ok(events) => {
                        for ev in events {
                            self.event(ev);
                        }
                    }
                    Err(nix::errno::Errno::EAGAIN) => return true,
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(error) => {
                        tracing::warn!(%error, "transcript watch broke: searches stat every transcript");
                        self.lost();
                        return false;
                    }
                }
            }
        }

        fn event(&mut self, ev: nix::sys::inotify::InotifyEvent) {
            let m = ev.mask;
            if m.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                self.note(|c| c.everything = true);
                return;
            }
            if ev.wd == self.root_wd {
                if m.intersects(AddWatchFlags::IN_DELETE_SELF | AddWatchFlags::IN_MOVE_SELF) {
                    tracing::info!(dir = %self.root.display(), "projects folder gone: searches stat every transcript");
                    self.lost();
                    return;
                }
                if m.contains(AddWatchFlags::IN_ISDIR) {
                    if let (Some(name), true) = (
                        &ev.name,
                        m.intersects(AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO),
                    ) {
                        let dir = self.root.join(name);
                        self.add_folder(&dir);
                    }
                    self.note(|c| c.listing = true);
                }
                return;
            }
            if m.contains(AddWatchFlags::IN_IGNORED) {
                self.dirs.remove(&ev.wd);
                return;
            }
            let Some(dir) = self.dirs.get(&ev.wd) else {
                return;
            };
            if m.intersects(AddWatchFlags::IN_DELETE_SELF | AddWatchFlags::IN_MOVE_SELF) {
                self.note(|c| c.listing = true);
                return;
            }
            let Some(name) = &ev.name else { return };
            if m.contains(AddWatchFlags::IN_ISDIR) || !name.as_encoded_bytes().ends_with(b".jsonl")
            {
                return;
            }
            let path = dir.join(name);
            if m.intersects(AddWatchFlags::IN_MODIFY | AddWatchFlags::IN_CLOSE_WRITE) {
                self.note(|c| c.file(path));
            } else {
                self.note(|c| c.listing = true);
            }
        }
    }
}
