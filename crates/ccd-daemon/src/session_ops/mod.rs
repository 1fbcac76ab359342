//! What the session methods do, apart from the wire: each a library the
//! handlers use, none of them a handler. Layered: [`resolve`] (which
//! session a client names) and [`drive`] (reading and typing into a held
//! session's screen) import no other operation; [`start`] uses `drive`;
//! [`resume`] uses `start` and `resolve`; [`restore`] (lost sessions
//! brought back) uses `resume`. They take the connection's
//! context ([`crate::conn_ctx::ConnCtx`]) where they report progress to
//! the client or stop when it hangs up.

pub mod drive;
pub mod resolve;
pub mod restore;
pub mod resume;
pub mod start;
