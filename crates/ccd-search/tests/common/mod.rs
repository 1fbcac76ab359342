//! The random corpus the index's equivalence tests share (`topk.rs`,
//! `archived.rs`): a fixed "now", a small deterministic generator, words
//! that occur alone and inside longer words, and transcript records of
//! every kind the index reads.
#![allow(dead_code)]

use serde_json::{json, Value};
use time::OffsetDateTime;

/// 2026-12-01T12:00:00Z.
pub fn now() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_796_126_400).unwrap()
}

/// A small deterministic generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

pub const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "deploy", "plan", "refund", "token", "crab",
];

pub fn text(r: &mut Rng) -> String {
    let n = 1 + r.below(6);
    let mut out = Vec::new();
    for _ in 0..n {
        let w = r.pick(WORDS);
        // Sometimes inside a longer word (not a whole-word match).
        out.push(match r.below(4) {
            0 => format!("x{w}y"),
            _ => w.to_string(),
        });
    }
    out.join(" ")
}

pub fn stamp(r: &mut Rng) -> String {
    let t = now() - time::Duration::seconds(r.below(420 * 86_400) as i64);
    let ms = r.below(1000);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// One random transcript record of session `sid` (a title, a summary,
/// an assistant reply with a tool call, a compact summary or a prompt;
/// one in eight without a time), naming `cwd` when given.
pub fn record(r: &mut Rng, sid: &str, cwd: Option<&str>) -> Value {
    let ts = stamp(r);
    let mut v = match r.below(6) {
        0 => json!({"type":"custom-title","customTitle":text(r),"sessionId":sid}),
        1 => json!({"type":"summary","summary":text(r),"leafUuid":"l"}),
        2 => json!({"type":"assistant","message":{"role":"assistant","content":[
                {"type":"text","text":text(r)},
                {"type":"tool_use","id":"t","name":"Bash","input":{"command":text(r)}}]},
              "timestamp":ts,"sessionId":sid}),
        3 => json!({"type":"user","isCompactSummary":true,
              "message":{"role":"user","content":text(r)},"timestamp":ts,"sessionId":sid}),
        _ => json!({"type":"user","message":{"role":"user","content":text(r)},
              "timestamp":ts,"sessionId":sid}),
    };
    // A message record names its folder, as Claude Code writes it.
    if let (Some(cwd), Some(o)) = (cwd, v.as_object_mut()) {
        if o.contains_key("message") {
            o.insert("cwd".into(), json!(cwd));
        }
    }
    // Some records have no time of their own.
    if r.below(8) == 0 {
        if let Some(o) = v.as_object_mut() {
            o.remove("timestamp");
        }
    }
    v
}
