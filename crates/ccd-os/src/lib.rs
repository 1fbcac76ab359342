//! ccd-os: the one home of ccd's OS mechanisms.
//!
//! A leaf crate (libc, nix, rustix, tracing, thiserror and plist): every call ccd makes to
//! the kernel that differs between systems, or that needs `unsafe`, is
//! here, one module per mechanism. Each module's `mod.rs` holds the
//! portable API and what is platform independent (parsers, bookkeeping,
//! tested on every system) and re-exports the side for the system it is
//! built for, in the shape tokio gives its `ucred`:
//! `#[cfg(target_os = "linux")] mod linux;`, `#[cfg(target_os = "macos")]
//! mod macos;`. A mechanism both systems reach through the same call
//! (terminal size, rlimits, a child's own session) is one file. The business crates (the daemon,
//! the holder, the client, the CLI, the cost probe, liveness) call these
//! and hold no `target_os` of their own for them; `docs/platforms.md`
//! says, per mechanism, where it lives, how each side is verified and
//! what its Windows side would be.
//!
//! | module | mechanism |
//! |---|---|
//! | [`peer`] | peer credentials of a Unix socket connection |
//! | [`socket`] | a non-blocking, close-on-exec Unix stream socket |
//! | [`accept`] | which `accept` errors are one connection's, which want a pause (descriptors, memory) and the pause's backoff |
//! | [`process`] | process stat and run state (`/proc/<pid>/stat`, `proc_bsdinfo`), existence |
//! | [`exit_watch`] | a process's end without polling (pidfd, kqueue); a child's exit without reaping it |
//! | [`rlimit`] | the descriptor limit raised |
//! | [`term_size`] | a terminal's columns and rows |
//! | [`tty`] | the terminal hand-off: a passed terminal reopened, its client's hang-up |
//! | [`user`] | a user's home directory from the passwd database |
//! | [`fdpass`] | descriptors passed over a Unix socket (`SCM_RIGHTS`) |
//! | [`heap`] | freed heap handed back to the system (glibc's `malloc_trim`) |
//! | [`sched`] | scheduling class: short slice, batch / QoS class, the autogroup's nice value |
//! | [`session`] | a child started in a session of its own (`setsid` in `pre_exec`) |
//! | [`service`] | the daemon started at login: the systemd user unit and launchd agent written, `systemctl --user` / `launchctl` |
//! | [`boot`] | which boot of the machine this is (Linux `boot_id`, macOS `kern.boottime`) |
//! | [`claude`] | where Claude Code's managed settings file is (`/etc/claude-code`, `/Library/Application Support/ClaudeCode`) |
//!
//! Nothing here blocks but where a function says so
//! ([`exit_watch::wait_exited_no_reap`]); nothing holds state across calls.

// Unsafe code only where an item allows it, with its reason
// (docs/architecture.md, "Unsafe code").
#![deny(unsafe_code)]

pub mod accept;
pub mod boot;
pub mod claude;
pub mod exit_watch;
pub mod fdpass;
pub mod heap;
pub mod peer;
pub mod process;
pub mod rlimit;
pub mod sched;
pub mod service;
pub mod session;
pub mod socket;
pub mod term_size;
pub mod tty;
pub mod user;
