//! The terminal client of `ccd attach` and `ccd observe`.
//!
//! Threads and what they own:
//! - the main thread reads the daemon's messages and owns stdout, until it
//!   hands stdin and stdout to the session's holder (`holder.terminal`, on
//!   a direct stream: then the holder reads the keys, detach key included,
//!   and writes the output, and the main thread only waits for the end);
//! - otherwise the input thread owns stdin (raw mode) and the detach key
//!   state, and sends keys as `session.input` notifications;
//! - the focus teller (`focus`) tells the daemon when the terminal gains
//!   or loses the focus (from the holder's `holder.focus`, or the input
//!   thread's reading of the reports);
//! - the signal thread turns SIGWINCH into `session.resize` and SIGTERM /
//!   SIGHUP / SIGINT into a clean exit.
//!
//! Every way out — detach key, session exit, daemon gone, a signal, a panic
//! — restores the terminal: the saved termios and a reset of every mode a
//! session may have turned on ([`raw::RESET_MODES`]).

/// The detach key (the holder filters a handed-off terminal with it too).
pub use ccd_holder::keys;
mod focus;
pub mod raw;
pub mod run;

pub use keys::DetachKey;
pub use run::{attach_loop, attach_params, AttachExtra, Mode, Opening, Outcome};
