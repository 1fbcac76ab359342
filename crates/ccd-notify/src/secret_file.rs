//! A small secret kept in a private file of the state directory: the one
//! way ccd makes, checks, reads and replaces such a file. Two use it: the
//! prompt-link key (`web-link-key`, [`crate::link::KeyFile`]) and `ccd
//! web`'s login token (`web-token`, ccd-web's `token.rs`), which depends on
//! this crate.
//!
//! - **Made** once, with `O_EXCL` and mode 0600 ([`SecretFile::create_new`]),
//!   its directory (0700) made when missing; whoever gets there first
//!   wins and the others read what it wrote.
//! - **Checked** before every read ([`SecretFile::check`]): a file that
//!   group or others may read, or that another user owns, is refused,
//!   never used.
//! - **Read** only up to [`MAX_BYTES`] ([`SecretFile::read_text`]): a
//!   larger file is not one of ours.
//! - **Replaced** atomically ([`SecretFile::replace`]): written beside the
//!   file (0600, `O_EXCL`) and renamed over it.
//!
//! Pure file I/O; no async. What the text inside means is the caller's.

use rand::TryRngCore;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The largest secret file read (the real ones are under 100 bytes).
pub const MAX_BYTES: u64 = 4096;

/// What can be wrong with a secret file. `name` says which secret it is
/// ("ccd web token"), `remedy` what fixes it.
#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    #[error("{path}: mode {mode:o} lets group or others read the {name}; refusing to use it (chmod 600 it, or {remedy})")]
    NotPrivate {
        path: String,
        mode: u32,
        name: &'static str,
        remedy: &'static str,
    },
    #[error("{path} is owned by uid {owner}, not by this user (uid {me}); refusing to use it")]
    NotOwned { path: String, owner: u32, me: u32 },
    #[error("{path} is not a {name} file ({why}); {remedy}")]
    Malformed {
        path: String,
        why: &'static str,
        name: &'static str,
        remedy: &'static str,
    },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// One secret file: where it is, and how the errors name it.
#[derive(Debug, Clone)]
pub struct SecretFile {
    path: PathBuf,
    name: &'static str,
    remedy: &'static str,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SecretFileError + '_ {
    move |source| SecretFileError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl SecretFile {
    /// `name` is how messages call the secret ("ccd web link key"),
    /// `remedy` what the user can do about a bad file ("run ccd web
    /// --revoke to make a new one").
    pub fn new(path: PathBuf, name: &'static str, remedy: &'static str) -> Self {
        Self { path, name, remedy }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The error for a file whose text is not what the caller expects.
    pub fn malformed(&self, why: &'static str) -> SecretFileError {
        SecretFileError::Malformed {
            path: self.path.display().to_string(),
            why,
            name: self.name,
            remedy: self.remedy,
        }
    }

    fn make_dir(&self) -> Result<(), SecretFileError> {
        if let Some(dir) = self.path.parent() {
            if !dir.exists() {
                fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(io(dir))?;
            }
        }
        Ok(())
    }

    /// Writes `text` to a new file at `path` (`O_EXCL`, 0600, synced).
    fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()
    }

    /// Makes the file holding `text` unless it exists: `true` when this
    /// call made it, `false` when it was there (it is left as it is).
    pub fn create_new(&self, text: &str) -> Result<bool, SecretFileError> {
        self.make_dir()?;
        match Self::write_new(&self.path, text) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(io(&self.path)(e)),
        }
    }

    /// The file's metadata, once it is known private (mode without group
    /// or other bits) and owned by this user.
    pub fn check(&self) -> Result<fs::Metadata, SecretFileError> {
        let meta = fs::metadata(&self.path).map_err(io(&self.path))?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(SecretFileError::NotPrivate {
                path: self.path.display().to_string(),
                mode,
                name: self.name,
                remedy: self.remedy,
            });
        }
        let me = nix::unistd::geteuid().as_raw();
        if meta.uid() != me {
            return Err(SecretFileError::NotOwned {
                path: self.path.display().to_string(),
                owner: meta.uid(),
                me,
            });
        }
        Ok(meta)
    }

    /// The text of the file `meta` ([`Self::check`]'s) describes; a file
    /// over [`MAX_BYTES`] is malformed.
    pub fn read_text(&self, meta: &fs::Metadata) -> Result<String, SecretFileError> {
        if meta.len() > MAX_BYTES {
            return Err(self.malformed("too large"));
        }
        fs::read_to_string(&self.path).map_err(io(&self.path))
    }

    /// Replaces the file with one holding `text`: written beside it
    /// (0600) and renamed over it. The directory is made when missing.
    pub fn replace(&self, text: &str) -> Result<(), SecretFileError> {
        self.make_dir()?;
        let file = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = self
            .path
            .with_file_name(format!(".{file}.{}.tmp", std::process::id()));
        let _ = fs::remove_file(&tmp);
        Self::write_new(&tmp, text).map_err(io(&tmp))?;
        fs::rename(&tmp, &self.path).map_err(io(&self.path))
    }
}

/// Fills `buf` from the OS's generator (through `rand`).
pub fn fill_random(buf: &mut [u8]) {
    if rand::rngs::OsRng.try_fill_bytes(buf).is_err() {
        // OsRng failing is a broken machine; ThreadRng is seeded from it
        // and reseeds, the next best.
        rand::RngCore::fill_bytes(&mut rand::rng(), buf);
    }
}

/// `bytes` as lowercase hex digits.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path) -> SecretFile {
        SecretFile::new(dir.join("state/secret"), "test secret", "remove it")
    }

    #[test]
    fn made_once_private_in_a_private_dir_and_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path());
        assert!(f.create_new("one\n").unwrap());
        assert!(!f.create_new("two\n").unwrap(), "made once");
        let meta = f.check().unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let d = fs::metadata(dir.path().join("state")).unwrap();
        assert_eq!(d.permissions().mode() & 0o777, 0o700);
        assert_eq!(f.read_text(&meta).unwrap(), "one\n");
        f.replace("three\n").unwrap();
        let meta = f.check().unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(f.read_text(&meta).unwrap(), "three\n");
        let left: Vec<_> = fs::read_dir(dir.path().join("state")).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left beside it");
    }

    #[test]
    fn a_file_others_may_read_or_past_the_bound_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path());
        f.create_new(&"a".repeat(MAX_BYTES as usize)).unwrap();
        let meta = f.check().unwrap();
        assert!(f.read_text(&meta).is_ok(), "at the bound: read");
        f.replace(&"a".repeat(MAX_BYTES as usize + 1)).unwrap();
        let meta = f.check().unwrap();
        let e = f.read_text(&meta).unwrap_err();
        assert!(matches!(e, SecretFileError::Malformed { .. }), "{e}");
        fs::set_permissions(f.path(), fs::Permissions::from_mode(0o604)).unwrap();
        let e = f.check().unwrap_err();
        assert!(matches!(e, SecretFileError::NotPrivate { .. }), "{e}");
        assert!(e.to_string().contains("test secret"), "{e}");
    }

    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
        let (mut a, mut b) = ([0u8; 32], [0u8; 32]);
        fill_random(&mut a);
        fill_random(&mut b);
        assert_ne!(a, b);
    }
}
