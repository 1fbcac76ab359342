//! Walking a dialog on a person's request: the walks' sans-IO cores live in
//! the `ccd-walk` crate (re-exported here, so `ccd_holder::walk::*` names
//! them too); [`driver`] is the holder's driver of `holder.respond` and
//! `holder.submit`. The trust step's driver is the lifecycle thread
//! ([`crate::lifecycle`]).

pub mod driver;

pub use ccd_walk::*;
