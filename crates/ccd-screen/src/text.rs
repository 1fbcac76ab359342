//! The visible text of a screen, as the classifiers see it.
//!
//! Classifiers are pure functions over [`ScreenText`], so tests can build one from
//! literal lines without a terminal ([`ScreenText::from_lines`]).

use serde::{Deserialize, Serialize};

/// Visible rows of a screen (one string per row, trailing blanks trimmed) plus
/// whether each row soft-wraps into the next.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenText {
    rows: Vec<String>,
    wrapped: Vec<bool>,
}

/// A line of text that may span several wrapped rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogicalLine {
    /// Index of its first row.
    pub row: usize,
    /// The joined text.
    pub text: String,
}

impl ScreenText {
    /// From rows, none of them wrapped.
    pub fn from_lines<I, S>(rows: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let rows: Vec<String> = rows
            .into_iter()
            .map(|r| r.into().trim_end().to_owned())
            .collect();
        let wrapped = vec![false; rows.len()];
        Self { rows, wrapped }
    }

    /// From rows and per-row wrap flags (missing flags count as `false`).
    pub fn with_wrapped(rows: Vec<String>, mut wrapped: Vec<bool>) -> Self {
        wrapped.resize(rows.len(), false);
        // A wrapped row keeps its trailing blanks: they are part of the line.
        let rows = rows
            .into_iter()
            .zip(&wrapped)
            .map(|(r, &w)| if w { r } else { r.trim_end().to_owned() })
            .collect();
        Self { rows, wrapped }
    }

    /// The rows.
    pub fn rows(&self) -> &[String] {
        &self.rows
    }

    /// True when every row is blank.
    pub fn is_blank(&self) -> bool {
        self.rows.iter().all(|r| r.trim().is_empty())
    }

    /// Rows joined across soft wraps, each with the index of its first row.
    pub fn logical_lines(&self) -> Vec<LogicalLine> {
        let mut out: Vec<LogicalLine> = Vec::new();
        let mut joining = false;
        for (i, row) in self.rows.iter().enumerate() {
            match out.last_mut() {
                Some(last) if joining => last.text.push_str(row),
                _ => out.push(LogicalLine {
                    row: i,
                    text: row.clone(),
                }),
            }
            joining = self.wrapped.get(i).copied().unwrap_or(false);
        }
        out
    }
}

/// Characters that draw horizontal rules and box corners.
fn is_rule_char(c: char) -> bool {
    matches!(
        c,
        '─' | '━' | '═' | '╭' | '╮' | '╰' | '╯' | '┌' | '┐' | '└' | '┘'
    )
}

/// True for a horizontal rule or a box top/bottom: at least 10 characters, starting
/// with a rule character, at least half of them rule characters.
pub(crate) fn is_rule(row: &str) -> bool {
    let t = row.trim();
    let Some(first) = t.chars().next() else {
        return false;
    };
    let total = t.chars().count();
    let rule = t.chars().filter(|&c| is_rule_char(c)).count();
    is_rule_char(first) && total >= 10 && rule * 2 >= total
}

/// Remove box sides so a boxed dialog (`│ ❯ 1. Yes   │`) reads like an unboxed one.
/// Column positions are kept (the left side becomes a space).
pub(crate) fn strip_box(row: &str) -> String {
    let mut s = row.trim_end().to_owned();
    if s.ends_with('│') && s.trim_start().starts_with('│') && s.trim().chars().count() > 1 {
        s.pop();
        s = s.trim_end().to_owned();
    }
    if let Some(pos) = s.find(|c: char| !c.is_whitespace()) {
        if s[pos..].starts_with('│') {
            s.replace_range(pos..pos + '│'.len_utf8(), " ");
        }
    }
    s.trim_end().to_owned()
}

/// Lower-case and replace typographic quotes and no-break spaces, for matching.
///
/// Maps each character to exactly one character (a character whose lower case is
/// several characters is kept as is), so char offsets in the result are char
/// offsets in the input.
pub(crate) fn norm(s: &str) -> String {
    s.chars().map(fold_char).collect()
}

fn fold_char(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{02bc}' => '\'',
        '\u{201c}' | '\u{201d}' => '"',
        '\u{00a0}' => ' ',
        c => {
            let mut lower = c.to_lowercase();
            match (lower.next(), lower.next()) {
                (Some(l), None) => l,
                _ => c,
            }
        }
    }
}

/// The prompt/selection pointer characters Claude Code has used.
pub(crate) fn is_pointer(c: char) -> bool {
    matches!(c, '❯' | '›' | '>' | '▶' | '►' | '▸')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert!(is_rule(&"─".repeat(120)));
        assert!(is_rule(&format!("╭{}╮", "─".repeat(40))));
        assert!(!is_rule("── a heading that is mostly text ──"));
        assert!(!is_rule(""));
    }

    #[test]
    fn box_stripping() {
        assert_eq!(strip_box("│ ❯ 1. Yes     │"), "  ❯ 1. Yes");
        assert_eq!(strip_box("   plain"), "   plain");
        assert_eq!(strip_box("│"), "");
    }

    #[test]
    fn logical_lines_join_wraps() {
        let t = ScreenText::with_wrapped(
            vec!["abc".into(), "def".into(), "ghi".into()],
            vec![true, false, false],
        );
        let l = t.logical_lines();
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].text, "abcdef");
        assert_eq!(l[1].row, 2);
    }
}
