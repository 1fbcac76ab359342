//! What the daemon hands a new holder process and keeps beside its socket:
//! the holder protocol's startup contract
//! ([`ccd_protocol::holder::spec`]), re-exported here for the daemon's
//! code. The conversion to the holder's configuration is
//! `ccd_holder::HolderConfig::from(spec)`.

pub use ccd_protocol::holder::spec::{HolderMeta, HolderSpec, Origin};
