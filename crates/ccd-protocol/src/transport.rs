//! Where the socket lives. Pure functions: the caller supplies the
//! environment and uid, so both the daemon and clients (and tests) agree
//! without touching the process environment here.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Environment variable that overrides the socket directory (client, daemon
/// and holders all live in it).
pub const SOCKET_DIR_ENV: &str = "CCD_SOCKET_DIR";
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

/// The socket directory: `override_dir` (from `--socket-dir` or
/// `$CCD_SOCKET_DIR`) when given and non-empty, else [`default_socket_dir`].
pub fn socket_dir(
    override_dir: Option<&OsStr>,
    xdg_runtime_dir: Option<&OsStr>,
    uid: u32,
) -> PathBuf {
    match override_dir {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => default_socket_dir(xdg_runtime_dir, uid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let xdg = OsStr::new("/run/user/1000");
        assert_eq!(
            socket_dir(None, Some(xdg), 1000),
            PathBuf::from("/run/user/1000/ccd")
        );
        assert_eq!(socket_dir(None, None, 1000), PathBuf::from("/tmp/ccd-1000"));
        assert_eq!(
            socket_dir(None, Some(OsStr::new("relative")), 7),
            PathBuf::from("/tmp/ccd-7")
        );
        assert_eq!(
            socket_dir(Some(OsStr::new("/x/y")), Some(xdg), 1),
            PathBuf::from("/x/y")
        );
        assert_eq!(
            socket_dir(Some(OsStr::new("")), None, 5),
            PathBuf::from("/tmp/ccd-5")
        );
    }
}
