//! The incremental usage cache: what each transcript file held when last
//! read, so a later run reads only the bytes appended since.
//!
//! One compact binary file (`postcard`) in the state dir
//! ([`CACHE_FILE`]), written whole through a temp file and a rename,
//! owner-only, not synced (a cache lost in a crash is rebuilt). Each entry is keyed by the file's path and remembers its
//! identity (device, inode) and the length read
//! ([`ccd_search::incremental::ReadMark`]): the same file grown is read
//! from the mark on; a file replaced (another device or inode, as a trim's
//! rewrite makes) or shorter is read again from the start; an unchanged one
//! is not opened (its metadata alone says so). An archived transcript
//! ([`crate::files::Archived`]) is keyed by its compressed copy's path,
//! with that file's identity and length: an archive never changes once
//! written, so it is decompressed once (whole, through
//! [`ccd_claude::archive::open_stored`], never past its stated length)
//! and a warm run only looks at its metadata; an archive removed (put
//! back) or replaced is dropped or read again as any file. A missing, unreadable, foreign or older-format cache
//! ([`FORMAT`]) is an empty one: the next run rebuilds it. Files gone are
//! dropped from it.
//!
//! Bounds: the cache file is never read or written past
//! [`MAX_CACHE_BYTES`] (beyond it, usage is still computed, only not
//! kept, and the log says so); lines are read as the search reader reads
//! them ([`ccd_search::incremental::MAX_RECORD_BYTES`] a line, longer ones
//! skipped and counted); at most [`MAX_THREADS`] reading threads.

use crate::files::{Transcript, Unreadable};
use crate::tally::FileUsage;
use ccd_search::incremental::{read_appended, Lines, ReadMark, CHUNK_BYTES, MAX_RECORD_BYTES};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The cache's file name in the state dir.
pub const CACHE_FILE: &str = "usage-cache.bin";

/// The format version: a cache written with another is rebuilt.
pub const FORMAT: u32 = 2;

/// The largest cache file read or written.
pub const MAX_CACHE_BYTES: u64 = 256 << 20;

/// The most threads reading transcripts at once.
pub const MAX_THREADS: usize = 8;

const MAGIC: &[u8; 8] = b"ccdusage";

/// What was read of one file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub dev: u64,
    pub ino: u64,
    pub len: u64,
    pub offset: u64,
    pub usage: FileUsage,
}

#[derive(Deserialize)]
struct Stored {
    format: u32,
    files: Vec<(PathBuf, Entry)>,
}

/// [`Stored`] as written: the same bytes, from borrowed entries (a cold
/// run's 10,000 entries are not copied to be written).
#[derive(Serialize)]
struct StoredRef<'a> {
    format: u32,
    files: Vec<(&'a PathBuf, &'a Entry)>,
}

/// What one [`UsageCache::refresh`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refresh {
    /// Files not opened (unchanged).
    pub unchanged: usize,
    /// Files read from their mark.
    pub appended: usize,
    /// Files read from the start (new, replaced or shrunk).
    pub full: usize,
    /// Bytes read in all.
    pub bytes: u64,
    /// Files that could not be read.
    pub failed: usize,
    /// Lines skipped for their length.
    pub oversized: u64,
    /// Archived transcripts that could not be read (left out of the
    /// cache; tried again next run), and why.
    pub unreadable: Vec<Unreadable>,
}

/// The cache in memory.
#[derive(Debug, Default)]
pub struct UsageCache {
    files: HashMap<PathBuf, Entry>,
}

#[cfg(unix)]
fn identity(m: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

#[cfg(not(unix))]
fn identity(_m: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

impl UsageCache {
    /// The cache stored at `path`; an empty one when there is none or it
    /// is unreadable, foreign, too large or of another format.
    pub fn load(path: &Path) -> Self {
        Self::load_within(path, MAX_CACHE_BYTES)
    }

    /// [`Self::load`] with another bound (tests).
    pub fn load_within(path: &Path, max: u64) -> Self {
        let bytes = match std::fs::metadata(path) {
            Ok(m) if m.len() > max => {
                tracing::warn!(path = %path.display(), len = m.len(), "usage cache over its bound, rebuilt");
                return Self::default();
            }
            Ok(_) => match std::fs::read(path) {
                Ok(b) => b,
                Err(e) => {
                    tracing::trace!(path = %path.display(), error = %e, "usage cache unreadable");
                    return Self::default();
                }
            },
            Err(_) => return Self::default(),
        };
        let Some(body) = bytes.strip_prefix(MAGIC.as_slice()) else {
            tracing::trace!(path = %path.display(), "not a usage cache, rebuilt");
            return Self::default();
        };
        match postcard::from_bytes::<Stored>(body) {
            Ok(s) if s.format == FORMAT => Self {
                files: s.files.into_iter().collect(),
            },
            Ok(s) => {
                tracing::trace!(format = s.format, "usage cache of another format, rebuilt");
                Self::default()
            }
            Err(e) => {
                tracing::trace!(error = %e, "usage cache undecodable, rebuilt");
                Self::default()
            }
        }
    }

    /// Writes the cache to `path` (temp file, rename). Refuses past
    /// [`MAX_CACHE_BYTES`].
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        self.save_within(path, MAX_CACHE_BYTES)
    }

    /// [`Self::save`] with another bound (tests).
    pub fn save_within(&self, path: &Path, max: u64) -> std::io::Result<()> {
        let mut files: Vec<(&PathBuf, &Entry)> = self.files.iter().collect();
        // In byte order of the paths (a stable order, cheaper to make
        // than the order of their components).
        files.sort_unstable_by(|a, b| a.0.as_os_str().cmp(b.0.as_os_str()));
        let stored = StoredRef {
            format: FORMAT,
            files,
        };
        let body = postcard::to_stdvec(&stored).map_err(std::io::Error::other)?;
        let len = (MAGIC.len() + body.len()) as u64;
        if len > max {
            tracing::warn!(len, bound = max, "usage cache over its bound, not written");
            return Err(std::io::Error::other(format!(
                "usage cache of {len} bytes is over its bound of {max}"
            )));
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(MAGIC)?;
        tmp.write_all(&body)?;
        // No fsync: the cache is rebuilt from the transcripts whenever it
        // is missing or unreadable, so a crash costs one cold run, and a
        // run that appended costs no disk flush.
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }

    /// Brings the cache up to date with `files` (reading on up to
    /// `threads` threads, at most [`MAX_THREADS`]) and drops every other
    /// file from it.
    pub fn refresh(&mut self, files: &[Transcript], threads: usize) -> Refresh {
        let mut old = std::mem::take(&mut self.files);
        let work: Vec<Mutex<(PathBuf, Option<Entry>)>> = files
            .iter()
            .map(|t| Mutex::new((t.path.clone(), old.remove(&t.path))))
            .collect();
        let archived: Vec<Option<(u64, &str)>> = files
            .iter()
            .map(|t| t.archived.as_ref().map(|a| (a.len, t.session.as_str())))
            .collect();
        drop(old);
        let next = AtomicUsize::new(0);
        let stats = Mutex::new(Refresh::default());
        let threads = threads.clamp(1, MAX_THREADS).min(work.len().max(1));
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    let mut buf = Vec::new();
                    let mut mine = Refresh::default();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(slot) = work.get(i) else { break };
                        let mut g = slot.lock().unwrap_or_else(|p| p.into_inner());
                        let (path, entry) = &mut *g;
                        *entry = match archived[i] {
                            None => update(path, entry.take(), &mut buf, &mut mine),
                            Some((len, session)) => update_archived(
                                path,
                                len,
                                session,
                                entry.take(),
                                &mut buf,
                                &mut mine,
                            ),
                        };
                    }
                    let mut st = stats.lock().unwrap_or_else(|p| p.into_inner());
                    st.unchanged += mine.unchanged;
                    st.appended += mine.appended;
                    st.full += mine.full;
                    st.bytes += mine.bytes;
                    st.failed += mine.failed;
                    st.oversized += mine.oversized;
                    st.unreadable.append(&mut mine.unreadable);
                });
            }
        });
        for slot in work {
            let (path, entry) = slot.into_inner().unwrap_or_else(|p| p.into_inner());
            if let Some(e) = entry {
                self.files.insert(path, e);
            }
        }
        stats.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    /// What `path` held when last read.
    pub fn get(&self, path: &Path) -> Option<&FileUsage> {
        self.files.get(path).map(|e| &e.usage)
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// One file brought up to date; `None` when it cannot be read.
fn update(path: &Path, entry: Option<Entry>, buf: &mut Vec<u8>, st: &mut Refresh) -> Option<Entry> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            tracing::trace!(path = %path.display(), error = %e, "transcript gone or unreadable");
            st.failed += 1;
            return None;
        }
    };
    let (dev, ino) = identity(&meta);
    // Another device is another file whatever its inode.
    let entry = entry.filter(|e| e.dev == dev);
    // The same file at the same length: not even opened.
    if let Some(e) = entry.as_ref() {
        if e.ino == ino && e.len == meta.len() {
            st.unchanged += 1;
            return entry;
        }
    }
    let mark = entry.as_ref().map(|e| ReadMark {
        ino: e.ino,
        len: e.len,
        offset: e.offset,
    });
    let mut usage = entry.map(|e| e.usage).unwrap_or_default();
    let had = mark.is_some();
    let mut fresh = FileUsage::default();
    let mut restarted_seen = false;
    let r = read_appended(path, mark.as_ref(), MAX_RECORD_BYTES, buf, |_, line| {
        fresh.push_line(line);
    });
    let r = match r {
        Ok(r) => r,
        Err(e) => {
            tracing::trace!(path = %path.display(), error = %e, "transcript unreadable");
            st.failed += 1;
            return None;
        }
    };
    if r.restarted || !had {
        usage = fresh;
        restarted_seen = true;
    } else if r.bytes > 0 {
        if usage.cwd.is_none() {
            usage.cwd = fresh.cwd.take();
        }
        for m in &fresh.messages {
            let model = fresh.model(m).map(str::to_owned);
            usage.push(crate::record::Usage {
                key: m.key,
                at: m.at,
                model: model.map(Into::into),
                tokens: m.tokens,
                cwd: None,
            });
        }
    }
    if restarted_seen {
        st.full += 1;
    } else if r.bytes > 0 {
        st.appended += 1;
    } else {
        st.unchanged += 1;
    }
    st.bytes += r.bytes;
    st.oversized += r.oversized;
    Some(Entry {
        dev,
        ino: r.mark.ino,
        len: r.mark.len,
        offset: r.mark.offset,
        usage,
    })
}

/// One archived transcript (the compressed copy at `path`, `len` bytes
/// once decompressed) brought up to date: not opened when its copy is the
/// one read last time, else decompressed whole. `None` (and named in
/// `st.unreadable`) when it cannot be read or is not as long as its
/// manifest says.
fn update_archived(
    path: &Path,
    len: u64,
    session: &str,
    entry: Option<Entry>,
    buf: &mut Vec<u8>,
    st: &mut Refresh,
) -> Option<Entry> {
    let failed = |st: &mut Refresh, error: String| {
        tracing::trace!(path = %path.display(), %error, "archived transcript unreadable");
        st.failed += 1;
        st.unreadable.push(Unreadable {
            session: session.to_owned(),
            error,
        });
        None
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return failed(st, format!("{}: {e}", path.display())),
    };
    let (dev, ino) = identity(&meta);
    if let Some(e) = entry {
        if e.dev == dev && e.ino == ino && e.len == meta.len() && e.offset == len {
            st.unchanged += 1;
            return Some(e);
        }
    }
    let mut r = match ccd_claude::archive::open_stored(path, len) {
        Ok(r) => r,
        Err(e) => return failed(st, e.to_string()),
    };
    let mut usage = FileUsage::default();
    let mut lines = Lines::new(0, MAX_RECORD_BYTES);
    buf.resize(CHUNK_BYTES, 0);
    let mut read: u64 = 0;
    loop {
        let n = match r.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return failed(st, format!("{}: {e}", path.display())),
        };
        read += n as u64;
        lines.push(&buf[..n], |_, line| {
            usage.push_line(line);
        });
    }
    if read != len {
        return failed(
            st,
            format!(
                "{}: {read} bytes where the manifest says {len}",
                path.display()
            ),
        );
    }
    st.full += 1;
    st.bytes += read;
    st.oversized += lines.oversized();
    Some(Entry {
        dev,
        ino,
        len: meta.len(),
        offset: len,
        usage,
    })
}
