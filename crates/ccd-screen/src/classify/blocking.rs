//! Hints that an unrecognised screen is waiting for the user.
//!
//! An unrecognised blocking screen must be reported, never waited on silently.
//! When no classifier matched, this looks for generic signs of a menu or a
//! question: a pointer row (`❯ label`), or a line with "enter to confirm",
//! "enter to continue", "press enter", "esc to cancel", "(y/n)". The hint is the
//! nearest question-like line above (ending in `?` or `:`), else the matching line.

use super::menu::parse_option_row;
use crate::text::{norm, ScreenText};

const PHRASES: &[&str] = &[
    "enter to confirm",
    "enter to continue",
    "press enter",
    "esc to cancel",
    "(y/n)",
];

/// A short description of what the screen seems to be waiting for, if anything.
pub fn hint(text: &ScreenText) -> Option<String> {
    let rows = text.rows();
    let hit = rows.iter().position(|r| {
        let l = norm(r);
        PHRASES.iter().any(|p| l.contains(p)) || parse_option_row(r).is_some_and(|o| o.pointed)
    })?;
    let question = (hit.saturating_sub(8)..hit)
        .rev()
        .map(|i| rows[i].trim())
        .find(|l| l.ends_with('?') || l.ends_with(':'));
    Some(question.unwrap_or_else(|| rows[hit].trim()).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_question_above_menu() {
        let t = ScreenText::from_lines([
            " Choose the text style that looks best with your terminal:",
            "",
            " ❯ 1. Dark mode",
            "   2. Light mode",
        ]);
        assert_eq!(
            hint(&t).as_deref(),
            Some("Choose the text style that looks best with your terminal:")
        );
        assert_eq!(hint(&ScreenText::from_lines(["just text"])), None);
    }
}
