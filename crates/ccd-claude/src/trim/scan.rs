//! Pass 1 of a trim: one streaming read of the transcript that keeps a
//! compact index (per line: length, kind, decision; per uuid record: its
//! key and links; per tool block: a hash of its id) — never a record's
//! body — and decides what goes.
//!
//! Memory: 8 bytes a line, about 45 bytes a record with a uuid (a 40-byte
//! node, its flag byte, its 4-byte place in the sorted index), 16 bytes a
//! tool block, plus the longest line (at most
//! [`super::TrimOptions::max_line`]).

use super::policy::{self, Rule};
use super::{Key, TrimError, TrimOptions};
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

/// What happens to a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Written as it is.
    Keep,
    /// Written with edits (a link re-pointed, `toolUseResult` removed).
    Edit,
    /// Dropped by its kind's rule.
    DropRule,
    /// Dropped: a record off the chain resume follows.
    DropDead,
    /// Dropped: an older `last-prompt` / `ai-title`.
    DropOlder,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct LineInfo {
    /// Bytes, the newline included.
    pub len: u32,
    pub label: u16,
    pub fate: Fate,
}

const F_SIDECHAIN: u8 = 1;
const F_CONVERSATION: u8 = 2;
const F_RULE_DROP: u8 = 4;
const F_COMPACT: u8 = 8;
const F_USER: u8 = 16;
const F_ON_CHAIN: u8 = 32;
const F_KEPT: u8 = 64;
const F_DEAD: u8 = 128;

/// One record with a uuid (40 bytes; its flags, one byte, and a
/// `logicalParentUuid`, rare, are kept beside, by node).
#[derive(Debug, Clone, Copy)]
struct Node {
    line: u32,
    tur_len: u32,
    key: Key,
    /// The all-zero key: none.
    parent_key: Key,
}

impl Node {
    fn parent(&self) -> Option<Key> {
        (!self.parent_key.is_zero()).then_some(self.parent_key)
    }
}

/// One edit of a kept line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edit {
    pub line: u32,
    /// A new `parentUuid` (`None`: null).
    pub parent: Option<Option<Key>>,
    /// A new `leafUuid` (`None`: null).
    pub leaf: Option<Option<Key>>,
    /// Remove the `toolUseResult` field.
    pub strip_tool_use_result: bool,
}

/// The decisions of pass 1, used by pass 2 and reported.
#[derive(Debug)]
pub(crate) struct Scan {
    pub lines: Vec<LineInfo>,
    pub labels: Vec<String>,
    pub edits: Vec<Edit>,
    pub total_bytes: u64,
    pub versions: BTreeSet<String>,
    pub relinked: u64,
    pub rescued: u64,
    pub tool_use_result: (u64, u64),
    pub partial_tail: Option<u64>,
    pub compact_boundary: bool,
    pub leaf: Option<String>,
    /// The text of uuids that are not canonical UUIDs (by their hash key).
    pub odd_keys: HashMap<Key, String>,
}

impl Scan {
    /// A key as the uuid text it came from.
    pub fn key_text(&self, k: Key) -> String {
        text_of(k, &self.odd_keys)
    }
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

/// The links across compaction boundaries, by node number.
#[derive(Default)]
struct Compactions {
    /// `logicalParentUuid` of the records that have one.
    logical: HashMap<u32, Key>,
    /// Per boundary: its preserved segment's head and tail (bounded like
    /// `logical`).
    segments: Vec<(u32, Key, Key)>,
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

/// Pass 1 over `r` (the transcript at `path`, for messages).
pub(crate) fn scan(r: impl Read, path: &Path, opts: &TrimOptions) -> Result<Scan, TrimError> {
    let mut r = std::io::BufReader::with_capacity(256 * 1024, r);
    let mut labels = Labels {
        names: Vec::new(),
        ids: HashMap::new(),
    };
    let mut lines: Vec<LineInfo> = Vec::new();
    let mut nodes: Vec<Node> = Vec::new();
    let mut node_flags: Vec<u8> = Vec::new();
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
    let mut rules: Vec<(u32, Rule)> = Vec::new();
    while read_line(&mut r, &mut buf, opts.max_line, offset)? {
        let line_no = lines.len() as u32;
        let len = buf.len() as u32;
        let complete = buf.last() == Some(&b'\n');
        let body = if complete {
            &buf[..buf.len() - 1]
        } else {
            &buf[..]
        };
        let mut info = LineInfo {
            len,
            label: 0,
            fate: Fate::Keep,
        };
        // A last line without its newline that is a whole record is read
        // like any other (it may be the leaf, or need a re-link).
        if !complete && serde_json::from_slice::<IgnoredAny>(body).is_err() {
            // A half-written last record (a crash mid-write): kept as its
            // bytes are, at the end, and not interpreted.
            info.label = labels.id("(half-written last line)");
            partial_tail = Some(u64::from(len));
            lines.push(info);
            offset += u64::from(len);
            break;
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            info.label = labels.id("(blank line)");
            lines.push(info);
            offset += u64::from(len);
            continue;
        }
        let head: Head = match serde_json::from_slice(body) {
            Ok(h) => h,
            Err(e) => {
                if bad.is_none() {
                    bad = Some((u64::from(line_no) + 1, offset, e.to_string()));
                }
                info.label = labels.id("(not a record ccd knows)");
                lines.push(info);
                offset += u64::from(len);
                continue;
            }
        };
        let kind = head.kind.as_deref().unwrap_or("(no type)");
        let att = head.attachment.as_ref().and_then(|a| a.kind.as_deref());
        let label = match (kind, att) {
            ("attachment", Some(a)) => format!("attachment:{a}"),
            _ => kind.to_string(),
        };
        info.label = labels.id(&label);
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
        match rule {
            Rule::Drop => rules.push((line_no, Rule::Drop)),
            Rule::FileHistory if opts.drop_file_history => rules.push((line_no, Rule::Drop)),
            _ => {}
        }
        if kind == "last-prompt" {
            let leaf = head
                .leaf
                .as_deref()
                .map(|s| key_of(s, &mut odd_keys))
                .filter(|k| !k.is_zero());
            newest_prompt = Some((line_no, leaf));
        }
        if kind == "ai-title" {
            newest_title = Some(line_no);
        }
        if let Some(u) = head.uuid.as_deref() {
            let key = key_of(u, &mut odd_keys);
            let mut flags = 0u8;
            if head.sidechain == Some(true) {
                flags |= F_SIDECHAIN;
            }
            if policy::is_conversation(kind) {
                flags |= F_CONVERSATION;
            }
            if rule == Rule::Drop {
                flags |= F_RULE_DROP;
            }
            let node = nodes.len() as u32;
            if kind == "system" && head.subtype.as_deref() == Some("compact_boundary") {
                flags |= F_COMPACT;
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
                flags |= F_USER;
            }
            if matches!(kind, "user" | "assistant") && head.sidechain != Some(true) {
                newest_conv = Some(key);
            }
            if let Some(l) = head.logical.as_deref() {
                if compactions.logical.len() < 1_000_000 {
                    compactions.logical.insert(node, key_of(l, &mut odd_keys));
                }
            }
            if let Some(m) = &head.message {
                for (is_use, h) in &m.content.0 {
                    tools.push((*h, node, *is_use));
                }
            }
            nodes.push(Node {
                line: line_no,
                key,
                parent_key: head
                    .parent
                    .as_deref()
                    .map(|s| key_of(s, &mut odd_keys))
                    .unwrap_or(Key([0, 0])),
                tur_len: if kind == "user" {
                    head.tool_use_result.map_or(0, |v| v.get().len() as u32)
                } else {
                    0
                },
            });
            node_flags.push(flags);
        }
        lines.push(info);
        offset += u64::from(len);
    }
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
    let mut s = Scan {
        lines,
        labels: labels.names,
        edits: Vec::new(),
        total_bytes: offset,
        versions,
        relinked: 0,
        rescued: 0,
        tool_use_result: (0, 0),
        partial_tail,
        compact_boundary: false,
        leaf: None,
        odd_keys: HashMap::new(),
    };
    for (line, rule) in rules {
        if rule == Rule::Drop {
            s.lines[line as usize].fate = Fate::DropRule;
        }
    }
    // Only the newest last-prompt and ai-title stay.
    for (i, l) in s.lines.iter_mut().enumerate() {
        let name = s.labels[l.label as usize].as_str();
        let i = i as u32;
        if (name == "last-prompt" && newest_prompt.map(|p| p.0) != Some(i))
            || (name == "ai-title" && newest_title != Some(i))
        {
            l.fate = Fate::DropOlder;
        }
    }
    decide_chain(
        &mut s,
        &nodes,
        &mut node_flags,
        &tools,
        &compactions,
        (newest_prompt, newest_conv),
        &odd_keys,
        opts,
    );
    s.odd_keys = odd_keys;
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

fn text_of(k: Key, odd: &HashMap<Key, String>) -> String {
    odd.get(&k).cloned().unwrap_or_else(|| k.to_string())
}

/// The chain, dead branches, tool pairs and re-links. `flags` is one byte
/// per node, beside `nodes` (which stay as pass 1 left them).
#[allow(clippy::too_many_arguments)]
fn decide_chain(
    s: &mut Scan,
    nodes: &[Node],
    flags: &mut [u8],
    tools: &[(u64, u32, bool)],
    compactions: &Compactions,
    (newest_prompt, newest_conv): (Option<(u32, Option<Key>)>, Option<Key>),
    odd: &HashMap<Key, String>,
    opts: &TrimOptions,
) {
    // uuid → node: node numbers sorted by (key, number), 4 bytes a
    // record; a key names the first record with it.
    let mut index: Vec<u32> = (0..nodes.len() as u32).collect();
    index.sort_unstable_by_key(|i| (nodes[*i as usize].key, *i));
    let find = |k: Key| -> Option<usize> {
        let at = index.partition_point(|i| nodes[*i as usize].key < k);
        index
            .get(at)
            .filter(|i| nodes[**i as usize].key == k)
            .map(|i| *i as usize)
    };
    // The leaf resume follows: the newest last-prompt's, if it names a
    // record here; else the newest user/assistant record. The chain of the
    // newest user/assistant record is kept too: a turn written after the
    // last last-prompt (a background task's notification) extends it, and
    // which of the two a resume takes then was not measured.
    let leaf = newest_prompt
        .and_then(|(_, l)| l)
        .filter(|k| find(*k).is_some())
        .or(newest_conv);
    s.leaf = leaf.map(|k| text_of(k, odd));
    // Walk up: parentUuid, and across a compaction boundary its
    // logicalParentUuid (unless `--before-compact`).
    for start in [leaf, newest_conv].into_iter().flatten() {
        let Some(mut at) = find(start) else { continue };
        let mut steps = 0usize;
        loop {
            if flags[at] & F_ON_CHAIN != 0 || steps > nodes.len() {
                break;
            }
            steps += 1;
            flags[at] |= F_ON_CHAIN;
            if flags[at] & F_COMPACT != 0 {
                s.compact_boundary = true;
            }
            let next = match nodes[at].parent() {
                Some(p) => Some(p),
                None if flags[at] & F_COMPACT != 0 && opts.before_compact => None,
                None => compactions.logical.get(&(at as u32)).copied(),
            };
            match next.and_then(find) {
                Some(n) => at = n,
                None => break,
            }
        }
    }
    // With `--before-compact` the walk stops at a boundary; the messages
    // that boundary preserves (its segment, tail up to head) are sent
    // after the summary on resume, so they stay.
    if opts.before_compact {
        for &(boundary, head, tail) in &compactions.segments {
            if flags[boundary as usize] & F_ON_CHAIN == 0 {
                continue;
            }
            let mut at = find(tail);
            let mut steps = 0usize;
            while let Some(n) = at {
                if steps > nodes.len() {
                    break;
                }
                steps += 1;
                flags[n] |= F_ON_CHAIN;
                if nodes[n].key == head {
                    break;
                }
                at = nodes[n].parent().and_then(find);
            }
        }
    }
    // What hangs below a leaf extends the chain (a record written after
    // the leaf was recorded): kept. Parents come before children in the
    // file, so one forward pass finds them.
    let mut below = vec![false; nodes.len()];
    for start in [leaf, newest_conv].into_iter().flatten() {
        if let Some(i) = find(start) {
            below[i] = true;
        }
    }
    for i in 0..nodes.len() {
        if !below[i] {
            if let Some(p) = nodes[i].parent().and_then(find) {
                if below[p] && p != i {
                    below[i] = true;
                }
            }
        }
        if below[i] {
            flags[i] |= F_ON_CHAIN;
        }
    }
    drop(below);
    // Every record sharing a uuid with one on the chain is on it too (one
    // pass over the groups of equal keys).
    let mut g = 0;
    while g < index.len() {
        let key = nodes[index[g] as usize].key;
        let mut e = g;
        while e < index.len() && nodes[index[e] as usize].key == key {
            e += 1;
        }
        if e - g > 1
            && index[g..e]
                .iter()
                .any(|i| flags[*i as usize] & F_ON_CHAIN != 0)
        {
            for i in &index[g..e] {
                flags[*i as usize] |= F_ON_CHAIN;
            }
        }
        g = e;
    }
    let on_chain: Vec<bool> = flags.iter().map(|f| f & F_ON_CHAIN != 0).collect();
    for (i, on) in on_chain.into_iter().enumerate() {
        let f = &mut flags[i];
        let line = &mut s.lines[nodes[i].line as usize];
        let dead = leaf.is_some() && !on && *f & F_CONVERSATION != 0 && *f & F_SIDECHAIN == 0;
        if *f & F_RULE_DROP != 0 {
            line.fate = Fate::DropRule;
        } else if dead {
            line.fate = Fate::DropDead;
            *f |= F_DEAD;
        }
        if matches!(line.fate, Fate::Keep | Fate::Edit) {
            *f |= F_KEPT;
        }
    }
    // Tool pairs: a dropped record holding the other half of a kept
    // record's tool_use / tool_result is kept (rescued).
    let mut by_id: Vec<(u64, u32, bool)> = tools.to_vec();
    by_id.sort_unstable();
    let mut i = 0;
    while i < by_id.len() {
        let mut j = i;
        while j < by_id.len() && by_id[j].0 == by_id[i].0 {
            j += 1;
        }
        let group = &by_id[i..j];
        let kept_use = group
            .iter()
            .any(|t| t.2 && flags[t.1 as usize] & F_KEPT != 0);
        let kept_result = group
            .iter()
            .any(|t| !t.2 && flags[t.1 as usize] & F_KEPT != 0);
        for t in group {
            let f = &mut flags[t.1 as usize];
            let partner_kept = if t.2 { kept_result } else { kept_use };
            if partner_kept && *f & F_KEPT == 0 {
                *f |= F_KEPT;
                *f &= !F_DEAD;
                s.lines[nodes[t.1 as usize].line as usize].fate = Fate::Keep;
                s.rescued += 1;
            }
        }
        i = j;
    }
    drop(by_id);
    // The leaf resume follows stays reachable: when no ancestor of a dropped
    // leaf is kept (it would become null), the leaf itself is kept.
    if let Some(l) = leaf.and_then(find) {
        let mut at = Some(l);
        let mut steps = 0;
        while let Some(i) = at {
            if flags[i] & F_KEPT != 0 || steps > nodes.len() {
                break;
            }
            steps += 1;
            at = nodes[i].parent().and_then(find);
        }
        if at.is_none() && flags[l] & F_KEPT == 0 {
            flags[l] |= F_KEPT;
            flags[l] &= !F_DEAD;
            s.lines[nodes[l].line as usize].fate = Fate::Keep;
        }
    }
    // Re-link: a kept record whose parent is dropped points at its nearest
    // kept ancestor (a broken link cut the history in the spike).
    let flags: &[u8] = flags;
    let nearest_kept = |start: Key| -> Option<Key> {
        let mut k = start;
        for _ in 0..=nodes.len() {
            let Some(n) = find(k) else {
                return Some(k); // not in this file: left as it is
            };
            if flags[n] & F_KEPT != 0 {
                return Some(k);
            }
            k = nodes[n].parent()?;
        }
        None
    };
    let mut edits: Vec<Edit> = Vec::new();
    for (n, f) in nodes.iter().zip(flags) {
        if f & F_KEPT == 0 {
            continue;
        }
        let mut e = Edit {
            line: n.line,
            parent: None,
            leaf: None,
            strip_tool_use_result: false,
        };
        if let Some(p) = n.parent() {
            if find(p).is_some_and(|i| flags[i] & F_KEPT == 0) {
                e.parent = Some(nearest_kept(p));
                s.relinked += 1;
            }
        }
        if f & F_USER != 0 && n.tur_len > 0 {
            e.strip_tool_use_result = true;
            s.tool_use_result.0 += 1;
            s.tool_use_result.1 += u64::from(n.tur_len) + "\"toolUseResult\":,".len() as u64;
        }
        if e.parent.is_some() || e.strip_tool_use_result {
            edits.push(e); // in line order: nodes are
        }
    }
    // The kept last-prompt names a kept leaf.
    if let (Some((line, Some(k))), Some(_)) = (newest_prompt, leaf) {
        if let Some(i) = find(k) {
            if flags[i] & F_KEPT == 0 {
                let e = Edit {
                    line,
                    parent: None,
                    leaf: Some(nearest_kept(k)),
                    strip_tool_use_result: false,
                };
                match edits.binary_search_by_key(&line, |e| e.line) {
                    Ok(at) => edits[at].leaf = e.leaf,
                    Err(at) => edits.insert(at, e),
                }
                s.relinked += 1;
            }
        }
    }
    for e in &edits {
        s.lines[e.line as usize].fate = Fate::Edit;
    }
    s.edits = edits;
}
