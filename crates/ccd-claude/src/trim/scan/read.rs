//! The streaming read of pass 1 ([`scan`]): the heads of records it
//! parses (the few fields a trim looks at, the rest skipped), the labels
//! of kinds it counts, and the loop over the lines that spills the index
//! and hands the uuids to [`super::chain`].

use super::chain::decide_chain;
use super::{
    Compactions, Scan, F_COMPACT, F_CONVERSATION, F_RULE_DROP, F_SIDECHAIN, F_USER, LINE_REC,
    NODE_REC,
};
use crate::trim::policy::{self, Rule};
use crate::trim::spill::Spill;
use crate::trim::{Key, TrimError, TrimOptions};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::io::{BufRead, Read};
use std::path::Path;

/// The most distinct kind labels counted (hostile files cannot grow the
/// table past it: further labels count as `other`).
const MAX_LABELS: usize = 1024;

fn line_rec(len: u32, label: u16, base_drop: bool, node: bool) -> [u8; LINE_REC] {
    let mut r = [0u8; LINE_REC];
    r[0..4].copy_from_slice(&len.to_le_bytes());
    r[4..6].copy_from_slice(&label.to_le_bytes());
    r[6] = u8::from(base_drop);
    r[7] = u8::from(node);
    r
}

fn node_rec_of(key: Key, parent: Key, tur_len: u32) -> [u8; NODE_REC] {
    let mut r = [0u8; NODE_REC];
    r[0..8].copy_from_slice(&key.0[0].to_le_bytes());
    r[8..16].copy_from_slice(&key.0[1].to_le_bytes());
    r[16..24].copy_from_slice(&parent.0[0].to_le_bytes());
    r[24..32].copy_from_slice(&parent.0[1].to_le_bytes());
    r[32..36].copy_from_slice(&tur_len.to_le_bytes());
    r
}

/// The head of a record: the fields a trim looks at; the rest is skipped.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uuid: Option<Cow<'a, str>>,
    #[serde(rename = "parentUuid", borrow, default)]
    parent: Option<Cow<'a, str>>,
    #[serde(rename = "logicalParentUuid", borrow, default)]
    logical: Option<Cow<'a, str>>,
    #[serde(rename = "leafUuid", borrow, default)]
    leaf: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    version: Lenient<'a>,
    #[serde(rename = "isSidechain", default)]
    sidechain: Option<bool>,
    #[serde(borrow, default)]
    subtype: Lenient<'a>,
    #[serde(borrow, default)]
    attachment: Option<AttachmentHead<'a>>,
    #[serde(default)]
    message: Option<MessageHead>,
    #[serde(rename = "toolUseResult", borrow, default)]
    tool_use_result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    mode: Lenient<'a>,
    #[serde(borrow, default)]
    atis: Lenient<'a>,
    #[serde(rename = "compactMetadata", borrow, default)]
    compact: Option<CompactHead<'a>>,
}

/// A compaction boundary's metadata: the messages it preserves.
#[derive(Deserialize)]
struct CompactHead<'a> {
    #[serde(rename = "preservedSegment", borrow, default)]
    preserved: Option<SegmentHead<'a>>,
}

/// The preserved segment of a compaction: the chain from `tailUuid` up to
/// `headUuid`, which the CLI puts back after the summary on resume
/// (measured: docs/claude-cli-compat.md, "What resume reads").
#[derive(Deserialize)]
struct SegmentHead<'a> {
    #[serde(rename = "headUuid", borrow, default)]
    head: Option<Cow<'a, str>>,
    #[serde(rename = "tailUuid", borrow, default)]
    tail: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct AttachmentHead<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Lenient<'a>,
}

/// A field read only when it is a string (any other value is skipped: the
/// fields read this way only refine a rule, and a non-string keeps the
/// record).
#[derive(Default)]
struct Lenient<'a>(Option<Cow<'a, str>>);

impl<'a> Lenient<'a> {
    fn as_deref(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Lenient<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Lenient<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Lenient<'a>, E> {
                Ok(Lenient(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Lenient<'a>, E> {
                Ok(Lenient(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Lenient<'a>, E> {
                Ok(Lenient(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Lenient<'a>, E> {
                Ok(Lenient(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Lenient<'a>, E> {
                Ok(Lenient(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Lenient<'a>, E> {
                Ok(Lenient(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Lenient<'a>, E> {
                Ok(Lenient(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Lenient<'a>, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Lenient(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Lenient<'a>, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Lenient(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
struct MessageHead {
    #[serde(default)]
    content: ToolIds,
}

/// The tool ids of a message's content: `(is tool_use, hash of the id)`.
#[derive(Default)]
struct ToolIds(Vec<(bool, u64)>);

impl<'de> Deserialize<'de> for ToolIds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ToolIdsVisitor)
    }
}

struct ToolIdsVisitor;

impl<'de> Visitor<'de> for ToolIdsVisitor {
    type Value = ToolIds;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("message content")
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<ToolIds, E> {
        Ok(ToolIds::default())
    }
    fn visit_unit<E: de::Error>(self) -> Result<ToolIds, E> {
        Ok(ToolIds::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<ToolIds, A::Error> {
        while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(ToolIds::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<ToolIds, A::Error> {
        let mut out = Vec::new();
        while let Some(b) = s.next_element::<Block>()? {
            if let Some(x) = b.0 {
                out.push(x);
            }
        }
        Ok(ToolIds(out))
    }
}

/// One content block: its tool id if it is a `tool_use` or `tool_result`.
struct Block(Option<(bool, u64)>);

impl<'de> Deserialize<'de> for Block {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(BlockVisitor)
    }
}

struct BlockVisitor;

impl<'de> Visitor<'de> for BlockVisitor {
    type Value = Block;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a content block")
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Block, E> {
        Ok(Block(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Block, A::Error> {
        let mut kind: Option<String> = None;
        let mut id: Option<String> = None;
        let mut use_id: Option<String> = None;
        while let Some(k) = m.next_key::<Cow<'de, str>>()? {
            match k.as_ref() {
                "type" => kind = m.next_value::<Option<String>>()?,
                "id" => id = m.next_value::<Option<String>>().ok().flatten(),
                "tool_use_id" => use_id = m.next_value::<Option<String>>()?,
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Block(match kind.as_deref() {
            Some("tool_use") | Some("server_tool_use") => id.map(|i| (true, hash64(&i))),
            Some("tool_result") => use_id.map(|i| (false, hash64(&i))),
            _ => None,
        }))
    }
}

fn hash64(s: &str) -> u64 {
    // FNV-1a: stable across runs (the pairing is within one file).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Reads one line (up to and with its `\n`) into `buf`, at most `max`
/// bytes. `Ok(false)` at the end of the file.
pub(crate) fn read_line(
    r: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
    offset: u64,
) -> Result<bool, TrimError> {
    buf.clear();
    let n = r
        .by_ref()
        .take(max as u64 + 1)
        .read_until(b'\n', buf)
        .map_err(TrimError::io("reading the transcript"))?;
    if n == 0 {
        return Ok(false);
    }
    if n > max {
        return Err(TrimError::LineTooLong { offset, max });
    }
    Ok(true)
}

struct Labels {
    names: Vec<String>,
    ids: HashMap<String, u16>,
}

impl Labels {
    fn id(&mut self, s: &str) -> u16 {
        if let Some(i) = self.ids.get(s) {
            return *i;
        }
        let name = if self.names.len() >= MAX_LABELS {
            "other"
        } else {
            s
        };
        if let Some(i) = self.ids.get(name) {
            return *i;
        }
        let i = self.names.len() as u16;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), i);
        i
    }
}

/// Pass 1 over `r` (the transcript at `path`, for messages), spilling its
/// index to anonymous files in `spill_dir`.
pub(crate) fn scan(
    r: impl Read,
    path: &Path,
    opts: &TrimOptions,
    spill_dir: &Path,
) -> Result<Scan, TrimError> {
    let mut r = std::io::BufReader::with_capacity(256 * 1024, r);
    let mut labels = Labels {
        names: Vec::new(),
        ids: HashMap::new(),
    };
    let mut line_spill: Spill<LINE_REC> = Spill::new(spill_dir)?;
    let mut node_spill: Spill<NODE_REC> = Spill::new(spill_dir)?;
    let mut flags: Vec<u8> = Vec::new();
    let mut tools: Vec<(u64, u32, bool)> = Vec::new();
    let mut odd_keys: HashMap<Key, String> = HashMap::new();
    let mut compactions = Compactions::default();
    let mut versions = BTreeSet::new();
    let mut unknown: BTreeMap<String, u64> = BTreeMap::new();
    let mut bad: Option<(u64, u64, String)> = None;
    let mut newest_prompt: Option<(u32, Option<Key>)> = None;
    let mut newest_title: Option<u32> = None;
    let mut newest_conv: Option<Key> = None;
    let mut partial_tail = None;
    let mut buf = Vec::new();
    let mut offset = 0u64;
    let mut line_no: u32 = 0;
    while read_line(&mut r, &mut buf, opts.max_line, offset)? {
        let len = buf.len() as u32;
        let complete = buf.last() == Some(&b'\n');
        let body = if complete {
            &buf[..buf.len() - 1]
        } else {
            &buf[..]
        };
        let this = line_no;
        line_no += 1;
        offset += u64::from(len);
        // A last line without its newline that is a whole record is read
        // like any other (it may be the leaf, or need a re-link).
        if !complete && serde_json::from_slice::<IgnoredAny>(body).is_err() {
            // A half-written last record (a crash mid-write): kept as its
            // bytes are, at the end, and not interpreted.
            let label = labels.id("(half-written last line)");
            partial_tail = Some(u64::from(len));
            line_spill.push(&line_rec(len, label, false, false))?;
            break;
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            let label = labels.id("(blank line)");
            line_spill.push(&line_rec(len, label, false, false))?;
            continue;
        }
        let head: Head = match serde_json::from_slice(body) {
            Ok(h) => h,
            Err(e) => {
                if bad.is_none() {
                    bad = Some((u64::from(this) + 1, offset - u64::from(len), e.to_string()));
                }
                let label = labels.id("(not a record ccd knows)");
                line_spill.push(&line_rec(len, label, false, false))?;
                continue;
            }
        };
        let kind = head.kind.as_deref().unwrap_or("(no type)");
        let att = head.attachment.as_ref().and_then(|a| a.kind.as_deref());
        let label = match (kind, att) {
            ("attachment", Some(a)) => labels.id(&format!("attachment:{a}")),
            _ => labels.id(kind),
        };
        if !policy::KNOWN_TYPES.contains(&kind) {
            *unknown.entry(kind.to_string()).or_default() += 1;
        }
        if let Some(v) = head.version.as_deref() {
            if versions.len() < 16 {
                versions.insert(v.to_string());
            }
        }
        let rule = if policy::KNOWN_TYPES.contains(&kind) {
            policy::rule(kind, att, head.mode.as_deref(), head.atis.as_deref())
        } else {
            Rule::Keep
        };
        let base_drop = match rule {
            Rule::Drop => true,
            Rule::FileHistory => opts.drop_file_history,
            _ => false,
        };
        if kind == "last-prompt" {
            let leaf = head
                .leaf
                .as_deref()
                .map(|s| key_of(s, &mut odd_keys))
                .filter(|k| !k.is_zero());
            newest_prompt = Some((this, leaf));
        }
        if kind == "ai-title" {
            newest_title = Some(this);
        }
        let Some(u) = head.uuid.as_deref() else {
            line_spill.push(&line_rec(len, label, base_drop, false))?;
            continue;
        };
        line_spill.push(&line_rec(len, label, base_drop, true))?;
        let key = key_of(u, &mut odd_keys);
        let mut f = 0u8;
        if head.sidechain == Some(true) {
            f |= F_SIDECHAIN;
        }
        if policy::is_conversation(kind) {
            f |= F_CONVERSATION;
        }
        if rule == Rule::Drop {
            f |= F_RULE_DROP;
        }
        let node = flags.len() as u32;
        if kind == "system" && head.subtype.as_deref() == Some("compact_boundary") {
            f |= F_COMPACT;
            let seg = head.compact.as_ref().and_then(|c| c.preserved.as_ref());
            let ends = seg.and_then(|g| Some((g.head.as_deref()?, g.tail.as_deref()?)));
            if let Some((h, t)) = ends {
                if compactions.segments.len() < 1_000_000 {
                    let (h, t) = (key_of(h, &mut odd_keys), key_of(t, &mut odd_keys));
                    compactions.segments.push((node, h, t));
                }
            }
        }
        if kind == "user" {
            f |= F_USER;
        }
        if matches!(kind, "user" | "assistant") && head.sidechain != Some(true) {
            newest_conv = Some(key);
        }
        if let Some(l) = head.logical.as_deref() {
            if compactions.logical.len() < 1_000_000 {
                compactions.logical.push((node, key_of(l, &mut odd_keys)));
            }
        }
        if let Some(m) = &head.message {
            for (is_use, h) in &m.content.0 {
                tools.push((*h, node, *is_use));
            }
        }
        let parent_key = head
            .parent
            .as_deref()
            .map(|s| key_of(s, &mut odd_keys))
            .unwrap_or(Key([0, 0]));
        let tur_len = if kind == "user" {
            head.tool_use_result.map_or(0, |v| v.get().len() as u32)
        } else {
            0
        };
        node_spill.push(&node_rec_of(key, parent_key, tur_len))?;
        flags.push(f);
    }
    drop(buf);
    if !opts.force {
        if !unknown.is_empty() {
            return Err(TrimError::UnknownTypes {
                path: path.to_path_buf(),
                types: unknown.into_iter().collect(),
            });
        }
        if let Some((line, offset, reason)) = bad {
            return Err(TrimError::BadRecord {
                path: path.to_path_buf(),
                line,
                offset,
                reason,
            });
        }
    }
    line_spill.finish()?;
    node_spill.finish()?;
    flags.shrink_to_fit();
    let mut s = Scan {
        line_count: line_spill.len,
        line_spill,
        node_spill,
        parent: Vec::new(),
        flags2: vec![0; flags.len()],
        flags,
        newest_prompt_line: newest_prompt.map(|p| p.0),
        newest_title_line: newest_title,
        leaf_edit: None,
        edit_count: 0,
        labels: labels.names,
        total_bytes: offset,
        versions,
        relinked: 0,
        rescued: 0,
        tool_use_result: (0, 0),
        partial_tail,
        compact_boundary: false,
        leaf: None,
        odd_keys,
    };
    decide_chain(
        &mut s,
        &tools,
        &compactions,
        (newest_prompt, newest_conv),
        opts,
    )?;
    Ok(s)
}

fn key_of(s: &str, odd: &mut HashMap<Key, String>) -> Key {
    match Key::parse(s) {
        Some(k) => k,
        None => {
            let k = Key::hash(s);
            if odd.len() < 1_000_000 {
                odd.entry(k).or_insert_with(|| s.to_string());
            }
            k
        }
    }
}
