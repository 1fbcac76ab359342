//! Linux: `/etc/passwd` itself (see the module doc).

use std::path::PathBuf;

/// Linux: `/etc/passwd` itself. ccd's Linux binaries are static, and
/// glibc's `getpwnam`/`getpwuid` in a static binary load the NSS
/// modules with `dlopen`, which crashes a static PIE (SIGSEGV); so a
/// user known only to a directory service (LDAP, sssd) is not found.
pub(super) fn home(user: Option<&str>) -> Option<PathBuf> {
    let file = std::fs::File::open("/etc/passwd").ok()?;
    super::find(file, user, nix::unistd::getuid().as_raw())
}
