//! The login secret and the revocation generation, in one 0600 file
//! (`<state dir>/web-token`).
//!
//! The file holds two lines: the token (256 random bits, 64 hex digits)
//! and `generation N`. The token is created once, with `O_EXCL` and mode
//! 0600; a file that group or others may read (or that another user owns)
//! is refused, never used (a `ccd_notify::secret_file`, made, checked and
//! replaced as the prompt-link key is). `ccd web --revoke` bumps the
//! generation (written beside the file and renamed over it, mode 0600): every
//! session cookie carries the generation it was issued under, and the
//! server re-reads the generation before it honours a cookie
//! ([`TokenFile::generation`]), so a revoke ends every cookie of a server
//! that is running, without talking to it.
//!
//! Pure file I/O; no async. Who calls: `run` (once, at start), the auth
//! check on each request (a `stat` and, when it changed, a read of ~80
//! bytes).

use ccd_notify::secret_file::{fill_random, hex, SecretFile, SecretFileError};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;
use std::time::SystemTime;

/// The token file's name in the state directory.
pub const FILE_NAME: &str = "web-token";

/// What can be wrong with the token file (one secret file's errors).
pub type TokenError = SecretFileError;

/// The token and the generation, as last read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    /// 64 lowercase hex digits.
    pub token: String,
    pub generation: u64,
}

/// The token file of one state directory.
#[derive(Debug)]
pub struct TokenFile {
    file: SecretFile,
    /// (mtime, size, inode) of the last read, and what it said: a request
    /// re-reads only when the file changed.
    cache: Mutex<Option<(Stamp, Contents)>>,
}

type Stamp = (SystemTime, u64, u64);

impl TokenFile {
    pub fn in_dir(state_dir: &Path) -> Self {
        Self {
            file: SecretFile::new(
                state_dir.join(FILE_NAME),
                "ccd web token",
                "remove it and run ccd web --revoke to make a new one",
            ),
            cache: Mutex::new(None),
        }
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Reads the file, creating it (a fresh token, generation 0) when
    /// there is none. The directory is made (0700) when missing.
    pub fn load_or_create(&self) -> Result<Contents, TokenError> {
        let fresh = Contents {
            token: new_secret(),
            generation: 0,
        };
        if self.file.create_new(&render(&fresh))? {
            tracing::info!(path = %self.path().display(), "created the ccd web token");
        }
        self.read()
    }

    /// Reads the file as it is now (checked private).
    pub fn read(&self) -> Result<Contents, TokenError> {
        let meta = self.file.check()?;
        let stamp = (
            meta.modified().map_err(|source| TokenError::Io {
                path: self.path().display().to_string(),
                source,
            })?,
            meta.len(),
            meta.ino(),
        );
        if let Ok(cache) = self.cache.lock() {
            if let Some((s, c)) = cache.as_ref() {
                if *s == stamp {
                    return Ok(c.clone());
                }
            }
        }
        let text = self.file.read_text(&meta)?;
        let contents = parse(&text).map_err(|why| self.file.malformed(why))?;
        if let Ok(mut cache) = self.cache.lock() {
            *cache = Some((stamp, contents.clone()));
        }
        Ok(contents)
    }

    /// The generation now: cookies of an older one are void.
    pub fn generation(&self) -> Result<u64, TokenError> {
        self.read().map(|c| c.generation)
    }

    /// `--revoke`: the next generation, written atomically (0600). The
    /// token stays; every cookie issued before is void from now on.
    pub fn revoke(&self) -> Result<u64, TokenError> {
        let now = self.load_or_create()?;
        let next = Contents {
            token: now.token,
            generation: now.generation.saturating_add(1),
        };
        self.file.replace(&render(&next))?;
        Ok(next.generation)
    }
}

/// 256 random bits as 64 hex digits (the OS's generator, through `rand`).
pub fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    fill_random(&mut bytes);
    hex(&bytes)
}

fn render(c: &Contents) -> String {
    format!("{}\ngeneration {}\n", c.token, c.generation)
}

fn parse(text: &str) -> Result<Contents, &'static str> {
    let mut lines = text.lines();
    let token = lines.next().ok_or("empty")?.trim().to_string();
    if token.len() != 64 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("the first line is not 64 hex digits");
    }
    let generation = match lines.next() {
        None => 0,
        Some(l) => l
            .trim()
            .strip_prefix("generation ")
            .and_then(|n| n.trim().parse().ok())
            .ok_or("the second line is not `generation N`")?,
    };
    Ok(Contents {
        token: token.to_ascii_lowercase(),
        generation,
    })
}

/// Compares two secrets in time that does not depend on where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn created_private_once_and_revoke_bumps_the_generation_only() {
        let dir = tempfile::tempdir().unwrap();
        let f = TokenFile::in_dir(&dir.path().join("state"));
        let a = f.load_or_create().unwrap();
        assert_eq!(a.token.len(), 64);
        assert_eq!(a.generation, 0);
        let mode = fs::metadata(f.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(f.load_or_create().unwrap(), a, "created once");
        assert_eq!(f.revoke().unwrap(), 1);
        let b = TokenFile::in_dir(&dir.path().join("state")).read().unwrap();
        assert_eq!(b.token, a.token);
        assert_eq!(b.generation, 1);
        // The first reader sees the new generation too (its cache follows
        // the file).
        assert_eq!(f.generation().unwrap(), 1);
    }

    #[test]
    fn a_file_others_may_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = TokenFile::in_dir(dir.path());
        f.load_or_create().unwrap();
        fs::set_permissions(f.path(), fs::Permissions::from_mode(0o640)).unwrap();
        let e = f.read().unwrap_err();
        assert!(matches!(e, TokenError::NotPrivate { .. }), "{e}");
        assert!(f.load_or_create().is_err());
    }

    #[test]
    fn malformed_files_are_refused() {
        assert!(parse("").is_err());
        assert!(parse("abc\n").is_err());
        assert!(parse(&format!("{}\ngen 1\n", "a".repeat(64))).is_err());
        assert_eq!(parse(&"A".repeat(64)).unwrap().generation, 0);
    }

    #[test]
    fn secrets_are_distinct_and_compared_whole() {
        let (a, b) = (new_secret(), new_secret());
        assert_ne!(a, b);
        assert!(same_secret(&a, &a.clone()));
        assert!(!same_secret(&a, &b));
        assert!(!same_secret(&a, &a[..63]));
    }
}
