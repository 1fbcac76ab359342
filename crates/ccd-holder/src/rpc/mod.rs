//! The holder's JSON-RPC socket: [`types`] (the `holder.*` methods'
//! params/results), [`server`] (bind, accept), [`conn`] (one connection,
//! request dispatch, the output pump of an attached client).

pub mod conn;
pub mod server;
pub mod types;
