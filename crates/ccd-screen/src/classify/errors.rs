//! Errors that end (or prevent) a start or a resume.
//!
//! Each is recognised by one fixed phrase, matched on logical lines (rows joined
//! across soft wraps, so a long session id split by the right margin is read
//! whole), case-insensitively and with typographic apostrophes folded:
//!
//! | kind | phrase |
//! |---|---|
//! | [`StartErrorKind::NoConversationFound`] | "No conversation found with session ID: `<sid>`" |
//! | [`StartErrorKind::SessionIdInUse`] | "Session ID `<uuid>` is already in use" |
//! | [`StartErrorKind::PromptTooLong`] | "Prompt is too long" |
//! | [`StartErrorKind::FolderNotTrusted`] | "didn't start because this folder isn't trusted" |
//!
//! Lines that begin with a prompt pointer (`❯`, `>`) are skipped: that is the
//! input box, or a user message echoed in the conversation, not CLI output.

use crate::text::{is_pointer, norm, ScreenText};

pub use ccd_protocol::holder::screen::{StartError, StartErrorKind};

/// The token after `prefix` in `line` (both already normalized), up to a blank,
/// without trailing punctuation.
fn token_after<'a>(line: &'a str, original: &'a str, prefix: &str) -> Option<String> {
    let start = line.find(prefix)? + prefix.len();
    // `norm` maps chars one to one, so the same char offset works on the original.
    let char_offset = line[..start].chars().count();
    let rest: String = original.chars().skip(char_offset).collect();
    let tok: String = rest
        .trim_start()
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    let tok = tok.trim_end_matches(['.', ',', ';', ':', '"', '\'', ')']);
    (!tok.is_empty()).then(|| tok.to_owned())
}

fn classify_line(original: &str) -> Option<StartErrorKind> {
    let l = norm(original);
    if let Some(sid) = token_after(&l, original, "no conversation found with session id:") {
        return Some(StartErrorKind::NoConversationFound { session_id: sid });
    }
    if l.contains("is already in use") {
        if let Some(sid) = token_after(&l, original, "session id ") {
            return Some(StartErrorKind::SessionIdInUse { session_id: sid });
        }
    }
    if l.contains("prompt is too long") {
        return Some(StartErrorKind::PromptTooLong);
    }
    if l.contains("didn't start because this folder isn't trusted") {
        return Some(StartErrorKind::FolderNotTrusted);
    }
    None
}

/// The first error on screen, top to bottom.
pub fn detect(text: &ScreenText) -> Option<StartError> {
    text.logical_lines().into_iter().find_map(|line| {
        let trimmed = line.text.trim();
        if trimmed.chars().next().is_some_and(is_pointer) {
            return None;
        }
        classify_line(trimmed).map(|kind| StartError {
            kind,
            text: trimmed.to_owned(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Option<StartErrorKind> {
        detect(&ScreenText::from_lines([line])).map(|e| e.kind)
    }

    #[test]
    fn kinds() {
        assert_eq!(
            one("No conversation found with session ID: 0b6c5c1e-1111-4222-8333-944455556666"),
            Some(StartErrorKind::NoConversationFound {
                session_id: "0b6c5c1e-1111-4222-8333-944455556666".into()
            })
        );
        assert_eq!(
            one("Error: Session ID 3F2504E0-4F89-11D3-9A0C-0305E82C3301 is already in use."),
            Some(StartErrorKind::SessionIdInUse {
                session_id: "3F2504E0-4F89-11D3-9A0C-0305E82C3301".into()
            })
        );
        assert_eq!(
            one("  ⎿  API Error: Prompt is too long"),
            Some(StartErrorKind::PromptTooLong)
        );
        assert_eq!(
            one("Claude Code didn\u{2019}t start because this folder isn\u{2019}t trusted."),
            Some(StartErrorKind::FolderNotTrusted)
        );
        assert_eq!(one("all good"), None);
        assert_eq!(one("❯ Prompt is too long"), None);
    }

    #[test]
    fn wrapped_session_id() {
        let t = ScreenText::with_wrapped(
            vec![
                "No conversation found with session ID: 0b6c5c1e-1111-".into(),
                "4222-8333-944455556666".into(),
            ],
            vec![true, false],
        );
        assert_eq!(
            detect(&t).unwrap().kind,
            StartErrorKind::NoConversationFound {
                session_id: "0b6c5c1e-1111-4222-8333-944455556666".into()
            }
        );
    }
}
