//! Key sequences the classifiers may suggest.

use serde::{Deserialize, Serialize};

/// A navigation key for moving a selection in a menu.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NavKey {
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
}

impl NavKey {
    /// The bytes a terminal sends for this key. With DECCKM (application cursor
    /// keys, [`TerminalModes::application_cursor`](crate::TerminalModes)) arrows are
    /// `ESC O A`/`ESC O B`, otherwise `ESC [ A`/`ESC [ B`.
    pub fn bytes(self, application_cursor: bool) -> &'static [u8] {
        match (self, application_cursor) {
            (Self::Up, false) => b"\x1b[A",
            (Self::Down, false) => b"\x1b[B",
            (Self::Up, true) => b"\x1bOA",
            (Self::Down, true) => b"\x1bOB",
        }
    }
}

/// "Press `key` `count` times". `count == 0` means the selection is already there.
///
/// Send the keys one at a time and re-classify the screen after each: keys sent
/// before a dialog's input handler is live can be lost.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyMoves {
    /// Which arrow.
    pub key: NavKey,
    /// How many presses.
    pub count: usize,
}

impl KeyMoves {
    /// Moves from menu index `from` to `to`.
    pub fn between(from: usize, to: usize) -> Self {
        if to >= from {
            Self {
                key: NavKey::Down,
                count: to - from,
            }
        } else {
            Self {
                key: NavKey::Up,
                count: from - to,
            }
        }
    }

    /// True when no key needs pressing.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// All the presses concatenated.
    pub fn to_bytes(&self, application_cursor: bool) -> Vec<u8> {
        self.key.bytes(application_cursor).repeat(self.count)
    }
}
