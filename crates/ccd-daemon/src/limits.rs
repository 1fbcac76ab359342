//! The daemon's descriptor budget and the connection cap derived from it.
//!
//! At start the soft `RLIMIT_NOFILE` is raised to the hard one (both
//! logged): a common soft limit of 1024 is otherwise used up by a thousand
//! idle connections. Of the limit, [`reserve`] descriptors are kept for
//! what is not a client (holder connections: `holder.info`, input, relays;
//! logs, inotify, the runtime); the rest is split two per client (its
//! socket and the holder connection of one attachment or call), capped at
//! [`MAX_CLIENTS`]:
//!
//! | soft limit | reserve | clients |
//! |---|---|---|
//! | 256 | 64 | 96 |
//! | 1024 | 256 | 384 |
//! | ≥ 2,560 | limit / 4 | 1024 |

/// The most client connections served at once, whatever the fd limit
/// (each costs a task, a read buffer and up to 8 MiB of queued output).
pub const MAX_CLIENTS: usize = 1024;

/// Descriptors kept for anything but client sockets: a quarter of the
/// limit, at least 64.
pub fn reserve(nofile: u64) -> u64 {
    (nofile / 4).max(64)
}

/// The connection cap for a soft fd limit of `nofile` (at least 1).
pub fn max_clients(nofile: u64) -> usize {
    let per_client = nofile.saturating_sub(reserve(nofile)) / 2;
    usize::try_from(per_client)
        .unwrap_or(usize::MAX)
        .clamp(1, MAX_CLIENTS)
}

/// The highest soft `RLIMIT_NOFILE` asked for, whatever the hard limit
/// (which may be unlimited: that cannot be the soft one for descriptors).
#[cfg(not(target_os = "macos"))]
const SOFT_CAP: u64 = 1 << 20;

/// The highest soft `RLIMIT_NOFILE` asked for: macOS's `OPEN_MAX`
/// (`<sys/syslimits.h>`). Its setrlimit(2) refuses a larger soft limit
/// with `EINVAL` ("use rlim_cur = min(OPEN_MAX, rlim_max)", COMPATIBILITY),
/// and its hard limit is often unlimited, so asking for more would leave
/// the default 256.
#[cfg(target_os = "macos")]
const SOFT_CAP: u64 = 10_240;

/// The soft limit to raise to under hard limit `hard`.
fn soft_target(hard: u64) -> u64 {
    hard.min(SOFT_CAP)
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (at most
/// [`SOFT_CAP`]); returns the soft limit in force afterwards (the old one
/// if raising failed). Logged.
pub fn raise_nofile() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (before, hard) = match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok(limits) => limits,
        Err(error) => {
            tracing::warn!(%error, "cannot read RLIMIT_NOFILE; assuming 1024");
            return 1024;
        }
    };
    let mut soft = before;
    let target = soft_target(hard);
    if soft < target {
        // Raising soft up to hard needs no privilege.
        match setrlimit(Resource::RLIMIT_NOFILE, target, hard) {
            Ok(()) => soft = target,
            Err(error) => tracing::warn!(%error, "cannot raise the soft RLIMIT_NOFILE"),
        }
    }
    tracing::info!(
        soft_before = before,
        soft,
        hard,
        max_clients = max_clients(soft),
        "descriptor limit"
    );
    soft
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_a_reserve_and_two_descriptors_per_client() {
        assert_eq!(max_clients(256), 96);
        assert_eq!(max_clients(1024), 384);
        assert_eq!(max_clients(1 << 20), MAX_CLIENTS);
        assert_eq!(max_clients(10), 1);
        assert_eq!(max_clients(u64::MAX), MAX_CLIENTS);
    }

    #[test]
    fn the_soft_limit_goes_up_to_the_hard_one_within_the_cap() {
        assert_eq!(soft_target(4096), 4096);
        assert_eq!(soft_target(u64::MAX), SOFT_CAP, "an unlimited hard limit");
    }
}
