//! The custom API key approval dialog.
//!
//! Shown when `ANTHROPIC_API_KEY` is set and its last 20 characters are not in
//! `customApiKeyResponses.approved` of `.claude.json`:
//!
//! ```text
//!  Detected a custom API key in your environment
//!
//!  ANTHROPIC_API_KEY: sk-ant-...xxxx
//!
//!  Do you want to use this API key?
//!
//!  ❯ 1. Yes
//!    2. No (recommended)
//! ```
//!
//! Whether to use a key is a security choice left to the user: this module only
//! detects the dialog and reads its menu for display. It never suggests keys.
//!
//! # Markers (two of three required, so a wrapped or reworded line is tolerated)
//!
//! 1. "detected a custom api key"
//! 2. "do you want to use this api key"
//! 3. an option row labelled "No (recommended)"

use super::menu::{menu_at, parse_option_row};
use crate::text::{norm, ScreenText};

pub use ccd_protocol::holder::screen::ApiKeyDialog;

/// Look for the API key dialog.
pub fn detect(text: &ScreenText) -> Option<ApiKeyDialog> {
    let lines = text.logical_lines();
    let any = |needle: &str| lines.iter().any(|l| norm(&l.text).contains(needle));
    let recommended_row = text.rows().iter().position(|r| {
        parse_option_row(r).is_some_and(|o| norm(&o.label).starts_with("no (recommended)"))
    });
    let markers = [
        any("detected a custom api key"),
        any("do you want to use this api key"),
        recommended_row.is_some(),
    ];
    if markers.iter().filter(|&&m| m).count() < 2 {
        return None;
    }
    let anchor = recommended_row.or_else(|| {
        text.rows().iter().position(|r| {
            parse_option_row(r).is_some_and(|o| {
                let l = norm(&o.label);
                o.pointed || l.starts_with("yes") || l.starts_with("no")
            })
        })
    });
    let menu = anchor.and_then(|a| menu_at(text, a));
    Some(match menu {
        Some(m) => ApiKeyDialog {
            options: m.options.into_iter().map(|o| o.label).collect(),
            selected: m.selected,
        },
        None => ApiKeyDialog {
            options: Vec::new(),
            selected: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_dialog() {
        let t = ScreenText::from_lines([
            " Detected a custom API key in your environment",
            "",
            " ANTHROPIC_API_KEY: sk-ant-...abcd",
            "",
            " Do you want to use this API key?",
            "",
            "   1. Yes",
            " ❯ 2. No (recommended)",
        ]);
        let d = detect(&t).unwrap();
        assert_eq!(d.options, vec!["Yes", "No (recommended)"]);
        assert_eq!(d.selected, Some(1));
    }

    #[test]
    fn one_marker_is_not_enough() {
        let t = ScreenText::from_lines([" Do you want to use this API key?"]);
        assert!(detect(&t).is_none());
    }
}
