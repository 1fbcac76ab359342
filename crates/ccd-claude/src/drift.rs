//! The format-drift guard: do the registry entries and transcripts on this
//! machine still carry the fields ccd relies on, with the types it expects?
//!
//! Used by `ccd doctor`. Every finding names the file that shows it.
//! Registry entries are all checked (they are few); transcripts are
//! sampled (the most recent ones) and only their tails are read.

use crate::config::ClaudeConfigDir;
use crate::registry::pid_from_file_name;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// ccd still works, with a degraded answer somewhere.
    Warn,
    /// ccd cannot do its job with files like this.
    Error,
}

/// One drift finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    pub message: String,
    pub file: PathBuf,
}

/// The record types ccd has seen Claude Code write (both pinned versions and
/// older ones: `progress`, `summary`, `custom-title`, `tag`); a trim
/// refuses a file with any other (`trim::policy::KNOWN_TYPES`).
pub const KNOWN_RECORD_TYPES: &[&str] = &[
    "user",
    "assistant",
    "attachment",
    "system",
    "summary",
    "last-prompt",
    "cost-state",
    "file-history-snapshot",
    "mode",
    "permission-mode",
    "atis-latch",
    "api-request",
    "api-request-shape",
    "api-request-blob",
    "queue-operation",
    "custom-title",
    "tag",
    "ai-title",
    "tools-used",
    "file-history-delta",
    "progress",
];

/// What the registry fields must look like: (field, JSON type, required,
/// what breaks without it).
const REGISTRY_FIELDS: &[(&str, &str, bool, &str)] = &[
    (
        "pid",
        "number",
        true,
        "the entry cannot be matched to a process",
    ),
    ("sessionId", "string", true, "the entry names no session"),
    (
        "procStart",
        "string",
        false,
        "liveness cannot be verified (reported unknown)",
    ),
    ("cwd", "string", false, "the session's directory is unknown"),
    (
        "startedAt",
        "number",
        false,
        "the /clear drift cannot be detected",
    ),
    (
        "status",
        "string",
        false,
        "idle/busy/waiting is not reported",
    ),
    (
        "kind",
        "string",
        false,
        "interactive and background sessions look alike",
    ),
    (
        "pidDomain",
        "string",
        false,
        "entries from other pid namespaces look local",
    ),
    ("version", "string", false, "the CLI version is not shown"),
    ("updatedAt", "number", false, "status changes carry no time"),
];

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Checks one registry entry's JSON.
pub fn check_registry_entry(v: &Value, file: &Path) -> Vec<Finding> {
    let mut out = Vec::new();
    let Value::Object(map) = v else {
        return vec![Finding {
            severity: Severity::Error,
            message: "registry entry is not a JSON object".into(),
            file: file.into(),
        }];
    };
    for (field, ty, required, breaks) in REGISTRY_FIELDS {
        match map.get(*field) {
            None if *required => out.push(Finding {
                severity: Severity::Error,
                message: format!("registry entry lacks `{field}`: {breaks}"),
                file: file.into(),
            }),
            None => out.push(Finding {
                severity: Severity::Warn,
                message: format!("registry entry lacks `{field}`: {breaks}"),
                file: file.into(),
            }),
            Some(val) if json_type(val) != *ty && !(*field == "procStart" && val.is_number()) => {
                out.push(Finding {
                    severity: if *required {
                        Severity::Error
                    } else {
                        Severity::Warn
                    },
                    message: format!(
                        "registry field `{field}` is a {} (expected a {ty}): {breaks}",
                        json_type(val)
                    ),
                    file: file.into(),
                })
            }
            Some(_) => {}
        }
    }
    if let Some(s) = map.get("status").and_then(Value::as_str) {
        if !matches!(s, "idle" | "busy" | "waiting") {
            out.push(Finding {
                severity: Severity::Warn,
                message: format!(
                    "registry status {s:?} is not one ccd knows (idle, busy, waiting)"
                ),
                file: file.into(),
            });
        }
    }
    if let Some(p) = map.get("procStart").and_then(Value::as_str) {
        if cfg!(target_os = "linux") && !p.bytes().all(|b| b.is_ascii_digit()) {
            out.push(Finding {
                severity: Severity::Warn,
                message: format!(
                    "`procStart` {p:?} is not the Linux clock-tick form: liveness reported unknown"
                ),
                file: file.into(),
            });
        }
    }
    out
}

/// What a transcript's tail shows.
#[derive(Debug, Default)]
pub struct TranscriptShape {
    pub records: usize,
    pub by_type: BTreeMap<String, usize>,
    pub findings: Vec<Finding>,
}

/// Checks the complete lines of a transcript chunk.
pub fn check_transcript_lines(body: &[u8], file: &Path) -> TranscriptShape {
    let mut shape = TranscriptShape::default();
    let mut assistant = 0usize;
    let mut assistant_usage = 0usize;
    let mut with_cwd = 0usize;
    let mut conversation = 0usize;
    for line in body.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        shape.records += 1;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("<none>")
            .to_string();
        *shape.by_type.entry(kind.clone()).or_default() += 1;
        if matches!(kind.as_str(), "user" | "assistant") {
            conversation += 1;
            if v.get("cwd").and_then(Value::as_str).is_some() {
                with_cwd += 1;
            }
            if let Some(t) = v.get("timestamp") {
                if !t.is_string() {
                    shape.findings.push(Finding {
                        severity: Severity::Warn,
                        message: format!("`timestamp` is a {} (expected an RFC 3339 string): last activity falls back to the file time", json_type(t)),
                        file: file.into(),
                    });
                }
            }
        }
        if kind == "assistant"
            && v.pointer("/message/model").and_then(Value::as_str) != Some("<synthetic>")
        {
            assistant += 1;
            if let Some(Value::Object(u)) = v.pointer("/message/usage") {
                assistant_usage += 1;
                for f in [
                    "input_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                ] {
                    if let Some(x) = u.get(f) {
                        if !x.is_number() {
                            shape.findings.push(Finding {
                                    severity: Severity::Warn,
                                    message: format!("`message.usage.{f}` is a {} (expected a number): context in use is wrong", json_type(x)),
                                    file: file.into(),
                                });
                        }
                    }
                }
            }
        }
    }
    if assistant > 0 && assistant_usage == 0 {
        shape.findings.push(Finding {
            severity: Severity::Warn,
            message: "assistant records carry no `message.usage`: context in use cannot be shown"
                .into(),
            file: file.into(),
        });
    }
    if conversation > 0 && with_cwd == 0 {
        shape.findings.push(Finding {
            severity: Severity::Warn,
            message: "conversation records carry no `cwd`: the original directory is unknown (resume impossible)".into(),
            file: file.into(),
        });
    }
    shape.findings.dedup();
    shape
}

/// The whole check over a config dir: every registry entry, the `sample`
/// most recent transcripts' tails, and the share of unknown record types.
pub fn check(config: &ClaudeConfigDir, sample: usize) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(config.sessions_dir()) {
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if pid_from_file_name(name).is_none() {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            if !meta.is_file() || meta.len() > crate::registry::MAX_ENTRY_BYTES {
                continue;
            }
            let Ok(bytes) = std::fs::read(e.path()) else {
                continue;
            };
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(v) => out.extend(check_registry_entry(&v, &e.path())),
                Err(err) => out.push(Finding {
                    severity: Severity::Warn,
                    message: format!("registry entry is not valid JSON ({err}); it is skipped"),
                    file: e.path(),
                }),
            }
        }
    }
    let mut files = crate::transcript::list_all(&config.projects_dir());
    files.sort_by_key(|f| std::cmp::Reverse(f.modified()));
    let mut unknown: BTreeMap<String, (usize, PathBuf)> = BTreeMap::new();
    let mut total = 0usize;
    for f in files.iter().take(sample) {
        let Ok(body) = tail(&f.path, 256 * 1024) else {
            continue;
        };
        let shape = check_transcript_lines(&body, &f.path);
        total += shape.records;
        for (k, n) in &shape.by_type {
            if !KNOWN_RECORD_TYPES.contains(&k.as_str()) {
                let e = unknown.entry(k.clone()).or_insert((0, f.path.clone()));
                e.0 += n;
            }
        }
        out.extend(shape.findings);
    }
    for (kind, (n, file)) in unknown {
        let share = n as f64 * 100.0 / total.max(1) as f64;
        out.push(Finding {
            severity: Severity::Warn,
            message: format!(
                "unknown transcript record type {kind:?}: {n} of {total} records ({share:.1}%) in the {} most recent transcripts",
                sample.min(files.len())
            ),
            file,
        });
    }
    out
}

fn tail(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let start = len.saturating_sub(max);
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf)?;
    if start > 0 {
        if let Some(i) = memchr::memchr(b'\n', &buf) {
            buf.drain(..=i);
        }
    }
    if let Some(i) = memchr::memrchr(b'\n', &buf) {
        buf.truncate(i + 1); // complete lines only
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn registry_drift() {
        let p = Path::new("1.json");
        let good = json!({"pid":1,"sessionId":"s","procStart":"5","cwd":"/","startedAt":1,"status":"idle","kind":"interactive","pidDomain":"d","version":"2","updatedAt":1});
        assert!(check_registry_entry(&good, p).is_empty());
        let mut bad = good.clone();
        bad.as_object_mut().unwrap().remove("procStart");
        bad["status"] = json!("sleeping");
        bad["startedAt"] = json!("yesterday");
        let f = check_registry_entry(&bad, p);
        let msgs: Vec<_> = f.iter().map(|f| f.message.as_str()).collect();
        assert!(
            msgs.iter().any(|m| m.contains("lacks `procStart`")),
            "{msgs:?}"
        );
        assert!(msgs.iter().any(|m| m.contains("\"sleeping\"")), "{msgs:?}");
        assert!(
            msgs.iter().any(|m| m.contains("`startedAt` is a string")),
            "{msgs:?}"
        );
        let mut no_sid = good;
        no_sid.as_object_mut().unwrap().remove("sessionId");
        assert_eq!(
            check_registry_entry(&no_sid, p)[0].severity,
            Severity::Error
        );
    }

    #[test]
    fn transcript_drift() {
        let p = Path::new("t.jsonl");
        let ok = br#"{"type":"user","cwd":"/w","timestamp":"2026-01-01T00:00:00Z","message":{"content":"x"}}
{"type":"assistant","cwd":"/w","message":{"model":"m","usage":{"input_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}
"#;
        assert!(check_transcript_lines(ok, p).findings.is_empty());
        let drifted = br#"{"type":"user","message":{"content":"x"}}
{"type":"assistant","message":{"model":"m","tokens":{"in":1}}}
{"type":"brand-new-kind"}
"#;
        let s = check_transcript_lines(drifted, p);
        assert_eq!(s.by_type.get("brand-new-kind"), Some(&1));
        let msgs: Vec<_> = s.findings.iter().map(|f| f.message.as_str()).collect();
        assert!(
            msgs.iter().any(|m| m.contains("no `message.usage`")),
            "{msgs:?}"
        );
        assert!(msgs.iter().any(|m| m.contains("no `cwd`")), "{msgs:?}");
    }
}
