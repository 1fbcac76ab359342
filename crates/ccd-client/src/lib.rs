//! The Rust client of ccd's socket API, used by the `ccd` CLI for every
//! call (and usable by any Rust program).
//!
//! - [`socket_dir`]: where the daemon's socket lives and the checks that
//!   make that directory private (re-exported from `ccd-socket-dir`, which
//!   the daemon, creating the directory, uses directly);
//! - [`client`]: a blocking connection that speaks the protocol
//!   (`hello`, typed calls, notifications), and [`Link`]: one connection
//!   shared by many threads (concurrent calls with ids and deadlines,
//!   notifications routed to their subscribers);
//! - [`deadline`]: how long every wait lasts, and the typed
//!   [`NotAnswering`] that says who did not answer and what to do;
//! - [`passed_fd`]: reading a connection so that a descriptor the daemon
//!   passes with a reply (a direct stream) is kept;
//! - [`ssh`]: the same connection to a ccd on another machine, through
//!   the system `ssh` and `ccd dial-stdio` there;
//! - [`autostart`]: connect, starting a daemon first when none answers, with
//!   a start lock so racing clients start exactly one.

// No unsafe code here, and none may be added (docs/architecture.md, "Unsafe code").
#![forbid(unsafe_code)]

pub mod autostart;
pub mod client;
pub mod deadline;
pub mod passed_fd;
pub mod ssh;
/// The socket directory (crate `ccd-socket-dir`, shared with the daemon).
pub use ccd_socket_dir as socket_dir;

pub use autostart::{connect_or_start, connect_or_start_sending, DaemonCommand};
pub use client::{Caller, Client, ClientError, Link, Sent};
pub use deadline::{NotAnswering, Peer};
pub use socket_dir::{Entry, Problem, SocketDir, SocketDirError};
