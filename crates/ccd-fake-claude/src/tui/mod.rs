//! Everything drawn on the terminal. Text is painted by cursor movement, word by word, like
//! the real TUI: stripping the escape codes from the stream loses the spaces.

pub mod dialogs;
pub mod modes;
pub mod paint;
pub mod prompt;
