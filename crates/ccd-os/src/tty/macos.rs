//! macOS (and any system without `/proc` or `POLLRDHUP`): the device's
//! own name; readability, told apart from a request by a peek.

use super::{device_name, peer_closed};
use nix::poll::PollFlags;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;

/// A path naming the terminal `fd` is open on: its device's name
/// (`ttyname(3)`, e.g. `/dev/ttys003`). The device itself, never the
/// `/dev/tty` alias: macOS's `poll` (kqueue underneath) refuses that
/// one (`POLLNVAL`; tokio-rs/mio#1377), while a pseudo-terminal's own
/// device polls as on Linux.
pub fn tty_path(fd: BorrowedFd<'_>) -> std::io::Result<PathBuf> {
    device_name(fd)
}

/// `poll` events that report the client's socket hanging up: without
/// `POLLRDHUP`, readability (an end of file is readable; so is a
/// request, which [`hung_up`] tells apart).
pub const HANGUP_EVENTS: PollFlags = PollFlags::POLLIN;

/// Whether `revents` (non-zero, for [`HANGUP_EVENTS`]) on `socket`
/// means its peer hung up: an error or hang-up flag, or an end of file
/// where a request would be (one byte peeked, nothing consumed).
pub fn hung_up(socket: BorrowedFd<'_>, revents: PollFlags) -> bool {
    revents.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL)
        || peer_closed(socket)
}
