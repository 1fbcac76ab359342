//! Where a trim keeps the original: `<backups>/<unix ms>.jsonl` (the
//! original's exact bytes: a hard link to the original inode when the
//! folder is on the same filesystem, else a synced copy) and
//! `<unix ms>.json` (what the trimmed file looked like, so an undo can
//! tell whether it changed since). The folder is created 0700 (owner only)
//! and checked to be a real folder of ours. Generations pile up (a second
//! trim keeps both); an undo takes the newest back and removes it.

use super::TrimError;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Identity of a file's content as the filesystem shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub len: u64,
    pub ino: u64,
    pub dev: u64,
    pub mtime_ns: i128,
}

impl Stamp {
    pub fn of(path: &Path) -> std::io::Result<Stamp> {
        let m = fs::metadata(path)?;
        Ok(Stamp::from_meta(&m))
    }

    pub fn from_meta(m: &fs::Metadata) -> Stamp {
        Stamp {
            len: m.len(),
            ino: m.ino(),
            dev: m.dev(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        }
    }

    /// How `now` differs, in words.
    pub fn change(&self, now: &Stamp) -> String {
        if now.ino != self.ino || now.dev != self.dev {
            "it was replaced by another file".into()
        } else if now.len != self.len {
            format!("its size went from {} to {} bytes", self.len, now.len)
        } else {
            "it was modified".into()
        }
    }
}

/// The sidecar of one generation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    pub transcript: PathBuf,
    pub original_bytes: u64,
    pub trimmed: Stamp,
    pub at_ms: u64,
    /// `link` or `copy`.
    pub how: String,
}

/// Creates (0700) or checks the backup folder.
pub fn ensure_dir(dir: &Path) -> Result<(), TrimError> {
    if let Some(parent) = dir.parent() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(TrimError::io(format!("creating {}", parent.display())))?;
    }
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(TrimError::io(format!("creating {}", dir.display()))(e)),
    }
    let m =
        fs::symlink_metadata(dir).map_err(TrimError::io(format!("checking {}", dir.display())))?;
    let uid = nix::unistd::getuid().as_raw();
    if !m.is_dir() || m.uid() != uid {
        return Err(TrimError::io(format!("checking {}", dir.display()))(
            std::io::Error::other("not a folder of ours (a symlink or another user's)"),
        ));
    }
    if m.mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(TrimError::io(
            format!("making {} owner-only", dir.display()),
        ))?;
    }
    Ok(())
}

/// Keeps `original` (whose stamp is `stamp`) as a new generation in `dir`;
/// returns its path. The sidecar is written by [`write_meta`].
pub fn keep(original: &Path, dir: &Path, stamp: &Stamp) -> Result<(PathBuf, String), TrimError> {
    ensure_dir(dir)?;
    let mut ms = std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let path = loop {
        let p = dir.join(format!("{ms}.jsonl"));
        if !p.exists() && !dir.join(format!("{ms}.json")).exists() {
            break p;
        }
        ms += 1;
    };
    if fs::hard_link(original, &path).is_ok() {
        return Ok((path, "link".into()));
    }
    // Another filesystem: a copy, synced, checked against the stamp.
    let mut from = fs::File::open(original)
        .map_err(TrimError::io(format!("opening {}", original.display())))?;
    let mut to = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode_0600()
        .open(&path)
        .map_err(TrimError::io(format!("creating {}", path.display())))?;
    let n = std::io::copy(&mut from, &mut to)
        .map_err(TrimError::io(format!("copying to {}", path.display())))?;
    to.flush()
        .and_then(|_| to.sync_all())
        .map_err(TrimError::io(format!("syncing {}", path.display())))?;
    if n != stamp.len {
        let _ = fs::remove_file(&path);
        return Err(TrimError::WriterAppeared(format!(
            "the transcript changed while it was being backed up ({} bytes expected, {n} read); nothing was changed",
            stamp.len
        )));
    }
    Ok((path, "copy".into()))
}

trait Mode0600 {
    fn mode_0600(&mut self) -> &mut Self;
}

impl Mode0600 for fs::OpenOptions {
    fn mode_0600(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.mode(0o600)
    }
}

/// Writes the sidecar of the generation at `backup`.
pub fn write_meta(backup: &Path, meta: &Meta) -> Result<(), TrimError> {
    let p = backup.with_extension("json");
    let bytes = serde_json::to_vec_pretty(meta)
        .map_err(|e| TrimError::io("encoding the backup's sidecar")(std::io::Error::other(e)))?;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode_0600()
        .open(&p)
        .map_err(TrimError::io(format!("writing {}", p.display())))?;
    f.write_all(&bytes)
        .and_then(|_| f.sync_all())
        .map_err(TrimError::io(format!("writing {}", p.display())))
}

/// The newest generation in `dir`: its original's path and sidecar.
pub fn newest(dir: &Path) -> Result<Option<(PathBuf, Meta)>, TrimError> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(TrimError::io(format!("reading {}", dir.display()))(e)),
    };
    let mut best: Option<(u64, PathBuf)> = None;
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(ms) = name
            .to_str()
            .and_then(|n| n.strip_suffix(".jsonl"))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        if best.as_ref().is_none_or(|(b, _)| ms > *b) {
            best = Some((ms, e.path()));
        }
    }
    let Some((_, path)) = best else {
        return Ok(None);
    };
    let side = path.with_extension("json");
    let bytes = fs::read(&side).map_err(TrimError::io(format!("reading {}", side.display())))?;
    let meta: Meta = serde_json::from_slice(&bytes).map_err(|e| {
        TrimError::io(format!("reading {}", side.display()))(std::io::Error::other(e))
    })?;
    Ok(Some((path, meta)))
}

/// Removes one generation (after an undo, or a trim that was put back).
pub fn remove(backup: &Path) {
    let _ = fs::remove_file(backup.with_extension("json"));
    let _ = fs::remove_file(backup);
}
