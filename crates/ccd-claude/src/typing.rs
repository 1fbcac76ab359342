//! Text a client asks to have typed as text (`session.send`'s `text`,
//! `session.respond`'s `message`): the bytes that put it in Claude Code's
//! input box as text and never as keys. Used where the typing happens: the
//! holder (`holder.submit`) and the daemon driving an older holder.
//!
//! A bracketed paste (`ESC[200~ … ESC[201~`) is text only up to its end
//! marker: text holding `ESC[201~` would end the paste early and what
//! follows would be read as keys (Shift-Tab `ESC[Z` switches the
//! permission mode, `\r` submits). Outside a paste every control is a key.
//! So before anything is typed, every escape sequence (CSI, OSC and the
//! other string commands, two- and three-character escapes, their C1
//! forms) and every other C0/C1 control, DEL and bidi control is removed,
//! with the same grammar as the terminal sanitizer
//! ([`crate::display::text`]): what is left cannot hold ESC, so it
//! cannot end the paste. Line breaks (`\n`, `\r\n`, a lone `\r`, U+2028,
//! U+2029) become `\n` inside a paste, a tab a space; without bracketed
//! paste line breaks become spaces (an Enter there would submit).

use crate::display;

/// The bytes to type for a text, and how many of its characters were not
/// typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Typed {
    /// Paste markers included when `bracketed`.
    pub bytes: Vec<u8>,
    /// The text as typed (what the draft should show).
    pub text: String,
    /// Characters of the text that were removed (a `\r\n` counts one).
    pub removed: u64,
}

/// `text` as text to type: controls removed (see the module doc), inside
/// paste markers when the session has bracketed paste on.
pub fn as_text(text: &str, bracketed: bool) -> Typed {
    let clean = display::text(text);
    let clean: String = if bracketed {
        clean.into_owned()
    } else {
        clean.replace('\n', " ")
    };
    let removed = text.chars().count().saturating_sub(clean.chars().count()) as u64;
    let mut bytes = Vec::with_capacity(clean.len() + 12);
    if bracketed {
        bytes.extend_from_slice(b"\x1b[200~");
        bytes.extend_from_slice(clean.as_bytes());
        bytes.extend_from_slice(b"\x1b[201~");
    } else {
        bytes.extend_from_slice(clean.as_bytes());
    }
    Typed {
        bytes,
        text: clean,
        removed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paste's body: what lies between the markers.
    fn body(t: &Typed) -> &[u8] {
        t.bytes
            .strip_prefix(b"\x1b[200~")
            .and_then(|b| b.strip_suffix(b"\x1b[201~"))
            .expect("paste markers")
    }

    #[test]
    fn an_end_marker_in_the_text_cannot_end_the_paste() {
        let t = as_text("THREE\x1b[201~\x1b[Z\x1b[Z", true);
        assert_eq!(body(&t), b"THREE");
        assert_eq!(t.removed, 12);
        let t = as_text("ONE\x1b[201~\rTWO", true);
        assert_eq!(body(&t), b"ONE\nTWO");
        // The C1 form of CSI, an OSC, a two-character escape (ESC d), NUL,
        // DEL, a bidi override.
        let t = as_text("a\u{9b}201~b\x1b]0;t\x07c\x1bdd\0e\x7ff\u{202e}g", true);
        assert_eq!(body(&t), b"abcdefg");
    }

    #[test]
    fn no_escape_or_control_is_ever_typed_inside_the_paste() {
        let nasty = [
            "\x1b[201~",
            "\x1b\x1b[[201~",
            "x\x1b[2",
            "\u{9b}201~",
            "\x1b]52;c;aGk=\x1b\\",
            "\x1bP1$r\x1b\\",
            "\r\n\r\r\n\t\x03\x04\x1a",
        ];
        for s in nasty {
            for pre in ["", "text ", "\x1b"] {
                let whole = format!("{pre}{s}{s}tail");
                let t = as_text(&whole, true);
                let b = body(&t);
                assert!(
                    !b.iter().any(|&c| (c < 0x20 && c != b'\n') || c == 0x7f),
                    "{whole:?} -> {b:?}"
                );
                assert!(!t.text.chars().any(|c| c.is_control() && c != '\n'));
            }
        }
    }

    #[test]
    fn plain_text_is_typed_as_it_is() {
        let t = as_text("run the tests — ünïcode 日本\nline two", true);
        assert_eq!(
            body(&t),
            "run the tests — ünïcode 日本\nline two".as_bytes()
        );
        assert_eq!(t.removed, 0);
        let t = as_text("crlf\r\nline", true);
        assert_eq!(body(&t), b"crlf\nline");
        assert_eq!(t.removed, 1);
    }

    #[test]
    fn without_bracketed_paste_no_line_break_or_tab_is_a_key() {
        let t = as_text("one\ntwo\r\nthree\rfour\tfive\x1b[Z", false);
        assert_eq!(t.bytes, b"one two three four five");
        assert_eq!(t.text, "one two three four five");
    }
}
