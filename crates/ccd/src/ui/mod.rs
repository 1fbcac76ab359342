//! `ccd ui` (and `ccd` with no arguments on a terminal): the dashboard.
//!
//! - [`model`]: the rows, their order by what needs the user first, the
//!   filter and the selection (pure);
//! - [`view`]: the rest of what is shown (mode, preview, message);
//! - [`render`]: ratatui widgets drawing a [`view::View`];
//! - [`app`]: the event loop, its threads, the keys;
//! - [`data`]: the listing, previews and actions, through the typed client;
//! - [`complete`]: directory completion for a new session.

pub mod app;
pub mod complete;
pub mod data;
pub mod model;
pub mod render;
pub mod view;
