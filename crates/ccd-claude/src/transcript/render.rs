//! Transcript records as a readable conversation, for `ccd observe`.
//!
//! [`render_record`] turns one transcript line into zero or more
//! [`Rendered`] items: the prompts a person typed, the assistant's text, one
//! line per tool call and per tool result, and the few `system` records that
//! matter to a reader (a compaction, a notice with text). Bookkeeping
//! records, attachments, sidechain (subagent) records, meta records, command
//! wrappers and anything that does not parse yield nothing. Every rendered
//! text is a single line, stripped of ANSI escape sequences and control
//! characters, and cut to a bounded length.
//!
//! [`render_line`] formats one item for a terminal of a given width, through
//! the terminal sanitizer again ([`crate::display::line`]): an item from
//! another machine's `session.tail` may hold whole escape sequences, which
//! are removed, never only their ESC.

use super::record::Record;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::borrow::Cow;

/// Longest prompt or assistant text kept, in chars.
pub const MAX_TEXT_CHARS: usize = 400;
/// Longest tool call summary or tool result line kept, in chars.
pub const MAX_TOOL_CHARS: usize = 120;
/// What joins the lines of a multi-line text once collapsed to one line.
pub const LINE_JOIN: &str = " ⏎ ";

/// What a rendered item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RenderedKind {
    /// A prompt a person typed.
    User,
    /// Text the assistant wrote.
    Assistant,
    /// A tool call, e.g. `Bash(ls -la)`.
    Tool,
    /// The first line of a tool's result (`error: ` first when it failed).
    ToolResult,
    /// A notice: a compaction, an interruption, a `system` record's text,
    /// or one from the follower itself.
    System,
}

/// One readable item of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rendered {
    /// What the item is.
    pub kind: RenderedKind,
    /// One line of text: no newlines, no control characters, bounded length.
    pub text: String,
    /// The record's `timestamp`, as written (RFC 3339), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl Rendered {
    fn new(kind: RenderedKind, text: String, timestamp: Option<&str>) -> Self {
        Rendered {
            kind,
            text,
            timestamp: timestamp.map(String::from),
        }
    }
}

/// Tool input fields that say the most about a call, best first (a search
/// pattern says more than the folder searched).
const TELLING_FIELDS: &[&str] = &[
    "command",
    "file_path",
    "notebook_path",
    "pattern",
    "path",
    "url",
    "query",
    "description",
    "prompt",
    "skill",
];

/// One content block of a `message`; only what rendering reads.
#[derive(Debug, Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(default)]
    is_error: Option<bool>,
}

impl Block<'_> {
    fn is(&self, kind: &str) -> bool {
        self.kind.as_deref() == Some(kind)
    }
}

/// The fields of a `system` record rendering reads.
#[derive(Debug, Deserialize)]
struct SystemFields<'a> {
    #[serde(default)]
    subtype: Option<String>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(rename = "compactMetadata", default)]
    compact_metadata: Option<CompactMetadata>,
}

#[derive(Debug, Deserialize)]
struct CompactMetadata {
    #[serde(default)]
    trigger: Option<String>,
    #[serde(rename = "preTokens", default)]
    pre_tokens: Option<u64>,
}

/// Renders one transcript line (without its newline). Returns nothing for
/// records a reader does not need and for lines that do not parse; never
/// panics.
pub fn render_record(line: &[u8]) -> Vec<Rendered> {
    let Some(rec) = Record::parse(line) else {
        return Vec::new();
    };
    if rec.is_sidechain == Some(true) {
        return Vec::new();
    }
    match rec.kind.as_deref() {
        Some("user") => render_user(&rec),
        Some("assistant") => render_assistant(&rec),
        Some("system") => render_system(line, rec.timestamp.as_deref())
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

fn content_blocks<'a>(rec: &Record<'a>) -> Option<Result<Vec<Block<'a>>, Cow<'a, str>>> {
    let raw = rec.message()?.content?;
    let text: &'a str = raw.get();
    if text.starts_with('"') {
        serde_json::from_str::<Cow<'a, str>>(text).ok().map(Err)
    } else {
        serde_json::from_str::<Vec<Block<'a>>>(text).ok().map(Ok)
    }
}

fn render_user(rec: &Record<'_>) -> Vec<Rendered> {
    if rec.is_meta == Some(true) || rec.is_compact_summary == Some(true) {
        return Vec::new();
    }
    let ts = rec.timestamp.as_deref();
    if let Some(Ok(blocks)) = content_blocks(rec) {
        if blocks.iter().any(|b| b.is("tool_result")) {
            return blocks
                .iter()
                .filter(|b| b.is("tool_result"))
                .map(|b| Rendered::new(RenderedKind::ToolResult, tool_result_line(b), ts))
                .collect();
        }
    }
    let Some(prompt) = rec.human_prompt() else {
        return Vec::new();
    };
    if prompt.starts_with("[Request interrupted by user") {
        return vec![Rendered::new(
            RenderedKind::System,
            "interrupted by user".to_string(),
            ts,
        )];
    }
    let text = one_line(&prompt, MAX_TEXT_CHARS);
    if text.is_empty() {
        return Vec::new();
    }
    vec![Rendered::new(RenderedKind::User, text, ts)]
}

fn render_assistant(rec: &Record<'_>) -> Vec<Rendered> {
    let ts = rec.timestamp.as_deref();
    let blocks = match content_blocks(rec) {
        Some(Ok(blocks)) => blocks,
        Some(Err(text)) => {
            let text = one_line(&text, MAX_TEXT_CHARS);
            return if text.is_empty() {
                Vec::new()
            } else {
                vec![Rendered::new(RenderedKind::Assistant, text, ts)]
            };
        }
        None => return Vec::new(),
    };
    let mut out = Vec::new();
    for b in &blocks {
        if b.is("text") {
            let text = one_line(b.text.as_deref().unwrap_or(""), MAX_TEXT_CHARS);
            if !text.is_empty() {
                out.push(Rendered::new(RenderedKind::Assistant, text, ts));
            }
        } else if b.is("tool_use") || b.is("server_tool_use") {
            out.push(Rendered::new(RenderedKind::Tool, tool_call_line(b), ts));
        }
    }
    out
}

fn render_system(line: &[u8], ts: Option<&str>) -> Option<Rendered> {
    let fields: SystemFields<'_> = serde_json::from_slice(line).ok()?;
    let content = fields
        .content
        .and_then(|raw| serde_json::from_str::<Cow<'_, str>>(raw.get()).ok())
        .map(|c| one_line(&strip_tags(&c), MAX_TEXT_CHARS))
        .filter(|c| !c.is_empty());
    let text = match (fields.subtype.as_deref(), content) {
        (_, Some(c)) => c,
        (Some("compact_boundary"), None) => {
            let mut text = String::from("conversation compacted");
            if let Some(m) = &fields.compact_metadata {
                let trigger = m.trigger.as_deref().map(|t| one_line(t, 20));
                let detail = match (trigger, m.pre_tokens) {
                    (Some(t), Some(n)) => format!(" ({t}, {n} tokens)"),
                    (Some(t), None) => format!(" ({t})"),
                    (None, Some(n)) => format!(" ({n} tokens)"),
                    (None, None) => String::new(),
                };
                text.push_str(&detail);
            }
            text
        }
        _ => return None,
    };
    Some(Rendered::new(RenderedKind::System, text, ts))
}

/// `Name(most telling input)`, else `Name(json of the input)`, bounded.
fn tool_call_line(b: &Block<'_>) -> String {
    let name = b
        .name
        .as_deref()
        .map(|n| one_line(n, 60))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "tool".to_string());
    let input: Option<serde_json::Map<String, serde_json::Value>> =
        b.input.and_then(|raw| serde_json::from_str(raw.get()).ok());
    let arg = match &input {
        None => b
            .input
            .map(|raw| match serde_json::from_str(raw.get()) {
                Ok(v) => one_line(&json_text(v), MAX_TOOL_CHARS),
                Err(_) => one_line(raw.get(), MAX_TOOL_CHARS),
            })
            .unwrap_or_default(),
        Some(map) if map.is_empty() => String::new(),
        Some(map) => TELLING_FIELDS
            .iter()
            .find_map(|f| {
                map.get(*f)
                    .and_then(|v| v.as_str())
                    .map(|v| one_line(v, MAX_TOOL_CHARS))
                    .filter(|v| !v.is_empty())
            })
            .unwrap_or_else(|| {
                let json = json_text(serde_json::Value::Object(map.clone()));
                one_line(&json, MAX_TOOL_CHARS)
            }),
    };
    format!("{name}({arg})")
}

/// `v` as compact JSON with its strings sanitized first: written as JSON,
/// an escape sequence would become `\u001b[31m` text the sanitizer cannot
/// see.
fn json_text(mut v: serde_json::Value) -> String {
    fn clean(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) => {
                if let Cow::Owned(c) = crate::display::line(s) {
                    *s = c;
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(clean),
            serde_json::Value::Object(m) => m.values_mut().for_each(clean),
            _ => {}
        }
    }
    clean(&mut v);
    serde_json::to_string(&v).unwrap_or_default()
}

/// The first non-empty line of a tool result, bounded; `error: ` first
/// when the result is an error.
fn tool_result_line(b: &Block<'_>) -> String {
    let body = b.content.and_then(|raw| {
        let text = raw.get();
        if text.starts_with('"') {
            serde_json::from_str::<Cow<'_, str>>(text).ok()
        } else {
            let blocks: Vec<Block<'_>> = serde_json::from_str(text).ok()?;
            blocks
                .into_iter()
                .filter(|b| b.is("text"))
                .find_map(|b| b.text.filter(|t| !t.trim().is_empty()))
        }
    });
    let first = body
        .as_deref()
        .map(|t| first_line(t, MAX_TOOL_CHARS))
        .filter(|l| !l.is_empty());
    let is_error = b.is_error == Some(true);
    match (is_error, first) {
        (false, Some(l)) => l,
        (false, None) => "(no output)".to_string(),
        (true, Some(l)) => format!("error: {l}"),
        (true, None) => "error".to_string(),
    }
}

/// Formats an item as one line of at most `width` chars: a prefix per kind,
/// then the text, cut with `…` when too long. Counts chars (not bytes, not
/// display columns) and never splits one.
pub fn render_line(r: &Rendered, width: usize) -> String {
    let prefix = match r.kind {
        RenderedKind::User => "› ",
        RenderedKind::Assistant => "● ",
        RenderedKind::Tool => "⏺ ",
        RenderedKind::ToolResult => "  ⎿ ",
        RenderedKind::System => "· ",
    };
    // The text is one clean line already when it came from render_record;
    // items built elsewhere (another machine's `session.tail`) go through
    // the terminal sanitizer, which removes whole escape sequences.
    let text = crate::display::line(&r.text);
    truncate_chars(&format!("{prefix}{text}"), width)
}

/// `s` cut to at most `max` chars, the last one `…` when something was cut.
fn truncate_chars(s: &str, max: usize) -> String {
    if max == 0 {
        return String::new();
    }
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some(_) => {
            // Keep max - 1 chars and the ellipsis.
            let end = s
                .char_indices()
                .nth(max - 1)
                .map(|(i, _)| i)
                .unwrap_or(s.len());
            let mut out = s[..end].trim_end().to_string();
            out.push('…');
            out
        }
    }
}

/// Cleans `s` and collapses it to one line: blank lines dropped, the others
/// trimmed and joined with [`LINE_JOIN`], then cut to `max` chars.
fn one_line(s: &str, max: usize) -> String {
    let clean = crate::display::text(s);
    let mut out = String::new();
    for line in clean.lines() {
        let line = collapse_spaces(line);
        if line.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str(LINE_JOIN);
        }
        out.push_str(&line);
        // Enough to cut already: stop before copying a huge text whole.
        if out.len() > max * 4 + 4 {
            break;
        }
    }
    truncate_chars(&out, max)
}

/// The first non-blank line of `s`, cleaned and cut to `max` chars.
fn first_line(s: &str, max: usize) -> String {
    for line in s.lines() {
        let line = collapse_spaces(&crate::display::text(line));
        if !line.is_empty() {
            return truncate_chars(&line, max);
        }
    }
    String::new()
}

/// Runs of whitespace as one space, trimmed.
fn collapse_spaces(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Removes `<tag>` and `</tag>` wrappers (lowercase names with `-`/`_`), as
/// in `<local-command-stdout>…</local-command-stdout>`.
fn strip_tags(s: &str) -> Cow<'_, str> {
    if !s.contains('<') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let name_part = after.strip_prefix('/').unwrap_or(after);
        let name_len = name_part
            .char_indices()
            .take_while(|(j, c)| {
                c.is_ascii_lowercase() || (*j > 0 && (c.is_ascii_digit() || *c == '-' || *c == '_'))
            })
            .count();
        if name_len > 0 && name_part[name_len..].starts_with('>') {
            let skip = (after.len() - name_part.len()) + name_len + 1;
            rest = &after[skip..];
            // Keep words on either side of a removed tag apart.
            out.push(' ');
        } else {
            out.push('<');
            rest = after;
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_collapses_and_truncates() {
        assert_eq!(one_line("  a \n\n  b   c\n", 100), "a ⏎ b c");
        let long = "é".repeat(1000);
        let cut = one_line(&long, 10);
        assert_eq!(cut.chars().count(), 10);
        assert!(cut.ends_with('…'));
        assert_eq!(one_line("", 10), "");
        assert_eq!(first_line("\n \n  first  line \nsecond", 100), "first line");
    }

    #[test]
    fn truncation_edges() {
        assert_eq!(truncate_chars("abc", 0), "");
        assert_eq!(truncate_chars("abc", 1), "…");
        assert_eq!(truncate_chars("abc", 3), "abc");
        assert_eq!(truncate_chars("abcd", 3), "ab…");
        assert_eq!(truncate_chars("日本語テキスト", 4), "日本語…");
    }

    #[test]
    fn tags_are_stripped() {
        assert_eq!(
            strip_tags("<local-command-stdout>Set model</local-command-stdout>").trim(),
            "Set model"
        );
        assert_eq!(strip_tags("a < b and Vec<U8>"), "a < b and Vec<U8>");
        assert_eq!(strip_tags("dangling <"), "dangling <");
        assert_eq!(strip_tags("<é>"), "<é>");
    }
}

#[cfg(test)]
mod escape_tests {
    //! The preview removes whole escape sequences, never only their ESC.
    use super::*;

    /// Texts holding a CSI, an OSC ended by BEL and by ST (`ESC \`), a
    /// string command (DCS), and the C1 forms of CSI, OSC and ST.
    const HOSTILE: &[&str] = &[
        "a\u{1b}[31mred\u{1b}[0m b",
        "a\u{1b}]0;title\u{7} b",
        "a\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\ b",
        "a\u{1b}P1$r0m\u{1b}\\ b",
        "a\u{9b}2K\u{9d}0;title\u{9c} b",
    ];

    fn assert_clean(shown: &str, from: &str) {
        for body in [
            "[31m", "[0m", "]0;", "title", "]8;", "http", "P1$", "2K", "$r0m",
        ] {
            assert!(
                !shown.contains(body),
                "{from:?} shown as {shown:?}: the body {body:?} is left"
            );
        }
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        assert!(shown.contains('a') && shown.contains('b'), "{shown:?}");
    }

    #[test]
    fn an_item_from_elsewhere_is_shown_without_its_sequences() {
        // `session.tail` of another machine's daemon: items built there.
        for text in HOSTILE {
            let r = Rendered::new(RenderedKind::Assistant, (*text).to_string(), None);
            assert_clean(&render_line(&r, 1000), text);
        }
    }

    #[test]
    fn records_are_rendered_without_their_sequences() {
        for text in HOSTILE {
            let t = serde_json::to_string(text).unwrap();
            let lines = [
                format!(r#"{{"type":"user","message":{{"role":"user","content":{t}}}}}"#),
                format!(
                    r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":{t}}}]}}}}"#
                ),
                // A tool call with no telling field: its input as JSON.
                format!(
                    r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","name":"X","input":{{"odd":{t}}}}}]}}}}"#
                ),
                // A tool call whose input is not an object.
                format!(
                    r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","name":"X","input":[{t}]}}]}}}}"#
                ),
                format!(
                    r#"{{"type":"user","message":{{"content":[{{"type":"tool_result","content":{t}}}]}}}}"#
                ),
                format!(r#"{{"type":"system","content":{t}}}"#),
            ];
            for line in &lines {
                let items = render_record(line.as_bytes());
                assert!(!items.is_empty(), "{line}");
                for item in items {
                    assert_clean(&item.text, line);
                    assert_clean(&render_line(&item, 1000), line);
                }
            }
        }
    }
}
