//! macOS: Directory Services through `getpwnam`/`getpwuid` (nix).

use std::path::PathBuf;

/// macOS: the system's `getpwnam`/`getpwuid` (Directory Services; the
/// binaries are not static there).
pub(super) fn home(user: Option<&str>) -> Option<PathBuf> {
    let found = match user {
        None => nix::unistd::User::from_uid(nix::unistd::getuid()),
        Some(name) => nix::unistd::User::from_name(name),
    };
    found.ok().flatten().map(|u| u.dir)
}
