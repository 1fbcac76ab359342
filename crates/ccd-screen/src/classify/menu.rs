//! Reading a selection menu (Claude Code's dialogs) off the screen.
//!
//! Claude Code draws a menu as consecutive rows whose labels start in the same
//! column; the selected row has a pointer (`❯`) in the gutter before the label, the
//! others have blanks there. Labels may be numbered (`1. Yes`) or not (2.1.332's
//! trust dialog). Older versions drew the dialog in a `│ … │` box.
//!
//! ```text
//!  ❯ No, exit                       ❯ 1. Yes, I trust this folder
//!    Yes, I trust this folder         2. No, exit
//! ```
//!
//! [`menu_at`] grows a block from one anchor row: up and down over adjacent,
//! non-blank rows with the same label column and the same numbering style. Text
//! around the menu (the question, "Enter to confirm") starts in another column or
//! is separated by a blank row, so it is not taken for an option.

use serde::{Deserialize, Serialize};

use crate::text::{is_pointer, strip_box, ScreenText};

/// One option of a menu.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MenuOption {
    /// Screen row.
    pub row: usize,
    /// Its number if the menu is numbered (`2.` → 2).
    pub number: Option<u32>,
    /// The label without pointer and number.
    pub label: String,
    /// The row carries the selection pointer.
    pub pointed: bool,
}

/// A menu read off the screen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Menu {
    /// Options in screen order (top to bottom).
    pub options: Vec<MenuOption>,
    /// Index into `options` of the single pointed option; `None` if no row, or
    /// more than one row, carries the pointer.
    pub selected: Option<usize>,
}

/// The shape of one row read as a possible menu option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OptionRow {
    /// Character column where the number or label starts.
    pub col: usize,
    pub pointed: bool,
    pub number: Option<u32>,
    pub label: String,
}

/// Parse a row as `[blanks][pointer blanks][N. ]label`.
pub(crate) fn parse_option_row(row: &str) -> Option<OptionRow> {
    let row = strip_box(row);
    let chars: Vec<char> = row.chars().collect();
    let mut i = chars.iter().take_while(|c| c.is_whitespace()).count();
    let mut pointed = false;
    if let Some(&c) = chars.get(i) {
        if is_pointer(c) && chars.get(i + 1).is_some_and(|c| c.is_whitespace()) {
            pointed = true;
            i += 1;
            i += chars[i..].iter().take_while(|c| c.is_whitespace()).count();
        }
    }
    let col = i;
    let rest: String = chars.get(i..)?.iter().collect();
    let (number, label) = split_number(&rest);
    let label = label.trim().to_owned();
    if label.is_empty() {
        return None;
    }
    Some(OptionRow {
        col,
        pointed,
        number,
        label,
    })
}

/// `"12. Foo"` → `(Some(12), "Foo")`; anything else → `(None, s)`.
fn split_number(s: &str) -> (Option<u32>, &str) {
    let digits = s.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || digits > 3 {
        return (None, s);
    }
    let after = &s[digits..];
    match after.strip_prefix('.') {
        Some(label) if label.starts_with(' ') => (s[..digits].parse().ok(), label),
        _ => (None, s),
    }
}

/// The menu containing row `anchor`, if that row reads as an option.
pub fn menu_at(text: &ScreenText, anchor: usize) -> Option<Menu> {
    let rows = text.rows();
    let first = parse_option_row(rows.get(anchor)?)?;
    let fits = |o: &OptionRow| o.col == first.col && o.number.is_some() == first.number.is_some();
    let mut top = anchor;
    while top > 0 {
        match parse_option_row(&rows[top - 1]) {
            Some(o) if fits(&o) => top -= 1,
            _ => break,
        }
    }
    let mut options = Vec::new();
    let mut row = top;
    while let Some(o) = rows.get(row).and_then(|r| parse_option_row(r)) {
        if !fits(&o) {
            break;
        }
        options.push(MenuOption {
            row,
            number: o.number,
            label: o.label,
            pointed: o.pointed,
        });
        row += 1;
    }
    let mut pointed = options.iter().enumerate().filter(|(_, o)| o.pointed);
    let selected = match (pointed.next(), pointed.next()) {
        (Some((i, _)), None) => Some(i),
        _ => None,
    };
    Some(Menu { options, selected })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rows() {
        let o = parse_option_row(" ❯ 1. Yes, I trust this folder").unwrap();
        assert_eq!((o.col, o.pointed, o.number), (3, true, Some(1)));
        assert_eq!(o.label, "Yes, I trust this folder");
        let o = parse_option_row("   No, exit").unwrap();
        assert_eq!((o.col, o.pointed, o.number), (3, false, None));
        assert!(parse_option_row("   ").is_none());
        let o =
            parse_option_row("│   2. No, and tell Claude what to do differently (esc) │").unwrap();
        assert_eq!(o.number, Some(2));
        assert_eq!(o.label, "No, and tell Claude what to do differently (esc)");
    }

    #[test]
    fn menu_block_stops_at_other_columns() {
        let t = ScreenText::from_lines([
            " Security guide",
            "",
            " ❯ No, exit",
            "   Yes, I trust this folder",
            "",
            " Enter to confirm",
        ]);
        let m = menu_at(&t, 3).unwrap();
        assert_eq!(m.options.len(), 2);
        assert_eq!(m.selected, Some(0));
        let t = ScreenText::from_lines([" Do you want to proceed?", " ❯ 1. Yes", "   2. No"]);
        let m = menu_at(&t, 2).unwrap();
        assert_eq!(m.options.len(), 2);
        assert_eq!(m.options[0].row, 1);
    }
}
