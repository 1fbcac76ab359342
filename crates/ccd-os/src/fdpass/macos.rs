//! macOS (and any system without `MSG_CMSG_CLOEXEC`): a plain `recvmsg`,
//! then each received descriptor made close-on-exec at once (module doc,
//! "Close-on-exec").

use std::os::fd::OwnedFd;

/// `recvmsg`'s flags: none; [`after_recv`] follows the call.
pub(super) const RECV_FLAGS: libc::c_int = 0;

/// Makes every descriptor just received close-on-exec.
pub(super) fn after_recv(received: &[OwnedFd]) -> std::io::Result<()> {
    for fd in received {
        super::set_cloexec(fd)?;
    }
    Ok(())
}
