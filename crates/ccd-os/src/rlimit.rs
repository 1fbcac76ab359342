//! Resource limits: the soft `RLIMIT_NOFILE` raised to the hard one, so a
//! common soft limit of 1024 does not cap the daemon's connections (what
//! the daemon does with the limit, its connection cap, is its own:
//! `ccd-daemon`'s `limits`). Linux and macOS share `getrlimit`/`setrlimit`
//! through nix; they differ in the highest soft limit that may be asked
//! ([`SOFT_CAP`]).

use nix::sys::resource::{getrlimit, setrlimit, Resource};

/// The highest soft `RLIMIT_NOFILE` asked for, whatever the hard limit
/// (which may be unlimited: that cannot be the soft one for descriptors).
#[cfg(not(target_os = "macos"))]
pub const SOFT_CAP: u64 = 1 << 20;

/// The highest soft `RLIMIT_NOFILE` asked for: macOS's `OPEN_MAX`
/// (`<sys/syslimits.h>`). Its setrlimit(2) refuses a larger soft limit
/// with `EINVAL` ("use rlim_cur = min(OPEN_MAX, rlim_max)", COMPATIBILITY),
/// and its hard limit is often unlimited, so asking for more would leave
/// the default 256.
#[cfg(target_os = "macos")]
pub const SOFT_CAP: u64 = 10_240;

/// The soft limit to raise to under hard limit `hard`.
pub fn soft_target(hard: u64) -> u64 {
    hard.min(SOFT_CAP)
}

/// The descriptor limits around [`raise_nofile`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nofile {
    /// The soft limit found.
    pub before: u64,
    /// The soft limit in force afterwards (`before` if raising failed).
    pub soft: u64,
    pub hard: u64,
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (at most
/// [`SOFT_CAP`]; no privilege needed). Err: the limits cannot be read. A
/// refused raise is logged and leaves the soft limit as it was.
pub fn raise_nofile() -> Result<Nofile, nix::Error> {
    let (before, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    let mut soft = before;
    let target = soft_target(hard);
    if soft < target {
        match setrlimit(Resource::RLIMIT_NOFILE, target, hard) {
            Ok(()) => soft = target,
            Err(error) => tracing::warn!(%error, "cannot raise the soft RLIMIT_NOFILE"),
        }
    }
    Ok(Nofile { before, soft, hard })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_goes_up_to_the_hard_one_within_the_cap() {
        assert_eq!(soft_target(4096), 4096);
        assert_eq!(soft_target(u64::MAX), SOFT_CAP, "an unlimited hard limit");
    }

    #[test]
    fn raising_leaves_the_soft_limit_at_the_target() {
        let n = raise_nofile().expect("limits");
        assert!(n.soft >= n.before);
        assert_eq!(n.soft, soft_target(n.hard).max(n.before));
        let (now, _) = getrlimit(Resource::RLIMIT_NOFILE).expect("limits");
        assert_eq!(now, n.soft);
    }
}
