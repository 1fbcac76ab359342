//! ccd's own files in the state dir: private, and bounded.
//!
//! Holder logs hold screen dumps (the API-key dialog shows a key's last
//! characters) and every log names people's folders: the state dir is
//! owner-only (0700) and every log in it is 0600, like the summary cache.
//! Holder logs are bounded three ways: one log stops growing past
//! [`HOLDER_LOG_CAP`] (it moves to `holder-<id>.log.1`, replacing an older
//! one, and starts again), logs of holders that ended more than
//! [`HOLDER_LOG_MAX_AGE`] ago go, and at most [`HOLDER_LOGS_KEPT`] logs of
//! ended holders stay (the newest). A live holder's log is never removed.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

/// One holder log's size before it moves to `.1` (so at most twice this
/// per holder on disk).
pub const HOLDER_LOG_CAP: u64 = 2 * 1024 * 1024;
/// Logs of holders that ended longer ago than this are removed.
pub const HOLDER_LOG_MAX_AGE: Duration = Duration::from_secs(14 * 24 * 3600);
/// At most this many logs of ended holders are kept (the newest).
pub const HOLDER_LOGS_KEPT: usize = 50;

/// The umask the daemon was started with, restored in the holders it
/// starts (so `claude` creates the user's files as it always would).
static USER_UMASK: AtomicU32 = AtomicU32::new(0o022);

/// Makes every file the daemon creates from now on owner-only (umask
/// 077): its daily logs, rotated ones included, and the state dir. The
/// previous umask is kept for [`user_umask`].
pub fn private_umask() {
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    // `mode_t` is 16 bits on macOS, 32 on Linux (a no-op there).
    #[allow(clippy::useless_conversion)]
    USER_UMASK.store(u32::from(old.bits()), Ordering::Relaxed);
}

/// The umask before [`private_umask`] (0o022 if it was never called).
pub fn user_umask() -> u32 {
    USER_UMASK.load(Ordering::Relaxed)
}

/// What [`prepare_state_dir`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum DirState {
    /// Created 0700, or already owner-only.
    Private,
    /// Was readable or writable by others; now 0700.
    Tightened { was: u32 },
    /// Readable or writable by others and not ours to change (another
    /// owner, or the change failed).
    Loose { mode: u32, reason: String },
}

/// Creates the state dir 0700 (with its missing parents), or makes an
/// existing one of ours 0700: it is ccd's own folder, nothing else belongs
/// in it, so tightening cannot break anyone. One owned by someone else is
/// left alone and reported.
pub fn prepare_state_dir(dir: &Path) -> std::io::Result<DirState> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 == 0 {
        return Ok(DirState::Private);
    }
    if meta.uid() != nix::unistd::getuid().as_raw() || !meta.is_dir() {
        return Ok(DirState::Loose {
            mode,
            reason: "not a directory owned by this user".into(),
        });
    }
    match std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)) {
        Ok(()) => Ok(DirState::Tightened { was: mode }),
        Err(e) => Ok(DirState::Loose {
            mode,
            reason: e.to_string(),
        }),
    }
}

/// True for the names of ccd's logs: `ccd.<date>.log`, `holder-<id>.log`
/// and `holder-<id>.log.1` (and their `.next`, which a holder that died
/// mid-move can leave).
fn is_log_name(name: &str) -> bool {
    (name.starts_with("ccd.") && name.ends_with(".log")) || holder_id(name).is_some()
}

/// The holder id of `holder-<id>.log` or `holder-<id>.log.1`, or of
/// either's `.next` (a log being moved: see [`CappedLog`]).
fn holder_id(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("holder-")?;
    let rest = rest.strip_suffix(".next").unwrap_or(rest);
    rest.strip_suffix(".log")
        .or_else(|| rest.strip_suffix(".log.1"))
}

/// Makes every log in `dir` 0600 (logs written before ccd made them
/// private). Returns how many changed.
pub fn tighten_logs(dir: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut changed = 0;
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !is_log_name(name) {
            continue;
        }
        let Ok(meta) = e.metadata() else { continue };
        if !meta.is_file() || meta.mode() & 0o077 == 0 {
            continue;
        }
        match std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o600)) {
            Ok(()) => changed += 1,
            Err(error) => {
                tracing::warn!(file = %e.path().display(), %error, "could not make a log private")
            }
        }
    }
    changed
}

/// What [`prune_holder_logs`] removed and kept.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    pub removed: usize,
    pub kept: usize,
}

/// Removes the logs of ended holders (those not in `live`) older than
/// `max_age` (by last write), then all but the newest `keep` of the rest.
/// A holder's `.log` and `.log.1` go together.
pub fn prune_holder_logs(
    dir: &Path,
    live: &HashSet<String>,
    now: SystemTime,
    max_age: Duration,
    keep: usize,
) -> Pruned {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Pruned::default();
    };
    // Per ended holder: its files and its last write.
    let mut ended: std::collections::HashMap<String, (Vec<PathBuf>, SystemTime)> =
        std::collections::HashMap::new();
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(id) = name.to_str().and_then(holder_id) else {
            continue;
        };
        if live.contains(id) {
            continue;
        }
        let Ok(meta) = e.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let at = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        let slot = ended
            .entry(id.to_string())
            .or_insert_with(|| (Vec::new(), SystemTime::UNIX_EPOCH));
        slot.0.push(e.path());
        slot.1 = slot.1.max(at);
    }
    let mut by_age: Vec<(Vec<PathBuf>, SystemTime)> = ended.into_values().collect();
    by_age.sort_by_key(|e| std::cmp::Reverse(e.1)); // newest first
    let mut out = Pruned::default();
    for (i, (files, at)) in by_age.into_iter().enumerate() {
        let old = now.duration_since(at).unwrap_or_default() > max_age;
        if i < keep && !old {
            out.kept += 1;
            continue;
        }
        for f in files {
            match std::fs::remove_file(&f) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    tracing::warn!(file = %f.display(), %error, "could not remove an old holder log")
                }
            }
        }
        out.removed += 1;
    }
    out
}

/// A holder's log file: created 0600, appended, and moved to `<path>.1`
/// (replacing the previous one) when a write would take it past `cap`.
/// A flood of screen dumps costs at most twice `cap` of disk. `path`
/// never goes missing while it moves (see [`CappedLog::rotate`]).
///
/// Owned by one thread (the holder's non-blocking log writer): every
/// write, and the move, happens there; it blocks only on the disk.
pub struct CappedLog {
    path: PathBuf,
    file: Option<File>,
    len: u64,
    cap: u64,
}

impl CappedLog {
    pub fn open(path: &Path, cap: u64) -> std::io::Result<Self> {
        let file = open_private(path)?;
        let len = file.metadata()?.len();
        Ok(Self {
            path: path.to_path_buf(),
            file: Some(file),
            len,
            cap,
        })
    }

    /// `<path>.1`, where a full log goes.
    pub fn previous(path: &Path) -> PathBuf {
        let mut p = path.as_os_str().to_owned();
        p.push(".1");
        PathBuf::from(p)
    }

    /// `<path>.next`: a temporary name beside `path`.
    fn beside(path: &Path) -> PathBuf {
        let mut p = path.as_os_str().to_owned();
        p.push(".next");
        PathBuf::from(p)
    }

    /// Moves the full log to `<path>.1` and starts a new one, without a
    /// moment where `path` is missing or past the cap (a reader following
    /// the log by name, `tail -F`, always finds it): the new log is written
    /// under `<path>.next`, the full one also named `<path>.1` (a hard link
    /// renamed over the previous `.1`), then the new one renamed over
    /// `path`. Each step is atomic; on an error the full log keeps its name
    /// and the caller drops the line. (Where the file system has no hard
    /// links the full log moves, and `path` is missing for a moment.)
    fn rotate(&mut self) -> std::io::Result<()> {
        let prev = Self::previous(&self.path);
        let next = Self::beside(&self.path);
        let note = format!("(log continued: earlier lines are in {})\n", prev.display());
        remove_if_there(&next)?;
        let mut f = open_private(&next)?;
        let moved = f
            .write_all(note.as_bytes())
            .and_then(|()| self.keep_as_previous(&prev))
            .and_then(|()| std::fs::rename(&next, &self.path));
        if let Err(e) = moved {
            let _ = std::fs::remove_file(&next);
            if !self.path.exists() {
                // Moved (without hard links) but the new log could not
                // take its name: start one there.
                self.file = open_private(&self.path).ok();
                self.len = 0;
            }
            return Err(e);
        }
        self.file = Some(f);
        self.len = note.len() as u64;
        Ok(())
    }

    /// Gives the full log the name `prev` too (replacing the file there)
    /// while it keeps its own. On a file system without hard links it
    /// moves instead, and `path` is missing until the new log takes it.
    fn keep_as_previous(&self, prev: &Path) -> std::io::Result<()> {
        let tmp = Self::beside(prev);
        remove_if_there(&tmp)?;
        match std::fs::hard_link(&self.path, &tmp) {
            Ok(()) => std::fs::rename(&tmp, prev).inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            }),
            Err(_) => std::fs::rename(&self.path, prev),
        }
    }
}

/// Removes `path`, if there is one.
fn remove_if_there(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn open_private(path: &Path) -> std::io::Result<File> {
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    // An existing file keeps its mode on open: make it private too.
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(f)
}

impl Write for CappedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.len > 0 && self.len + buf.len() as u64 > self.cap && self.rotate().is_err() {
            // A log that cannot move stays at its cap: the line is
            // dropped (logging never stops a session).
            if self.file.is_none() {
                self.file = open_private(&self.path).ok();
            }
            return Ok(buf.len());
        }
        let Some(f) = self.file.as_mut() else {
            return Ok(buf.len());
        };
        let n = f.write(buf)?;
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.file.as_mut() {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().mode() & 0o777
    }

    #[test]
    fn state_dir_is_created_private_and_a_loose_one_tightened() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("a/state");
        assert_eq!(prepare_state_dir(&d).unwrap(), DirState::Private);
        assert_eq!(mode(&d), 0o700);
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            prepare_state_dir(&d).unwrap(),
            DirState::Tightened { was: 0o755 }
        );
        assert_eq!(mode(&d), 0o700);
    }

    #[test]
    fn logs_are_made_private() {
        let t = tempfile::tempdir().unwrap();
        for n in [
            "ccd.2025-01-01.log",
            "holder-h1.log",
            "holder-h1.log.1",
            "other.txt",
        ] {
            std::fs::write(t.path().join(n), b"x").unwrap();
            std::fs::set_permissions(t.path().join(n), std::fs::Permissions::from_mode(0o644))
                .unwrap();
        }
        assert_eq!(tighten_logs(t.path()), 3);
        assert_eq!(mode(&t.path().join("holder-h1.log.1")), 0o600);
        assert_eq!(mode(&t.path().join("other.txt")), 0o644);
    }

    #[test]
    fn a_full_log_moves_aside_and_starts_again() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("holder-h1.log");
        let mut log = CappedLog::open(&p, 1000).unwrap();
        let line = [b'x'; 99];
        for _ in 0..35 {
            log.write_all(&line).unwrap();
            log.write_all(b"\n").unwrap();
        }
        log.flush().unwrap();
        let now = std::fs::metadata(&p).unwrap().len();
        let prev = std::fs::metadata(CappedLog::previous(&p)).unwrap().len();
        assert!(now <= 1000 && prev <= 1000, "{now} {prev}");
        assert_eq!(mode(&p), 0o600);
        assert_eq!(mode(&CappedLog::previous(&p)), 0o600);
        assert!(std::fs::read_to_string(&p)
            .unwrap()
            .starts_with("(log continued"));
    }

    #[test]
    fn a_reader_always_finds_the_log_under_its_cap_while_it_moves_aside() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("holder-h1.log");
        let cap = 200;
        let mut log = CappedLog::open(&p, cap).unwrap();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        // A reader following the file by name (as `tail -F` does).
        let reader = {
            let (p, done) = (p.clone(), done.clone());
            std::thread::spawn(move || {
                let (mut looks, mut missing, mut over) = (0u64, 0u64, 0u64);
                while !done.load(Ordering::Relaxed) {
                    looks += 1;
                    match std::fs::metadata(&p) {
                        Ok(m) if m.len() > cap => over += 1,
                        Ok(_) => {}
                        Err(_) => missing += 1,
                    }
                }
                (looks, missing, over)
            })
        };
        let line = [b'x'; 99];
        for _ in 0..1000 {
            log.write_all(&line).unwrap();
            log.write_all(b"\n").unwrap();
        }
        done.store(true, Ordering::Relaxed);
        let (looks, missing, over) = reader.join().unwrap();
        assert!(looks > 0);
        assert_eq!((missing, over), (0, 0), "in {looks} looks");
        // Nothing left behind but the log and the previous one.
        let mut left: Vec<String> = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["holder-h1.log", "holder-h1.log.1"]);
        assert_eq!(mode(&CappedLog::previous(&p)), 0o600);
    }

    #[test]
    fn pruning_keeps_live_and_newest() {
        let t = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let day = Duration::from_secs(86_400);
        let touch = |name: &str, age: Duration| {
            let p = t.path().join(name);
            let f = File::create(&p).unwrap();
            f.set_modified(now - age).unwrap();
        };
        for i in 0..10 {
            touch(&format!("holder-h{i}.log"), day * i);
        }
        touch("holder-h9.log.1", day * 9);
        // What a holder that died moving its log leaves goes with it.
        touch("holder-h9.log.next", day * 9);
        touch("holder-h9.log.1.next", day * 9);
        touch("holder-live.log", day * 100);
        touch("ccd.2020-01-01.log", day * 100);
        let live: HashSet<String> = ["live".to_string()].into();
        let r = prune_holder_logs(t.path(), &live, now, day * 5 + day / 2, 4);
        assert_eq!(
            r,
            Pruned {
                removed: 6,
                kept: 4
            }
        );
        let mut left: Vec<String> = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "ccd.2020-01-01.log",
                "holder-h0.log",
                "holder-h1.log",
                "holder-h2.log",
                "holder-h3.log",
                "holder-live.log"
            ]
        );
    }
}
