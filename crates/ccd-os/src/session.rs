//! A child started in a session of its own (`setsid` between `fork` and
//! `exec`): the daemon, started by a client, and each holder, started by
//! the daemon. Neither the starter's death nor its terminal's signals
//! reach it, and on Linux its session is its own autogroup
//! ([`crate::sched::write_group_nice`]).
//!
//! `std` has `process_group` (`setpgid`) but no `setsid`, so this is a
//! `pre_exec` hook: the workspace's programs have this one. Linux and
//! macOS share it (POSIX `setsid`, `umask`); one side, no submodules.

use std::process::Command;

/// Makes `cmd` start its program as the leader of a new session, with
/// `umask` as its file mode creation mask when given (the daemon's own is
/// 077, for its logs; a holder's child creates the user's files).
#[allow(unsafe_code)] // reason: `pre_exec` is unsafe; std has no setsid for a child
pub fn own_session(cmd: &mut Command, umask: Option<u32>) {
    use std::os::unix::process::CommandExt;
    // Permission bits only (`mode_t` is 16 bits on macOS).
    let umask =
        umask.map(|m| nix::sys::stat::Mode::from_bits_truncate((m & 0o777) as libc::mode_t));
    // SAFETY: between fork and exec the hook makes only async-signal-safe
    // calls (setsid, umask: system calls without locks or allocation), and
    // touches no state shared with the parent's other threads (`umask` is
    // a copied integer).
    unsafe {
        cmd.pre_exec(move || {
            nix::unistd::setsid()?;
            if let Some(mask) = umask {
                nix::sys::stat::umask(mask);
            }
            Ok(())
        });
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The shell prints its pid, its session (field 6 of its
    /// `/proc/<pid>/stat`; its name, `sh`, has no space) and its umask.
    #[test]
    fn the_child_leads_its_own_session_with_the_mask_given() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo $$; cut -d' ' -f6 /proc/$$/stat; umask"]);
        own_session(&mut cmd, Some(0o027));
        let out = cmd.output().expect("sh");
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0], lines[1], "the leader of a session of its own");
        assert_eq!(lines[2], "0027");
    }
}
