//! Taking ownership of the socket directory: private directory, single
//! instance lock, stale socket replaced only after a failed connect.

use ccd_socket_dir::SocketDir;
use std::fs::File;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

/// Why the daemon refuses to start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    SocketDir(#[from] ccd_socket_dir::SocketDirError),
    #[error("another ccd daemon is running (lock {lock} is held{holder})")]
    AlreadyRunning { lock: PathBuf, holder: String },
    #[error("another ccd daemon answers on {0}")]
    SocketInUse(PathBuf),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What the daemon holds while it runs: dropping it releases the lock.
pub struct Claimed {
    pub listener: std::os::unix::net::UnixListener,
    pub socket: PathBuf,
    _lock: nix::fcntl::Flock<File>,
}

/// Creates/verifies the directory, takes the lock, binds the socket (0600).
pub fn claim(dir: &SocketDir) -> Result<Claimed, StartupError> {
    dir.create_private()?;
    let lock_path = dir.daemon_lock();
    let io = |what, path: &PathBuf| {
        let path = path.clone();
        move |source| StartupError::Io { what, path, source }
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&lock_path)
        .map_err(io("opening lock file", &lock_path))?;
    let mut lock = match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
    {
        Ok(l) => l,
        Err((_, _)) => {
            let pid = std::fs::read_to_string(&lock_path).unwrap_or_default();
            let pid = pid.trim();
            return Err(StartupError::AlreadyRunning {
                lock: lock_path,
                holder: if pid.is_empty() {
                    String::new()
                } else {
                    format!(" by pid {pid}")
                },
            });
        }
    };
    {
        use std::io::{Seek, Write};
        let _ = lock.set_len(0);
        let _ = lock.seek(std::io::SeekFrom::Start(0));
        let _ = writeln!(lock, "{}", std::process::id());
    }
    let socket = dir.socket();
    if std::fs::symlink_metadata(&socket).is_ok() {
        // Replace it only if nobody answers there.
        if UnixStream::connect(&socket).is_ok() {
            return Err(StartupError::SocketInUse(socket));
        }
        tracing::info!(socket = %socket.display(), "replacing stale socket");
        std::fs::remove_file(&socket).map_err(io("removing stale socket", &socket))?;
    }
    let listener = bind_private(&socket).map_err(io("binding socket", &socket))?;
    Ok(Claimed {
        listener,
        socket,
        _lock: lock,
    })
}

/// Binds with a umask that leaves the socket 0600 from its first moment.
fn bind_private(path: &std::path::Path) -> std::io::Result<std::os::unix::net::UnixListener> {
    use nix::sys::stat::{umask, Mode};
    let old = umask(Mode::from_bits_truncate(0o177));
    let r = std::os::unix::net::UnixListener::bind(path);
    umask(old);
    let l = r?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(l)
}
