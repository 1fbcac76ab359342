//! What a trim may drop, record kind by record kind, and what each rule
//! rests on (`spikes/trim-lossless/README.md`, `docs/claude-cli-compat.md`
//! "What resume reads": with the real CLI 2.1.173 and 2.1.332, resuming a
//! copy without the records sent the same first request as the original).
//!
//! Only what was measured identical is dropped by default; a kind not
//! measured is kept; a top-level type not in [`KNOWN_TYPES`] makes the
//! whole file refused (the format-drift guard) unless forced.

/// Every top-level `type` ccd knows Claude Code to write: the drift
/// check's list (one list for both).
pub use crate::drift::KNOWN_RECORD_TYPES as KNOWN_TYPES;

/// The CLI versions the drop rules were measured on.
pub const MEASURED_VERSIONS: &[&str] = &["2.1.173", "2.1.332"];

/// Record types that make up the conversation chain: a record of one of
/// these with a uuid off the chain resume follows is a dead branch (the
/// spike's `/rewind` and concurrent-resume branches were made of them).
pub fn is_conversation(kind: &str) -> bool {
    matches!(kind, "user" | "assistant" | "attachment" | "system")
}

/// What the rules say about one record, before the chain is looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Kept (not measured, or measured not identical).
    Keep,
    /// Dropped by default (measured identical on resume).
    Drop,
    /// Dropped with `--drop-file-history` only (`/rewind` checkpoints).
    FileHistory,
    /// Only the newest of its kind is kept (`last-prompt`: resume follows
    /// its `leafUuid`, the 2.1.332 picker shows it; `ai-title`: the 2.1.173
    /// picker shows the newest; dropping every one was identical).
    NewestOnly,
}

/// The rule for a record of `kind`, with its `attachment.type`, `mode` and
/// `atis` values where they matter.
pub fn rule(kind: &str, attachment: Option<&str>, mode: Option<&str>, atis: Option<&str>) -> Rule {
    match kind {
        // 2.1.332: the request as sent, per turn; identical when dropped.
        "api-request" | "api-request-shape" | "api-request-blob" => Rule::Drop,
        // 2.1.332: cost totals (identical; `/cost` after resume not checked).
        "cost-state" | "tools-used" => Rule::Drop,
        // Only the values measured: `"atis": ""`, `"mode": "normal"`.
        "atis-latch" if atis == Some("") => Rule::Drop,
        "mode" if mode == Some("normal") => Rule::Drop,
        "file-history-snapshot" | "file-history-delta" => Rule::FileHistory,
        "last-prompt" | "ai-title" => Rule::NewestOnly,
        // The system prompt and tools as sent (2.1.332), 38 % of the
        // sample: identical when dropped, relinked or not. Every other
        // attachment is conversation (re-announced when missing).
        "attachment" if attachment == Some("prompt_snapshot") => Rule::Drop,
        // permission-mode is state 2.1.332 restores; progress,
        // queue-operation, summary, custom-title, tag, system records,
        // other attachments: kept.
        _ => Rule::Keep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_measured_values_drop() {
        assert_eq!(rule("mode", None, Some("normal"), None), Rule::Drop);
        assert_eq!(rule("mode", None, Some("plan"), None), Rule::Keep);
        assert_eq!(rule("atis-latch", None, None, Some("")), Rule::Drop);
        assert_eq!(rule("atis-latch", None, None, Some("x")), Rule::Keep);
        assert_eq!(rule("permission-mode", None, None, None), Rule::Keep);
        assert_eq!(
            rule("attachment", Some("prompt_snapshot"), None, None),
            Rule::Drop
        );
        assert_eq!(
            rule("attachment", Some("skill_listing"), None, None),
            Rule::Keep
        );
        assert_eq!(rule("progress", None, None, None), Rule::Keep);
        assert_eq!(rule("system", None, None, None), Rule::Keep);
    }
}
