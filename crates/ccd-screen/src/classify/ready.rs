//! The input prompt: Claude Code is idle and accepts a message.
//!
//! Both recorded versions draw the input box as a prompt line between two
//! full-width rules, followed by a hint/status line:
//!
//! ```text
//! ────────────────────────────────────────────────  (rule)
//! ❯                                                 (prompt: pointer + draft)
//! ────────────────────────────────────────────────  (rule)
//!   ? for shortcuts · ← for agents          (2.1.173 hint line)
//!   ⏵⏵ auto mode on (shift+tab to cycle)    (2.1.332 hint line)
//! ```
//!
//! Older versions used a box (`╭───╮ / │ > │ / ╰───╯`), which reads the same once
//! the box sides are stripped.
//!
//! # Markers (both required)
//!
//! 1. **A prompt row directly under a rule**: the first non-blank character is a
//!    pointer (`❯` or `>`) followed by a blank or the end of the row.
//! 2. **A closing rule** below it, within [`MAX_INPUT_ROWS`] rows, with no rule in
//!    between (a multi-line draft fills the rows in between).
//!
//! The trust dialog also shows `❯`, but its pointer row follows a blank row, not
//! a rule, and no rule closes it; permission dialogs start with a rule followed
//! by a title, not a pointer. [`super::classify_text`] also checks the dialogs
//! first. The hint line is reported but not required: its wording changes with
//! every version and mode.

use crate::text::{is_pointer, is_rule, strip_box, ScreenText};

/// Most rows a draft may span between the two rules.
pub const MAX_INPUT_ROWS: usize = 30;

pub use ccd_protocol::holder::screen::ReadyPrompt;

/// Text after the pointer if `row` is a prompt row.
fn prompt_text(row: &str) -> Option<String> {
    let row = strip_box(row);
    let t = row.trim_start();
    let mut chars = t.chars();
    let first = chars.next()?;
    if !is_pointer(first) {
        return None;
    }
    let rest = chars.as_str();
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    Some(rest.trim().to_owned())
}

/// Look for the input prompt. The bottom-most match wins.
pub fn detect(text: &ScreenText) -> Option<ReadyPrompt> {
    let rows = text.rows();
    (1..rows.len()).rev().find_map(|i| {
        if !is_rule(&rows[i - 1]) {
            return None;
        }
        let first = prompt_text(&rows[i])?;
        let end = (i + 1..rows.len().min(i + 1 + MAX_INPUT_ROWS)).find(|&r| is_rule(&rows[r]))?;
        let mut input = vec![first];
        input.extend(
            rows[i + 1..end]
                .iter()
                .map(|r| strip_box(r).trim().to_owned()),
        );
        while input.last().is_some_and(|l| l.is_empty()) && input.len() > 1 {
            input.pop();
        }
        let hint = rows
            .get(end + 1)
            .map(|r| r.trim().to_owned())
            .filter(|h| !h.is_empty());
        Some(ReadyPrompt {
            row: i,
            input: input.join("\n"),
            hint,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> String {
        "─".repeat(80)
    }

    #[test]
    fn empty_prompt() {
        let t = ScreenText::from_lines([
            String::new(),
            rule(),
            "❯ ".into(),
            rule(),
            "  ? for shortcuts".into(),
        ]);
        let p = detect(&t).unwrap();
        assert_eq!(p.row, 2);
        assert_eq!(p.input, "");
        assert_eq!(p.hint.as_deref(), Some("? for shortcuts"));
    }

    #[test]
    fn draft_spanning_rows() {
        let t = ScreenText::from_lines([rule(), "❯ hello".into(), "  world".into(), rule()]);
        assert_eq!(detect(&t).unwrap().input, "hello\nworld");
    }

    #[test]
    fn old_box() {
        let t = ScreenText::from_lines([
            format!("╭{}╮", "─".repeat(40)),
            format!("│ > {}│", " ".repeat(37)),
            format!("╰{}╯", "─".repeat(40)),
            "  ? for shortcuts".into(),
        ]);
        assert!(detect(&t).is_some());
    }

    #[test]
    fn menu_is_not_a_prompt() {
        let t = ScreenText::from_lines([
            rule(),
            " Accessing workspace:".into(),
            String::new(),
            " ❯ No, exit".into(),
            "   Yes, I trust this folder".into(),
            String::new(),
            " Enter to confirm · Esc to cancel".into(),
        ]);
        assert!(detect(&t).is_none());
    }

    #[test]
    fn unclosed_box_is_not_ready() {
        let t = ScreenText::from_lines([rule(), "❯ ".into(), String::new()]);
        assert!(detect(&t).is_none());
    }
}
