//! Whether a process is stopped, and whether it exists: these live in
//! `ccd_os::process` (Linux's `/proc/<pid>/stat`, macOS's
//! `proc_bsdinfo`), re-exported here for the crates that ask through
//! `ccd-sched`.

pub use ccd_os::process::{exists, is_stopped};
