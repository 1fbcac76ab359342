//! The passwd database: a user's home directory, for `~` and `~name`
//! (the daemon's `dirs.complete`).
//!
//! - Linux (`linux`): `/etc/passwd` itself, read by [`find`]. ccd's
//!   Linux binaries are static, and glibc's `getpwnam`/`getpwuid` in a
//!   static binary load the NSS modules with `dlopen`, which crashes a
//!   static PIE (SIGSEGV); so a user known only to a directory service
//!   (LDAP, sssd) is not found.
//! - macOS (`macos`): the system's `getpwnam`/`getpwuid` (Directory
//!   Services; the binaries are not static there).
//! - Elsewhere: no lookup (`~` is `$HOME` only).

use std::path::PathBuf;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as imp;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as imp;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod imp {
    use std::path::PathBuf;

    /// Elsewhere: no lookup (`~` is `$HOME` only).
    pub(super) fn home(_user: Option<&str>) -> Option<PathBuf> {
        None
    }
}

/// The home directory of `user` (`None`: the process's uid) in the
/// passwd database, as read on this system (see the module doc).
pub fn home(user: Option<&str>) -> Option<PathBuf> {
    imp::home(user)
}

/// The most of `/etc/passwd` read for one lookup (a user past it is
/// not found): 4 MiB, some 50,000 users.
pub const MAX_PASSWD_BYTES: u64 = 4 << 20;

/// The home (6th field) of the entry named `user`, or with uid `uid`
/// when `user` is `None`, in passwd-format text (`name:pw:uid:gid:
/// gecos:dir:shell` a line); at most [`MAX_PASSWD_BYTES`] are read.
pub fn find(text: impl std::io::Read, user: Option<&str>, uid: u32) -> Option<PathBuf> {
    use std::io::BufRead;
    use std::os::unix::ffi::OsStringExt;
    let uid = uid.to_string();
    let reader = std::io::BufReader::new(text.take(MAX_PASSWD_BYTES));
    for entry in reader.split(b'\n') {
        let entry = entry.ok()?;
        let fields: Vec<&[u8]> = entry.split(|b| *b == b':').collect();
        let (Some(name), Some(id), Some(dir)) = (fields.first(), fields.get(2), fields.get(5))
        else {
            continue;
        };
        let hit = match user {
            Some(u) => *name == u.as_bytes(),
            None => *id == uid.as_bytes(),
        };
        if hit && !dir.is_empty() {
            return Some(PathBuf::from(std::ffi::OsString::from_vec(dir.to_vec())));
        }
    }
    None
}
