//! ccd-notify: telling a person that a session needs them (issue 53).
//!
//! The shared design (three engineers build on it; change it here first):
//!
//! - [`rules`]: the **pure rules engine**, sans IO. [`Rules::new`] takes the
//!   `[notify]` config ([`NotifyConfig`]) and the machine's name;
//!   [`Rules::observe`] folds one [`Input`] seen at `now` (unix ms) and
//!   returns the notifications due; [`Rules::tick`] returns those whose
//!   quiet delay expired by `now` (and the rate bound's summary). It has no
//!   clock, no I/O and no task: its owner calls `tick` at
//!   [`Rules::next_due`]. The rules: the reasons the config lists; one
//!   notification per prompt id (a dialog seen again is not notified
//!   again until the session works again: the id is the dialog's text, so
//!   the same command in a later turn is a new dialog); a quiet delay
//!   (`quiet_secs`: not sent if answered or changed within it); none for a session whose attached client's terminal is
//!   focused unless `notify_when_focused` (fed by [`Input::Focus`], made
//!   of the `session.focus` events the daemon publishes from its attached
//!   clients' terminal focus reports); a rate
//!   bound (`rate_per_minute`: the excess dropped and counted, one
//!   [`Reason::Dropped`] summary when the bound allows again);
//!   `turn_done` only after the session was busy at least
//!   `turn_done_after_secs`.
//! - [`input`]: [`Input`], what the rules see, and [`Input::from_event`],
//!   from the socket's `event` notifications (the daemon's event hub and a
//!   `ccd notify` subscriber feed the same events, so both run the same
//!   rules).
//! - [`notification`]: [`Notification`], the one JSON shape every sink
//!   gets (`machine, session, title, cwd, reason, tool?, detail?,
//!   prompt_id?, options?, link?, at`; docs/notify.md).
//! - [`config`]: the `[notify]` table of ccd's config.
//! - [`link`]: prompt links (`web_public_url`): a token bound to one
//!   prompt, single use, short-lived, that `ccd web` checks; put on a
//!   notification by its sender ([`link::Minter`]), not by the rules (it
//!   needs a key file and randomness).
//! - [`secret_file`]: a small secret in a private (0600, this user's) file
//!   of the state directory: the link key's, and `ccd web`'s login token's.
//! - Sinks, each its own module, each on its own bounded worker (a bounded
//!   queue, a timeout per send; a sink never blocks its caller): `command`
//!   and `webhook` (run by the daemon), `desktop` (`desktop/linux.rs`:
//!   freedesktop through zbus; `desktop/macos.rs`).
//!
//! Who runs the rules: the daemon, for every session on its machine
//! (`ccd-daemon/src/tasks/notify.rs`), sending to the `command` and
//! `webhook` sinks; and `ccd notify` where the user sits (subscribed to
//! each `--host`, this machine by default), sending to the `desktop` sink.
//! A change from the first design: the daemon does not run the desktop
//! sink itself. It is often started outside the person's desktop session
//! (by an ssh login, a service manager), where no session bus is
//! reachable, and where it is reachable a `ccd notify` on the same
//! machine would show every prompt twice; so the desktop is `ccd
//! notify`'s alone.

pub mod command;
pub mod config;
pub mod desktop;
pub mod health;
pub mod input;
pub mod link;
pub mod notification;
pub mod rules;
pub mod secret_file;
pub mod webhook;

pub use config::{NotifyConfig, Reason};
pub use input::Input;
pub use notification::Notification;
pub use rules::Rules;
