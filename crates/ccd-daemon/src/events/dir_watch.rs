//! Waiting for a change in one folder (the registry's `sessions/`), and
//! nothing else.
//!
//! On Linux this is inotify read through the runtime's reactor (no thread
//! of its own), with a mask of changes only: files created, written,
//! renamed, removed, their attributes, the folder itself moved or removed.
//! Opens and reads are not in the mask, so the scans' own reads of the
//! folder — and anyone else's — raise no event at all: nothing wakes while
//! nothing changes. (The `notify` crate's inotify backend always asks for
//! open events; its thread woke about 50 times a second with 100 sessions
//! held, to throw them away.)
//!
//! While the folder does not exist the nearest existing ancestor is
//! watched for anything created or moved in, and the watch moves down
//! as the path appears (and back up if the folder goes), so a folder
//! created later is seen at once, without polling. A queue overflow is
//! reported as a change (the caller rescans).
//!
//! Elsewhere the `notify` crate's recommended watcher is used (FSEvents on
//! macOS), its read events ignored; while the folder is missing nothing is
//! watched and the caller polls, until it appears. That side is tested on
//! Linux too, through `notify`'s inotify backend.

use std::io;
use std::path::{Path, PathBuf};

/// A watch on `target`, or on its nearest existing ancestor while it is
/// missing.
pub struct DirWatch {
    target: PathBuf,
    #[cfg(target_os = "linux")]
    inner: linux::Inotify,
    #[cfg(not(target_os = "linux"))]
    inner: portable::Notify,
}

impl DirWatch {
    /// Starts watching `target`. Err: no watch can be made here (the
    /// caller polls instead).
    pub fn new(target: &Path) -> io::Result<Self> {
        #[cfg(target_os = "linux")]
        let inner = linux::Inotify::new(target)?;
        #[cfg(not(target_os = "linux"))]
        let inner = portable::Notify::new(target)?;
        Ok(Self {
            target: target.to_path_buf(),
            inner,
        })
    }

    /// Whether the folder itself is watched (else, on Linux, an ancestor
    /// is, until it appears; elsewhere nothing is, and the caller polls).
    pub fn on_target(&self) -> bool {
        self.inner.on_target()
    }

    /// Whether a missing folder's appearance is watched for (on Linux).
    pub const WATCHES_FOR_CREATION: bool = cfg!(target_os = "linux");

    /// Waits for a change (see the module doc); the watch follows the
    /// folder appearing or going. Err: the watch broke (the caller polls
    /// from then on).
    pub async fn changed(&mut self) -> io::Result<()> {
        self.inner.changed(&self.target).await
    }

    /// Swallows the changes already queued (after a burst has settled).
    pub fn drain(&mut self) {
        self.inner.drain(&self.target);
    }
}

#[cfg(target_os = "linux")]
pub(crate) use linux::TARGET_MASK;

#[cfg(target_os = "linux")]
mod linux {
    use crate::reactor::Watched;
    use nix::errno::Errno;
    use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify as Queue, WatchDescriptor};
    use std::io;
    use std::path::{Path, PathBuf};

    /// Changes in the folder itself (what the searches' registry watch
    /// asks for too, `crate::search`).
    pub(crate) const TARGET_MASK: u32 = libc::IN_CREATE
        | libc::IN_DELETE
        | libc::IN_CLOSE_WRITE
        | libc::IN_MODIFY
        | libc::IN_MOVED_FROM
        | libc::IN_MOVED_TO
        | libc::IN_ATTRIB
        | libc::IN_DELETE_SELF
        | libc::IN_MOVE_SELF
        | libc::IN_ONLYDIR;
    /// Something appearing in an ancestor on the way to the folder.
    const ANCESTOR_MASK: u32 = libc::IN_CREATE
        | libc::IN_MOVED_TO
        | libc::IN_DELETE_SELF
        | libc::IN_MOVE_SELF
        | libc::IN_ONLYDIR;
    /// The watch is gone or cannot be trusted: place it again.
    const REPLACE: u32 = libc::IN_IGNORED | libc::IN_DELETE_SELF | libc::IN_MOVE_SELF;

    pub struct Inotify {
        queue: Watched<Queue>,
        /// The current watch: its descriptor and what it watches.
        wd: Option<(WatchDescriptor, PathBuf)>,
        on_target: bool,
    }

    impl Inotify {
        pub fn new(target: &Path) -> io::Result<Self> {
            let queue = Queue::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)?;
            let mut me = Self {
                queue: Watched::new(queue, tokio::io::Interest::READABLE)?,
                wd: None,
                on_target: false,
            };
            me.place(target)?;
            Ok(me)
        }

        pub fn on_target(&self) -> bool {
            self.on_target
        }

        /// Watches `target` if it is a folder, else its nearest existing
        /// ancestor. Err: not even `/` can be watched.
        fn place(&mut self, target: &Path) -> io::Result<()> {
            if let Some((wd, _)) = self.wd.take() {
                // An already removed watch gives EINVAL, which changes
                // nothing.
                let _ = self.queue.get_ref().rm_watch(wd);
            }
            let mut at = Some(target);
            while let Some(p) = at {
                let (mask, is_target) = if p == target {
                    (TARGET_MASK, true)
                } else {
                    (ANCESTOR_MASK, false)
                };
                match self.add(p, mask) {
                    Ok(wd) => {
                        self.wd = Some((wd, p.to_path_buf()));
                        self.on_target = is_target;
                        tracing::debug!(path = %p.display(), target = is_target, "watching");
                        return Ok(());
                    }
                    Err(e)
                        if matches!(
                            e.raw_os_error(),
                            Some(libc::ENOENT | libc::ENOTDIR | libc::EACCES)
                        ) =>
                    {
                        at = p.parent();
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("nothing on the way to {} can be watched", target.display()),
            ))
        }

        fn add(&self, path: &Path, mask: u32) -> io::Result<WatchDescriptor> {
            use std::os::unix::ffi::OsStrExt;
            // No such path (nix would say EINVAL).
            if path.as_os_str().as_bytes().contains(&0) {
                return Err(io::Error::from_raw_os_error(libc::ENOENT));
            }
            let mask = AddWatchFlags::from_bits_retain(mask);
            Ok(self.queue.get_ref().add_watch(path, mask)?)
        }

        /// Reads what is queued without waiting. Some(changed): whether
        /// anything was read; None: nothing queued.
        fn read_queued(&mut self, target: &Path) -> io::Result<Option<()>> {
            let mut any = false;
            let mut replace = false;
            loop {
                let events = match self.queue.get_ref().read_events() {
                    Ok(events) => events,
                    Err(Errno::EAGAIN) => break,
                    Err(Errno::EINTR) => continue,
                    Err(e) => return Err(e.into()),
                };
                if events.is_empty() {
                    break;
                }
                any = true;
                let wd = self.wd.as_ref().map(|w| w.0);
                replace |= events
                    .iter()
                    .any(|e| needs_replacing(e.wd, e.mask.bits(), wd));
            }
            if replace || (any && !self.on_target) {
                // The folder went, moved, or something appeared on the way
                // to it: watch the right thing again.
                self.place(target)?;
            }
            Ok(any.then_some(()))
        }

        pub async fn changed(&mut self, target: &Path) -> io::Result<()> {
            loop {
                let mut ready = self.queue.readable().await?;
                ready.clear_ready();
                drop(ready);
                if self.read_queued(target)?.is_some() {
                    return Ok(());
                }
            }
        }

        pub fn drain(&mut self, target: &Path) {
            if let Err(error) = self.read_queued(target) {
                tracing::debug!(%error, "draining the registry watch");
            }
        }
    }

    /// Whether an event (`mask` on the watch `ev_wd`) says the watch `wd`
    /// is gone or moved, or the queue overflowed.
    fn needs_replacing(ev_wd: WatchDescriptor, mask: u32, wd: Option<WatchDescriptor>) -> bool {
        mask & libc::IN_Q_OVERFLOW != 0 || (Some(ev_wd) == wd && mask & REPLACE != 0)
    }
}

#[cfg(any(not(target_os = "linux"), test))]
mod portable {
    use std::io;
    use std::path::Path;

    /// The `notify` crate's watcher, its read events ignored; while the
    /// folder is missing, nothing is watched (the caller polls).
    pub struct Notify {
        watcher: Option<notify::RecommendedWatcher>,
        rx: tokio::sync::mpsc::Receiver<()>,
        tx: tokio::sync::mpsc::Sender<()>,
    }

    impl Notify {
        pub fn new(target: &Path) -> io::Result<Self> {
            let (tx, rx) = tokio::sync::mpsc::channel(1);
            let mut me = Self {
                watcher: None,
                rx,
                tx,
            };
            me.place(target);
            Ok(me)
        }

        fn place(&mut self, target: &Path) {
            use notify::Watcher;
            if self.watcher.is_some() || !target.is_dir() {
                return;
            }
            let tx = self.tx.clone();
            let w = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
                let change = match &res {
                    Ok(e) => !matches!(e.kind, notify::EventKind::Access(_)),
                    Err(_) => true,
                };
                if change {
                    let _ = tx.try_send(());
                }
            });
            if let Ok(mut w) = w {
                if w.watch(target, notify::RecursiveMode::NonRecursive).is_ok() {
                    self.watcher = Some(w);
                }
            }
        }

        pub fn on_target(&self) -> bool {
            self.watcher.is_some()
        }

        pub async fn changed(&mut self, target: &Path) -> io::Result<()> {
            self.place(target);
            if self.watcher.is_none() {
                // Nothing to wait on: the caller's poll decides.
                std::future::pending::<()>().await;
            }
            match self.rx.recv().await {
                Some(()) => Ok(()),
                None => Err(io::Error::other("the watcher stopped")),
            }
        }

        pub fn drain(&mut self, target: &Path) {
            self.place(target);
            while self.rx.try_recv().is_ok() {}
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn changed_within(w: &mut DirWatch, d: Duration) -> bool {
        tokio::time::timeout(d, w.changed())
            .await
            .is_ok_and(|r| r.is_ok())
    }

    #[tokio::test]
    async fn reads_raise_nothing_and_changes_do() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("1.json"), "{}").expect("write");
        let mut w = DirWatch::new(dir.path()).expect("a watch");
        assert!(w.on_target());
        // What a scan does: list the folder, read each entry.
        for _ in 0..5 {
            let _ = std::fs::read_dir(dir.path()).map(|d| d.count());
            let _ = std::fs::read(dir.path().join("1.json"));
        }
        assert!(
            !changed_within(&mut w, Duration::from_millis(300)).await,
            "woken by reads"
        );
        std::fs::write(dir.path().join("2.json"), "{}").expect("write");
        assert!(
            changed_within(&mut w, Duration::from_secs(5)).await,
            "a new file"
        );
        w.drain();
        std::fs::write(dir.path().join("1.json"), "{\"a\":1}").expect("rewrite");
        assert!(
            changed_within(&mut w, Duration::from_secs(5)).await,
            "a rewrite"
        );
        w.drain();
        std::fs::rename(dir.path().join("2.json"), dir.path().join("3.json")).expect("rename");
        assert!(
            changed_within(&mut w, Duration::from_secs(5)).await,
            "a rename"
        );
        w.drain();
        std::fs::remove_file(dir.path().join("3.json")).expect("remove");
        assert!(
            changed_within(&mut w, Duration::from_secs(5)).await,
            "a removal"
        );
    }

    #[tokio::test]
    async fn a_folder_created_later_is_followed_down_and_back_up() {
        let root = tempfile::tempdir().expect("tempdir");
        let target = root.path().join("config").join("sessions");
        let mut w = DirWatch::new(&target).expect("a watch on the ancestor");
        assert!(!w.on_target());
        std::fs::create_dir(root.path().join("config")).expect("mkdir");
        assert!(
            changed_within(&mut w, Duration::from_secs(5)).await,
            "the parent appearing"
        );
        assert!(!w.on_target(), "the folder itself is not there yet");
        std::fs::create_dir(&target).expect("mkdir");
        assert!(
            changed_within(&mut w, Duration::from_secs(5)).await,
            "the folder appearing"
        );
        assert!(w.on_target());
        std::fs::write(target.join("1.json"), "{}").expect("write");
        assert!(
            changed_within(&mut w, Duration::from_secs(5)).await,
            "a file in it"
        );
        w.drain();
        std::fs::remove_file(target.join("1.json")).expect("remove");
        std::fs::remove_dir(&target).expect("rmdir");
        assert!(
            changed_within(&mut w, Duration::from_secs(5)).await,
            "the folder going"
        );
        w.drain();
        assert!(!w.on_target(), "back on the ancestor");
        std::fs::create_dir(&target).expect("mkdir again");
        assert!(
            changed_within(&mut w, Duration::from_secs(5)).await,
            "the folder again"
        );
        assert!(w.on_target());
    }
}

/// The `notify` side, run on every system (on Linux with notify's inotify
/// backend).
#[cfg(test)]
mod portable_tests {
    use super::portable::Notify;
    use std::time::Duration;

    async fn changed_within(w: &mut Notify, target: &std::path::Path, d: Duration) -> bool {
        tokio::time::timeout(d, w.changed(target))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    #[tokio::test]
    async fn reads_raise_nothing_and_changes_do() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = dir.path();
        std::fs::write(t.join("1.json"), "{}").expect("write");
        let mut w = Notify::new(t).expect("a watch");
        assert!(w.on_target());
        for _ in 0..5 {
            let _ = std::fs::read_dir(t).map(|d| d.count());
            let _ = std::fs::read(t.join("1.json"));
        }
        assert!(
            !changed_within(&mut w, t, Duration::from_millis(300)).await,
            "woken by reads"
        );
        std::fs::write(t.join("2.json"), "{}").expect("write");
        assert!(
            changed_within(&mut w, t, Duration::from_secs(5)).await,
            "a new file"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        w.drain(t);
        std::fs::remove_file(t.join("2.json")).expect("remove");
        assert!(
            changed_within(&mut w, t, Duration::from_secs(5)).await,
            "a removal"
        );
    }

    #[tokio::test]
    async fn a_missing_folder_is_watched_once_it_appears() {
        let root = tempfile::tempdir().expect("tempdir");
        let t = root.path().join("sessions");
        let mut w = Notify::new(&t).expect("no watch yet, no error");
        assert!(!w.on_target());
        assert!(
            !changed_within(&mut w, &t, Duration::from_millis(200)).await,
            "nothing to wait on: the caller polls"
        );
        std::fs::create_dir(&t).expect("mkdir");
        w.drain(&t);
        assert!(w.on_target(), "watched once there");
        std::fs::write(t.join("1.json"), "{}").expect("write");
        assert!(
            changed_within(&mut w, &t, Duration::from_secs(5)).await,
            "a file in it"
        );
    }
}
