//! Claude Code's welcome banner: the model it runs and, when the CLI says
//! so, the model's context window.
//!
//! Recorded (`tests/recordings/claude-cli/permission-bash-*`, first chunk):
//!
//! ```text
//! 2.1.173 (boxed)                                   2.1.332
//! │   Opus 4.8 (1M context) · API Usage Billing   │   ▝▜██████▀  Opus 5.5 · API Usage Billing
//! ```
//!
//! # Markers
//!
//! A row with ` · ` whose part before it ends a model name — the last
//! words before the first ` · ` on a row that also names the billing
//! (`Billing`, `Pro`, `Max`, `Team`, `Enterprise`) or shows the
//! `(<n>K|M context)` annotation. The window is read only from that
//! annotation: `(1M context)` is 1,000,000 tokens, `(200K context)`
//! 200,000. No annotation: the CLI did not say, and the caller keeps its
//! own figure (and says it is one).
//!
//! The banner scrolls away once a conversation fills the screen: read it
//! when the session becomes ready, and keep what was read.

use crate::text::{strip_box, ScreenText};

/// What the banner says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Banner {
    /// The model as shown ("Opus 4.8"), without the window annotation.
    pub model: Option<String>,
    /// The context window the banner states, in tokens.
    pub context_window: Option<u64>,
}

const PLANS: [&str; 5] = ["Billing", "Pro", "Max", "Team", "Enterprise"];

/// The banner's model line, if the screen shows one.
pub fn detect(text: &ScreenText) -> Option<Banner> {
    text.rows()
        .iter()
        .find_map(|row| parse_row(&strip_box(row)))
}

fn parse_row(row: &str) -> Option<Banner> {
    let (head, tail) = row.split_once(" · ")?;
    let window = window_of(head);
    let billed = PLANS.iter().any(|p| tail.contains(p));
    if window.is_none() && !billed {
        return None;
    }
    // The model: the words of `head` after any logo glyphs, without the
    // annotation.
    let name_part = head.split(" (").next().unwrap_or(head);
    let model: String = name_part
        .trim()
        .rsplit("  ")
        .next()
        .unwrap_or("")
        .trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
        .trim()
        .to_string();
    Some(Banner {
        model: (!model.is_empty()).then_some(model),
        context_window: window,
    })
}

/// `(<n>K context)` / `(<n>M context)` in `s`, in tokens.
fn window_of(s: &str) -> Option<u64> {
    let start = s.find('(')?;
    let inner = s[start + 1..].split(')').next()?;
    let figure = inner.trim().strip_suffix("context")?.trim();
    let (digits, scale) = match figure.chars().last()? {
        'K' | 'k' => (&figure[..figure.len() - 1], 1_000u64),
        'M' | 'm' => (&figure[..figure.len() - 1], 1_000_000u64),
        _ => return None,
    };
    let n: f64 = digits.trim().parse().ok()?;
    if !(n > 0.0 && n < 1_000_000.0) {
        return None;
    }
    Some((n * scale as f64).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn banner(rows: &[&str]) -> Option<Banner> {
        detect(&ScreenText::from_lines(rows.iter().copied()))
    }

    #[test]
    fn the_boxed_banner_of_2_1_173_states_the_window() {
        let b = banner(&[
            "╭─── Claude Code v2.1.173 ───╮",
            "│   Opus 4.8 (1M context) · API Usage Billing   │                 │",
        ])
        .unwrap();
        assert_eq!(b.model.as_deref(), Some("Opus 4.8"));
        assert_eq!(b.context_window, Some(1_000_000));
    }

    #[test]
    fn the_banner_of_2_1_332_names_the_model_only() {
        let b = banner(&[
            " ▐▛███▛█   Claude Code v2.1.332",
            "▝▜██████▀  Opus 5.5 · API Usage Billing",
        ])
        .unwrap();
        assert_eq!(b.model.as_deref(), Some("Opus 5.5"));
        assert_eq!(b.context_window, None);
    }

    #[test]
    fn windows_in_thousands_and_fractions() {
        assert_eq!(window_of("Sonnet 4 (200K context)"), Some(200_000));
        assert_eq!(window_of("X (1.5M context)"), Some(1_500_000));
        assert_eq!(window_of("X (lots of context)"), None);
        assert_eq!(window_of("X (0M context)"), None);
    }

    #[test]
    fn rows_that_are_not_the_banner_say_nothing() {
        assert_eq!(
            banner(&["❯ hello · world", "  ? for shortcuts · ← for agents"]),
            None
        );
        assert_eq!(banner(&[]), None);
    }
}
