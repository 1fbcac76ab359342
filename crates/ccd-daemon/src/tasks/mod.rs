//! The daemon's long-running background tasks, one module each, started
//! only by [`crate::server`] and each handed the parts of the daemon it
//! uses (never the daemon itself): the services they drive (the holder
//! table, the event hub, the cost board, the log files) sit below them and
//! import nothing from here.
//!
//! - [`refresh_watch`]: asks each holder how it is when it is due
//!   ([`crate::holders::pacing`]);
//! - [`registry_watch`]: turns Claude Code's registry folder and process
//!   ends into events;
//! - [`cost_sampler`]: refreshes the cost board while sessions are live;
//! - [`reap`]: stops held sessions at rest by the idle and memory-budget
//!   rules;
//! - [`log_prune`]: keeps the state dir's holder logs bounded;
//! - [`notify`]: the `[notify]` rules over the hub's events, sent to the
//!   command and webhook sinks;
//! - [`archive`]: `archive = "auto"`, dead conversations moved out of
//!   reach of Claude Code's retention sweep before its horizon;
//! - [`usage_reader`]: keeps the usage board (each conversation's tokens
//!   and dollars) current as transcripts grow;
//! - [`search_keeper`]: opens the search index in the background at
//!   start and saves it when searches changed it;
//! - [`record`]: keeps the restore record (`crate::restore`) in step with
//!   the holder table.

pub mod archive;
pub mod cost_sampler;
pub mod log_prune;
pub mod notify;
pub mod reap;
pub mod record;
pub mod refresh_watch;
pub mod registry_watch;
pub mod search_keeper;
pub mod usage_reader;
