//! What the subcommands (`commands/`) and the dashboard (`ui/`) both use,
//! below both of them (neither imports the other):
//!
//! - [`activity`]: what a session is doing (needs you, busy, idle,
//!   exited), for `ccd wait` and `ccd status`;
//! - [`connect`]: reaching a machine's daemon (this one's socket, starting
//!   it or not; another's through ssh) and the client name;
//! - [`listing`]: the session listing a daemon gives (every page, the held
//!   sessions and their costs, costs measured here without a daemon) and
//!   the note on unverified Claude Code versions;
//! - [`cells`]: how a session's fields read in a table cell (short id,
//!   relative time, `~` for home, sizes, memory, CPU, context share);
//! - [`retention`]: what Claude Code's retention sweep would delete next
//!   here (`ccd doctor`, and the one-line notice of `ccd ls` and `ccd ui`);
//! - [`terminal`]: what a full-screen command needs of the terminal (that
//!   there is one, the detach key).

pub mod activity;
pub mod cells;
pub mod connect;
pub mod listing;
pub mod retention;
pub mod terminal;
