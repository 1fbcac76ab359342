//! JSON for a terminal: every JSON output of `ccd` (`--json`, `ccd events
//! --json`) is written through [`to_writer`], [`to_string`] or
//! [`to_string_pretty`].
//!
//! serde_json escapes C0 controls, but writes DEL, C1 controls (U+0080 to
//! U+009F: a CSI or OSC in one character), the bidi controls and the line
//! and paragraph separators as they are: `ccd ls --json` printed at a
//! terminal would let a hostile cwd reach it raw. The formatter here
//! writes each character [`super::is_unsafe`] names as a `\uXXXX` escape
//! instead. The JSON stays valid and reads back to exactly the same
//! strings: only the spelling changes, never the data.

use super::is_unsafe;
use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter, PrettyFormatter};
use std::io::{self, Write};

/// A serde_json formatter that escapes what a terminal must not receive,
/// laid out by `F` (compact or pretty).
pub struct TerminalSafe<F>(pub F);

/// Writes `s` with every unsafe character but `keep` as a `\uXXXX`
/// escape.
fn write_escaped<W: ?Sized + Write>(w: &mut W, s: &str, keep: fn(char) -> bool) -> io::Result<()> {
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if is_unsafe(c) && !keep(c) {
            w.write_all(&s.as_bytes()[start..i])?;
            // Every unsafe character is in the Basic Multilingual Plane.
            write!(w, "\\u{:04x}", c as u32)?;
            start = i + c.len_utf8();
        }
    }
    w.write_all(&s.as_bytes()[start..])
}

impl<F: Formatter> Formatter for TerminalSafe<F> {
    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, s: &str) -> io::Result<()> {
        write_escaped(w, s, |_| false)
    }

    fn write_char_escape<W: ?Sized + Write>(&mut self, w: &mut W, e: CharEscape) -> io::Result<()> {
        self.0.write_char_escape(w, e)
    }

    /// Raw JSON text (a `RawValue`): an unsafe character in it can only be
    /// in a string (JSON allows none outside one but its whitespace), where
    /// an escape means the same.
    fn write_raw_fragment<W: ?Sized + Write>(&mut self, w: &mut W, s: &str) -> io::Result<()> {
        write_escaped(w, s, |c| matches!(c, '\n' | '\r' | '\t'))
    }

    // The layout is `F`'s.
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// Writes `value` as JSON to `w`: indented when `pretty`, else on one
/// line; terminal-safe either way.
pub fn to_writer<W: Write, T: ?Sized + Serialize>(
    w: W,
    value: &T,
    pretty: bool,
) -> serde_json::Result<()> {
    if pretty {
        let mut ser =
            serde_json::Serializer::with_formatter(w, TerminalSafe(PrettyFormatter::new()));
        value.serialize(&mut ser)
    } else {
        let mut ser = serde_json::Serializer::with_formatter(w, TerminalSafe(CompactFormatter));
        value.serialize(&mut ser)
    }
}

/// `value` as one line of terminal-safe JSON.
pub fn to_string<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<String> {
    to_text(value, false)
}

/// `value` as indented terminal-safe JSON.
pub fn to_string_pretty<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<String> {
    to_text(value, true)
}

fn to_text<T: ?Sized + Serialize>(value: &T, pretty: bool) -> serde_json::Result<String> {
    let mut out = Vec::new();
    to_writer(&mut out, value, pretty)?;
    // The serializer writes UTF-8 only; escapes are ASCII.
    String::from_utf8(out).map_err(|e| serde_json::Error::io(io::Error::other(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// Every character the terminal sanitizer removes.
    fn hostile() -> String {
        let mut s = String::from("cwd/");
        s.extend(
            (0u32..0x20)
                .chain([0x7f])
                .chain(0x80..0xa0)
                .filter_map(char::from_u32),
        );
        s.extend([
            '\u{061c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}',
            '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}', '\u{2028}', '\u{2029}',
        ]);
        s.push_str("/日本 🚀 e\u{301} \"q\" \\ end");
        s
    }

    #[test]
    fn unsafe_characters_are_escaped_and_read_back_the_same() {
        let s = hostile();
        let v = json!({ "cwd": s, s.clone(): [s.clone(), 1, null] });
        for pretty in [false, true] {
            let text = to_text(&v, pretty).unwrap();
            assert!(!text.chars().any(|c| is_unsafe(c) && c != '\n'), "{text:?}");
            if !pretty {
                assert!(!text.contains('\n'), "{text:?}");
            }
            assert!(
                text.contains("\\u202e") && text.contains("\\u009b") && text.contains("\\u007f")
            );
            assert!(text.contains("日本 🚀 e\u{301}"), "{text}");
            let back: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(back, v);
        }
    }

    #[test]
    fn the_layout_is_serde_jsons() {
        let v = json!({"a": [1, {"b": "c"}], "d": {}, "e": []});
        assert_eq!(to_string(&v).unwrap(), serde_json::to_string(&v).unwrap());
        assert_eq!(
            to_string_pretty(&v).unwrap(),
            serde_json::to_string_pretty(&v).unwrap()
        );
    }

    #[test]
    fn raw_values_are_escaped_inside_strings_only() {
        let raw = serde_json::value::RawValue::from_string(
            "{\n\t\"k\": \"a\u{202e}b\u{85}\"\r\n}".to_string(),
        )
        .unwrap();
        let text = to_string(&raw).unwrap();
        assert_eq!(text, "{\n\t\"k\": \"a\\u202eb\\u0085\"\r\n}");
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["k"], "a\u{202e}b\u{85}");
    }
}
