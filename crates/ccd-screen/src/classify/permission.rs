//! Claude Code's tool permission dialog ("needs attention").
//!
//! ```text
//! ────────────────────────────────────────────
//!  Bash command
//!
//!    rm -rf build
//!
//!  Do you want to proceed?
//!  ❯ 1. Yes
//!    2. Yes, and don't ask again for: rm:*
//!    3. No, and tell Claude what to do differently (esc)
//! ```
//!
//! Older versions draw the same inside a `│ … │` box; edits ask "Do you want to
//! make this edit to foo.rs?", new files "Do you want to create foo.rs?".
//!
//! # Markers (both required)
//!
//! 1. **A question line** starting with "Do you want to" and containing `?`
//!    (excluding the API key question, which has its own classifier).
//! 2. **A menu within three rows below the question** with an option starting
//!    with "Yes" and one starting with "No" (the latter is "No, and tell Claude
//!    what to do differently" on many versions, plain "No" on others).
//!
//! This is detection only; answering a tool permission is the user's business.

use serde::{Deserialize, Serialize};

use super::menu::{menu_at, parse_option_row};
use crate::text::{norm, strip_box, ScreenText};

/// A tool permission dialog.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionPrompt {
    /// The question, e.g. "Do you want to proceed?".
    pub question: String,
    /// Option labels in screen order.
    pub options: Vec<String>,
    /// Index of the option carrying the pointer, if exactly one does.
    pub selected: Option<usize>,
}

/// Look for a permission dialog.
pub fn detect(text: &ScreenText) -> Option<PermissionPrompt> {
    let rows = text.rows();
    for (i, row) in rows.iter().enumerate() {
        let q = strip_box(row);
        let q = q.trim();
        let l = norm(q);
        if !l.starts_with("do you want to") || !l.contains('?') || l.contains("api key") {
            continue;
        }
        let Some(anchor) =
            (i + 1..rows.len().min(i + 4)).find(|&r| parse_option_row(&rows[r]).is_some())
        else {
            continue;
        };
        let Some(menu) = menu_at(text, anchor) else {
            continue;
        };
        let labels: Vec<String> = menu.options.iter().map(|o| norm(&o.label)).collect();
        let yes = labels.iter().any(|l| l.starts_with("yes"));
        let no = labels.iter().any(|l| l.starts_with("no"));
        if yes && no {
            return Some(PermissionPrompt {
                question: q.to_owned(),
                options: menu.options.into_iter().map(|o| o.label).collect(),
                selected: menu.selected,
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_style() {
        let t = ScreenText::from_lines([
            "─".repeat(60).as_str(),
            " Bash command",
            "",
            "   nix run 'nixpkgs#cowsay'",
            "   Run cowsay from nixpkgs",
            "",
            " This command requires approval",
            "",
            " Do you want to proceed?",
            " ❯ 1. Yes",
            "   2. Yes, and don\u{2019}t ask again for: nix run:*",
            "   3. No",
        ]);
        let p = detect(&t).unwrap();
        assert_eq!(p.question, "Do you want to proceed?");
        assert_eq!(p.options.len(), 3);
        assert_eq!(p.selected, Some(0));
    }

    #[test]
    fn boxed_edit() {
        let t = ScreenText::from_lines([
            "╭──────────────────────────────────────────────────────────╮",
            "│ Edit file                                                │",
            "│ Do you want to make this edit to main.rs?                │",
            "│ ❯ 1. Yes                                                 │",
            "│   2. Yes, and don't ask again this session (shift+tab)   │",
            "│   3. No, and tell Claude what to do differently (esc)    │",
            "╰──────────────────────────────────────────────────────────╯",
        ]);
        let p = detect(&t).unwrap();
        assert_eq!(p.question, "Do you want to make this edit to main.rs?");
        assert_eq!(
            p.options[2],
            "No, and tell Claude what to do differently (esc)"
        );
    }

    #[test]
    fn question_alone_is_not_enough() {
        let t = ScreenText::from_lines([" Do you want to proceed?", "", " some text"]);
        assert!(detect(&t).is_none());
    }
}
