//! Reading Claude Code's session registry, `<config>/sessions/<pid>.json`.
//!
//! One file per running interactive process, written by the CLI after the
//! trust dialog. The reader is tolerant by design: every field but `pid` and
//! `sessionId` is optional, fields of an unexpected type are dropped, unknown
//! fields are kept in [`RegistryEntry::extra`]. A file that is not a plain
//! regular file, is larger than [`MAX_ENTRY_BYTES`], is not valid JSON, or
//! whose name does not match its `pid` is skipped with a debug line; a file
//! that vanishes between listing and reading is simply absent. Sibling
//! `<pid>.<hash>.key` files hold secrets and are never opened: only names
//! matching `^\d+\.json$` are considered.
//!
//! Presence of a file proves nothing about liveness; see [`crate::liveness`].
//!
//! [`RegistryCache`] keeps the *parse* of each file, never a liveness
//! verdict: every [`RegistryCache::read_all`] lists the directory again
//! and stats each file (no file opened), and re-reads only a file whose
//! identity or stamps ([`FileKey`]: device, inode, length, mtime and ctime
//! in ns) changed, or whose ctime was within [`RACY_MARGIN`] of its last
//! read (a second write within one timestamp tick would leave the stamps
//! unchanged: re-read until the file is older than that). Vanished files
//! are dropped. The caller judges liveness on what it returns, each time.

use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Registry files larger than this are not read.
pub const MAX_ENTRY_BYTES: u64 = 1 << 20;

/// One registry file, parsed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegistryEntry {
    pub pid: u32,
    pub session_id: String,
    pub cwd: Option<String>,
    /// Unix milliseconds.
    pub started_at: Option<i64>,
    /// The process-instance stamp (Linux: `/proc/<pid>/stat` field 22).
    pub proc_start: Option<String>,
    pub pid_domain: Option<String>,
    pub version: Option<String>,
    /// `interactive`, `bg`, or a headless kind.
    pub kind: Option<String>,
    pub name: Option<String>,
    /// `idle`, `busy`, `waiting`.
    pub status: Option<String>,
    pub waiting_for: Option<String>,
    /// Unix milliseconds; changes only when `status` changes (no heartbeat).
    pub updated_at: Option<i64>,
    pub job_id: Option<String>,
    /// Where the entry was read from.
    pub path: PathBuf,
    /// Every field ccd does not interpret, kept as read.
    #[serde(skip)]
    pub extra: Map<String, Value>,
}

/// Why one registry file was skipped.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error("not a registry entry name")]
    NotAnEntryName,
    #[error("vanished before it could be read")]
    Vanished,
    #[error("not a regular file (symlink, directory or special file)")]
    NotRegular,
    #[error("larger than {MAX_ENTRY_BYTES} bytes ({0} bytes)")]
    TooLarge(u64),
    #[error("cannot be read: {0}")]
    Io(#[from] std::io::Error),
    #[error("is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("is not a JSON object")]
    NotAnObject,
    #[error("has no numeric `pid`")]
    NoPid,
    #[error("has no string `sessionId`")]
    NoSessionId,
    #[error("is named for pid {file} but holds pid {inner}")]
    PidMismatch { file: u32, inner: u32 },
}

/// The pid a registry file name stands for, if the name is `^\d+\.json$`.
pub fn pid_from_file_name(name: &str) -> Option<u32> {
    let digits = name.strip_suffix(".json")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Reads every valid entry in `sessions_dir`. A missing directory is an
/// empty registry; an unreadable one is an error.
pub fn read_all(sessions_dir: &Path) -> std::io::Result<Vec<RegistryEntry>> {
    let Some(files) = entry_files(sessions_dir)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for item in files {
        match read_entry(&item.path()) {
            Ok(e) => out.push(e),
            Err(EntryError::Vanished) => {}
            Err(error) => {
                tracing::debug!(path = %item.path().display(), %error, "registry: entry skipped");
            }
        }
    }
    out.sort_by_key(|e| e.pid);
    Ok(out)
}

/// A file changed within this long before [`RegistryCache`] read it is
/// read again by the next listing (a rewrite within the file system's
/// timestamp granularity — coarse-clock ticks on Linux, a second on
/// HFS+ — leaves length and stamps unchanged).
pub const RACY_MARGIN: Duration = Duration::from_secs(2);

/// [`RegistryCache`] keeps at most this many files' parses...
pub const MAX_CACHED: usize = 1024;

/// ...each of a file of at most this many bytes (a real entry is ~400);
/// larger or further files are parsed on every listing.
pub const MAX_CACHED_ENTRY_BYTES: u64 = 16 << 10;

/// What says a file is the one parsed before: its identity (device,
/// inode) and what any write changes (length, mtime, ctime, in ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileKey {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl FileKey {
    /// The key of `m` (from `lstat`: a symlink is keyed as itself).
    #[cfg(unix)]
    pub fn of(m: &std::fs::Metadata) -> FileKey {
        use std::os::unix::fs::MetadataExt;
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        FileKey {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime_ns: ns(m.mtime(), m.mtime_nsec()),
            ctime_ns: ns(m.ctime(), m.ctime_nsec()),
        }
    }

    /// Without inode numbers, a key that never matches (every listing
    /// reads every file).
    #[cfg(not(unix))]
    pub fn of(m: &std::fs::Metadata) -> FileKey {
        FileKey {
            dev: 0,
            ino: 0,
            len: m.len(),
            mtime_ns: 0,
            ctime_ns: i128::MAX,
        }
    }

    /// Changed less than `margin` before `now` (or in the future).
    fn racy(&self, now: SystemTime, margin: Duration) -> bool {
        let now_ns = match now.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(_) => return true,
        };
        self.ctime_ns.max(self.mtime_ns) > now_ns - margin.as_nanos() as i128
    }
}

/// One file's parse, as [`RegistryCache`] keeps it.
#[derive(Debug)]
struct Kept {
    key: FileKey,
    /// `None`: the file was skipped (not an entry; logged when read).
    entry: Option<Arc<RegistryEntry>>,
    /// Changed within the margin of its read: read again next time.
    racy: bool,
}

/// The registry's files parsed, kept between listings (module header):
/// a cached parse, never a cached verdict. Owned by one caller (behind
/// its lock); [`RegistryCache::read_all`] blocks (a listing, a stat per
/// file, reads of the changed ones). Bounded: [`MAX_CACHED`] files of at
/// most [`MAX_CACHED_ENTRY_BYTES`].
#[derive(Debug)]
pub struct RegistryCache {
    files: HashMap<OsString, Kept>,
    margin: Duration,
    /// Files read by the last listing (the rest came from the cache).
    read_last: usize,
}

impl Default for RegistryCache {
    fn default() -> Self {
        Self::new()
    }
}

impl RegistryCache {
    pub fn new() -> Self {
        Self::with_margin(RACY_MARGIN)
    }

    /// A cache whose files count as racy for `margin` after a change
    /// (tests: zero, to see a same-length rewrite found by its stamps).
    pub fn with_margin(margin: Duration) -> Self {
        Self {
            files: HashMap::new(),
            margin,
            read_last: 0,
        }
    }

    /// How many files the last [`RegistryCache::read_all`] read (not
    /// taken from the cache).
    pub fn read_last(&self) -> usize {
        self.read_last
    }

    /// Every valid entry in `sessions_dir`, as [`read_all`] gives them,
    /// only the files whose [`FileKey`] changed (or were racy) read.
    pub fn read_all(&mut self, sessions_dir: &Path) -> std::io::Result<Vec<Arc<RegistryEntry>>> {
        self.read_last = 0;
        let Some(files) = entry_files(sessions_dir)? else {
            self.files.clear();
            return Ok(Vec::new());
        };
        let mut old = std::mem::take(&mut self.files);
        let mut out = Vec::new();
        for item in files {
            let name = item.file_name();
            // `lstat` (a directory entry's metadata follows no symlink).
            let key = match item.metadata() {
                Ok(m) => FileKey::of(&m),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => {
                    tracing::debug!(path = %item.path().display(), %error, "registry: entry skipped");
                    continue;
                }
            };
            let kept = match old.remove(&name) {
                Some(k) if k.key == key && !k.racy => k,
                _ => {
                    self.read_last += 1;
                    let entry = match read_entry(&item.path()) {
                        Ok(e) => Some(Arc::new(e)),
                        Err(EntryError::Vanished) => continue,
                        Err(error) => {
                            tracing::debug!(path = %item.path().display(), %error, "registry: entry skipped");
                            None
                        }
                    };
                    Kept {
                        key,
                        entry,
                        racy: key.racy(SystemTime::now(), self.margin),
                    }
                }
            };
            if let Some(e) = &kept.entry {
                out.push(e.clone());
            }
            if key.len <= MAX_CACHED_ENTRY_BYTES && self.files.len() < MAX_CACHED {
                self.files.insert(name, kept);
            }
        }
        out.sort_by_key(|e| e.pid);
        Ok(out)
    }
}

/// The directory items of `sessions_dir` named like registry entries
/// (`<pid>.json`); `None` when the folder does not exist. An unreadable
/// item is skipped (said at debug).
fn entry_files(
    sessions_dir: &Path,
) -> std::io::Result<Option<impl Iterator<Item = std::fs::DirEntry> + '_>> {
    let dir = match std::fs::read_dir(sessions_dir) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(Some(dir.filter_map(move |item| {
        let item = item
            .map_err(|e| tracing::debug!(dir = %sessions_dir.display(), error = %e, "registry: unreadable directory item skipped"))
            .ok()?;
        let name = item.file_name();
        name.to_str().and_then(pid_from_file_name)?;
        Some(item)
    })))
}

/// Reads and validates one registry file.
pub fn read_entry(path: &Path) -> Result<RegistryEntry, EntryError> {
    let file_pid = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(pid_from_file_name)
        .ok_or(EntryError::NotAnEntryName)?;
    let bytes = read_regular_file_bounded(path)?;
    let mut entry = parse_entry(&bytes, path)?;
    if entry.pid != file_pid {
        return Err(EntryError::PidMismatch {
            file: file_pid,
            inner: entry.pid,
        });
    }
    entry.path = path.to_path_buf();
    Ok(entry)
}

/// Opens `path` without following a final symlink, checks on the open
/// descriptor that it is a regular file of bounded size, and reads it.
fn read_regular_file_bounded(path: &Path) -> Result<Vec<u8>, EntryError> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    }
    let file = match opts.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(EntryError::Vanished),
        // O_NOFOLLOW on a symlink fails with ELOOP.
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(EntryError::NotRegular),
        Err(e) => return Err(e.into()),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(EntryError::NotRegular);
    }
    if meta.len() > MAX_ENTRY_BYTES {
        return Err(EntryError::TooLarge(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_ENTRY_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_ENTRY_BYTES {
        return Err(EntryError::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Parses the JSON of one entry. `path` is only recorded, not read.
pub fn parse_entry(bytes: &[u8], path: &Path) -> Result<RegistryEntry, EntryError> {
    let value: Value = serde_json::from_slice(bytes)?;
    let Value::Object(mut map) = value else {
        return Err(EntryError::NotAnObject);
    };
    let pid = map
        .get("pid")
        .and_then(Value::as_u64)
        .and_then(|p| u32::try_from(p).ok())
        .ok_or(EntryError::NoPid)?;
    let session_id = match map.get("sessionId") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(EntryError::NoSessionId),
    };
    let mut take_str = |k: &str| match map.remove(k) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    let cwd = take_str("cwd");
    let pid_domain = take_str("pidDomain");
    let version = take_str("version");
    let kind = take_str("kind");
    let name = take_str("name");
    let status = take_str("status");
    let waiting_for = take_str("waitingFor");
    let job_id = take_str("jobId");
    // procStart is a string today; accept a number should a version write one.
    let proc_start = match map.remove("procStart") {
        Some(Value::String(s)) => Some(s),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let started_at = map.get("startedAt").and_then(Value::as_i64);
    let updated_at = map.get("updatedAt").and_then(Value::as_i64);
    for k in ["pid", "sessionId", "startedAt", "updatedAt"] {
        map.remove(k);
    }
    Ok(RegistryEntry {
        pid,
        session_id,
        cwd,
        started_at,
        proc_start,
        pid_domain,
        version,
        kind,
        name,
        status,
        waiting_for,
        updated_at,
        job_id,
        path: path.to_path_buf(),
        extra: map,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names() {
        assert_eq!(pid_from_file_name("2244.json"), Some(2244));
        assert_eq!(pid_from_file_name("2244.abcd.key"), None);
        assert_eq!(pid_from_file_name("x2244.json"), None);
        assert_eq!(pid_from_file_name(".json"), None);
        assert_eq!(pid_from_file_name("+12.json"), None);
        assert_eq!(pid_from_file_name("99999999999.json"), None);
    }

    #[test]
    fn tolerant_of_types_and_unknown_fields() {
        let e = parse_entry(
            br#"{"pid":7,"sessionId":"s","status":3,"procStart":123,"newField":{"a":1}}"#,
            Path::new("7.json"),
        )
        .unwrap();
        assert_eq!(e.status, None);
        assert_eq!(e.proc_start.as_deref(), Some("123"));
        assert!(e.extra.contains_key("newField"));
    }

    fn write_at(path: &Path, text: &str, mtime_secs: u64) {
        std::fs::write(path, text).unwrap();
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(mtime_secs))
            .unwrap();
    }

    #[test]
    fn the_cache_reads_again_only_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("11.json");
        let b = dir.path().join("12.json");
        write_at(
            &a,
            r#"{"pid":11,"sessionId":"aaaa","procStart":"5"}"#,
            1_000,
        );
        write_at(&b, r#"{"pid":12,"sessionId":"bbbb"}"#, 1_000);
        std::fs::write(dir.path().join("13.json"), "not json").unwrap();
        std::fs::write(dir.path().join("12.abcd.key"), "secret").unwrap();
        let mut c = RegistryCache::with_margin(Duration::ZERO);
        let ids = |v: &[Arc<RegistryEntry>]| -> Vec<String> {
            v.iter().map(|e| e.session_id.clone()).collect()
        };
        let first = c.read_all(dir.path()).unwrap();
        assert_eq!(ids(&first), ["aaaa", "bbbb"]);
        assert_eq!(c.read_last(), 3);
        // The same as the uncached reader.
        let plain: Vec<RegistryEntry> = read_all(dir.path()).unwrap();
        assert_eq!(
            first.iter().map(|e| (**e).clone()).collect::<Vec<_>>(),
            plain
        );
        // Unchanged: nothing read (the bad file's skip is kept too).
        assert_eq!(ids(&c.read_all(dir.path()).unwrap()), ["aaaa", "bbbb"]);
        assert_eq!(c.read_last(), 0);
        // Rewritten in place with the same length: its stamps differ.
        write_at(
            &a,
            r#"{"pid":11,"sessionId":"cccc","procStart":"6"}"#,
            2_000,
        );
        let again = c.read_all(dir.path()).unwrap();
        assert_eq!(ids(&again), ["cccc", "bbbb"]);
        assert_eq!(again[0].proc_start.as_deref(), Some("6"));
        assert_eq!(c.read_last(), 1);
        // A vanished file is gone from the answer and the cache.
        std::fs::remove_file(&b).unwrap();
        assert_eq!(ids(&c.read_all(dir.path()).unwrap()), ["cccc"]);
        assert_eq!(c.files.len(), 2);
        // The directory gone: an empty registry.
        drop(dir);
        assert!(c
            .read_all(Path::new("/nonexistent/ccd/sessions"))
            .unwrap()
            .is_empty());
        assert!(c.files.is_empty());
    }

    #[test]
    fn a_file_changed_just_before_its_read_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("11.json"), r#"{"pid":11,"sessionId":"a"}"#).unwrap();
        let mut c = RegistryCache::new();
        c.read_all(dir.path()).unwrap();
        c.read_all(dir.path()).unwrap();
        // Its ctime is within RACY_MARGIN of now: not trusted yet.
        assert_eq!(c.read_last(), 1);
    }

    #[test]
    fn required_fields() {
        let p = Path::new("7.json");
        assert!(matches!(
            parse_entry(br#"{"sessionId":"s"}"#, p),
            Err(EntryError::NoPid)
        ));
        assert!(matches!(
            parse_entry(br#"{"pid":7}"#, p),
            Err(EntryError::NoSessionId)
        ));
        assert!(matches!(
            parse_entry(br#"{"pid":-7,"sessionId":"s"}"#, p),
            Err(EntryError::NoPid)
        ));
        assert!(matches!(
            parse_entry(b"[1]", p),
            Err(EntryError::NotAnObject)
        ));
        assert!(matches!(
            parse_entry(br#"{"pid":7,"sess"#, p),
            Err(EntryError::Json(_))
        ));
    }
}
