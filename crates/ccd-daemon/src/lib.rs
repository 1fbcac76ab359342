//! ccd's daemon: one local socket that the CLI and editors share.
//!
//! Ownership, top down:
//! - [`server`] owns the listening socket and the [`state::Daemon`] shared by
//!   every connection task (behind an `Arc`; every field is either
//!   immutable or behind its own lock, never held across an `.await`), and
//!   starts the background tasks, each given the parts of the daemon it
//!   uses (never the daemon itself);
//! - [`connection`] serves one client connection: a reader loop and a
//!   writer task fed by a bounded channel; what a request sees of its
//!   connection (the attachments among it) is [`conn_ctx::ConnCtx`];
//! - [`router`] picks the handler of each method; [`handlers`] answer them,
//!   one module per method group, through [`session_ops`] (resolving,
//!   starting, resuming and driving sessions);
//! - [`holders`] owns the table of per-session holder processes (which own
//!   the PTYs: the daemon never does, so a daemon crash interrupts no
//!   session) and the async client that talks to them;
//! - [`tasks`] holds the long-running background tasks (refreshing and
//!   reaping the holders, the registry watch, the cost sampler, log
//!   pruning, the restore record, the usage reader), started by [`server`] over the services
//!   below them;
//! - [`search`] keeps the search index open for `sessions.search`, with
//!   the bounds on searches;
//! - [`restore`] keeps the restore record (what ccd holds, in the state
//!   dir) and tells, at start, the sessions a reboot lost.
//!
//! The modules are layered (`docs/architecture.md`, "The daemon's
//! modules"): a module imports only from layers below it, so no import
//! cycle spans more than a module and its own children.
//!
//! Nothing in a handler blocks the runtime: file-system scans (the session
//! index) run on the blocking pool.

// Unsafe code only where an item allows it, with its reason
// (docs/architecture.md, "Unsafe code").
#![deny(unsafe_code)]

pub mod complete;
pub mod conn_ctx;
pub mod conn_slots;
pub mod connection;
pub mod cost;
pub mod demand;
pub mod events;
pub mod exit_watch;
pub mod handlers;
pub mod holders;
pub mod limits;
pub mod logfiles;
pub mod options;
pub mod out_queue;
pub mod reactor;
pub mod restore;
pub mod router;
pub mod search;
pub mod server;
pub mod session_ops;
pub mod startup;
pub mod state;
pub mod tasks;
pub mod transcript_watch;
pub mod usage;
pub mod views;

pub use options::DaemonOptions;
pub use server::run;
pub use session_ops::resume::SETTLE_AFTER_READY as RESUME_SETTLE;
