//! The private directory that holds the daemon's socket, its lock, and the
//! holders' sockets.
//!
//! Resolution: an explicit path (`--socket-dir`), else `$CCD_SOCKET_DIR`,
//! else `$XDG_RUNTIME_DIR/ccd`, else `/tmp/ccd-<uid>`. The directory must be
//! a real directory (not a symlink: checked with `lstat`), owned by the
//! current user, with no permission bits for group or others. The daemon
//! creates it 0700 and refuses to start otherwise; clients refuse to talk
//! through a directory that fails the same check.

use ccd_protocol::transport;
use std::path::{Path, PathBuf};

/// The socket directory of one ccd instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketDir {
    path: PathBuf,
}

/// Why the socket directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SocketDirError {
    #[error("socket directory {path} is a symlink; refusing to use it")]
    Symlink { path: PathBuf },
    #[error("socket directory {path} is not a directory")]
    NotADirectory { path: PathBuf },
    #[error("socket directory {path} is owned by uid {owner}, not by you (uid {ours}); refusing to use it")]
    WrongOwner {
        path: PathBuf,
        owner: u32,
        ours: u32,
    },
    #[error("socket directory {path} has mode {mode:o}; it must be private (0700). Fix: chmod 700 {path}")]
    NotPrivate { path: PathBuf, mode: u32 },
    #[error("socket directory {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The socket file's name in the directory.
pub const SOCKET_NAME: &str = transport::SOCKET_FILE_NAME;

impl SocketDir {
    /// Uses `path` as is.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Resolves the directory from `explicit`, the environment and the uid.
    pub fn resolve(explicit: Option<&Path>) -> Self {
        let from_env = std::env::var_os(transport::SOCKET_DIR_ENV);
        let override_dir = explicit.map(|p| p.as_os_str()).or(from_env.as_deref());
        let xdg = std::env::var_os("XDG_RUNTIME_DIR");
        Self::new(transport::socket_dir(
            override_dir,
            xdg.as_deref(),
            nix::unistd::getuid().as_raw(),
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The daemon's socket.
    pub fn socket(&self) -> PathBuf {
        self.path.join(SOCKET_NAME)
    }

    /// The daemon's single-instance lock.
    pub fn daemon_lock(&self) -> PathBuf {
        self.path.join("daemon.lock")
    }

    /// Taken by a client while it starts a daemon.
    pub fn start_lock(&self) -> PathBuf {
        self.path.join("start.lock")
    }

    /// Where holders put their sockets.
    pub fn holders_dir(&self) -> PathBuf {
        self.path.join("holders")
    }

    /// Creates the directory (mode 0700) if missing, then [`Self::verify`]s
    /// it. Parents of an explicit directory are created with default modes.
    pub fn create_private(&self) -> Result<(), SocketDirError> {
        let io = |source| SocketDirError::Io {
            path: self.path.clone(),
            source,
        };
        match std::fs::symlink_metadata(&self.path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(parent) = self.path.parent() {
                    std::fs::create_dir_all(parent).map_err(io)?;
                }
                let mut b = std::fs::DirBuilder::new();
                #[cfg(unix)]
                std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
                match b.create(&self.path) {
                    Ok(()) => {}
                    // Someone else created it meanwhile: verify theirs.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(io(e)),
                }
            }
            Err(e) => return Err(io(e)),
        }
        self.verify()?;
        let holders = self.holders_dir();
        let mut b = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        match b.create(&holders) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(SocketDirError::Io {
                path: holders,
                source: e,
            }),
        }
    }

    /// Checks, without following symlinks, that the directory is ours and
    /// private.
    pub fn verify(&self) -> Result<(), SocketDirError> {
        let meta = std::fs::symlink_metadata(&self.path).map_err(|source| SocketDirError::Io {
            path: self.path.clone(),
            source,
        })?;
        if meta.file_type().is_symlink() {
            return Err(SocketDirError::Symlink {
                path: self.path.clone(),
            });
        }
        if !meta.is_dir() {
            return Err(SocketDirError::NotADirectory {
                path: self.path.clone(),
            });
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let ours = nix::unistd::getuid().as_raw();
            if meta.uid() != ours {
                return Err(SocketDirError::WrongOwner {
                    path: self.path.clone(),
                    owner: meta.uid(),
                    ours,
                });
            }
            let mode = meta.mode() & 0o7777;
            if mode & 0o077 != 0 {
                return Err(SocketDirError::NotPrivate {
                    path: self.path.clone(),
                    mode,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn creates_private_and_refuses_bad_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let d = SocketDir::new(tmp.path().join("a/b/ccd"));
        d.create_private().unwrap();
        let mode = std::fs::metadata(d.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert!(d.holders_dir().is_dir());
        d.create_private().unwrap(); // idempotent

        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(matches!(
            d.verify(),
            Err(SocketDirError::NotPrivate { mode: 0o755, .. })
        ));

        let link = SocketDir::new(tmp.path().join("link"));
        std::os::unix::fs::symlink(d.path(), link.path()).unwrap();
        assert!(matches!(
            link.create_private(),
            Err(SocketDirError::Symlink { .. })
        ));

        let file = SocketDir::new(tmp.path().join("file"));
        std::fs::write(file.path(), b"").unwrap();
        assert!(matches!(
            file.verify(),
            Err(SocketDirError::NotADirectory { .. })
        ));
    }
}
