//! Claude Code's tool permission dialog ("needs attention").
//!
//! Recorded (`tests/recordings/claude-cli/permission-*`), 2.1.173 and 2.1.332:
//!
//! ```text
//! 2.1.173 ──────────────────────────────   2.1.332 ──────────────────────────────
//!  Bash command                              Bash command
//!                                            Tip: auto mode handles these prompts…
//!    echo hi > out.txt                       Run echo hi > out.txt
//!    Run echo hi > out.txt                  ╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌
//!                                            echo hi > out.txt
//!  Do you want to proceed?                  ╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌
//!  ❯ 1. Yes                                  Do you want to proceed?
//!    2. Yes, and always allow access to …    ❯ 1. Yes
//!    3. No                                     2. Yes, and always allow access to …
//!                                              3. Yes, and switch to auto mode · …
//!  Esc to cancel · Tab to amend · …            4. No
//! ```
//!
//! A new file: heading "Create file", the path on the next row, the content
//! between `╌` lines, "Do you want to create new.txt?". Older versions draw
//! the same inside a `│ … │` box; edits ask "Do you want to make this edit to
//! foo.rs?".
//!
//! # Markers (both required)
//!
//! 1. **A question line** starting with "Do you want to" and containing `?`
//!    (excluding the API key question, which has its own classifier).
//! 2. **A menu within three rows below the question** with an option starting
//!    with "Yes" and one starting with "No" (the latter is "No, and tell Claude
//!    what to do differently" on many versions, plain "No" on others).
//!
//! # What is read besides
//!
//! - **Heading**: the first non-blank row below the nearest full-width rule
//!   (`───`, or a box top) above the question, at most [`MAX_BODY_ROWS`] rows
//!   up. It gives the [`PermissionKind`]: "Bash command" → `Bash`; "Edit
//!   file", "Create file", "Write" → `FileEdit`; "Fetch" → `WebFetch`; a
//!   heading or body mentioning "(MCP)" → `Mcp`; anything else → `Other`.
//! - **Detail**: for `Bash`, the rows between the first pair of `╌` lines
//!   (2.1.332), else the first non-blank row below the heading (2.1.173: the
//!   command; its description is the row after). For the others, the first
//!   non-blank row below the heading (a file edit: the path as shown). A
//!   command wrapped over several rows on 2.1.173 is read as its first row
//!   only (the description row cannot be told apart from a continuation).
//!
//! # Answering
//!
//! Detection reads; answering is the caller's (the daemon's
//! `session.respond`, on a person's request). Two helpers keep it honest:
//! [`prompt_id`] names a prompt by what it asks (so an answer can be tied
//! to the prompt its sender saw), and [`option_for`] finds the option an
//! [`Answer`] means by its label, never by its position (the options and
//! their order differ between versions: 2.1.332 adds "Yes, and switch to
//! auto mode" before "No").

use super::menu::{menu_at, parse_option_row};
use crate::text::{is_rule, norm, strip_box, ScreenText};

/// How far above the question the heading is looked for.
pub const MAX_BODY_ROWS: usize = 30;

pub use ccd_protocol::holder::screen::{PermissionDialog, PermissionKind, PermissionOption};

/// How to answer a permission dialog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Allow this once: the option labelled exactly "Yes".
    Yes,
    /// Allow and do not ask again: the "Yes, and …" option that says
    /// "always" or "don't ask again" (not "switch to auto mode").
    Always,
    /// Refuse: the option whose label starts with "No".
    No,
}

/// The index of the option that means `answer`, by label; `None` when the
/// dialog has no such option.
pub fn option_for(labels: &[String], answer: Answer) -> Option<usize> {
    let norm_labels: Vec<String> = labels.iter().map(|l| norm(l)).collect();
    norm_labels.iter().position(|l| match answer {
        Answer::Yes => {
            l == "yes"
                || l.starts_with("yes (")
                || l.starts_with("yes,") && !l.starts_with("yes, and")
        }
        Answer::Always => {
            l.starts_with("yes, and")
                && (l.contains("always")
                    || l.contains("don't ask again")
                    || l.contains("don’t ask again"))
        }
        Answer::No => l == "no" || l.starts_with("no,") || l.starts_with("no ("),
    })
}

/// A short id for a permission prompt, a digest of what it asks: its kind,
/// heading, detail and option labels (not which option is selected: moving
/// the pointer does not make another prompt). Two prompts asking the same
/// thing get the same id; anything else a different one. 16 hex digits.
pub fn prompt_id(
    kind: &str,
    heading: Option<&str>,
    detail: Option<&str>,
    options: &[String],
) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    // Each part is length-prefixed, so no two part lists hash alike.
    let mut part = |s: &str| {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    part(kind);
    part(heading.unwrap_or(""));
    part(detail.unwrap_or(""));
    for o in options {
        part(o);
    }
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What ccd asks of a [`PermissionDialog`] to answer it (its type lives in
/// `ccd_protocol`, as plain data).
pub trait PermissionDialogExt {
    /// Its [`prompt_id`].
    fn prompt_id(&self) -> String;
    /// The option labels in screen order.
    fn labels(&self) -> Vec<String>;
    /// The index of the option that means `answer` ([`option_for`]).
    fn option_for(&self, answer: Answer) -> Option<usize>;
}

impl PermissionDialogExt for PermissionDialog {
    fn prompt_id(&self) -> String {
        prompt_id(
            self.kind.as_str(),
            self.heading.as_deref(),
            self.detail.as_deref(),
            &self.labels(),
        )
    }

    fn labels(&self) -> Vec<String> {
        self.options.iter().map(|o| o.label.clone()).collect()
    }

    fn option_for(&self, answer: Answer) -> Option<usize> {
        option_for(&self.labels(), answer)
    }
}

/// Look for a permission dialog.
pub fn detect(text: &ScreenText) -> Option<PermissionDialog> {
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
            let body = body_rows(rows, i);
            let heading = body.first().map(|h| h.trim().to_owned());
            let kind = heading
                .as_deref()
                .map_or(PermissionKind::Other, |h| kind_of(h, &body));
            let detail = detail_of(kind, &body);
            return Some(PermissionDialog {
                kind,
                heading,
                detail,
                question: q.to_owned(),
                options: menu
                    .options
                    .into_iter()
                    .map(|o| PermissionOption {
                        number: o.number,
                        label: o.label,
                    })
                    .collect(),
                selected: menu.selected,
            });
        }
    }
    None
}

/// The rows between the nearest rule above the question and the question,
/// box sides removed, from the first non-blank one (the heading) on.
fn body_rows(rows: &[String], question: usize) -> Vec<String> {
    let lo = question.saturating_sub(MAX_BODY_ROWS);
    let Some(rule) = (lo..question).rev().find(|&r| is_rule(&rows[r])) else {
        return Vec::new();
    };
    let body: Vec<String> = rows[rule + 1..question]
        .iter()
        .map(|r| strip_box(r))
        .collect();
    let first = body.iter().position(|r| !r.trim().is_empty());
    first.map_or_else(Vec::new, |f| body[f..].to_vec())
}

fn kind_of(heading: &str, body: &[String]) -> PermissionKind {
    let h = norm(heading);
    if h.starts_with("bash") {
        PermissionKind::Bash
    } else if h.contains("edit file")
        || h.contains("create file")
        || h.starts_with("write")
        || h.starts_with("edit")
    {
        PermissionKind::FileEdit
    } else if h.contains("fetch") {
        PermissionKind::WebFetch
    } else if h.contains("mcp") || body.iter().any(|r| r.contains("(MCP)")) {
        PermissionKind::Mcp
    } else {
        PermissionKind::Other
    }
}

/// A row of `╌` (the frame around a command or a file's content).
fn is_dashed(row: &str) -> bool {
    let t = row.trim();
    t.chars().count() >= 10 && t.chars().all(|c| matches!(c, '╌' | '┄' | '╍' | '┅'))
}

fn detail_of(kind: PermissionKind, body: &[String]) -> Option<String> {
    let below_heading = || {
        body.iter()
            .skip(1)
            .map(|r| r.trim())
            .find(|r| !r.is_empty() && !is_dashed(r))
            .map(str::to_owned)
    };
    if kind != PermissionKind::Bash {
        return below_heading();
    }
    let dashed: Vec<usize> = (0..body.len()).filter(|&r| is_dashed(&body[r])).collect();
    if let [a, b, ..] = dashed.as_slice() {
        let inner: Vec<&str> = body[a + 1..*b]
            .iter()
            .map(|r| r.trim())
            .filter(|r| !r.is_empty())
            .collect();
        if !inner.is_empty() {
            return Some(inner.join("\n"));
        }
    }
    below_heading()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(l: &[&str]) -> Vec<String> {
        l.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn answers_are_found_by_label_on_every_known_menu() {
        // 2.1.173, 2.1.332 (auto mode option before No), a file write, the
        // fake claude and an older "don't ask again" wording.
        let v173 = labels(&[
            "Yes",
            "Yes, and always allow access to proj/ from this project",
            "No",
        ]);
        let v332 = labels(&[
            "Yes",
            "Yes, and always allow access to /tmp/x/ from this project",
            "Yes, and switch to auto mode · shift+tab",
            "No",
        ]);
        let older = labels(&[
            "Yes",
            "Yes, and don\u{2019}t ask again for: nix run:*",
            "No, and tell Claude what to do differently (esc)",
        ]);
        for (menu, yes, always, no) in [(&v173, 0, 1, 2), (&v332, 0, 1, 3), (&older, 0, 1, 2)] {
            assert_eq!(option_for(menu, Answer::Yes), Some(yes), "{menu:?}");
            assert_eq!(option_for(menu, Answer::Always), Some(always), "{menu:?}");
            assert_eq!(option_for(menu, Answer::No), Some(no), "{menu:?}");
        }
        // A menu without an "always" option has none to offer.
        let plain = labels(&["Yes", "No"]);
        assert_eq!(option_for(&plain, Answer::Always), None);
        // "switch to auto mode" is never taken for "always".
        let auto_only = labels(&["Yes", "Yes, and switch to auto mode", "No"]);
        assert_eq!(option_for(&auto_only, Answer::Always), None);
    }

    #[test]
    fn prompt_ids_follow_what_is_asked_not_the_pointer() {
        let opts = labels(&["Yes", "No"]);
        let a = prompt_id("bash", Some("Bash command"), Some("echo hi"), &opts);
        assert_eq!(a.len(), 16);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(
            a,
            prompt_id("bash", Some("Bash command"), Some("echo hi"), &opts)
        );
        assert_ne!(
            a,
            prompt_id("bash", Some("Bash command"), Some("echo ho"), &opts)
        );
        assert_ne!(
            a,
            prompt_id("file_edit", Some("Bash command"), Some("echo hi"), &opts)
        );
        // Parts cannot slide into each other.
        assert_ne!(
            prompt_id("bash", Some("ab"), Some("c"), &opts),
            prompt_id("bash", Some("a"), Some("bc"), &opts)
        );
        let t = |pointer: usize| {
            let rows: Vec<String> = [
                "─".repeat(60),
                " Bash command".into(),
                "".into(),
                "   echo hi".into(),
                "".into(),
                " Do you want to proceed?".into(),
                format!(" {} 1. Yes", if pointer == 0 { "❯" } else { " " }),
                format!(" {} 2. No", if pointer == 1 { "❯" } else { " " }),
            ]
            .to_vec();
            detect(&ScreenText::from_lines(rows.iter().map(String::as_str))).unwrap()
        };
        assert_eq!(t(0).prompt_id(), t(1).prompt_id());
        assert_ne!(t(0).selected, t(1).selected);
        assert_eq!(
            t(0).prompt_id(),
            prompt_id("bash", Some("Bash command"), Some("echo hi"), &opts)
        );
    }

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
        assert_eq!(p.options[2].number, Some(3));
        assert_eq!(p.selected, Some(0));
        assert_eq!(p.kind, PermissionKind::Bash);
        assert_eq!(p.heading.as_deref(), Some("Bash command"));
        assert_eq!(p.detail.as_deref(), Some("nix run 'nixpkgs#cowsay'"));
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
            p.options[2].label,
            "No, and tell Claude what to do differently (esc)"
        );
        assert_eq!(p.kind, PermissionKind::FileEdit);
        assert_eq!(p.detail, None);
    }

    #[test]
    fn dashed_command_block_2_1_332() {
        let dash = format!(" {}", "╌".repeat(50));
        let t = ScreenText::from_lines([
            "─".repeat(60).as_str(),
            " Bash command",
            " Tip: auto mode handles these prompts for you",
            " Run echo hi > out.txt",
            dash.as_str(),
            " echo hi > out.txt",
            dash.as_str(),
            " Do you want to proceed?",
            " ❯ 1. Yes",
            "   2. Yes, and switch to auto mode",
            "   3. No",
        ]);
        let p = detect(&t).unwrap();
        assert_eq!(p.kind, PermissionKind::Bash);
        assert_eq!(p.detail.as_deref(), Some("echo hi > out.txt"));
    }

    #[test]
    fn kinds_from_headings() {
        let body = |h: &str, d: &str| {
            let t = ScreenText::from_lines([
                "─".repeat(60).as_str(),
                h,
                "",
                d,
                "",
                " Do you want to proceed?",
                " ❯ 1. Yes",
                "   2. No",
            ]);
            detect(&t).unwrap()
        };
        let p = body(" Fetch", "   https://example.com");
        assert_eq!(p.kind, PermissionKind::WebFetch);
        assert_eq!(p.detail.as_deref(), Some("https://example.com"));
        let p = body(" Tool use", "   srv - do_thing(x: 1) (MCP)");
        assert_eq!(p.kind, PermissionKind::Mcp);
        assert_eq!(body(" Something new", "   x").kind, PermissionKind::Other);
        // No rule above the question: no heading, kind Other.
        let t = ScreenText::from_lines([" Do you want to proceed?", " ❯ 1. Yes", "   2. No"]);
        let p = detect(&t).unwrap();
        assert_eq!(
            (p.kind, p.heading, p.detail),
            (PermissionKind::Other, None, None)
        );
    }

    #[test]
    fn question_alone_is_not_enough() {
        let t = ScreenText::from_lines([" Do you want to proceed?", "", " some text"]);
        assert!(detect(&t).is_none());
    }
}
