//! Sessions as things: list, inspect, start, fork, kill, look at the screen,
//! type into, trim. One type per method of the public protocol, grouped by
//! concern, each group a module re-exported here (every path is
//! `methods::session::X`):
//!
//! - `info`: what a session is (`SessionInfo` and its parts) and the
//!   methods that look at sessions: `sessions.list`, `sessions.get`,
//!   `sessions.costs`;
//! - `lifecycle`: `session.new`, `session.fork`, `session.kill`,
//!   `session.pin` and the `session.progress` notification;
//! - `screen`: `session.screen`;
//! - `tail`: `session.tail` (the conversation's last items);
//! - `input`: `session.send` and `session.respond` (typing into a
//!   session);
//! - `trim`: `session.trim`;
//! - `restore`: `sessions.restore` and the restore record;
//! - `search`: `sessions.search` (content search).
//!
//! Session state is computed from Claude Code's registry at the moment of
//! each request, never from a cache, so two calls may disagree.

mod info;
mod input;
mod lifecycle;
mod restore;
mod screen;
mod search;
mod tail;
mod trim;

pub use info::*;
pub use input::*;
pub use lifecycle::*;
pub use restore::*;
pub use screen::*;
pub use search::*;
pub use tail::*;
pub use trim::*;

fn yes() -> bool {
    true
}
