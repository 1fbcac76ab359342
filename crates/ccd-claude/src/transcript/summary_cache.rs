//! Transcript summaries kept between listings.
//!
//! A listing reads a head and a tail of every transcript (10,000 of them on a
//! busy machine), yet transcripts only grow and most do not change between
//! two listings. [`SummaryCache`] keeps each summary with the file's size,
//! modification time and inode ([`FileStamp`]): a file whose three are
//! unchanged is not read again. The cache is one compact binary file
//! (`postcard`) written whole, owner-only (titles are people's prompts),
//! through a temp file and a rename so a reader never sees half of one. A
//! missing, unreadable or foreign cache is an empty one, and a cache that
//! cannot be written only costs the next listing its reads: nothing else
//! depends on it.

use super::summary::TranscriptSummary;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use time::{OffsetDateTime, UtcOffset};

/// Bumped whenever what is stored or the way summaries are read changes,
/// so an older cache is ignored instead of trusted.
const FORMAT: u32 = 2;

/// Fewer changed files than this since the cache was written: the file is
/// left as it is (re-reading a handful of files costs less than rewriting
/// thousands of entries).
const REWRITE_AFTER: usize = 16;

/// What identifies a file's content without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    pub size: u64,
    pub mtime_ns: i128,
    pub ino: u64,
}

impl FileStamp {
    #[cfg(unix)]
    pub fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self {
            size: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ino: meta.ino(),
        }
    }

    #[cfg(not(unix))]
    pub fn of(meta: &std::fs::Metadata) -> Self {
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        Self {
            size: meta.len(),
            mtime_ns,
            ino: 0,
        }
    }
}

/// A time as stored: unix nanoseconds and the UTC offset in seconds (so a
/// summary comes back exactly as it was read).
type StoredTime = (i128, i32);

fn store_time(t: Option<OffsetDateTime>) -> Option<StoredTime> {
    t.map(|t| (t.unix_timestamp_nanos(), t.offset().whole_seconds()))
}

fn load_time(t: Option<StoredTime>) -> Option<OffsetDateTime> {
    let (ns, offset) = t?;
    let offset = UtcOffset::from_whole_seconds(offset).ok()?;
    Some(
        OffsetDateTime::from_unix_timestamp_nanos(ns)
            .ok()?
            .to_offset(offset),
    )
}

fn path_bytes(p: &Path) -> Cow<'_, [u8]> {
    #[cfg(unix)]
    {
        Cow::Borrowed(std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str()))
    }
    #[cfg(not(unix))]
    {
        Cow::Owned(p.to_string_lossy().into_owned().into_bytes())
    }
}

fn path_from(bytes: &[u8]) -> PathBuf {
    #[cfg(unix)]
    {
        PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(bytes))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
    }
}

/// One summary as stored (borrowed when written, owned when read).
#[derive(Serialize, Deserialize)]
struct Stored<'a> {
    #[serde(borrow)]
    path: Cow<'a, [u8]>,
    stamp: FileStamp,
    #[serde(borrow)]
    session_id: Cow<'a, str>,
    #[serde(borrow)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow)]
    title: Option<Cow<'a, str>>,
    created: Option<StoredTime>,
    last_activity: Option<StoredTime>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    context_tokens: Option<u64>,
    size: u64,
    half_written_tail: bool,
    empty: bool,
}

impl<'a> Stored<'a> {
    fn of(stamp: FileStamp, s: &'a TranscriptSummary) -> Self {
        Self {
            path: path_bytes(&s.path),
            stamp,
            session_id: Cow::Borrowed(&s.session_id),
            cwd: s.cwd.as_deref().map(Cow::Borrowed),
            title: s.title.as_deref().map(Cow::Borrowed),
            created: store_time(s.created),
            last_activity: store_time(s.last_activity),
            model: s.model.as_deref().map(Cow::Borrowed),
            context_tokens: s.context_tokens,
            size: s.size,
            half_written_tail: s.half_written_tail,
            empty: s.empty,
        }
    }

    fn into_summary(self) -> TranscriptSummary {
        TranscriptSummary {
            path: path_from(&self.path),
            session_id: self.session_id.into_owned(),
            cwd: self.cwd.map(Cow::into_owned),
            title: self.title.map(Cow::into_owned),
            created: load_time(self.created),
            last_activity: load_time(self.last_activity),
            model: self.model.map(Cow::into_owned),
            context_tokens: self.context_tokens,
            size: self.size,
            half_written_tail: self.half_written_tail,
            empty: self.empty,
            bytes_read: 0,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct OnDisk<'a> {
    format: u32,
    /// The projects folder the entries belong to.
    #[serde(borrow)]
    projects: Cow<'a, [u8]>,
    #[serde(borrow)]
    entries: Vec<Stored<'a>>,
}

/// Summaries by transcript path, loaded from one file; taken out as the
/// listing finds their files unchanged.
#[derive(Debug, Default)]
pub struct SummaryCache {
    file: Option<PathBuf>,
    projects: PathBuf,
    entries: HashMap<PathBuf, (FileStamp, TranscriptSummary)>,
    /// The file on disk is unusable (corrupt, another format): rewrite it
    /// whatever changed.
    rewrite: bool,
}

impl SummaryCache {
    /// The cache kept in `file` for the transcripts under `projects`
    /// (empty when there is none yet, or it cannot be used).
    pub fn load(file: &Path, projects: &Path) -> Self {
        let mut cache = Self {
            file: Some(file.to_path_buf()),
            projects: projects.to_path_buf(),
            ..Self::default()
        };
        let bytes = match std::fs::read(file) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return cache,
            Err(error) => {
                tracing::debug!(file = %file.display(), %error, "transcript summary cache unreadable; rebuilding it");
                cache.rewrite = true;
                return cache;
            }
        };
        match postcard::from_bytes::<OnDisk<'_>>(&bytes) {
            Ok(d) if d.format == FORMAT && d.projects == path_bytes(projects) => {
                cache.entries = d
                    .entries
                    .into_iter()
                    .map(|e| {
                        let stamp = e.stamp;
                        let s = e.into_summary();
                        (s.path.clone(), (stamp, s))
                    })
                    .collect();
            }
            Ok(_) => {
                tracing::debug!(file = %file.display(), "transcript summary cache of another format or folder; rebuilding it");
                cache.rewrite = true;
            }
            Err(error) => {
                tracing::debug!(file = %file.display(), %error, "transcript summary cache corrupt; rebuilding it");
                cache.rewrite = true;
            }
        }
        cache
    }

    /// An empty cache that is never saved.
    pub fn none() -> Self {
        Self::default()
    }

    /// Whether it is saved (summaries read now are worth stamping).
    pub fn keeps(&self) -> bool {
        self.file.is_some()
    }

    /// Takes out the summary of `path` if the file is unchanged since it
    /// was read (`stamp`).
    pub fn take(&mut self, path: &Path, stamp: FileStamp) -> Option<TranscriptSummary> {
        match self.entries.get(path) {
            Some((st, _)) if *st == stamp => self.entries.remove(path).map(|(_, s)| s),
            _ => None,
        }
    }

    /// Writes `now` (every transcript listed, with its stamp) as the cache
    /// if it differs enough from what was loaded: `read` summaries were
    /// read afresh, and what was not taken out belongs to files that are
    /// gone or changed. Errors are logged and otherwise ignored.
    pub fn save(&self, now: &[(FileStamp, &TranscriptSummary)], read: usize) {
        let Some(file) = &self.file else { return };
        let changes = read + self.entries.len();
        if changes < REWRITE_AFTER && !self.rewrite && file.exists() {
            return;
        }
        if let Err(error) = self.write(file, now) {
            tracing::debug!(file = %file.display(), %error, "transcript summary cache not written");
        }
    }

    fn write(&self, file: &Path, now: &[(FileStamp, &TranscriptSummary)]) -> std::io::Result<()> {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let disk = OnDisk {
            format: FORMAT,
            projects: path_bytes(&self.projects),
            entries: now.iter().map(|(st, s)| Stored::of(*st, s)).collect(),
        };
        let bytes = postcard::to_stdvec(&disk).map_err(std::io::Error::other)?;
        let tmp = file.with_extension(format!("tmp.{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let mut open = std::fs::OpenOptions::new();
        open.write(true).create_new(true);
        // Titles are people's prompts: readable by their owner only, like
        // the transcripts they come from.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
        let written = open
            .open(&tmp)
            .and_then(|mut f| std::io::Write::write_all(&mut f, &bytes))
            .and_then(|()| std::fs::rename(&tmp, file));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// How many summaries it holds (not yet taken).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Where the cache for `projects` lives inside `dir` (one file per Claude
/// Code config folder, named by a hash of its path).
pub fn cache_file(dir: &Path, projects: &Path) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    projects.hash(&mut h);
    dir.join(format!("summaries-{:016x}.bin", h.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary_of(dir: &Path, name: &str, text: &str) -> (FileStamp, TranscriptSummary) {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        let stamp = FileStamp::of(&std::fs::metadata(&p).unwrap());
        let mut sum = super::super::summary::read_summary(&p).unwrap();
        // Not kept: a cached summary read nothing.
        sum.bytes_read = 0;
        (stamp, sum)
    }

    #[test]
    fn a_summary_round_trips_and_a_changed_stamp_misses() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("cache/summaries.bin");
        let line = r#"{"type":"user","message":{"role":"user","content":"hello"},"cwd":"/w","sessionId":"a","timestamp":"2026-11-29T10:00:00.123456789+02:00"}"#;
        let (stamp, sum) = summary_of(tmp.path(), "a.jsonl", &format!("{line}\n"));
        assert!(sum.created.is_some());
        let c = SummaryCache::load(&file, tmp.path());
        assert!(c.is_empty());
        c.save(&[(stamp, &sum)], 1); // no file yet: written however little changed
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "prompts are private");
        }
        let mut back = SummaryCache::load(&file, tmp.path());
        assert_eq!(back.len(), 1);
        let grown = FileStamp {
            size: stamp.size + 1,
            ..stamp
        };
        assert_eq!(back.take(&sum.path, grown), None);
        let got = back.take(&sum.path, stamp).expect("a hit");
        assert_eq!(got, sum);
        // The offset came back too, not only the instant.
        assert_eq!(
            got.created.map(|t| t.offset()),
            sum.created.map(|t| t.offset())
        );
        assert!(back.is_empty(), "taken out");
        // Another projects folder's cache is not used.
        assert!(SummaryCache::load(&file, &tmp.path().join("other")).is_empty());
    }

    #[test]
    fn a_corrupt_file_is_rewritten_even_for_one_entry() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("summaries.bin");
        std::fs::write(&file, b"\x00garbage").unwrap();
        let (stamp, sum) = summary_of(tmp.path(), "b.jsonl", "{}\n");
        let c = SummaryCache::load(&file, tmp.path());
        assert!(c.is_empty());
        c.save(&[(stamp, &sum)], 1);
        let mut back = SummaryCache::load(&file, tmp.path());
        assert_eq!(back.take(&sum.path, stamp), Some(sum));
    }
}
