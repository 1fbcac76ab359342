//! [`Typing`]: whether somebody types into another session of the same
//! daemon, told through a small mark per holder in the holders' directory.
//!
//! [`crate::FloodGroup`] weighs a flooding holder's scheduling group down
//! so that another session's keystroke is not queued behind the flood's
//! parse. But the weight covers the whole group, the relay that carries
//! the flood to its own terminal included: with nobody typing anywhere
//! else, it only slows the flood (a TUI flood's throughput was 0.9× dtach's
//! under it and 1.0× without, on a 2-CPU machine, `ccd-bench pty --only
//! flood --rounds 9`). So the weight is asked for only while another
//! session was typed into within [`RECENT`].
//!
//! A holder's mark is the empty file `<id>.typing` beside its socket
//! `<id>.sock` (in the holders' directory, private to the user): when its
//! client types, the holder notes it ([`Typing::typed`]: one atomic store,
//! nothing more on the keystroke's path), and its lifecycle thread, which
//! steps on the echo's output, sets the mark's modification time
//! ([`Typing::flush`]), at most once per [`MARK_EVERY`]. A flooding holder
//! looks at the others' marks at most once per [`LOOK_EVERY`]: one set
//! within [`RECENT`] means somebody types elsewhere. A mark that is not a
//! plain file (a link) is neither written through nor counted.
//!
//! One empty file per holder: the holder removes its own when it ends, the
//! daemon when it collects or forgets the holder (as it does the holder's
//! metadata). A missing or unwritable directory makes every call a no-op
//! (marks are lost, looks find nobody): the flood then keeps its full
//! weight, as with tmux or dtach.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// How recent a mark counts as somebody typing: longer than a reader's
/// pause between two lines typed, so the first key after one does not
/// meet a flood at full weight.
pub const RECENT: Duration = Duration::from_secs(30);

/// A holder sets its mark at most this often.
pub const MARK_EVERY: Duration = Duration::from_secs(1);

/// A flooding holder looks at the marks at most this often (the kernel
/// takes a group's weight change at most once per 100 ms anyway).
pub const LOOK_EVERY: Duration = Duration::from_millis(100);

/// The extension of a mark's file name (`<id>.typing`).
pub const EXTENSION: &str = "typing";

/// The mark of the holder whose socket is `socket` (`<id>.sock` →
/// `<id>.typing`, beside it).
pub fn mark_of(socket: &Path) -> PathBuf {
    socket.with_extension(EXTENSION)
}

/// One holder's side of the marks: it sets its own and looks for others'.
/// Shared by the holder's threads (`&self` only).
#[derive(Debug)]
pub struct Typing {
    /// This holder's mark; `None`: every call is a no-op.
    own: Option<PathBuf>,
    /// Typed since the mark was last set.
    pending: AtomicBool,
    /// When this holder last set its mark.
    marked: Mutex<Option<Instant>>,
}

impl Typing {
    /// The marks of the holder whose socket is `socket` and of the holders
    /// beside it.
    pub fn for_socket(socket: &Path) -> Self {
        Self {
            own: Some(mark_of(socket)),
            pending: AtomicBool::new(false),
            marked: Mutex::new(None),
        }
    }

    /// Marks that are never set nor found (tests, a holder alone).
    pub fn disabled() -> Self {
        Self {
            own: None,
            pending: AtomicBool::new(false),
            marked: Mutex::new(None),
        }
    }

    /// Somebody typed into this holder's session (the mark is set by the
    /// next [`Typing::flush`]).
    pub fn typed(&self) {
        self.pending.store(true, Ordering::Relaxed);
    }

    /// Set the mark if somebody typed since it was last set, unless that
    /// was less than [`MARK_EVERY`] ago (then the typing stays noted for a
    /// later call).
    pub fn flush(&self) {
        let Some(own) = &self.own else { return };
        if !self.pending.load(Ordering::Relaxed) {
            return;
        }
        let now = Instant::now();
        {
            let mut marked = self.marked.lock().unwrap_or_else(|p| p.into_inner());
            if marked.is_some_and(|t| now.duration_since(t) < MARK_EVERY) {
                return;
            }
            *marked = Some(now);
            self.pending.store(false, Ordering::Relaxed);
        }
        if let Err(e) = set_mark(own) {
            tracing::debug!(path = %own.display(), error = %e, "typing mark not set");
        }
    }

    /// Whether another holder's mark beside this one's was set within
    /// [`RECENT`].
    pub fn other_typed_recently(&self) -> bool {
        let Some(own) = &self.own else { return false };
        let Some(dir) = own.parent() else {
            return false;
        };
        match others_recent(dir, own) {
            Ok(found) => found,
            Err(e) => {
                tracing::debug!(dir = %dir.display(), error = %e, "typing marks not read");
                false
            }
        }
    }
}

/// [`Typing::other_typed_recently`], looked up at most once per
/// [`LOOK_EVERY`] (owned by the one thread that asks).
#[derive(Debug, Default)]
pub struct TypingLook {
    last: Option<(Instant, bool)>,
}

impl TypingLook {
    /// The answer, looked up anew if the last is older than [`LOOK_EVERY`].
    pub fn other_typed_recently(&mut self, typing: &Typing) -> bool {
        let now = Instant::now();
        match self.last {
            Some((at, answer)) if now.duration_since(at) < LOOK_EVERY => answer,
            _ => {
                let answer = typing.other_typed_recently();
                self.last = Some((now, answer));
                answer
            }
        }
    }
}

/// Create the mark if missing (refusing a link in its place) and set its
/// modification time to now.
fn set_mark(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    f.set_modified(SystemTime::now())
}

/// Whether a mark in `dir` other than `own` was set within [`RECENT`].
fn others_recent(dir: &Path, own: &Path) -> io::Result<bool> {
    let now = SystemTime::now();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if path.extension().is_none_or(|e| e != EXTENSION) || path == own {
            continue;
        }
        // Not followed: a link is not a mark.
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let Ok(modified) = meta.modified() else {
            continue;
        };
        // A mark from the future (the clock stepped back) counts as fresh.
        let age = now.duration_since(modified).unwrap_or(Duration::ZERO);
        if age < RECENT {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A holder's typing, with its socket `<name>.sock` in `dir`.
    fn holder(dir: &Path, name: &str) -> Typing {
        Typing::for_socket(&dir.join(format!("{name}.sock")))
    }

    fn age_mark(path: &Path, by: Duration) {
        std::fs::File::options()
            .write(true)
            .open(path)
            .and_then(|f| f.set_modified(SystemTime::now() - by))
            .expect("set mtime");
    }

    #[test]
    fn no_mark_means_nobody_types() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(!holder(dir.path(), "ha").other_typed_recently());
    }

    #[test]
    fn own_typing_is_not_anothers_and_anothers_is() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (holder(dir.path(), "ha"), holder(dir.path(), "hb"));
        a.typed();
        a.flush();
        assert!(dir.path().join("ha.typing").is_file());
        assert!(!a.other_typed_recently());
        assert!(b.other_typed_recently());
        // b's own typing does not hide a's from b, nor b's from a.
        b.typed();
        b.flush();
        assert!(b.other_typed_recently());
        assert!(a.other_typed_recently());
    }

    #[test]
    fn an_old_mark_does_not_count() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (holder(dir.path(), "ha"), holder(dir.path(), "hb"));
        a.typed();
        a.flush();
        age_mark(
            &dir.path().join("ha.typing"),
            RECENT + Duration::from_secs(1),
        );
        assert!(!b.other_typed_recently());
        // Other files of the directory are no marks, however fresh.
        std::fs::write(dir.path().join("ha.sock"), b"").expect("write");
        std::fs::write(dir.path().join("ha.json"), b"{}").expect("write");
        assert!(!b.other_typed_recently());
    }

    #[test]
    fn marks_are_set_at_most_once_per_interval() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ha.typing");
        let a = holder(dir.path(), "ha");
        a.typed();
        a.flush();
        std::fs::remove_file(&path).expect("remove");
        a.typed();
        a.flush();
        assert!(!path.exists(), "a second mark within MARK_EVERY was set");
        // The typing stays noted: set once the interval has passed.
        *a.marked.lock().expect("lock") = Some(Instant::now() - MARK_EVERY);
        a.flush();
        assert!(path.exists(), "the noted typing was lost");
        // Nothing typed since: nothing set.
        std::fs::remove_file(&path).expect("remove");
        *a.marked.lock().expect("lock") = Some(Instant::now() - MARK_EVERY);
        a.flush();
        assert!(!path.exists(), "a mark was set with nobody typing");
    }

    #[test]
    fn typing_alone_sets_nothing_until_flushed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = holder(dir.path(), "ha");
        a.typed();
        assert!(!dir.path().join("ha.typing").exists());
        assert!(!holder(dir.path(), "hb").other_typed_recently());
        a.flush();
        assert!(holder(dir.path(), "hb").other_typed_recently());
    }

    #[test]
    fn a_link_in_a_marks_place_is_neither_followed_nor_counted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, b"1").expect("write");
        age_mark(&target, RECENT + Duration::from_secs(60));
        let before = std::fs::metadata(&target)
            .and_then(|m| m.modified())
            .expect("mtime");
        std::os::unix::fs::symlink(&target, dir.path().join("ha.typing")).expect("symlink");
        let a = holder(dir.path(), "ha");
        a.typed();
        a.flush();
        let after = std::fs::metadata(&target)
            .and_then(|m| m.modified())
            .expect("mtime");
        assert_eq!(before, after, "the mark was set through a link");
        // A fresh target behind a link does not count either.
        age_mark(&target, Duration::ZERO);
        assert!(!holder(dir.path(), "hb").other_typed_recently());
    }

    #[test]
    fn a_missing_directory_makes_every_call_a_no_op() {
        let dir = tempfile::tempdir().expect("tempdir");
        let gone = dir.path().join("gone");
        let a = holder(&gone, "ha");
        a.typed();
        a.flush();
        assert!(!a.other_typed_recently());
        assert!(!gone.exists());
        let d = Typing::disabled();
        d.typed();
        d.flush();
        assert!(!d.other_typed_recently());
    }

    #[test]
    fn a_look_is_cached_for_its_interval() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (holder(dir.path(), "ha"), holder(dir.path(), "hb"));
        let mut look = TypingLook::default();
        let t0 = Instant::now();
        assert!(!look.other_typed_recently(&a));
        b.typed();
        b.flush();
        // Within the interval the old answer stands (unless the machine
        // stalled past it; then the new one is right too).
        let cached = look.other_typed_recently(&a);
        if t0.elapsed() < LOOK_EVERY {
            assert!(!cached);
        }
        std::thread::sleep(LOOK_EVERY);
        assert!(look.other_typed_recently(&a));
    }
}
