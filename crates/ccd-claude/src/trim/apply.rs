//! Pass 2 of a trim and its undo: write the kept lines (edited where the
//! plan says) to a temporary file beside the transcript (locked while it
//! is written, see [`super::leftover`], which also removes what a killed
//! trim of the same transcript left), fsync it, check nothing moved, keep
//! the original ([`super::backup`]), rename over it, fsync the folder.
//!
//! Invariant (the race with a writer): the original's stamp (size, inode,
//! mtime) is taken before pass 1 and compared after pass 2 and again right
//! before the rename, and the caller's liveness guard is asked right
//! before the rename. A writer that had the old file open and wrote after
//! the rename wrote into the kept original (a hard link to the same inode):
//! the backup's stamp is compared after the rename, and on a change the
//! original (with what was written) is put back.

use super::backup::{self, Meta, Stamp};
use super::leftover::TempFile;
use super::scan::{self, read_line, Edit, Fate};
use super::{TrimError, TrimOptions, TrimReport};
use serde_json::value::RawValue;
use std::fs;
use std::io::{BufWriter, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Called between the two passes (tests use it to race a writer).
pub type TrimHook<'a> = Option<&'a dyn Fn()>;

/// What an undo did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UndoOutcome {
    pub transcript: PathBuf,
    /// The generation restored (now removed).
    pub backup: PathBuf,
    pub bytes_restored: u64,
    pub bytes_replaced: u64,
}

/// Removes what killed trims of `path` left beside it
/// ([`super::leftover`]), before this one starts.
fn remove_leftovers(path: &Path) {
    if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
        let _ = super::leftover::remove(dir, Some(name));
    }
}

fn sync_dir(path: &Path) {
    if let Some(d) = path.parent() {
        if let Ok(f) = fs::File::open(d) {
            let _ = f.sync_all();
        }
    }
}

/// Trims `path` (see the module doc). `guard` answers `Some(why)` while
/// the session may be running. `backups` is this session's backup folder.
/// With nothing to drop, the file is left alone (`unchanged`).
pub fn trim(
    path: &Path,
    backups: &Path,
    opts: &TrimOptions,
    guard: &dyn Fn() -> Option<String>,
    hook: TrimHook,
) -> Result<TrimReport, TrimError> {
    if let Some(why) = guard() {
        return Err(TrimError::Live(why));
    }
    remove_leftovers(path);
    let file =
        fs::File::open(path).map_err(TrimError::io(format!("opening {}", path.display())))?;
    let meta = file
        .metadata()
        .map_err(TrimError::io(format!("reading {}", path.display())))?;
    let before = Stamp::from_meta(&meta);
    let r = trim_scanned(path, backups, opts, guard, hook, &file, &meta, &before);
    super::release_freed_memory();
    r
}

/// [`trim`] from pass 1 on; the index spills beside the backups folder
/// (`<state dir>/trim-backups`).
#[allow(clippy::too_many_arguments)]
fn trim_scanned(
    path: &Path,
    backups: &Path,
    opts: &TrimOptions,
    guard: &dyn Fn() -> Option<String>,
    hook: TrimHook,
    file: &fs::File,
    meta: &fs::Metadata,
    before: &Stamp,
) -> Result<TrimReport, TrimError> {
    let before = *before;
    let spill_dir = backups.parent().unwrap_or(backups);
    let s = scan::scan(file, path, opts, spill_dir)?;
    let mut report = TrimReport::from_scan(path, &s)?;
    if report.unchanged {
        return Ok(report);
    }
    if s.total_bytes != before.len {
        return Err(changed(&before, path, "while it was being read"));
    }
    if let Some(h) = hook {
        h();
    }
    // Pass 2.
    let (tmp_file, out) = TempFile::create(path, |tmp| {
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(tmp)
            .map(Some)
    })
    .map_err(TrimError::io(format!(
        "creating a temporary file beside {}",
        path.display()
    )))?;
    let tmp = tmp_file.path.clone();
    let out =
        out.ok_or_else(|| TrimError::io("trim")(std::io::Error::other("no temporary file")))?;
    let _ = out.set_permissions(fs::Permissions::from_mode(
        meta.permissions().mode() & 0o7777,
    ));
    let input =
        fs::File::open(path).map_err(TrimError::io(format!("opening {}", path.display())))?;
    let written = write_kept(&input, &s, out, opts.max_line, &tmp)?;
    let after = Stamp::of(path).map_err(TrimError::io(format!("reading {}", path.display())))?;
    if after != before {
        return Err(changed(
            &before,
            path,
            &format!("while it was being trimmed: {}", before.change(&after)),
        ));
    }
    if let Some(why) = guard() {
        return Err(TrimError::WriterAppeared(format!(
            "the session started while it was being trimmed ({why}); the transcript was left as it was"
        )));
    }
    let trimmed = Stamp::of(&tmp).map_err(TrimError::io(format!("reading {}", tmp.display())))?;
    let (kept, how) = backup::keep(path, backups, &before)?;
    let cleanup_backup = |kept: &Path| backup::remove(kept);
    backup::write_meta(
        &kept,
        &Meta {
            transcript: path.to_path_buf(),
            original_bytes: before.len,
            trimmed,
            at_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            how: how.clone(),
        },
    )
    .inspect_err(|_| cleanup_backup(&kept))?;
    // Right before the rename: the same file, and still nobody running it.
    let last = Stamp::of(path).map_err(TrimError::io(format!("reading {}", path.display())))?;
    if last != before {
        cleanup_backup(&kept);
        return Err(changed(
            &before,
            path,
            &format!(
                "right before the trimmed file replaced it: {}",
                before.change(&last)
            ),
        ));
    }
    if let Some(why) = guard() {
        cleanup_backup(&kept);
        return Err(TrimError::WriterAppeared(format!(
            "the session started right before the trimmed file replaced it ({why}); the transcript was left as it was"
        )));
    }
    fs::rename(&tmp, path).map_err(|e| {
        cleanup_backup(&kept);
        TrimError::io(format!(
            "renaming {} over {}",
            tmp.display(),
            path.display()
        ))(e)
    })?;
    tmp_file.keep();
    sync_dir(path);
    // A writer that had the old file open writes into the kept inode.
    if how == "link" {
        let now = Stamp::of(&kept).ok();
        if now.as_ref().map(|n| (n.len, n.mtime_ns)) != Some((before.len, before.mtime_ns)) {
            put_back(path, &kept)?;
            return Err(TrimError::WriterAppeared(format!(
                "a process wrote to the transcript as it was being replaced; the original (with what it wrote) was put back at {}",
                path.display()
            )));
        }
    }
    report.bytes_after = written;
    report.backup = Some(kept);
    tracing::info!(
        transcript = %path.display(),
        before = report.bytes_before,
        after = report.bytes_after,
        relinked = report.relinked,
        "trimmed"
    );
    Ok(report)
}

fn changed(before: &Stamp, path: &Path, when: &str) -> TrimError {
    let _ = before;
    TrimError::WriterAppeared(format!(
        "{} changed {when}: a process is writing it; the transcript was left as it was",
        path.display()
    ))
}

/// Puts the generation `kept` back at `path` (a link or copy beside it,
/// synced, renamed over), then removes the generation.
fn put_back(path: &Path, kept: &Path) -> Result<u64, TrimError> {
    let (g, _) = TempFile::create(path, |tmp| {
        if fs::hard_link(kept, tmp).is_ok() {
            return Ok(None);
        }
        let mut from = fs::File::open(kept)?;
        let mut to = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(tmp)?;
        std::io::copy(&mut from, &mut to).and_then(|_| to.sync_all())?;
        Ok(Some(to))
    })
    .map_err(TrimError::io(format!("copying {} back", kept.display())))?;
    let tmp = g.path.clone();
    let n = fs::metadata(&tmp).map(|m| m.len()).unwrap_or(0);
    fs::rename(&tmp, path).map_err(TrimError::io(format!("renaming over {}", path.display())))?;
    g.keep();
    sync_dir(path);
    backup::remove(kept);
    Ok(n)
}

/// Pass 2: the kept lines of `input` into `out`; returns the bytes written.
fn write_kept(
    input: &fs::File,
    s: &scan::Scan,
    out: fs::File,
    max_line: usize,
    tmp: &Path,
) -> Result<u64, TrimError> {
    let mut r = std::io::BufReader::with_capacity(256 * 1024, input);
    let mut w = BufWriter::with_capacity(256 * 1024, out);
    let mut buf = Vec::new();
    let mut offset = 0u64;
    let mut written = 0u64;
    let werr = || TrimError::io(format!("writing {}", tmp.display()));
    let mut lines = s.lines()?;
    let mut i = 0usize;
    while let Some((l, edit)) = lines.next_line()? {
        i += 1;
        let i = i - 1;
        if !read_line(&mut r, &mut buf, max_line, offset)? || buf.len() != l.len as usize {
            return Err(TrimError::WriterAppeared(
                "the transcript changed while it was being trimmed; it was left as it was".into(),
            ));
        }
        offset += buf.len() as u64;
        match l.fate {
            Fate::Keep => {
                w.write_all(&buf).map_err(werr())?;
                written += buf.len() as u64;
            }
            Fate::Edit => {
                let e = edit.ok_or_else(|| {
                    TrimError::io("trim plan")(std::io::Error::other("edit missing"))
                })?;
                let new = edit_line(&buf, &e, &|k| s.key_text(k)).map_err(|why| {
                    TrimError::BadRecord {
                        path: tmp.to_path_buf(),
                        line: i as u64 + 1,
                        offset: offset - buf.len() as u64,
                        reason: why,
                    }
                })?;
                w.write_all(&new).map_err(werr())?;
                written += new.len() as u64;
            }
            _ => {}
        }
    }
    if read_line(&mut r, &mut buf, max_line, offset)? {
        return Err(TrimError::WriterAppeared(
            "the transcript grew while it was being trimmed; it was left as it was".into(),
        ));
    }
    let f = w.into_inner().map_err(|e| werr()(e.into_error()))?;
    f.sync_all().map_err(werr())?;
    Ok(written)
}

/// One top-level member: its key, and where its value is in the line.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Members<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Members<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Members<'a>, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, &'de RawValue>()? {
                    out.push((k, v));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// `line` (with its newline) with `e` applied: values replaced and the
/// `toolUseResult` member cut out in place, every other byte as it was.
pub(crate) fn edit_line(
    line: &[u8],
    e: &Edit,
    key_text: &dyn Fn(super::Key) -> String,
) -> Result<Vec<u8>, String> {
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    let members: Members = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let base = text.as_ptr() as usize;
    let span = |v: &RawValue| {
        let start = v.get().as_ptr() as usize - base;
        (start, start + v.get().len())
    };
    let json_str = |v: &Option<super::Key>| match v {
        Some(k) => serde_json::to_string(&key_text(*k)).unwrap_or_else(|_| "null".into()),
        None => "null".into(),
    };
    let mut ops: Vec<(usize, usize, String)> = Vec::new();
    for (i, (k, v)) in members.0.iter().enumerate() {
        let (a, b) = span(v);
        match k.as_str() {
            "parentUuid" => {
                if let Some(p) = &e.parent {
                    ops.push((a, b, json_str(p)));
                }
            }
            "leafUuid" => {
                if let Some(p) = &e.leaf {
                    ops.push((a, b, json_str(p)));
                }
            }
            "toolUseResult" if e.strip_tool_use_result => {
                if i > 0 {
                    // From the end of the previous value: `, "toolUseResult": …`.
                    let (_, prev_end) = span(members.0[i - 1].1);
                    ops.push((prev_end, b, String::new()));
                } else {
                    // First member: from after `{` through the comma after it.
                    let open = text.find('{').ok_or("no object")? + 1;
                    let rest = &text.as_bytes()[b..];
                    let ws = rest.iter().take_while(|c| c.is_ascii_whitespace()).count();
                    let end = if rest.get(ws) == Some(&b',') {
                        b + ws + 1
                    } else {
                        b
                    };
                    ops.push((open, end, String::new()));
                }
            }
            _ => {}
        }
    }
    ops.sort_by_key(|o| std::cmp::Reverse(o.0));
    // Spans of a well-formed object never overlap; a hostile one (a key
    // written twice) might: refuse rather than guess.
    if ops.windows(2).any(|w| w[1].1 > w[0].0) {
        return Err("overlapping edits (a field written twice)".into());
    }
    let mut out = text.to_string();
    for (a, b, rep) in ops {
        out.replace_range(a..b, &rep);
    }
    // What is written must still be one JSON object.
    serde_json::from_str::<serde::de::IgnoredAny>(&out)
        .map_err(|e| format!("the edited record is not JSON ({e})"))?;
    let mut bytes = out.into_bytes();
    if line.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    Ok(bytes)
}

/// Puts the newest kept original of this session back at `path`, if the
/// transcript is still the file that trim wrote (else
/// [`TrimError::ChangedSinceTrim`]). `guard` as for [`trim`], asked
/// before and right before the rename.
pub fn undo(
    path: &Path,
    backups: &Path,
    guard: &dyn Fn() -> Option<String>,
) -> Result<UndoOutcome, TrimError> {
    if let Some(why) = guard() {
        return Err(TrimError::Live(why));
    }
    remove_leftovers(path);
    let Some((kept, meta)) = backup::newest(backups)? else {
        return Err(TrimError::NoBackup(backups.to_path_buf()));
    };
    let now = Stamp::of(path).map_err(TrimError::io(format!("reading {}", path.display())))?;
    if now != meta.trimmed {
        return Err(TrimError::ChangedSinceTrim(meta.trimmed.change(&now), kept));
    }
    if let Some(why) = guard() {
        return Err(TrimError::Live(why));
    }
    let n = put_back(path, &kept)?;
    tracing::info!(transcript = %path.display(), backup = %kept.display(), bytes = n, "trim undone");
    Ok(UndoOutcome {
        transcript: path.to_path_buf(),
        backup: kept,
        bytes_restored: n,
        bytes_replaced: now.len,
    })
}
