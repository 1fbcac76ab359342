//! The API's handlers, one module per concern.

pub mod attach;
pub mod daemon_ctl;
pub mod events;
pub mod lifecycle;
pub mod observe;
pub mod respond;
pub mod sessions;
pub mod trim;
