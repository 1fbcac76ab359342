//! Key sequences the classifiers may suggest (holder-protocol types: a
//! trust dialog's path to its trust option travels in `holder.screen`).

pub use ccd_protocol::holder::screen::{KeyMoves, NavKey};
