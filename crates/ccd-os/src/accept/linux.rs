//! Linux: the accept errors only Linux reports for one failed connection.

/// Errors that mean this connection failed, not the listener: `ENONET`
/// ("machine is not on the network"), which accept(2) lists among the
/// network errors Linux passes on from the new socket.
pub(super) const RETRY_HERE: &[i32] = &[libc::ENONET];
