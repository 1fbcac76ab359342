//! The tolerant shape of one transcript line.
//!
//! Only the fields ccd reads are declared; everything else is skipped by
//! serde without being built. Conversation records (`user`, `assistant`,
//! `attachment`, `system`) carry `sessionId`, `cwd`, `timestamp`;
//! bookkeeping records (`mode`, `last-prompt`, `cost-state`,
//! `file-history-snapshot`, ...) lack most of them. Unknown types parse too.

use serde::Deserialize;
use serde_json::value::RawValue;

/// One line of a transcript, lazily parsed.
#[derive(Debug, Deserialize)]
pub struct Record<'a> {
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    #[serde(rename = "sessionId", default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub timestamp: Option<String>,
    #[serde(rename = "isMeta", default)]
    pub is_meta: Option<bool>,
    #[serde(rename = "isSidechain", default)]
    pub is_sidechain: Option<bool>,
    /// Set on the user record that carries the summary written by a
    /// compaction: text the CLI wrote, not a person.
    #[serde(rename = "isCompactSummary", default)]
    pub is_compact_summary: Option<bool>,
    #[serde(rename = "lastPrompt", default)]
    pub last_prompt: Option<String>,
    /// Parsed on demand with [`Record::message`].
    #[serde(borrow, default)]
    pub message: Option<&'a RawValue>,
}

/// The parts of `message` ccd reads; `content` stays unparsed until asked.
#[derive(Debug, Deserialize)]
pub struct Message<'a> {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// `message.usage` of an assistant record.
#[derive(Debug, Default, Deserialize, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
}

impl Usage {
    /// Context in use after the turn: the three input figures added up.
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
    }
}

impl<'a> Record<'a> {
    /// Parses one line; `None` for anything that is not a JSON object of
    /// the expected shape (a half-written line, garbage).
    pub fn parse(line: &'a [u8]) -> Option<Self> {
        serde_json::from_slice(line).ok()
    }

    pub fn is(&self, kind: &str) -> bool {
        self.kind.as_deref() == Some(kind)
    }

    /// The `message` object, parsed (its `content` left raw).
    pub fn message(&self) -> Option<Message<'a>> {
        self.message
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }

    /// The text a person typed, for a `user` record that holds one: not
    /// meta, not a sidechain, not a compaction summary, not a tool result,
    /// not a command wrapper.
    pub fn human_prompt(&self) -> Option<String> {
        if !self.is("user")
            || self.is_meta == Some(true)
            || self.is_sidechain == Some(true)
            || self.is_compact_summary == Some(true)
        {
            return None;
        }
        let content: serde_json::Value =
            serde_json::from_str(self.message()?.content?.get()).ok()?;
        let text = match content {
            serde_json::Value::String(s) => s,
            serde_json::Value::Array(blocks) => blocks.into_iter().find_map(|b| {
                (b.get("type")?.as_str()? == "text")
                    .then(|| b.get("text")?.as_str().map(String::from))
                    .flatten()
            })?,
            _ => return None,
        };
        let trimmed = text.trim();
        (!trimmed.is_empty() && !trimmed.starts_with('<')).then(|| trimmed.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts() {
        let r = Record::parse(br#"{"type":"user","message":{"role":"user","content":"hi there"}}"#)
            .unwrap();
        assert_eq!(r.human_prompt().as_deref(), Some("hi there"));
        let r = Record::parse(
            br#"{"type":"user","message":{"content":[{"type":"tool_result","content":"x"}]}}"#,
        )
        .unwrap();
        assert_eq!(r.human_prompt(), None);
        let r = Record::parse(
            br#"{"type":"user","message":{"content":[{"type":"text","text":"blocks"}]}}"#,
        )
        .unwrap();
        assert_eq!(r.human_prompt().as_deref(), Some("blocks"));
        let r = Record::parse(br#"{"type":"user","isMeta":true,"message":{"content":"caveat"}}"#)
            .unwrap();
        assert_eq!(r.human_prompt(), None);
        let r = Record::parse(br#"{"type":"user","message":{"content":"<command-name>/clear"}}"#)
            .unwrap();
        assert_eq!(r.human_prompt(), None);
        let r = Record::parse(
            br#"{"type":"user","isCompactSummary":true,"message":{"content":"This session is being continued"}}"#,
        )
        .unwrap();
        assert_eq!(r.human_prompt(), None);
        assert!(Record::parse(br#"{"type":"user","mess"#).is_none());
        assert!(Record::parse(b"[1,2]").is_none());
    }

    #[test]
    fn usage_sum() {
        let r = Record::parse(br#"{"type":"assistant","message":{"model":"m","usage":{"input_tokens":1,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":9,"extra":{}}}}"#).unwrap();
        let m = r.message().unwrap();
        assert_eq!(m.usage.unwrap().context_tokens(), 6);
        assert_eq!(m.model.as_deref(), Some("m"));
    }
}
