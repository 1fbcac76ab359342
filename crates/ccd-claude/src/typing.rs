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

//!
//! What Claude Code does with a text by its first characters, measured on
//! the real CLI (2.1.173 and 2.1.332, typed as a bracketed paste as ccd
//! types it; docs/claude-cli-compat.md, "Prefixes the prompt treats
//! specially") is [`leading`]: a `!` as the very first character switches
//! the prompt to bash mode and runs the rest as a shell command at once (no
//! model turn, no permission prompt, whatever the permission mode); a `/`
//! as the first character that is not a space, a line break or a
//! zero-width character runs a slash command (2.1.332 skips leading spaces,
//! line breaks, NBSP and U+200B before it; 2.1.173 only reads a `/` in the
//! first column). `#`, `&`, `?` and `@` make ordinary prompts on both.
//! [`for_prompt`] applies ccd's rule for a text a client asks to have typed.

use crate::display;

/// A text's first characters that make Claude Code act on it instead of
/// sending it to the model as a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leading {
    /// `!` first: bash mode, the rest runs as a shell command at once.
    Shell,
    /// `/` first (past leading blanks): a slash command.
    Command,
}

impl Leading {
    /// The character, as the CLI's user would write it.
    pub fn prefix(self) -> char {
        match self {
            Leading::Shell => '!',
            Leading::Command => '/',
        }
    }
}

/// Characters the CLI may skip before it looks for a `/`: Unicode white
/// space (JavaScript's `trim` removes these) and the zero-width ones.
fn blank(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}' | '\u{00ad}'
        )
}

/// What Claude Code would do with `text` (as typed: after the controls
/// are removed, see the module doc) by its first characters; `None`: a
/// prompt.
pub fn leading(text: &str) -> Option<Leading> {
    let clean = display::text(text);
    if clean.starts_with('!') {
        return Some(Leading::Shell);
    }
    clean
        .trim_start_matches(blank)
        .starts_with('/')
        .then_some(Leading::Command)
}

/// How a client wants a text typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Intent {
    /// A prompt, or a slash command when it starts with `/` (`session.send`
    /// as it is); a leading `!` is refused.
    #[default]
    Prompt,
    /// Words for the model, never a command (`session.send`'s `literal`,
    /// and always `session.respond`'s `message`): a leading `!` is typed
    /// after a space (both versions then send it as a prompt, which holds
    /// that space); a leading `/` is refused, since no typing makes 2.1.332
    /// read it as words.
    Literal,
    /// A shell command for the CLI's bash mode (`session.send`'s `shell`):
    /// typed after a `!` (one is added when the text lacks it).
    Shell,
}

/// Why a text is not typed at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Nothing but white space, line breaks and controls (`removed` of the
    /// latter): there is nothing to submit.
    Empty { removed: u64 },
    /// It starts with a prefix the intent does not allow.
    Prefix(Leading),
}

/// `text` as it should be typed for `intent`, or why it must not be typed.
/// Borrowed when unchanged.
pub fn for_prompt(text: &str, intent: Intent) -> Result<std::borrow::Cow<'_, str>, Refused> {
    use std::borrow::Cow;
    let clean = display::text(text);
    if clean.trim_matches(blank).is_empty() {
        let removed = text.chars().count().saturating_sub(clean.chars().count()) as u64;
        return Err(Refused::Empty { removed });
    }
    match (intent, leading(text)) {
        (Intent::Prompt, Some(Leading::Shell)) => Err(Refused::Prefix(Leading::Shell)),
        (Intent::Prompt, _) => Ok(Cow::Borrowed(text)),
        (Intent::Literal, Some(Leading::Command)) => Err(Refused::Prefix(Leading::Command)),
        (Intent::Literal, Some(Leading::Shell)) => Ok(Cow::Owned(format!(" {text}"))),
        (Intent::Literal, None) => Ok(Cow::Borrowed(text)),
        (Intent::Shell, Some(Leading::Shell)) => Ok(Cow::Borrowed(text)),
        (Intent::Shell, _) => {
            let command = clean.trim_start_matches(blank);
            let command = command.strip_prefix('!').unwrap_or(command);
            Ok(Cow::Owned(format!("!{command}")))
        }
    }
}

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
    fn a_leading_bang_is_a_shell_command_and_a_leading_slash_a_command() {
        assert_eq!(leading("!echo x > f"), Some(Leading::Shell));
        // Controls are removed before the CLI sees the text.
        assert_eq!(leading("\x1b[0m!ls"), Some(Leading::Shell));
        // Measured: a space or a line break first makes it a prompt.
        assert_eq!(leading(" !ls"), None);
        assert_eq!(leading("\n!ls"), None);
        for t in [
            "/permissions",
            " /compact",
            "\n/x",
            "\u{a0}/x",
            "\u{200b}/x",
            "\t/x",
        ] {
            assert_eq!(leading(t), Some(Leading::Command), "{t:?}");
        }
        for t in ["#note", "&task", "?", "@file.rs look", "a /b", "fix !this"] {
            assert_eq!(leading(t), None, "{t:?}");
        }
    }

    #[test]
    fn each_intent_types_or_refuses_by_the_prefix() {
        use std::borrow::Cow;
        let ok = |t: &str, i| for_prompt(t, i).map(Cow::into_owned);
        assert_eq!(ok("run it", Intent::Prompt), Ok("run it".into()));
        assert_eq!(ok("/compact", Intent::Prompt), Ok("/compact".into()));
        assert_eq!(
            ok("!rm -rf x", Intent::Prompt),
            Err(Refused::Prefix(Leading::Shell))
        );
        assert_eq!(ok("!important", Intent::Literal), Ok(" !important".into()));
        assert_eq!(
            ok(" /permissions", Intent::Literal),
            Err(Refused::Prefix(Leading::Command))
        );
        assert_eq!(ok("use make", Intent::Literal), Ok("use make".into()));
        assert_eq!(ok("make test", Intent::Shell), Ok("!make test".into()));
        assert_eq!(ok("!make test", Intent::Shell), Ok("!make test".into()));
        assert_eq!(ok("  /bin/ls", Intent::Shell), Ok("!/bin/ls".into()));
        assert_eq!(ok(" !ls", Intent::Shell), Ok("!ls".into()));
        // Whatever the intent, a literal text can never start a command.
        for t in ["!x", "\x1b[m!x", "/x", " /x", "\u{feff}/x"] {
            if let Ok(typed) = ok(t, Intent::Literal) {
                assert_eq!(leading(&typed), None, "{t:?} -> {typed:?}");
            }
        }
    }

    #[test]
    fn nothing_but_blanks_and_controls_is_refused() {
        for t in ["", "   ", "\t", "\n\n\n", "\n \n", " \u{200b} "] {
            for i in [Intent::Prompt, Intent::Literal, Intent::Shell] {
                assert_eq!(
                    for_prompt(t, i),
                    Err(Refused::Empty { removed: 0 }),
                    "{t:?}"
                );
            }
        }
        assert_eq!(
            for_prompt("\x1b[Z\x03 ", Intent::Prompt),
            Err(Refused::Empty { removed: 4 })
        );
    }

    #[test]
    fn without_bracketed_paste_no_line_break_or_tab_is_a_key() {
        let t = as_text("one\ntwo\r\nthree\rfour\tfive\x1b[Z", false);
        assert_eq!(t.bytes, b"one two three four five");
        assert_eq!(t.text, "one two three four five");
    }
}
