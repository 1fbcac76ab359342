//! Which connections the holder takes: at most [`MAX_CONNECTIONS`] at
//! once, of which the last [`DAEMON_RESERVE`] only from the daemon.
//!
//! Invariant: a connection that is not the daemon's is served only while
//! fewer than `MAX_CONNECTIONS - DAEMON_RESERVE` are open, the daemon's
//! while fewer than `MAX_CONNECTIONS` are; so however many connections
//! other same-uid clients open (idle or not), the daemon always finds
//! [`DAEMON_RESERVE`] slots it does not already use itself. Only the accept
//! loop admits connections (one at a time), so the count it looked at
//! holds until the connection is registered.
//!
//! The daemon is told apart by the kernel, not by what a client says: the
//! peer's pid (`SO_PEERCRED`, `LOCAL_PEERPID`: the process that connected,
//! [`ccd_socket_dir::peer`]) must be the pid in the daemon's lock file
//! (`daemon.lock` in the socket directory, written by the daemon once it
//! holds the lock). The file is read only when a connection comes while
//! the open ones are in the reserve, and read again each time, so a
//! restarted daemon (which adopts the running holders) is known at once
//! and holders need no word from it: a holder started by any daemon
//! version serves any other this way.
//!
//! A connection the daemon opens to pass on (a direct stream) is the
//! daemon's to the kernel, but a client's in use: it says so in its hello
//! (`holder.hello` with `direct`, the connection's first request), and is
//! then held to the others' rule ([`admit_direct`]): taken only while
//! fewer than [`MAX_OTHER_CONNECTIONS`] connections besides it are open,
//! else its hello is refused and the connection closed (the daemon reads
//! that reply before it passes anything). Every connection that is not the
//! daemon's own was taken while the open ones, it included, were at most
//! `MAX_OTHER_CONNECTIONS`, and all of those are counted by the later
//! ones; so other clients and direct streams together never hold more than
//! `MAX_OTHER_CONNECTIONS`, and the reserve stays the daemon's however many
//! direct streams clients ask for. A direct stream between its connect and
//! its hello (one round trip) counts as the daemon's.

use std::path::{Path, PathBuf};

/// The most connections a holder serves at once. The daemon keeps two per
/// holder (`holder.info`, input/resize) and one per attachment, and opens
/// a few short-lived ones (screen, kill, collect); a direct stream counts
/// among the others' ([`admit_direct`]): 64 leaves room for dozens of
/// attached terminals while a
/// flood of connections costs the holder at most 64 threads (+ 64 pumps)
/// and 64 descriptors.
pub const MAX_CONNECTIONS: usize = 64;

/// Slots of [`MAX_CONNECTIONS`] only the daemon's connections take: its
/// two kept connections and a few calls (screen, input, kill, collect) or
/// attachments at once, whatever other clients hold.
pub const DAEMON_RESERVE: usize = 8;

/// The most connections a holder serves at once that are not the
/// daemon's.
pub const MAX_OTHER_CONNECTIONS: usize = MAX_CONNECTIONS - DAEMON_RESERVE;

/// What happens to a new connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Served.
    Serve,
    /// Refused: [`MAX_CONNECTIONS`] are open.
    Full,
    /// Refused: the free slots are the daemon's, and this is not the
    /// daemon.
    Reserved,
}

/// What a connection gets when `open` connections are being served;
/// `is_daemon` (called only when the reserve is reached) says whether it
/// comes from the daemon.
pub fn admit(open: usize, is_daemon: impl FnOnce() -> bool) -> Admission {
    if open >= MAX_CONNECTIONS {
        Admission::Full
    } else if open < MAX_OTHER_CONNECTIONS || is_daemon() {
        Admission::Serve
    } else {
        Admission::Reserved
    }
}

/// What a direct stream (a connection whose hello says `direct`) gets
/// when `open_besides` other connections are being served: the rule for a
/// connection that is not the daemon's ([`Admission::Reserved`] when it
/// would reach into the reserve).
pub fn admit_direct(open_besides: usize) -> Admission {
    if open_besides < MAX_OTHER_CONNECTIONS {
        Admission::Serve
    } else {
        Admission::Reserved
    }
}

/// Where the daemon's pid is to be read (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct DaemonLock {
    path: Option<PathBuf>,
}

impl DaemonLock {
    /// The daemon's lock file at `path`; `None`: no daemon is known (a
    /// holder run on its own), the reserve serves no one.
    pub fn new(path: Option<PathBuf>) -> Self {
        Self { path }
    }

    /// The daemon's pid now, from its lock file; `None` when there is no
    /// file, or no pid in it (a daemon between taking the lock and writing
    /// its pid, or none running since the file was made).
    pub fn pid(&self) -> Option<u32> {
        let text = std::fs::read_to_string(self.path.as_deref()?).ok()?;
        text.trim().parse::<u32>().ok().filter(|&p| p > 0)
    }

    /// True when `peer` (a connection's pid) is the daemon's.
    pub fn is_daemon(&self, peer: Option<u32>) -> bool {
        peer.is_some_and(|p| self.pid() == Some(p))
    }
}

/// The daemon's lock file for a holder whose socket is `socket`: the
/// daemon puts holders' sockets in `holders/` of its socket directory, its
/// lock beside that (`<dir>/holders/<id>.sock` → `<dir>/daemon.lock`).
pub fn daemon_lock_of(socket: &Path) -> Option<PathBuf> {
    let holders = socket.parent()?;
    if holders.file_name()? != "holders" {
        return None;
    }
    Some(holders.parent()?.join("daemon.lock"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn anyone_is_served_below_the_reserve_without_asking_who() {
        let asked = Cell::new(false);
        for open in [0, 1, MAX_OTHER_CONNECTIONS - 1] {
            let a = admit(open, || {
                asked.set(true);
                false
            });
            assert_eq!(a, Admission::Serve, "{open} open");
        }
        assert!(!asked.get(), "the lock file is read only in the reserve");
    }

    #[test]
    fn the_reserve_serves_the_daemon_only() {
        for open in MAX_OTHER_CONNECTIONS..MAX_CONNECTIONS {
            assert_eq!(admit(open, || false), Admission::Reserved, "{open} open");
            assert_eq!(admit(open, || true), Admission::Serve, "{open} open");
        }
    }

    #[test]
    fn no_one_is_served_past_the_cap() {
        for open in [MAX_CONNECTIONS, MAX_CONNECTIONS + 1] {
            assert_eq!(admit(open, || true), Admission::Full);
            assert_eq!(admit(open, || false), Admission::Full);
        }
    }

    #[test]
    fn others_filling_their_slots_leave_the_reserve_to_the_daemon() {
        // Others connect until refused; the daemon then still gets every
        // reserved slot, and others none of them.
        let mut open = 0;
        while admit(open, || false) == Admission::Serve {
            open += 1;
        }
        assert_eq!(open, MAX_OTHER_CONNECTIONS);
        let mut daemons = 0;
        while admit(open, || true) == Admission::Serve {
            assert_eq!(admit(open, || false), Admission::Reserved);
            open += 1;
            daemons += 1;
        }
        assert_eq!(daemons, DAEMON_RESERVE);
    }

    #[test]
    fn direct_streams_and_others_together_leave_the_reserve_to_the_daemon() {
        // The daemon's two kept connections, then direct streams (each the
        // daemon's at accept, a client's at its hello) and other clients
        // alternately, until both are refused.
        let mut open = 2;
        let mut not_daemons = 0;
        loop {
            let mut taken = false;
            // A direct stream: admitted as the daemon's, then its hello.
            if admit(open, || true) == Admission::Serve && admit_direct(open) == Admission::Serve {
                not_daemons += 1;
                open += 1;
                taken = true;
            }
            if admit(open, || false) == Admission::Serve {
                not_daemons += 1;
                open += 1;
                taken = true;
            }
            if !taken {
                break;
            }
        }
        assert_eq!(open, MAX_OTHER_CONNECTIONS);
        assert_eq!(not_daemons, MAX_OTHER_CONNECTIONS - 2);
        // The daemon's own connections still find every reserved slot.
        let mut daemons = 0;
        while admit(open, || true) == Admission::Serve {
            assert_eq!(admit_direct(open), Admission::Reserved);
            open += 1;
            daemons += 1;
        }
        assert_eq!(daemons, DAEMON_RESERVE);
    }

    #[test]
    fn a_direct_stream_is_taken_below_the_others_share_only() {
        assert_eq!(admit_direct(0), Admission::Serve);
        assert_eq!(admit_direct(MAX_OTHER_CONNECTIONS - 1), Admission::Serve);
        for open in MAX_OTHER_CONNECTIONS..=MAX_CONNECTIONS {
            assert_eq!(admit_direct(open), Admission::Reserved, "{open} besides");
        }
    }

    #[test]
    fn the_daemon_is_the_pid_in_its_lock_file_read_each_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("daemon.lock");
        let lock = DaemonLock::new(Some(path.clone()));
        assert_eq!(lock.pid(), None, "no file");
        assert!(!lock.is_daemon(Some(1234)));
        std::fs::write(&path, "1234\n").expect("write");
        assert!(lock.is_daemon(Some(1234)));
        assert!(!lock.is_daemon(Some(4321)));
        assert!(
            !lock.is_daemon(None),
            "a peer without a pid is not the daemon"
        );
        // A restarted daemon rewrites the file: known at once.
        std::fs::write(&path, "4321\n").expect("write");
        assert!(lock.is_daemon(Some(4321)));
        assert!(!lock.is_daemon(Some(1234)));
        for junk in ["", "\n", "0\n", "-5\n", "12ab\n"] {
            std::fs::write(&path, junk).expect("write");
            assert_eq!(lock.pid(), None, "{junk:?}");
        }
        assert!(!DaemonLock::new(None).is_daemon(Some(1234)));
    }

    #[test]
    fn the_lock_file_is_beside_the_holders_directory() {
        assert_eq!(
            daemon_lock_of(Path::new("/run/user/1000/ccd/holders/h1234abcd.sock")),
            Some(PathBuf::from("/run/user/1000/ccd/daemon.lock"))
        );
        assert_eq!(daemon_lock_of(Path::new("/tmp/x/h.sock")), None);
        assert_eq!(daemon_lock_of(Path::new("h.sock")), None);
        assert_eq!(
            daemon_lock_of(Path::new("holders/h.sock")),
            Some(PathBuf::from("daemon.lock"))
        );
    }
}
