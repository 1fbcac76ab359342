//! The bodies of ccd's fuzz targets: one pure function per target, taking
//! arbitrary bytes.
//!
//! The cargo-fuzz project in `fuzz/` (its own workspace, built with
//! libFuzzer) calls these functions from `fuzz/fuzz_targets/<name>.rs`; the
//! test `tests/corpus.rs` replays the committed seed corpus
//! (`fuzz/corpus/<target>/`) through them as an ordinary `cargo test`, so a
//! regression found once stays caught without a fuzzer.
//!
//! Every function panics when its property fails, and only then:
//!
//! - [`protocol_decoder`]: [`ccd_protocol::LineDecoder`] fed in arbitrary
//!   chunks yields exactly what a line-by-line reference model of the framing
//!   rules yields (one `LineTooLong` per over-long line, decoding resumes
//!   after it), and so does [`ccd_protocol::read_line_bounded`]; every
//!   decoded line goes through [`ccd_protocol::parse_incoming`] and the
//!   typed params of the real methods without panicking, and what parses
//!   re-encodes and parses back; array (positional) params never decode;
//!   every decoded terminal size through `TermSize::checked` is in bounds
//!   or refused with `invalid_params`, and `clamped` always is in bounds.
//! - [`registry_parser`]: [`ccd_claude::registry::parse_entry`]; an entry it
//!   accepts serializes again.
//! - [`transcript_parser`]: every line through the record parser, the prompt
//!   and message accessors and the renderer; the background-work scan over
//!   the whole buffer; [`ccd_claude::transcript::read_summary`] over the
//!   bytes written to a temporary file.
//! - [`display_sanitizer`]: [`ccd_claude::display::sanitize`] in both
//!   modes leaves no ESC, C0, C1, DEL or bidi control (a line feed only
//!   where breaks are kept, and every one shown where they are marked),
//!   is idempotent, and leaves clean text as it was.
//! - [`screen`]: [`ccd_screen::Screen`] of a size and chunking chosen by the
//!   input's first bytes; classification; a redraw snapshot replayed into a
//!   fresh screen of the same size reproduces contents, cursor, modes, title
//!   and verdict; [`ccd_screen::ModeScanner`] is independent of chunking.
//!
//! The first bytes of an input steer the target (chunk sizes, limits,
//! screen size); [`Steer`] documents the layout.

// No unsafe code here, and none may be added (docs/architecture.md, "Unsafe code").
#![forbid(unsafe_code)]

mod display;
mod protocol;
mod registry;
mod screen;
mod steer;
mod transcript;

pub use display::display_sanitizer;
pub use protocol::protocol_decoder;
pub use registry::registry_parser;
pub use screen::screen;
pub use steer::Steer;
pub use transcript::{remove_temp_dir, transcript_parser};

/// A target's body.
pub type Target = fn(&[u8]);

/// Every target, by the name of its `fuzz/fuzz_targets/<name>.rs` and of
/// its corpus folder.
pub const TARGETS: &[(&str, Target)] = &[
    ("protocol_decoder", protocol_decoder),
    ("registry_parser", registry_parser),
    ("transcript_parser", transcript_parser),
    ("screen", screen),
    ("display_sanitizer", display_sanitizer),
];
