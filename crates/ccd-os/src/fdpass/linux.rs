//! Linux: `recvmsg` installs the descriptors close-on-exec itself
//! (`MSG_CMSG_CLOEXEC`); nothing follows the call.

use std::os::fd::OwnedFd;

/// `recvmsg`'s flags (module doc, "Close-on-exec").
pub(super) const RECV_FLAGS: libc::c_int = libc::MSG_CMSG_CLOEXEC;

/// Nothing to do: the kernel set close-on-exec.
pub(super) fn after_recv(_received: &[OwnedFd]) -> std::io::Result<()> {
    Ok(())
}
