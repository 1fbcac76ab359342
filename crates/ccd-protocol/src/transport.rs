//! Where the socket lives. Pure functions: the caller supplies the
//! environment and uid, so both the daemon and clients (and tests) agree
//! without touching the process environment here.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Environment variable that overrides the socket path (client and daemon).
pub const SOCKET_ENV: &str = "CCD_SOCKET";
/// File name of the socket inside its directory.
pub const SOCKET_FILE_NAME: &str = "ccd.sock";

/// The directory holding the socket (mode 0700, owned by the user):
/// `$XDG_RUNTIME_DIR/ccd` when `XDG_RUNTIME_DIR` is set to an absolute path,
/// else `/tmp/ccd-<uid>`.
pub fn default_socket_dir(xdg_runtime_dir: Option<&OsStr>, uid: u32) -> PathBuf {
    match xdg_runtime_dir {
        Some(dir) if !dir.is_empty() && Path::new(dir).is_absolute() => Path::new(dir).join("ccd"),
        _ => PathBuf::from(format!("/tmp/ccd-{uid}")),
    }
}

/// The socket path: `override_path` (from `--socket` or `$CCD_SOCKET`) when
/// given and non-empty, else [`default_socket_dir`]`/ccd.sock`.
pub fn socket_path(
    override_path: Option<&OsStr>,
    xdg_runtime_dir: Option<&OsStr>,
    uid: u32,
) -> PathBuf {
    match override_path {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => default_socket_dir(xdg_runtime_dir, uid).join(SOCKET_FILE_NAME),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let xdg = OsStr::new("/run/user/1000");
        assert_eq!(
            socket_path(None, Some(xdg), 1000),
            PathBuf::from("/run/user/1000/ccd/ccd.sock")
        );
        assert_eq!(
            socket_path(None, None, 1000),
            PathBuf::from("/tmp/ccd-1000/ccd.sock")
        );
        assert_eq!(
            socket_path(None, Some(OsStr::new("relative")), 7),
            PathBuf::from("/tmp/ccd-7/ccd.sock")
        );
        assert_eq!(
            socket_path(Some(OsStr::new("/x/y.sock")), Some(xdg), 1),
            PathBuf::from("/x/y.sock")
        );
        assert_eq!(
            socket_path(Some(OsStr::new("")), None, 5),
            PathBuf::from("/tmp/ccd-5/ccd.sock")
        );
    }
}
