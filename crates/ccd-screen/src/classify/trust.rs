//! The folder trust dialog.
//!
//! Shown the first time `claude` runs in a folder. Its wording and, worse, its
//! default change between versions:
//!
//! ```text
//! 2.1.173:  ❯ 1. Yes, I trust this folder      2.1.332:  ❯ No, exit
//!             2. No, exit                                  Yes, I trust this folder
//! ```
//!
//! On 2.1.332 pressing Enter at once answers "No" and the process exits. So the
//! option to choose is found by its *label*, never by position or default, and
//! when that is not clear-cut the verdict says so and nothing may be pressed.
//!
//! # Markers (both required)
//!
//! 1. **Question text**, on any line: "project you created or one you trust"
//!    (2.1.173 and 2.1.332: "Quick safety check: Is this a project you created or
//!    one you trust?"), "do you trust the files in this folder" (older versions) or
//!    "accessing workspace:" (the heading of both recorded versions).
//! 2. **An option row** that reads as a trust-dialog answer: a label containing
//!    "trust this folder", or starting with "no, exit" or "yes, proceed" (older
//!    versions). The menu is then read around that row (see [`super::menu`]).
//!
//! Either marker alone is not enough: the question text can appear in a
//! transcript, and "No, exit" in other menus.
//!
//! # Which option means trust
//!
//! An option is an *exit* option when its label starts with "no" or mentions
//! "exit"/"quit"/"cancel"; it is a *trust candidate* when it starts with "yes", is
//! not an exit option and carries no negation ("not trust", "don't trust",
//! "distrust"...). With exactly one candidate, that is the trust option; with
//! several, only those mentioning "trust" are kept and exactly one must remain.
//! Otherwise the verdict is [`TrustPath::Ambiguous`].

use super::menu::{menu_at, parse_option_row, Menu};
use crate::keys::KeyMoves;
use crate::text::{norm, ScreenText};

const QUESTION_MARKERS: &[&str] = &[
    "project you created or one you trust",
    "do you trust the files in this folder",
    "accessing workspace:",
];

pub use ccd_protocol::holder::screen::{TrustAmbiguity, TrustDialog, TrustOption, TrustPath};

fn starts_with_word(label: &str, word: &str) -> bool {
    label
        .strip_prefix(word)
        .is_some_and(|rest| !rest.chars().next().is_some_and(char::is_alphanumeric))
}

fn is_exit_label(label: &str) -> bool {
    let l = norm(label);
    starts_with_word(&l, "no") || l.contains("exit") || l.contains("quit") || l.contains("cancel")
}

fn is_negated(l: &str) -> bool {
    ["not trust", "n't trust", "distrust", "untrust", "no trust"]
        .iter()
        .any(|n| l.contains(n))
}

fn is_trust_candidate(label: &str) -> bool {
    let l = norm(label);
    starts_with_word(&l, "yes") && !is_exit_label(label) && !is_negated(&l)
}

/// Is this row an answer of the trust dialog (marker 2)?
fn is_anchor_label(label: &str) -> bool {
    let l = norm(label);
    (l.contains("trust this folder") && !is_negated(&l))
        || l.starts_with("no, exit")
        || l.starts_with("yes, proceed")
}

/// Look for the trust dialog. `None` when either marker is missing.
pub fn detect(text: &ScreenText) -> Option<TrustDialog> {
    let has_question = text.logical_lines().iter().any(|l| {
        let l = norm(&l.text);
        QUESTION_MARKERS.iter().any(|m| l.contains(m))
    });
    if !has_question {
        return None;
    }
    let anchor = text
        .rows()
        .iter()
        .position(|r| parse_option_row(r).is_some_and(|o| is_anchor_label(&o.label)))?;
    let menu = menu_at(text, anchor)?;
    Some(from_menu(&menu))
}

/// Decide which option is "trust" and how to reach it.
pub fn from_menu(menu: &Menu) -> TrustDialog {
    let mut options: Vec<TrustOption> = menu
        .options
        .iter()
        .map(|o| TrustOption {
            label: o.label.clone(),
            is_trust: false,
            is_exit: is_exit_label(&o.label),
        })
        .collect();
    let mut candidates: Vec<usize> = (0..options.len())
        .filter(|&i| is_trust_candidate(&options[i].label))
        .collect();
    if candidates.len() > 1 {
        candidates.retain(|&i| norm(&options[i].label).contains("trust"));
    }
    let trust_index = match candidates.as_slice() {
        [only] => Some(*only),
        _ => None,
    };
    if let Some(i) = trust_index {
        options[i].is_trust = true;
    }
    let to_trust = match (trust_index, menu.selected) {
        (Some(t), Some(s)) => TrustPath::Keys(KeyMoves::between(s, t)),
        (Some(_), None) => TrustPath::Ambiguous(TrustAmbiguity::NoSelection),
        (None, _) if candidates.is_empty() => TrustPath::Ambiguous(TrustAmbiguity::NoTrustOption),
        (None, _) => TrustPath::Ambiguous(TrustAmbiguity::SeveralTrustOptions {
            count: candidates.len(),
        }),
    };
    TrustDialog {
        options,
        selected: menu.selected,
        trust_index,
        to_trust,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::NavKey;

    fn dialog(options: &[&str]) -> Option<TrustDialog> {
        let mut lines = vec![
            " Accessing workspace:".to_owned(),
            String::new(),
            " Quick safety check: Is this a project you created or one you trust?".to_owned(),
            String::new(),
        ];
        lines.extend(options.iter().map(|s| (*s).to_owned()));
        lines.push(String::new());
        lines.push(" Enter to confirm · Esc to cancel".to_owned());
        detect(&ScreenText::from_lines(lines))
    }

    #[test]
    fn new_layout_default_no() {
        let d = dialog(&[" ❯ No, exit", "   Yes, I trust this folder"]).unwrap();
        assert_eq!(d.selected, Some(0));
        assert_eq!(d.trust_index, Some(1));
        assert!(d.options[0].is_exit && !d.options[0].is_trust);
        assert_eq!(
            d.to_trust,
            TrustPath::Keys(KeyMoves {
                key: NavKey::Down,
                count: 1
            })
        );
    }

    #[test]
    fn reordered_three_options_never_picks_no() {
        let d = dialog(&[
            " ❯ 1. No, exit",
            "   2. No, and don't ask again",
            "   3. Yes, I trust this folder",
        ])
        .unwrap();
        assert_eq!(d.trust_index, Some(2));
        assert_eq!(d.keys_to_trust().unwrap().count, 2);
        assert_eq!(d.keys_to_trust().unwrap().key, NavKey::Down);
        assert!(!d.trust_selected());
    }

    #[test]
    fn selection_below_trust_moves_up() {
        let d = dialog(&["   1. Yes, I trust this folder", " ❯ 2. No, exit"]).unwrap();
        assert_eq!(
            d.keys_to_trust(),
            Some(KeyMoves {
                key: NavKey::Up,
                count: 1
            })
        );
    }

    #[test]
    fn ambiguous_when_two_trust_options() {
        let d = dialog(&[
            " ❯ No, exit",
            "   Yes, I trust this folder",
            "   Yes, trust this folder and its parents",
        ])
        .unwrap();
        assert_eq!(d.trust_index, None);
        assert_eq!(
            d.to_trust,
            TrustPath::Ambiguous(TrustAmbiguity::SeveralTrustOptions { count: 2 })
        );
    }

    #[test]
    fn yes_and_trust_preferred_over_plain_yes() {
        let d = dialog(&[
            " ❯ No, exit",
            "   Yes, read-only",
            "   Yes, I trust this folder",
        ])
        .unwrap();
        assert_eq!(d.trust_index, Some(2));
    }

    #[test]
    fn negated_trust_is_not_trust() {
        let d = dialog(&[" ❯ No, exit", "   Yes, but do not trust this folder"]).unwrap();
        assert_eq!(
            d.to_trust,
            TrustPath::Ambiguous(TrustAmbiguity::NoTrustOption)
        );
    }

    #[test]
    fn no_pointer_is_ambiguous() {
        let d = dialog(&["   No, exit", "   Yes, I trust this folder"]).unwrap();
        assert_eq!(
            d.to_trust,
            TrustPath::Ambiguous(TrustAmbiguity::NoSelection)
        );
    }

    #[test]
    fn one_marker_is_not_enough() {
        let t = ScreenText::from_lines([" ❯ No, exit", "   Yes, I trust this folder"]);
        assert!(detect(&t).is_none());
        let t = ScreenText::from_lines([" Is this a project you created or one you trust?"]);
        assert!(detect(&t).is_none());
    }

    #[test]
    fn old_boxed_dialog() {
        let t = ScreenText::from_lines([
            "╭──────────────────────────────────────────────╮",
            "│ Do you trust the files in this folder?       │",
            "│                                              │",
            "│ ❯ 1. Yes, proceed                            │",
            "│   2. No, exit                                │",
            "╰──────────────────────────────────────────────╯",
        ]);
        let d = detect(&t).unwrap();
        assert_eq!(d.trust_index, Some(0));
        assert!(d.trust_selected());
    }
}
