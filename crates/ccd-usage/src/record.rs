//! One transcript line → the usage of the assistant message it carries.
//!
//! The CLI writes each assistant message's `message.usage` (input, output,
//! cache creation and cache read tokens) with the message's `id`, the
//! request's `requestId`, the `model` and a `timestamp`. A streamed message
//! is written as several records (one per content block) that repeat the
//! same ids: [`Usage::key`] is what [`crate::tally`] deduplicates on.
//!
//! What counts, as ccusage 20.0.24 reads it (measured on crafted files):
//! any record with `message.usage` whose `input_tokens` and
//! `output_tokens` are non-negative integers and whose `timestamp` is an
//! RFC 3339 time; the record's `type` is not looked at. Records it
//! rejects that ccd still counts: a `": "`-separated record (ccusage only
//! looks at lines containing `"usage":{`) and a `null` cache count (0
//! here). A record with a malformed field (a negative or fractional
//! count, a non-string id) is skipped whole, as ccusage skips it. Cache
//! writes: when `usage.cache_creation` (the split by lifetime) is there,
//! its 5-minute and 1-hour counts are the cache writes, whatever
//! `cache_creation_input_tokens` says (as ccusage reads them), the 1-hour
//! ones priced apart.

use serde::Deserialize;
use std::borrow::Cow;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::tally::Tokens;

/// The usage one record carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage<'a> {
    /// The message id and request id, hashed ([`key_of`]); `None` when the
    /// record has no message id (it is then never deduplicated).
    pub key: Option<u64>,
    /// When, in Unix seconds.
    pub at: i64,
    pub model: Option<Cow<'a, str>>,
    pub tokens: Tokens,
    /// The folder the CLI ran in, when the record names it.
    pub cwd: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Raw<'a> {
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "requestId", borrow)]
    request_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<RawMessage<'a>>,
}

#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    usage: Option<RawUsage>,
}

#[derive(Deserialize)]
struct RawUsage {
    input_tokens: u64,
    output_tokens: u64,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation: Option<RawCacheCreation>,
}

/// The cache writes by lifetime; when present it is what counts (ccusage
/// 20.0.24 reads it over `cache_creation_input_tokens`, and prices the
/// 1-hour writes at their own price).
#[derive(Deserialize)]
struct RawCacheCreation {
    ephemeral_5m_input_tokens: Option<u64>,
    ephemeral_1h_input_tokens: Option<u64>,
}

/// The dedup key of a message id and request id (FNV-1a, 64 bits: stable
/// across builds, so it can be cached). A missing request id is the empty
/// one, as ccusage keys it.
pub fn key_of(message_id: &str, request_id: Option<&str>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    };
    for &b in message_id.as_bytes() {
        eat(b);
    }
    eat(0xff);
    for &b in request_id.unwrap_or("").as_bytes() {
        eat(b);
    }
    h
}

/// The usage `line` carries, if any. Cheap for the lines that carry none
/// (a substring test before any parsing).
pub fn parse(line: &[u8]) -> Option<Usage<'_>> {
    memchr::memmem::find(line, b"\"usage\"")?;
    let raw: Raw<'_> = serde_json::from_slice(line).ok()?;
    let message = raw.message?;
    let u = message.usage?;
    let at = OffsetDateTime::parse(raw.timestamp.as_deref()?, &Rfc3339)
        .ok()?
        .unix_timestamp();
    Some(Usage {
        key: message
            .id
            .as_deref()
            .map(|id| key_of(id, raw.request_id.as_deref())),
        at,
        model: message.model,
        tokens: match u.cache_creation {
            Some(c) => {
                let hour = c.ephemeral_1h_input_tokens.unwrap_or(0);
                Tokens {
                    input: u.input_tokens,
                    output: u.output_tokens,
                    cache_creation: c
                        .ephemeral_5m_input_tokens
                        .unwrap_or(0)
                        .saturating_add(hour),
                    cache_creation_1h: hour,
                    cache_read: u.cache_read_input_tokens.unwrap_or(0),
                }
            }
            None => Tokens {
                input: u.input_tokens,
                output: u.output_tokens,
                cache_creation: u.cache_creation_input_tokens.unwrap_or(0),
                cache_creation_1h: 0,
                cache_read: u.cache_read_input_tokens.unwrap_or(0),
            },
        },
        cwd: raw.cwd,
    })
}

#[derive(Deserialize)]
struct RawCwd<'a> {
    #[serde(borrow)]
    cwd: Option<Cow<'a, str>>,
}

/// The folder a record names (`cwd`), if any: read only from lines that
/// contain the key.
pub fn cwd(line: &[u8]) -> Option<String> {
    memchr::memmem::find(line, b"\"cwd\"")?;
    let r: RawCwd<'_> = serde_json::from_slice(line).ok()?;
    r.cwd.map(Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_real_assistant_record() {
        let line = br#"{"parentUuid":"x","isSidechain":false,"message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"text","text":"ACK"}],"usage":{"input_tokens":1234,"cache_creation_input_tokens":5,"cache_read_input_tokens":6,"output_tokens":7,"cache_creation":{"ephemeral_1h_input_tokens":0}}},"requestId":"req_1","type":"assistant","timestamp":"2026-11-29T18:57:52.265Z","cwd":"/home/dev/plain"}"#;
        let u = parse(line).unwrap();
        assert_eq!(
            u.tokens,
            Tokens {
                input: 1234,
                output: 7,
                cache_creation: 0,
                cache_creation_1h: 0,
                cache_read: 6
            }
        );
        assert_eq!(u.model.as_deref(), Some("claude-opus-5-5"));
        assert_eq!(u.key, Some(key_of("msg_1", Some("req_1"))));
        assert_eq!(
            u.at,
            time::macros::datetime!(2026-11-29 18:57:52 UTC).unix_timestamp()
        );
        assert_eq!(u.cwd.as_deref(), Some("/home/dev/plain"));
    }

    #[test]
    fn what_is_not_counted() {
        // No usage, no timestamp, a bad count, a date without a time.
        for l in [
            &br#"{"type":"user","timestamp":"2026-11-29T10:00:00Z","message":{"content":"usage"}}"#[..],
            br#"{"message":{"usage":{"input_tokens":1,"output_tokens":1}}}"#,
            br#"{"timestamp":"2026-11-29T10:00:00Z","message":{"usage":{"input_tokens":-1,"output_tokens":1}}}"#,
            br#"{"timestamp":"2026-11-29T10:00:00Z","message":{"usage":{"input_tokens":1.5,"output_tokens":1}}}"#,
            br#"{"timestamp":"2026-11-29T10:00:00Z","message":{"usage":{"input_tokens":1}}}"#,
            br#"{"timestamp":"2026-11-29","message":{"usage":{"input_tokens":1,"output_tokens":1}}}"#,
            b"not json \"usage\"",
        ] {
            assert!(parse(l).is_none(), "{}", String::from_utf8_lossy(l));
        }
        // Spaced separators are read (ccusage skips them).
        let spaced = br#"{"timestamp": "2026-11-29T10:00:00Z", "message": {"usage": {"input_tokens": 3, "output_tokens": 1}}}"#;
        assert_eq!(parse(spaced).unwrap().tokens.input, 3);
        // The split by lifetime wins over the sum, as ccusage reads it.
        let split = br#"{"timestamp":"2026-11-29T10:00:00Z","message":{"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":9,"cache_creation":{"ephemeral_5m_input_tokens":2,"ephemeral_1h_input_tokens":3}}}}"#;
        let t = parse(split).unwrap().tokens;
        assert_eq!((t.cache_creation, t.cache_creation_1h), (5, 3));
        // No request id keys like an empty one; no message id, no key.
        let a = br#"{"timestamp":"2026-11-29T10:00:00Z","message":{"id":"m","usage":{"input_tokens":1,"output_tokens":1}}}"#;
        assert_eq!(parse(a).unwrap().key, Some(key_of("m", Some(""))));
        let b = br#"{"timestamp":"2026-11-29T10:00:00Z","message":{"usage":{"input_tokens":1,"output_tokens":1}}}"#;
        assert_eq!(parse(b).unwrap().key, None);
    }
}
