//! The API's handlers, one module per method group, chosen by the router
//! (which decodes the params and encodes the result). A handler does its
//! work through `session_ops` and the services below it, not through
//! another handler; the one call across is `attach` handing an observe of
//! a session running outside ccd to [`observe::follow`] (which also
//! answers `session.tail`).

pub mod attach;
pub mod daemon_ctl;
pub mod dirs;
pub mod events;
pub mod lifecycle;
pub mod observe;
pub mod respond;
pub mod sessions;
pub mod trim;
