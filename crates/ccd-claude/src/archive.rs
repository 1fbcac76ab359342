//! Archiving a dead conversation out of Claude Code's folder (where its
//! retention sweep would delete it) into ccd's state dir, compressed, and
//! putting it back ([`restore`]) byte for byte.
//!
//! What belongs to a conversation is what the sweep deletes with it
//! (docs/claude-cli-compat.md, "The retention sweep"): the transcript
//! `projects/<slug>/<sid>.jsonl`, its sidecar folder `projects/<slug>/<sid>/`
//! (subagent transcripts, tool results) and `file-history/<sid>/` (what
//! `/rewind` restores). Todos, session env and tasks are not kept (nothing
//! reads them after the session ended).
//!
//! Layout: `<root>/<sid>/manifest.json` (the original absolute path, length
//! and store name of each file) and `<root>/<sid>/<n>.zst` (one zstd frame
//! per file). An archive is written whole in `<root>/.<sid>.tmp-<pid>` and
//! renamed into place (then the folder is synced), so a reader sees all of
//! it or none.
//!
//! The move is refused, the original left whole, when:
//! - `live` says the session may be running, before the copy and again
//!   right before the originals are removed;
//! - any member's length, mtime or inode changed while it was copied, or a
//!   file was added (a writer appended during the move);
//! - anything fails (a missing folder, a full disk, an unreadable file):
//!   the partial archive is removed.
//!
//! The transcript goes last: it is renamed aside, its stamp checked again
//! (a writer that appended just before the rename is caught and the rename
//! undone), and only then removed.
//!
//! Bounds: at most [`MAX_FILES`] files and [`MAX_BYTES`] bytes per
//! conversation; a manifest is read only up to [`MAX_MANIFEST_BYTES`]; a
//! file is never decompressed past the length its manifest states.

use crate::config::ClaudeConfigDir;
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The archive format written here.
pub const FORMAT: u32 = 1;
/// Files kept per conversation (transcript, sidecar files, file history).
pub const MAX_FILES: usize = 10_000;
/// Bytes (uncompressed) per conversation.
pub const MAX_BYTES: u64 = 64 << 30;
/// The largest manifest read.
pub const MAX_MANIFEST_BYTES: u64 = 8 << 20;

/// One archived file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Where it was (absolute), and goes back to.
    pub path: PathBuf,
    /// Its compressed copy in the archive folder.
    pub store: String,
    pub len: u64,
}

/// What an archive holds; `files[0]` is the transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    pub session_id: String,
    /// The conversation's folder (the transcript's first `cwd`).
    pub cwd: Option<String>,
    /// When it was archived (RFC 3339).
    pub archived_at: String,
    /// The transcript's mtime before the move (RFC 3339).
    pub last_written: Option<String>,
    /// Whether it was trimmed (losslessly) first.
    pub trimmed: bool,
    pub files: Vec<Entry>,
    /// Compressed bytes in the archive.
    pub stored_bytes: u64,
}

impl Manifest {
    /// Uncompressed bytes.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.len).sum()
    }
}

/// Why an archive or a restore did not happen (the original is left in
/// place in every case).
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("session {0} may be running ({1}): not archived")]
    Live(String, String),
    #[error("no transcript of session {0} in {1}")]
    NotFound(String, PathBuf),
    #[error("{0} changed during the move (a writer is active): the original is left in place")]
    Changed(PathBuf),
    #[error("{0} already exists: left as it is")]
    Exists(PathBuf),
    #[error("session {sid} is too large to archive ({what})")]
    TooLarge { sid: String, what: String },
    #[error("{what}: {source}; the original is left in place")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("the archive {0} is damaged: {1}")]
    Corrupt(PathBuf, String),
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> ArchiveError {
    let what = what.into();
    move |source| ArchiveError::Io { what, source }
}

/// Identity and state of one file: a change in any field means a writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    mtime: Option<SystemTime>,
    ino: u64,
    dev: u64,
}

impl Stamp {
    fn of(path: &Path) -> io::Result<Self> {
        use std::os::unix::fs::MetadataExt;
        let m = fs::symlink_metadata(path)?;
        Ok(Self {
            len: m.len(),
            mtime: m.modified().ok(),
            ino: m.ino(),
            dev: m.dev(),
        })
    }
}

/// The folder of `sid`'s archive under `root`, if `sid` can name one.
fn folder(root: &Path, sid: &str) -> Option<PathBuf> {
    let plain = !sid.is_empty()
        && sid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    plain.then(|| root.join(sid))
}

/// The transcript and every file that belongs to `sid` (see the module
/// doc), the transcript first.
fn members(config: &ClaudeConfigDir, sid: &str) -> Result<Vec<PathBuf>, ArchiveError> {
    let projects = config.projects_dir();
    let transcript = crate::transcript::find_by_session_id(&projects, sid)
        .ok_or_else(|| ArchiveError::NotFound(sid.into(), projects.clone()))?;
    let mut out = vec![transcript.clone()];
    let side = transcript.with_file_name(sid);
    for dir in [side, config.root().join("file-history").join(sid)] {
        walk(&dir, &mut out).map_err(io_err(format!("listing {}", dir.display())))?;
        if out.len() > MAX_FILES {
            return Err(ArchiveError::TooLarge {
                sid: sid.into(),
                what: format!("more than {MAX_FILES} files"),
            });
        }
    }
    Ok(out)
}

/// Regular files under `dir` (none if it does not exist); symlinks and
/// other kinds are refused (not ours to follow).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut names: Vec<_> = rd.collect::<io::Result<Vec<_>>>()?;
    names.sort_by_key(|e| e.file_name());
    for e in names {
        let t = e.file_type()?;
        let p = e.path();
        if t.is_dir() {
            walk(&p, out)?;
        } else if t.is_file() {
            out.push(p);
            if out.len() > MAX_FILES {
                return Ok(());
            }
        } else {
            return Err(io::Error::other(format!(
                "{} is neither a file nor a folder",
                p.display()
            )));
        }
    }
    Ok(())
}

/// A reader that turns an error into end of input and keeps it (ruzstd's
/// encoder panics on a read error).
struct KeepReadErr<R> {
    inner: R,
    err: Option<io::Error>,
    n: u64,
}

impl<R: Read> Read for KeepReadErr<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.err.is_some() {
            return Ok(0);
        }
        match self.inner.read(buf) {
            Ok(n) => {
                self.n += n as u64;
                Ok(n)
            }
            Err(e) => {
                self.err = Some(e);
                Ok(0)
            }
        }
    }
}

/// A writer that keeps its first error and drops what follows (ruzstd's
/// encoder panics on a write error).
struct KeepWriteErr<W> {
    inner: W,
    err: Option<io::Error>,
    n: u64,
}

impl<W: Write> Write for KeepWriteErr<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.err.is_none() {
            match self.inner.write_all(buf) {
                Ok(()) => self.n += buf.len() as u64,
                Err(e) => self.err = Some(e),
            }
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        if self.err.is_none() {
            if let Err(e) = self.inner.flush() {
                self.err = Some(e);
            }
        }
        Ok(())
    }
}

/// Compresses `src` (expected `len` bytes) into `dst`; the compressed size.
fn compress_file(src: &Path, dst: &Path, len: u64) -> Result<u64, ArchiveError> {
    let input = File::open(src).map_err(io_err(format!("opening {}", src.display())))?;
    let out = File::create(dst).map_err(io_err(format!("creating {}", dst.display())))?;
    let mut r = KeepReadErr {
        inner: input.take(len.saturating_add(1)),
        err: None,
        n: 0,
    };
    let mut w = KeepWriteErr {
        inner: io::BufWriter::new(out),
        err: None,
        n: 0,
    };
    ruzstd::encoding::compress(&mut r, &mut w, ruzstd::encoding::CompressionLevel::Fastest);
    let _ = w.flush();
    if let Some(e) = r.err {
        return Err(io_err(format!("reading {}", src.display()))(e));
    }
    if let Some(e) = w.err {
        return Err(io_err(format!("writing {}", dst.display()))(e));
    }
    if r.n != len {
        return Err(ArchiveError::Changed(src.to_path_buf()));
    }
    let file = w
        .inner
        .into_inner()
        .map_err(|e| io_err(format!("writing {}", dst.display()))(e.into_error()))?;
    file.sync_all()
        .map_err(io_err(format!("writing {}", dst.display())))?;
    Ok(w.n)
}

fn sync_dir(dir: &Path) {
    if let Ok(f) = File::open(dir) {
        let _ = f.sync_all();
    }
}

fn rfc3339(t: SystemTime) -> String {
    use time::format_description::well_known::Rfc3339;
    time::OffsetDateTime::from(t)
        .format(&Rfc3339)
        .unwrap_or_default()
}

/// The first `cwd` of a transcript (read at most 1 MiB).
fn first_cwd(transcript: &Path) -> Option<String> {
    let mut head = Vec::new();
    File::open(transcript)
        .ok()?
        .take(1 << 20)
        .read_to_end(&mut head)
        .ok()?;
    head.split(|&b| b == b'\n').find_map(|l| {
        let v: serde_json::Value = serde_json::from_slice(l).ok()?;
        v.get("cwd")?.as_str().map(String::from)
    })
}

/// Test and diagnosis points of [`archive`]: called with the step's name
/// (`copied`: the archive is written, the originals not yet checked).
pub type Hook<'a> = &'a dyn Fn(&str);

/// Moves `sid`'s files into `root/<sid>/` (see the module doc). `live`
/// answers `Some(why)` while the session may be running. `trimmed` is
/// recorded in the manifest (the caller trims first).
pub fn archive(
    config: &ClaudeConfigDir,
    root: &Path,
    sid: &str,
    live: &dyn Fn() -> Option<String>,
    trimmed: bool,
    hook: Hook<'_>,
) -> Result<Manifest, ArchiveError> {
    if let Some(why) = live() {
        return Err(ArchiveError::Live(sid.into(), why));
    }
    let dest = folder(root, sid).ok_or_else(|| ArchiveError::NotFound(sid.into(), root.into()))?;
    if dest.exists() {
        return Err(ArchiveError::Exists(dest));
    }
    let files = members(config, sid)?;
    let stamps = files
        .iter()
        .map(|p| Stamp::of(p).map_err(io_err(format!("reading {}", p.display()))))
        .collect::<Result<Vec<_>, _>>()?;
    let total: u64 = stamps.iter().map(|s| s.len).sum();
    if total > MAX_BYTES {
        return Err(ArchiveError::TooLarge {
            sid: sid.into(),
            what: format!("{total} bytes, more than {MAX_BYTES}"),
        });
    }
    fs::create_dir_all(root).map_err(io_err(format!("creating {}", root.display())))?;
    let tmp = root.join(format!(".{sid}.tmp-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir(&tmp).map_err(io_err(format!("creating {}", tmp.display())))?;
    let written = (|| {
        let mut entries = Vec::with_capacity(files.len());
        let mut stored = 0;
        for (i, (p, s)) in files.iter().zip(&stamps).enumerate() {
            let store = format!("{i}.zst");
            stored += compress_file(p, &tmp.join(&store), s.len)?;
            entries.push(Entry {
                path: p.clone(),
                store,
                len: s.len,
            });
        }
        let manifest = Manifest {
            format: FORMAT,
            session_id: sid.into(),
            cwd: first_cwd(&files[0]),
            archived_at: rfc3339(SystemTime::now()),
            last_written: stamps[0].mtime.map(rfc3339),
            trimmed,
            files: entries,
            stored_bytes: stored,
        };
        let path = tmp.join("manifest.json");
        let bytes = serde_json::to_vec_pretty(&manifest).map_err(|e| {
            io_err("encoding the manifest")(io::Error::new(io::ErrorKind::InvalidData, e))
        })?;
        let mut f = File::create(&path).map_err(io_err(format!("creating {}", path.display())))?;
        f.write_all(&bytes)
            .and_then(|()| f.sync_all())
            .map_err(io_err(format!("writing {}", path.display())))?;
        sync_dir(&tmp);
        hook("copied");
        // Nothing changed and nothing was added meanwhile.
        for (p, s) in files.iter().zip(&stamps) {
            if Stamp::of(p).ok().as_ref() != Some(s) {
                return Err(ArchiveError::Changed(p.clone()));
            }
        }
        if members(config, sid)? != files {
            return Err(ArchiveError::Changed(files[0].clone()));
        }
        if let Some(why) = live() {
            return Err(ArchiveError::Live(sid.into(), why));
        }
        fs::rename(&tmp, &dest).map_err(io_err(format!("renaming into {}", dest.display())))?;
        sync_dir(root);
        Ok(manifest)
    })();
    let manifest = match written {
        Ok(m) => m,
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            tracing::info!(session = sid, error = %e, "archive: not moved");
            return Err(e);
        }
    };
    // The transcript aside first: a writer's append just before is caught.
    let transcript = &files[0];
    let aside = transcript.with_extension("jsonl.ccd-archiving");
    let undo = |e: ArchiveError| {
        let _ = fs::remove_dir_all(&dest);
        sync_dir(root);
        e
    };
    fs::rename(transcript, &aside)
        .map_err(io_err(format!("moving {}", transcript.display())))
        .map_err(undo)?;
    if Stamp::of(&aside).ok().as_ref() != Some(&stamps[0]) || transcript.exists() {
        // Put it back; if a new file took its place, keep both visible.
        if !transcript.exists() {
            let _ = fs::rename(&aside, transcript);
        }
        return Err(undo(ArchiveError::Changed(transcript.clone())));
    }
    for p in &files[1..] {
        let _ = fs::remove_file(p);
    }
    let side = transcript.with_file_name(sid);
    for dir in [side, config.root().join("file-history").join(sid)] {
        remove_empty_dirs(&dir);
    }
    fs::remove_file(&aside)
        .map_err(io_err(format!("removing {}", aside.display())))
        .map_err(undo)?;
    if let Some(d) = transcript.parent() {
        sync_dir(d);
    }
    tracing::info!(
        session = sid,
        files = manifest.files.len(),
        bytes = manifest.bytes(),
        stored = manifest.stored_bytes,
        "archived"
    );
    Ok(manifest)
}

/// `archive = "auto"`'s margin: conversations are archived this many days
/// before the sweep's horizon (at 25 days with the default 30).
pub const AUTO_MARGIN_DAYS: u64 = 5;

/// `archive = "auto"`: archives every conversation (not live by `live`)
/// last written more than `cleanupPeriodDays - AUTO_MARGIN_DAYS` days ago
/// (at least 1), read from the user settings. Nothing when the setting is
/// invalid or unreadable (the CLI then sweeps nothing either). Each id with
/// its outcome.
pub fn auto(
    config: &ClaudeConfigDir,
    root: &Path,
    live: &dyn Fn(&str) -> Option<String>,
    now: SystemTime,
) -> Vec<(String, Result<Manifest, ArchiveError>)> {
    let managed = ccd_os::claude::managed_settings();
    let Ok(setting) = crate::retention::read_setting(config, managed.as_deref()) else {
        return vec![];
    };
    let Some(days) = setting.days else {
        return vec![];
    };
    let keep = days.saturating_sub(AUTO_MARGIN_DAYS).max(1);
    let horizon = std::time::Duration::from_secs(keep.saturating_mul(86_400));
    crate::retention::scan(config)
        .into_iter()
        .filter(|f| {
            now.duration_since(f.modified)
                .is_ok_and(|age| age > horizon)
        })
        .map(|f| {
            let sid = f.session_id;
            let r = archive(config, root, &sid, &|| live(&sid), false, &|_| {});
            (sid, r)
        })
        .collect()
}

/// Removes `dir` and the folders under it that are empty (files left by
/// a writer since are kept, and so are their folders).
fn remove_empty_dirs(dir: &Path) {
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_empty_dirs(&e.path());
            }
        }
    }
    let _ = fs::remove_dir(dir);
}

/// The manifest of `sid`'s archive under `root`, `None` when there is none.
pub fn manifest(root: &Path, sid: &str) -> Result<Option<Manifest>, ArchiveError> {
    let Some(dir) = folder(root, sid) else {
        return Ok(None);
    };
    read_manifest(&dir)
}

fn read_manifest(dir: &Path) -> Result<Option<Manifest>, ArchiveError> {
    let path = dir.join("manifest.json");
    let f = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(format!("opening {}", path.display()))(e)),
    };
    let mut bytes = Vec::new();
    f.take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err(format!("reading {}", path.display())))?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(ArchiveError::Corrupt(
            path,
            format!("larger than {MAX_MANIFEST_BYTES} bytes"),
        ));
    }
    let m: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| ArchiveError::Corrupt(path.clone(), e.to_string()))?;
    let bad_store = m
        .files
        .iter()
        .any(|f| f.store.contains('/') || f.store.starts_with('.') || !f.path.is_absolute());
    if m.format != FORMAT || m.files.is_empty() || m.files.len() > MAX_FILES || bad_store {
        return Err(ArchiveError::Corrupt(
            path,
            "unknown format or entries".into(),
        ));
    }
    Ok(Some(m))
}

/// Every archive under `root` (damaged ones left out, and logged).
pub fn list(root: &Path) -> Vec<Manifest> {
    let Ok(rd) = fs::read_dir(root) else {
        return vec![];
    };
    let mut out: Vec<Manifest> = rd
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| match read_manifest(&e.path()) {
            Ok(m) => m,
            Err(err) => {
                tracing::warn!(archive = %e.path().display(), error = %err, "archive: skipped");
                None
            }
        })
        .collect();
    out.sort_by(|a, b| b.archived_at.cmp(&a.archived_at));
    out
}

/// A reader of one archived file's original bytes, never past its stated
/// length (for search, usage, and [`restore`]).
pub fn open_entry(
    root: &Path,
    m: &Manifest,
    entry: &Entry,
) -> Result<Box<dyn Read + Send>, ArchiveError> {
    let path = stored_path(root, m, entry)
        .ok_or_else(|| ArchiveError::NotFound(m.session_id.clone(), root.into()))?;
    open_stored(&path, entry.len)
}

/// Where `entry`'s compressed copy is (`None` for a session id that
/// names no archive folder).
pub fn stored_path(root: &Path, m: &Manifest, entry: &Entry) -> Option<PathBuf> {
    folder(root, &m.session_id).map(|dir| dir.join(&entry.store))
}

/// A reader of the original bytes of the compressed copy at `path`
/// ([`stored_path`]), never past `len` (the manifest's stated length):
/// what [`open_entry`] opens, for a caller that keeps the path (usage,
/// which caches by the stored file's identity).
pub fn open_stored(path: &Path, len: u64) -> Result<Box<dyn Read + Send>, ArchiveError> {
    let f = File::open(path).map_err(io_err(format!("opening {}", path.display())))?;
    let dec = ruzstd::decoding::StreamingDecoder::new(io::BufReader::new(f))
        .map_err(|e| ArchiveError::Corrupt(path.to_path_buf(), e.to_string()))?;
    Ok(Box::new(dec.take(len)))
}

/// The archived transcript of `sid`, whole (bounded by its stated length).
pub fn read_transcript(root: &Path, sid: &str) -> Result<Vec<u8>, ArchiveError> {
    let m = manifest(root, sid)?.ok_or_else(|| ArchiveError::NotFound(sid.into(), root.into()))?;
    let mut out = Vec::new();
    open_entry(root, &m, &m.files[0])?
        .read_to_end(&mut out)
        .map_err(io_err(format!("reading the archive of {sid}")))?;
    if out.len() as u64 != m.files[0].len {
        return Err(ArchiveError::Corrupt(
            root.join(sid),
            "shorter than its manifest says".into(),
        ));
    }
    Ok(out)
}

/// Puts `sid`'s files back where they were and removes the archive. A
/// file already there again is not overwritten (nothing is restored).
/// Restored files get the current time as mtime, so the sweep does not take
/// them at once.
pub fn restore(root: &Path, sid: &str) -> Result<Manifest, ArchiveError> {
    let m = manifest(root, sid)?.ok_or_else(|| ArchiveError::NotFound(sid.into(), root.into()))?;
    for f in &m.files {
        if f.path.exists() {
            return Err(ArchiveError::Exists(f.path.clone()));
        }
    }
    let mut placed: Vec<(PathBuf, PathBuf)> = vec![];
    let result = (|| {
        for f in &m.files {
            let parent = f.path.parent().ok_or_else(|| {
                ArchiveError::Corrupt(root.join(sid), "a path with no folder".into())
            })?;
            fs::create_dir_all(parent).map_err(io_err(format!("creating {}", parent.display())))?;
            let mut name = f.path.file_name().unwrap_or_default().to_os_string();
            name.push(".ccd-restoring");
            let tmp = f.path.with_file_name(name);
            placed.push((tmp.clone(), f.path.clone()));
            let mut out =
                File::create(&tmp).map_err(io_err(format!("creating {}", tmp.display())))?;
            let n = io::copy(&mut open_entry(root, &m, f)?, &mut out)
                .map_err(io_err(format!("writing {}", tmp.display())))?;
            if n != f.len {
                return Err(ArchiveError::Corrupt(
                    root.join(sid).join(&f.store),
                    format!("{n} bytes where the manifest says {}", f.len),
                ));
            }
            out.sync_all()
                .map_err(io_err(format!("writing {}", tmp.display())))?;
        }
        for (tmp, path) in &placed {
            fs::rename(tmp, path).map_err(io_err(format!("placing {}", path.display())))?;
            if let Some(d) = path.parent() {
                sync_dir(d);
            }
        }
        Ok(())
    })();
    if let Err(e) = result {
        for (tmp, _) in &placed {
            let _ = fs::remove_file(tmp);
        }
        return Err(e);
    }
    if let Some(dir) = folder(root, sid) {
        let _ = fs::remove_dir_all(dir);
        sync_dir(root);
    }
    tracing::info!(
        session = sid,
        files = m.files.len(),
        "restored from the archive"
    );
    Ok(m)
}

#[cfg(test)]
mod tests;
