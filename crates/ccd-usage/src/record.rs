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
//! ones priced apart. A record with invalid UTF-8 in any string is
//! skipped whole, as ccusage skips it (measured; serde_json alone would
//! have counted one whose bad bytes sit in a field it ignores).
//!
//! A line is read by [`crate::scan`] (one pass that skips the content
//! without building it), with the rules a `serde_json` parse of the
//! record's fields follows; the tests compare both over thousands of
//! mutated records.

use crate::scan::{self, Slot};
use memchr::memmem;
use serde::Deserialize;
use std::borrow::Cow;
use std::sync::LazyLock;
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

#[cfg(test)]
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

#[cfg(test)]
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
/// (a substring test, from the line's end where the CLI writes `usage`,
/// before any parsing), and for those that do, one [`crate::scan`] of
/// the line that skips the content without building it.
pub fn parse(line: &[u8]) -> Option<Usage<'_>> {
    if !carries_usage(line) {
        return None;
    }
    usage_of(&scan::record(line).ok()?)
}

/// Whether `line` may carry usage (the substring test [`parse`] starts
/// with).
pub(crate) fn carries_usage(line: &[u8]) -> bool {
    static USAGE: LazyLock<memmem::FinderRev<'static>> =
        LazyLock::new(|| memmem::FinderRev::new(b"\"usage\""));
    USAGE.rfind(line).is_some()
}

/// Whether `line` may name a folder.
pub(crate) fn names_cwd(line: &[u8]) -> bool {
    static CWD: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"\"cwd\""));
    CWD.find(line).is_some()
}

/// The usage a scanned record carries: its typed fields as serde's derive
/// reads them (a duplicate or mistyped field refuses the record).
pub(crate) fn usage_of<'a>(r: &scan::Record<'a>) -> Option<Usage<'a>> {
    let timestamp = opt_str(r.timestamp).ok()?;
    let request_id = opt_str(r.request_id).ok()?;
    let cwd = opt_str(r.cwd).ok()?;
    let message = match r.message {
        scan::MessageSlot::Object(m) => m,
        // Absent or null: no usage; anything else refuses the record.
        _ => return None,
    };
    let id = opt_str(message.id).ok()?;
    let model = opt_str(message.model).ok()?;
    let u: RawUsage = match message.usage {
        Slot::Once(v) => serde_json::from_slice::<Option<RawUsage>>(v).ok()??,
        _ => return None,
    };
    let at = OffsetDateTime::parse(timestamp.as_deref()?, &Rfc3339)
        .ok()?
        .unix_timestamp();
    Some(Usage {
        key: id.as_deref().map(|id| key_of(id, request_id.as_deref())),
        at,
        model,
        tokens: tokens_of(&u),
        cwd,
    })
}

/// A string-or-null field (absent is `None`).
fn opt_str(s: Slot<'_>) -> Result<Option<Cow<'_, str>>, scan::Bad> {
    match s {
        Slot::Absent => Ok(None),
        Slot::Once(v) => scan::str_or_null(v),
        Slot::Twice => Err(scan::Bad),
    }
}

fn tokens_of(u: &RawUsage) -> Tokens {
    match &u.cache_creation {
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
    }
}

/// The folder a scanned record names, as a struct with only `cwd` reads
/// it (the other fields' types do not matter).
pub(crate) fn cwd_of<'a>(r: &scan::Record<'a>) -> Option<Cow<'a, str>> {
    opt_str(r.cwd).ok()?
}

/// The folder a record names (`cwd`), if any: read only from lines that
/// contain the key.
pub fn cwd(line: &[u8]) -> Option<String> {
    if !names_cwd(line) {
        return None;
    }
    cwd_of(&scan::record(line).ok()?).map(Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reading before [`crate::scan`]: a whole-line serde_json parse
    /// (with the scan's two stated differences: invalid UTF-8, and a
    /// record or message that is an array, refuse the record).
    fn reference(line: &[u8]) -> Option<Usage<'_>> {
        memchr::memmem::find(line, b"\"usage\"")?;
        if !plain(line) {
            return None;
        }
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
            tokens: tokens_of(&u),
            cwd: raw.cwd,
        })
    }

    #[derive(Deserialize)]
    struct RawCwd<'a> {
        #[serde(borrow)]
        cwd: Option<Cow<'a, str>>,
    }

    fn reference_cwd(line: &[u8]) -> Option<String> {
        memchr::memmem::find(line, b"\"cwd\"")?;
        if !plain(line) {
            return None;
        }
        let r: RawCwd<'_> = serde_json::from_slice(line).ok()?;
        r.cwd.map(Cow::into_owned)
    }

    /// UTF-8, an object, and its message (if any) an object or null.
    fn plain(line: &[u8]) -> bool {
        if std::str::from_utf8(line).is_err() {
            return false;
        }
        match serde_json::from_slice::<serde_json::Value>(line) {
            Ok(serde_json::Value::Object(o)) => matches!(
                o.get("message"),
                None | Some(serde_json::Value::Object(_) | serde_json::Value::Null)
            ),
            Ok(_) => false,
            Err(_) => true,
        }
    }

    /// The scan reads what serde_json reads: each record below, cut at
    /// every byte, with every byte deleted, and with every byte replaced
    /// by each of a set that breaks JSON in every way (quotes, escapes,
    /// brackets, digits, control and non-UTF-8 bytes), gives the same
    /// usage and folder both ways.
    #[test]
    fn the_scan_reads_what_serde_reads() {
        let records: [&str; 6] = [
            r#"{"parentUuid":"x","isSidechain":false,"cwd":"/h/d\u00e9v","message":{"model":"claude-opus-4-5","id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"a \"q\" \\ \n café \ud83d\ude00"},{"type":"tool_use","input":{"n":-1.5e3,"b":[true,false,null,0]}}],"stop_reason":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":5,"cache_read_input_tokens":6,"output_tokens":7,"cache_creation":{"ephemeral_5m_input_tokens":1,"ephemeral_1h_input_tokens":2}}},"requestId":"req_1","type":"assistant","timestamp":"2026-11-29T18:57:52.265Z"}"#,
            r#"{"type":"user","cwd":"/w","timestamp":"2026-11-29T10:00:00Z","toolUseResult":{"usage":{"input_tokens":9,"output_tokens":9}},"message":{"role":"user","content":[{"type":"tool_result","content":"ok"}]}}"#,
            r#" { "timestamp" : "2026-11-29T10:00:00+01:00" , "message" : { "id" : null , "usage" : { "input_tokens" : 3 , "output_tokens" : 1 , "cache_read_input_tokens" : null } } } "#,
            r#"{"timestamp":"2026-11-29T10:00:00Z","requestId":"r","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":2}},"cwd":null,"x":{}}"#,
            r#"{"\u0063wd":"/e","timestamp":"2026-11-29T10:00:00Z","message":{"\u0069d":"m","usage":{"input_tokens":0,"output_tokens":0}},"e":[[],{},"",-0,1E+2]}"#,
            r#"{"cwd":"/a","message":null,"usage":{"input_tokens":1,"output_tokens":1}}"#,
        ];
        let subs: &[u8] = b"\"\\{}[],:0-.eEnu \x01\x7f\xff\xc3/tb";
        let mut checked = 0;
        let mut counted = 0;
        let mut check = |l: &[u8]| {
            let (got, want) = (parse(l), reference(l));
            assert_eq!(got, want, "{}", String::from_utf8_lossy(l));
            assert_eq!(cwd(l), reference_cwd(l), "{}", String::from_utf8_lossy(l));
            let mut f = crate::tally::FileUsage::default();
            f.push_line(l);
            assert_eq!(
                f.cwd,
                reference_cwd(l).or_else(|| want
                    .as_ref()
                    .and_then(|u| u.cwd.as_deref().map(str::to_owned)))
            );
            checked += 1;
            counted += usize::from(want.is_some());
        };
        for r in records {
            let r = r.as_bytes();
            check(r);
            for i in 0..r.len() {
                check(&r[..i]);
                let mut d = r.to_vec();
                d.remove(i);
                check(&d);
                for &b in subs {
                    let mut m = r.to_vec();
                    m[i] = b;
                    check(&m);
                }
            }
        }
        // Both ways count some and refuse some.
        assert!(
            counted > 1_000 && checked - counted > 10_000,
            "{counted} of {checked}"
        );
    }

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
