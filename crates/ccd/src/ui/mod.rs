//! `ccd ui` (and `ccd` with no arguments on a terminal): the dashboard.
//!
//! - [`model`]: the rows, their order by what needs the user first, the
//!   filter and the selection (pure);
//! - [`view`]: the rest of what is shown (mode, preview, message);
//! - [`render`]: ratatui widgets drawing a [`view::View`];
//! - [`app`]: the event loop, its threads, what each key does;
//! - [`keys`]: the keys of the list in one table (handling, help, README);
//! - [`search`]: the content search (`/`): the query, each machine's
//!   answer, the hits merged, what a key there asks (pure);
//! - [`data`]: the listing, previews and actions, through the typed client
//!   (directory completion is `ccd_daemon::complete`, shared with the
//!   daemon's `dirs.complete`).

pub mod app;
pub mod data;
pub mod keys;
pub mod model;
pub mod render;
pub mod search;
pub mod view;
