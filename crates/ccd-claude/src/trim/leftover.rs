//! A trim's temporary files, and the ones a killed trim left behind.
//!
//! Pass 2 writes the trimmed transcript to `.<name>.ccd-trim-<pid>-<n>.tmp`
//! beside it and renames that over the original (an undo does the same
//! with the kept original). A trim killed in between (`kill -9`, a power
//! cut) leaves the file, as large as the transcript, in Claude Code's
//! projects folder; nothing else would ever remove it. [`remove`] removes
//! such files in one folder (all of them, or one transcript's), and
//! [`remove_under`] in every folder of a projects folder: the daemon does
//! the latter when it starts, a trim or an undo the former before it
//! reads.
//!
//! What is removed is certainly a dead trim's file, never anything else:
//!
//! - its name has exactly that shape (`.`, a `*.jsonl` name, `.ccd-trim-`,
//!   two decimal numbers joined by `-`, `.tmp`);
//! - it is a regular file (a symlink is neither followed nor removed),
//!   owned by this user;
//! - no trim is writing it: a writing trim holds an exclusive `flock` on
//!   it from its creation until it is renamed or removed (`TempFile`),
//!   this process's own are listed in memory from before they exist (so
//!   the moment between the creation and the lock is covered), and a name
//!   whose pid is a live process other than this one is left alone (a
//!   trim of an older ccd, which took no lock; a reused pid only delays
//!   the removal).

use nix::fcntl::{Flock, FlockArg};
use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// What a temporary file's name holds between the transcript's name and
/// the numbers.
const MARK: &str = ".ccd-trim-";

/// This process's temporary files, from before each exists until it is
/// renamed or removed.
static MINE: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

fn mine() -> MutexGuard<'static, Option<HashSet<PathBuf>>> {
    MINE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A new temporary file's name beside `path`.
fn name_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let pid = std::process::id();
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    path.with_file_name(format!(".{name}{MARK}{pid}-{n}.tmp"))
}

/// The transcript name and the pid a trim's temporary file name holds, if
/// `name` has exactly that shape.
pub(crate) fn parse(name: &OsStr) -> Option<(&str, u32)> {
    let body = name.to_str()?.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (transcript, numbers) = body.rsplit_once(MARK)?;
    let (pid, n) = numbers.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.len() <= 10 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(n) {
        return None;
    }
    let stem = transcript.strip_suffix(".jsonl")?;
    if stem.is_empty() || transcript.contains('/') {
        return None;
    }
    Some((transcript, pid.parse().ok()?))
}

/// A temporary file of this process's, locked while it lives; removed
/// when dropped unless [`TempFile::keep`] was called (after the rename).
pub(crate) struct TempFile {
    pub path: PathBuf,
    keep: bool,
    _lock: Option<Flock<File>>,
}

impl TempFile {
    /// Listed as this process's before `make` creates it at a new name
    /// beside `beside`; then locked. `make` returns the file to write
    /// (`None`: it made the file some other way, e.g. a hard link, and it
    /// is opened here only to be locked).
    pub fn create(
        beside: &Path,
        make: impl FnOnce(&Path) -> io::Result<Option<File>>,
    ) -> io::Result<(TempFile, Option<File>)> {
        let path = name_beside(beside);
        mine().get_or_insert_with(HashSet::new).insert(path.clone());
        // From here on, dropping `t` removes the file (if any) and unlists it.
        let mut t = TempFile {
            path,
            keep: false,
            _lock: None,
        };
        let file = make(&t.path)?;
        let to_lock = match &file {
            Some(f) => f.try_clone()?,
            None => File::open(&t.path)?,
        };
        let lock = Flock::lock(to_lock, FlockArg::LockExclusiveNonblock)
            .map_err(|(_, e)| io::Error::from(e))?;
        t._lock = Some(lock);
        Ok((t, file))
    }

    /// The file was renamed over the transcript: it is no longer a
    /// temporary file, and is not removed.
    pub fn keep(mut self) {
        self.keep = true;
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_file(&self.path);
        }
        if let Some(set) = mine().as_mut() {
            set.remove(&self.path);
        }
        // The lock goes with the field, after the file.
    }
}

/// What a cleanup removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Removed {
    pub files: u64,
    pub bytes: u64,
}

/// Removes the temporary files dead trims left in `dir` (see the module
/// doc for what is certainly one), only those of the transcript named
/// `transcript` when given. A folder that cannot be read removes nothing.
pub fn remove(dir: &Path, transcript: Option<&OsStr>) -> Removed {
    let mut out = Removed::default();
    let Ok(rd) = fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some((of, pid)) = parse(&name) else {
            continue;
        };
        if transcript.is_some_and(|t| t != OsStr::new(of)) {
            continue;
        }
        let path = e.path();
        match remove_one(&path, pid) {
            Ok(Some(bytes)) => {
                tracing::info!(path = %path.display(), bytes, "removed the temporary file of a trim that did not finish");
                out.files += 1;
                out.bytes += bytes;
            }
            Ok(None) => {}
            Err(error) => {
                tracing::debug!(path = %path.display(), %error, "a trim's temporary file left in place");
            }
        }
    }
    out
}

/// [`remove`] in every folder of `projects` (Claude Code's projects
/// folder: one folder per project, the transcripts in them).
pub fn remove_under(projects: &Path) -> Removed {
    let mut out = Removed::default();
    let Ok(rd) = fs::read_dir(projects) else {
        return out;
    };
    for e in rd.flatten() {
        // A real folder, not a symlink to one.
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let r = remove(&e.path(), None);
        out.files += r.files;
        out.bytes += r.bytes;
    }
    out
}

/// Removes `path` (a name of the right shape, naming `pid`) if it is a
/// dead trim's: `Some(bytes)` when removed.
fn remove_one(path: &Path, pid: u32) -> io::Result<Option<u64>> {
    if mine().as_ref().is_some_and(|s| s.contains(path)) {
        return Ok(None);
    }
    if pid != std::process::id() && alive(pid) {
        return Ok(None);
    }
    let uid = nix::unistd::getuid().as_raw();
    let meta = fs::symlink_metadata(path)?;
    if !meta.file_type().is_file() || meta.uid() != uid {
        return Ok(None);
    }
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let opened = f.metadata()?;
    if (opened.dev(), opened.ino()) != (meta.dev(), meta.ino()) || !opened.is_file() {
        return Ok(None);
    }
    // A trim writing it holds the lock.
    let Ok(_lock) = Flock::lock(f, FlockArg::LockExclusiveNonblock) else {
        return Ok(None);
    };
    // Still the file checked (not replaced meanwhile): then removed, the
    // lock held so no trim can take it up.
    let now = fs::symlink_metadata(path)?;
    if (now.dev(), now.ino()) != (meta.dev(), meta.ino()) {
        return Ok(None);
    }
    fs::remove_file(path)?;
    Ok(Some(meta.len()))
}

/// Whether a process `pid` exists (one of another user's counts).
fn alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return true; // not a process id: leave the file
    }
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Ok(()) => true,
        Err(nix::errno::Errno::ESRCH) => false,
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid that is certainly no process now: a child that has exited
    /// and been reaped.
    fn dead_pid() -> u32 {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        assert!(!alive(pid));
        pid
    }

    fn leave(dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        fs::write(&p, vec![b'x'; 1000]).unwrap();
        p
    }

    #[test]
    fn names_of_the_exact_shape_only() {
        fn ok(s: &str) -> Option<(&str, u32)> {
            parse(OsStr::new(s))
        }
        assert_eq!(ok(".a.jsonl.ccd-trim-12-345.tmp"), Some(("a.jsonl", 12)));
        for bad in [
            "a.jsonl.ccd-trim-12-345.tmp",
            ".a.jsonl.ccd-trim-12-345.tmp.bak",
            ".a.jsonl.ccd-trim-12.tmp",
            ".a.jsonl.ccd-trim-x-345.tmp",
            ".a.jsonl.ccd-trim--345.tmp",
            ".a.json.ccd-trim-12-345.tmp",
            "..jsonl.ccd-trim-12-345.tmp",
            ".a.jsonl.ccd-trim-12-345-6.tmp",
            ".a.jsonl.ccd-trim-99999999999-1.tmp",
            "a.jsonl",
        ] {
            assert_eq!(ok(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_dead_trims_file_goes_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let dead = dead_pid();
        let left = leave(d, &format!(".s.jsonl.ccd-trim-{dead}-1.tmp"));
        // Names not of the shape, a live other process's (pid 1), another
        // session's when one is named.
        let others = [
            leave(d, "s.jsonl"),
            leave(d, &format!(".s.jsonl.ccd-trim-{dead}-1.tmp.bak")),
            leave(d, &format!("s.jsonl.ccd-trim-{dead}-1.tmp")),
            leave(d, ".s.jsonl.ccd-trim-1-1.tmp"),
        ];
        let other_session = leave(d, &format!(".t.jsonl.ccd-trim-{dead}-1.tmp"));
        let r = remove(d, Some(OsStr::new("s.jsonl")));
        assert_eq!(
            r,
            Removed {
                files: 1,
                bytes: 1000
            }
        );
        assert!(!left.exists());
        assert!(other_session.exists(), "another session's: not asked");
        for o in &others {
            assert!(o.exists(), "{} was removed", o.display());
        }
        // Every session's, through the projects folder.
        let projects = tempfile::tempdir().unwrap();
        fs::create_dir(projects.path().join("-w")).unwrap();
        let moved = projects
            .path()
            .join("-w")
            .join(other_session.file_name().unwrap());
        fs::rename(&other_session, &moved).unwrap();
        assert_eq!(remove_under(projects.path()).files, 1);
        assert!(!moved.exists());
    }

    #[test]
    fn a_file_being_written_or_not_ours_stays() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let dead = dead_pid();
        // Locked as a running trim (of another process, of ours) holds it.
        let locked = leave(d, &format!(".s.jsonl.ccd-trim-{dead}-2.tmp"));
        let held = Flock::lock(
            File::open(&locked).unwrap(),
            FlockArg::LockExclusiveNonblock,
        )
        .map_err(|(_, e)| e)
        .unwrap();
        // One of this process's, listed but not locked yet.
        let transcript = d.join("s.jsonl");
        let (t, _) = TempFile::create(&transcript, |p| {
            // Between the creation and the lock, a cleanup runs.
            fs::write(p, b"partial")?;
            assert_eq!(remove(d, None), Removed::default());
            assert!(p.exists());
            Ok(None)
        })
        .unwrap();
        assert!(t.path.exists());
        // A symlink of the name, to a file of the name elsewhere.
        let elsewhere = tempfile::tempdir().unwrap();
        let target = leave(elsewhere.path(), &format!(".s.jsonl.ccd-trim-{dead}-3.tmp"));
        let link = d.join(format!(".s.jsonl.ccd-trim-{dead}-4.tmp"));
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(remove(d, None), Removed::default());
        assert!(locked.exists() && t.path.exists() && target.exists());
        assert!(fs::symlink_metadata(&link).is_ok());
        // Unlocked, it goes; this process's own goes with its guard.
        drop(held);
        assert_eq!(remove(d, None).files, 1);
        assert!(!locked.exists());
        let p = t.path.clone();
        drop(t);
        assert!(!p.exists());
    }
}
