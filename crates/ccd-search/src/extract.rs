//! What is searchable in a transcript record (sans-IO).
//!
//! [`messages`] turns one transcript line into the texts a person could
//! remember, each with its [`Role`], timestamp and the record's byte
//! offset. Searchable, decoded from JSON (so `\"`, `\n`, `\u00e9` in the
//! file match `"`, a line break, `é`):
//!
//! - `user`: every `text` block (or the string content) of a user record
//!   that is not `isMeta` — role `user`; a compaction's summary
//!   (`isCompactSummary`) is role `summary`.
//! - `assistant`: every `text` block — role `assistant`; every `tool_use`
//!   block — role `tool`: the tool's name, then every string value of its
//!   input in order (commands, file paths, patterns, the text written), one
//!   a line.
//! - `ai-title` / `custom-title` — role `title`; `summary` records — role
//!   `summary`.
//!
//! Never searchable: JSON keys, ids (`uuid`, `sessionId`, `tool_use_id`,
//! ...), any other record type (attachments, snapshots, API request
//! copies, `last-prompt`, which repeats a prompt), `image` and `document`
//! blocks (base64 data), `thinking` blocks (and their signatures), and tool
//! results (output, often binary or huge: what a tool *was asked* is
//! searchable, not what it printed). A line that is not a complete JSON
//! object yields nothing.

use ccd_claude::transcript::record::Record;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// Who said a searchable text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    Tool,
    Title,
    Summary,
}

impl Role {
    pub const ALL: [Role; 5] = [
        Role::User,
        Role::Assistant,
        Role::Tool,
        Role::Title,
        Role::Summary,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Title => "title",
            Role::Summary => "summary",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// One searchable text of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    pub text: String,
    /// The record's `timestamp` (RFC 3339), when it has one.
    pub timestamp: Option<String>,
    /// The record's `cwd`, when it has one.
    pub cwd: Option<String>,
    /// The byte offset of the record's line in its file.
    pub offset: u64,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct TitleRecord {
    #[serde(rename = "aiTitle", default)]
    ai_title: Option<String>,
    #[serde(rename = "customTitle", default)]
    custom_title: Option<String>,
    #[serde(default)]
    summary: Option<String>,
}

/// The record types that can hold searchable text: anything else is
/// skipped before it is parsed.
const KINDS: [&str; 5] = ["user", "assistant", "ai-title", "custom-title", "summary"];

/// Cheap test on a raw line: does it name one of [`KINDS`] as a `type`?
/// False only when it certainly does not (escaped or spaced spellings pass
/// to the parser).
fn may_hold_text(line: &[u8]) -> bool {
    let finder = memchr::memmem::find_iter(line, b"\"type\"");
    for at in finder {
        let rest = &line[at + 6..];
        let rest = rest
            .iter()
            .position(|b| !matches!(b, b' ' | b':' | b'\t'))
            .map_or(&[][..], |i| &rest[i..]);
        for k in KINDS {
            if rest.len() > k.len() + 1
                && rest[0] == b'"'
                && &rest[1..=k.len()] == k.as_bytes()
                && rest[k.len() + 1] == b'"'
            {
                return true;
            }
        }
        if rest.first() == Some(&b'"') && rest.get(1) == Some(&b'\\') {
            return true;
        }
    }
    false
}

/// The searchable texts of one transcript line at `offset`, appended to
/// `out`.
pub fn messages(line: &[u8], offset: u64, out: &mut Vec<Message>) {
    if !may_hold_text(line) {
        return;
    }
    let Some(rec) = Record::parse(line) else {
        return;
    };
    let mut push = |role: Role, text: String| {
        if !text.trim().is_empty() {
            out.push(Message {
                role,
                text,
                timestamp: rec.timestamp.clone(),
                cwd: rec.cwd.clone(),
                offset,
            });
        }
    };
    match rec.kind.as_deref() {
        Some("user") => {
            if rec.is_meta == Some(true) {
                return;
            }
            let role = if rec.is_compact_summary == Some(true) {
                Role::Summary
            } else {
                Role::User
            };
            let Some(content) = rec.message().and_then(|m| m.content) else {
                return;
            };
            for t in content_texts(content, false) {
                push(role, t.1);
            }
        }
        Some("assistant") => {
            let Some(content) = rec.message().and_then(|m| m.content) else {
                return;
            };
            for (role, t) in content_texts(content, true) {
                push(role, t);
            }
        }
        Some("ai-title" | "custom-title" | "summary") => {
            let Ok(t) = serde_json::from_slice::<TitleRecord>(line) else {
                return;
            };
            if let Some(s) = t.ai_title.or(t.custom_title) {
                push(Role::Title, s);
            }
            if let Some(s) = t.summary {
                push(Role::Summary, s);
            }
        }
        _ => {}
    }
}

/// The texts of a `message.content`: a string, or blocks (`text`, and with
/// `tools`, `tool_use`).
fn content_texts(content: &RawValue, tools: bool) -> Vec<(Role, String)> {
    let raw = content.get().trim_start();
    let text_role = if tools { Role::Assistant } else { Role::User };
    if raw.starts_with('"') {
        return serde_json::from_str::<String>(raw)
            .map(|s| vec![(text_role, s)])
            .unwrap_or_default();
    }
    let Ok(blocks) = serde_json::from_str::<Vec<Block<'_>>>(raw) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for b in blocks {
        match b.kind.as_deref() {
            Some("text") => {
                if let Some(t) = b.text {
                    out.push((text_role, t));
                }
            }
            Some("tool_use" | "server_tool_use") if tools => {
                let mut t = b.name.unwrap_or_default();
                if let Some(input) = b.input {
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(input.get()) {
                        strings_of(&v, &mut t);
                    }
                }
                out.push((Role::Tool, t));
            }
            _ => {}
        }
    }
    out
}

/// Every string value in `v` (not keys), in order, one a line.
fn strings_of(v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::String(s) => {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(s);
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings_of(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| strings_of(x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(line: &str) -> Vec<(Role, String)> {
        let mut out = Vec::new();
        messages(line.as_bytes(), 3, &mut out);
        out.into_iter().map(|m| (m.role, m.text)).collect()
    }

    #[test]
    fn user_assistant_tool_title_summary() {
        assert_eq!(
            of(
                r#"{"type":"user","timestamp":"t","message":{"content":"fix the \"auth\" bug\nnow caf\u00e9"}}"#
            ),
            vec![(Role::User, "fix the \"auth\" bug\nnow café".into())]
        );
        assert_eq!(
            of(
                r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"hmm","signature":"c2ln"},{"type":"text","text":"Done."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"cargo test","description":"run"}}]}}"#
            ),
            vec![
                (Role::Assistant, "Done.".into()),
                (Role::Tool, "Bash\ncargo test\nrun".into())
            ]
        );
        assert_eq!(
            of(r#"{"type":"ai-title","aiTitle":"Auth fix"}"#),
            vec![(Role::Title, "Auth fix".into())]
        );
        assert_eq!(
            of(r#"{"type":"summary","summary":"Fixed auth","leafUuid":"x"}"#),
            vec![(Role::Summary, "Fixed auth".into())]
        );
        assert_eq!(
            of(r#"{"type":"user","isCompactSummary":true,"message":{"content":"so far"}}"#),
            vec![(Role::Summary, "so far".into())]
        );
    }

    #[test]
    fn never_keys_ids_images_results_meta() {
        assert!(of(r#"{"type":"user","isMeta":true,"message":{"content":"caveat"}}"#).is_empty());
        assert!(of(
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"out"},{"type":"image","source":{"type":"base64","data":"iVBORw0KGgo"}}]}}"#
        )
        .is_empty());
        assert!(of(r#"{"type":"attachment","attachment":{"content":"x"}}"#).is_empty());
        assert!(of(r#"{"type":"last-prompt","lastPrompt":"again"}"#).is_empty());
        assert!(of(r#"{"type":"user","message":{"content":"half"#).is_empty());
    }

    #[test]
    fn prefilter_lets_every_searchable_kind_through() {
        for k in KINDS {
            assert!(may_hold_text(format!(r#"{{"type" : "{k}"}}"#).as_bytes()));
        }
        assert!(!may_hold_text(br#"{"type":"attachment","x":"user"}"#));
        assert!(may_hold_text(br#"{"type":"\u0075ser"}"#));
    }
}
