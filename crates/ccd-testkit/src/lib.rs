//! Test kit for ccd: builders for Claude Code config dirs shaped like the
//! real CLI's (registry entries, transcripts) ([`gen`]), the location of
//! the shared real-CLI recordings ([`fixtures`]), the workspace's own
//! binaries ([`bins`]), facts about other processes — exists, ended,
//! parent and state, command line, environment, cwd, owner, memory,
//! descriptors — read from `/proc` on Linux and from the kernel on macOS
//! ([`procs`]), per-thread context-switch counts (`threads`, Linux), and
//! with the `browser` feature a headless Chromium driven over WebDriver
//! (`browser`, for `ccd web`'s tests); [`wait`]: polling a condition
//! with a deadline; [`sandbox`]: a test's temp HOME, Claude config,
//! socket and state dirs, and the environment pointing ccd there;
//! [`notify`]: a `[notify]` command sink that keeps what it gets.
//! Used by tests and benchmarks only.

// No unsafe code here, and none may be added (docs/architecture.md,
// "Unsafe code"): the kernel calls are `ccd-os`'s.
#![forbid(unsafe_code)]

pub mod bins;
#[cfg(feature = "browser")]
pub mod browser;
pub mod fixtures;
pub mod gen;
pub mod notify;
pub mod procs;
pub mod sandbox;
// Read from `/proc`: Linux only (tests that count wakeups are too).
#[cfg(target_os = "linux")]
pub mod threads;
pub mod wait;
