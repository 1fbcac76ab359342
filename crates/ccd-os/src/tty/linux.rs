//! Linux: `/proc/self/fd/N` opens the file a descriptor names as a new
//! description; `POLLRDHUP` reports the peer's shutdown.

use nix::poll::PollFlags;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;

/// A path naming the terminal `fd` is open on: `/proc/self/fd/N`,
/// which opens the file `fd` names as a new file description.
pub fn tty_path(fd: BorrowedFd<'_>) -> std::io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    Ok(PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd())))
}

/// `poll` events that report the client's socket hanging up: Linux
/// has `POLLRDHUP` (the peer shut its writing side; a bit nix's
/// `PollFlags` does not name, so `revents` reads `None` when it is set).
pub const HANGUP_EVENTS: PollFlags = PollFlags::from_bits_retain(libc::POLLRDHUP);

/// Whether `revents` (non-zero, for [`HANGUP_EVENTS`]) on `socket`
/// means its peer hung up.
pub fn hung_up(_socket: BorrowedFd<'_>, _revents: PollFlags) -> bool {
    true
}
