//! Startup and lifecycle, run inside the holder so it continues when the
//! daemon is gone: [`core`] is the pure state machine (unit-tested without
//! processes), [`driver`] feeds it screen verdicts, time and registry
//! observations and carries out its actions.

pub mod core;
pub mod driver;

pub use self::core::{
    Action, AttentionReason, CoreConfig, KeyPurpose, Lifecycle, Observation, State,
};
