//! The daemon's descriptor budget and the connection cap derived from it.
//!
//! At start the soft `RLIMIT_NOFILE` is raised to the hard one
//! (`ccd_os::rlimit`; both logged): a common soft limit of 1024 is
//! otherwise used up by a thousand idle connections. Of the limit, [`reserve`] descriptors are kept for
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

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (`ccd_os::rlimit`,
/// which knows each system's cap); returns the soft limit in force
/// afterwards (the old one if raising failed). Logged.
pub fn raise_nofile() -> u64 {
    let n = match ccd_os::rlimit::raise_nofile() {
        Ok(n) => n,
        Err(error) => {
            tracing::warn!(%error, "cannot read RLIMIT_NOFILE; assuming 1024");
            return 1024;
        }
    };
    tracing::info!(
        soft_before = n.before,
        soft = n.soft,
        hard = n.hard,
        max_clients = max_clients(n.soft),
        "descriptor limit"
    );
    n.soft
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
}
