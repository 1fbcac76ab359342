//! Child exit: waiting, reaping, signalling.
//!
//! The waiter first waits for the child to exit *without* reaping it
//! (`waitid(WNOWAIT)`), records that the child is gone under the session lock,
//! and only then reaps it through portable-pty's child handle. Signals are sent
//! under the same lock and only while the child is not recorded as gone, so a
//! signal can never reach a recycled pid: until it is reaped, a dead child's
//! pid stays a zombie and cannot be reused.

use portable_pty::Child;

/// How the child ended (a holder-protocol type).
pub use ccd_protocol::holder::ExitInfo;

/// Block until `pid` has exited, without reaping it
/// (`waitid(WEXITED | WNOWAIT)`, in `ccd_os::exit_watch`). Returns false
/// if this cannot be waited for this way (then reaping is the wait).
pub use ccd_os::exit_watch::wait_exited_no_reap;

/// Reap the child and read its status.
pub fn reap(child: Box<dyn Child + Send + Sync>) -> ExitInfo {
    // portable-pty's own status keeps only a signal *name*; its child is a
    // std::process::Child underneath, whose status has the number.
    let child: Box<dyn Child> = child;
    match child.downcast::<std::process::Child>() {
        Ok(mut std_child) => match std_child.wait() {
            Ok(status) => {
                use std::os::unix::process::ExitStatusExt;
                ExitInfo {
                    code: status.code(),
                    signal: status.signal(),
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "waitpid failed");
                ExitInfo {
                    code: None,
                    signal: None,
                }
            }
        },
        Err(mut other) => match other.wait() {
            // portable-pty's status keeps only a signal *name*.
            Ok(status) if status.signal().is_some() => ExitInfo {
                code: None,
                signal: None,
            },
            Ok(status) => ExitInfo {
                code: i32::try_from(status.exit_code()).ok(),
                signal: None,
            },
            Err(e) => {
                tracing::warn!(error = %e, "wait failed");
                ExitInfo {
                    code: None,
                    signal: None,
                }
            }
        },
    }
}

/// Send `signal` to `pid`.
pub fn send_signal(pid: u32, signal: i32) -> std::io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "pid out of range"))?;
    let signal = nix::sys::signal::Signal::try_from(signal)?;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal)?;
    Ok(())
}
