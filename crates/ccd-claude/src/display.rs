//! Text from files for a terminal: the one sanitizer every human-readable
//! output of ccd goes through.
//!
//! Titles (people's first prompts), cwds, names, `waitingFor`, screen rows
//! and error texts that quote ids or paths come from files any process of
//! the user can write. Printed raw, they could set the terminal's title
//! (OSC 0), write its clipboard (OSC 52), clear the screen, forge table
//! rows with a newline or carriage return, or reorder what is shown with
//! bidi overrides. [`sanitize`] removes all of that; [`line`] and [`text`]
//! are its two uses. JSON output keeps the data exact instead: [`json`]
//! writes the same characters [`is_unsafe`] names as `\uXXXX` escapes.
//! [`width`] fits sanitized text into table columns.

pub mod json;
pub mod width;

use std::borrow::Cow;

/// How a value's line breaks are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Breaks {
    /// A single-line field (a table cell, a title, a cwd): every line break
    /// is shown as [`BREAK_MARKER`], so it cannot start a row of its own.
    Marked,
    /// Several lines (a rendered message, a screen): `\n` is kept, a
    /// carriage return goes.
    Kept,
}

/// What a line break looks like in a single-line field.
pub const BREAK_MARKER: char = '⏎';

/// `s` in one line, safe for a terminal: [`sanitize`] with
/// [`Breaks::Marked`].
pub fn line(s: &str) -> Cow<'_, str> {
    sanitize(s, Breaks::Marked)
}

/// `s` as lines, safe for a terminal: [`sanitize`] with [`Breaks::Kept`].
pub fn text(s: &str) -> Cow<'_, str> {
    sanitize(s, Breaks::Kept)
}

/// True for the characters that reorder text (bidi embeddings, overrides,
/// isolates and marks).
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

/// True for what [`sanitize`] never lets through (but `\n` in
/// [`Breaks::Kept`]): C0 controls, DEL, C1 controls, bidi controls, and the
/// Unicode line and paragraph separators.
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || is_bidi_control(c) || c == '\u{2028}' || c == '\u{2029}'
}

/// Removes ANSI escape sequences (CSI, OSC, DCS and the other string
/// commands, two- and three-character escapes, their C1 forms), every
/// other control character (a tab becomes a space) and the bidi controls.
/// Line breaks (`\n`, `\r\n`, a lone `\r`, U+2028, U+2029) are shown as
/// `breaks` says. Borrowed when nothing changes.
///
/// The output never contains ESC, another C0 or C1 control, DEL or a bidi
/// control (only `\n`, with [`Breaks::Kept`]), and sanitizing it again
/// changes nothing.
pub fn sanitize(s: &str, breaks: Breaks) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    let line_break = |out: &mut String| match breaks {
        Breaks::Marked => out.push(BREAK_MARKER),
        Breaks::Kept => out.push('\n'),
    };
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek().copied() {
                Some('[') => {
                    chars.next();
                    skip_csi(&mut chars);
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    skip_string(&mut chars);
                }
                Some(c) if ('\u{20}'..='\u{2f}').contains(&c) => {
                    // Intermediate bytes, then one final byte.
                    while let Some(&n) = chars.peek() {
                        if n.is_control() {
                            break;
                        }
                        chars.next();
                        if !('\u{20}'..='\u{2f}').contains(&n) {
                            break;
                        }
                    }
                }
                // A control after ESC is handled on its own (a line break
                // stays one).
                Some(c) if c.is_control() => {}
                Some(_) => {
                    chars.next();
                }
                None => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    line_break(&mut out);
                }
            }
            '\n' | '\u{2028}' | '\u{2029}' => line_break(&mut out),
            '\t' => out.push(' '),
            c if is_unsafe(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Skips a CSI sequence's parameter and intermediate bytes and its final
/// byte. A control character ends it unconsumed.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(&c) = chars.peek() {
        if c.is_control() {
            return;
        }
        chars.next();
        if ('\u{40}'..='\u{7e}').contains(&c) || !('\u{20}'..='\u{3f}').contains(&c) {
            // The final byte, or not part of a CSI sequence (malformed).
            return;
        }
    }
}

/// Skips an OSC/DCS-like string up to BEL, ST (`ESC \\` or U+009C), or a
/// line break (left for the caller).
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(&c) = chars.peek() {
        match c {
            '\n' | '\r' => return,
            '\u{7}' | '\u{9c}' => {
                chars.next();
                return;
            }
            '\u{1b}' => {
                chars.next();
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {
                chars.next();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_escapes_and_controls() {
        assert_eq!(text("\u{1b}[1;31mred\u{1b}[0m"), "red");
        assert_eq!(text("a\u{1b}]0;title\u{7}b"), "ab");
        assert_eq!(
            text("a\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\b"),
            "alinkb"
        );
        assert_eq!(text("a\u{1b}(Bb\u{1b}=c"), "abc");
        assert_eq!(text("a\u{9b}2Kb"), "ab");
        assert_eq!(text("x\ty\r\n\u{7}\u{0}z\u{202e}"), "x y\nz");
        assert_eq!(text("abc\u{1b}"), "abc");
        assert_eq!(text("abc\u{1b}]never ends"), "abc");
        assert_eq!(text("abc\u{1b}["), "abc");
        assert_eq!(text("a\u{7f}b\u{85}c\u{2067}d"), "abcd");
    }

    #[test]
    fn hostile_title_in_one_line() {
        let title = "t\u{1b}]0;pwned\u{7}\u{1b}]52;c;aGk=\u{7}\u{1b}[2J\nfake-row\r\u{202e}x";
        assert_eq!(line(title), "t⏎fake-row⏎x");
        assert_eq!(line("a\r\nb\u{2028}c"), "a⏎b⏎c");
        // An unterminated OSC ends at the line break, which stays visible.
        assert_eq!(line("a\u{1b}]0;x\nb"), "a⏎b");
        assert_eq!(text("a\u{1b}\nb"), "a\nb");
    }

    #[test]
    fn clean_text_is_borrowed() {
        assert!(matches!(line("plain — ünïcode 日本"), Cow::Borrowed(_)));
    }

    #[test]
    fn idempotent_and_clean() {
        for s in [
            "\u{1b}\u{1b}[[2J",
            "\u{1b}\u{9b}\u{1b}]x",
            "\u{1b}(\u{1b}",
            "\u{9d}\u{1b}\\\u{1b}",
            "a\u{1b} \n",
        ] {
            for b in [Breaks::Marked, Breaks::Kept] {
                let once = sanitize(s, b).into_owned();
                assert!(!once.chars().any(|c| is_unsafe(c) && c != '\n'), "{once:?}");
                assert_eq!(sanitize(&once, b), once);
            }
        }
    }
}
