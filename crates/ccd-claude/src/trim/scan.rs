//! Pass 1 of a trim: one streaming read of the transcript that keeps a
//! compact index — never a record's body — and decides what goes.
//!
//! Memory, by construction: what grows with the file is spilled, in
//! fixed-size records, to two anonymous files in the caller's folder (the
//! state dir): per line its length, kind and first decision (8 bytes), per
//! record with a uuid its key, parent key and `toolUseResult` length
//! ([`NODE_REC`] bytes). In memory stay, per record with a uuid, its
//! parent as a record number and two flag bytes (6 bytes; 8 with the
//! growth of the vector of flags), 16 bytes a tool block, the rare
//! `logicalParentUuid`s and preserved segments (each capped at 1,000,000),
//! the text of non-canonical uuids (capped likewise; none in the CLI's
//! files), and, while uuids are matched to records, at most
//! [`super::TrimOptions::resolve_budget`] bytes (16 MiB): the keys are matched one slice of the key
//! space at a time, re-reading the spill file once per slice. Plus the
//! longest line (at most [`super::TrimOptions::max_line`]).

use super::policy::{self, Rule};
use super::spill::{Spill, SpillReader};
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

/// The most memory the matching of uuids to records holds at once (its
/// sorted slice of `(key, record)` pairs). Unit tests use a tiny one, so
/// their small files are matched in many slices.
pub const RESOLVE_BUDGET: usize = if cfg!(test) {
    24 * 16
} else {
    16 * 1024 * 1024
};

/// Bytes of a line's spill record: length (4), label (2), first fate (1),
/// has a uuid (1).
const LINE_REC: usize = 8;
/// Bytes of a uuid record's spill record: key (16), parent key (16, zero:
/// none), `toolUseResult` length (4).
pub const NODE_REC: usize = 36;

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

/// The second flag byte: hangs below a leaf.
const G_BELOW: u8 = 1;
/// Its group of records sharing a uuid has one on the chain.
const G_GROUP_ON: u8 = 2;

/// A parent: none (no `parentUuid`, or null).
const NONE: u32 = u32::MAX;
/// A parent whose uuid no record of this file has.
const OUTSIDE: u32 = u32::MAX - 1;

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

/// Where a re-pointed link goes: null, or the parent uuid of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Null,
    ParentOf(u32),
}

/// The decisions of pass 1, used by pass 2 and reported. The per-line
/// decisions are read back in order with [`Scan::lines`].
pub(crate) struct Scan {
    line_spill: Spill<LINE_REC>,
    node_spill: Spill<NODE_REC>,
    /// Per record with a uuid: its parent's record number (the first
    /// record with that uuid), [`NONE`] or [`OUTSIDE`].
    parent: Vec<u32>,
    flags: Vec<u8>,
    flags2: Vec<u8>,
    /// The newest `last-prompt` / `ai-title` lines.
    newest_prompt_line: Option<u32>,
    newest_title_line: Option<u32>,
    /// The edit of the kept `last-prompt`'s `leafUuid`, if any.
    leaf_edit: Option<Edit>,
    /// Edits of kept lines (re-links and `toolUseResult` removals).
    pub edit_count: u64,
    pub line_count: u64,
    pub labels: Vec<String>,
    pub total_bytes: u64,
    pub versions: BTreeSet<String>,
    pub relinked: u64,
    pub rescued: u64,
    pub tool_use_result: (u64, u64),
    pub partial_tail: Option<u64>,
    pub compact_boundary: bool,
    pub leaf: Option<String>,
    /// The text of uuids that are not canonical UUIDs (by their hash key).
    odd_keys: HashMap<Key, String>,
}

impl fmt::Debug for Scan {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_struct("Scan")
            .field("line_count", &self.line_count)
            .field("records_with_uuid", &self.parent.len())
            .finish_non_exhaustive()
    }
}

impl Scan {
    /// A key as the uuid text it came from.
    pub fn key_text(&self, k: Key) -> String {
        text_of(k, &self.odd_keys)
    }

    /// The lines in order, each with its decision and, when it changes,
    /// its edit.
    pub fn lines(&self) -> Result<Lines<'_>, TrimError> {
        Ok(Lines {
            s: self,
            lines: self.line_spill.reader()?,
            nodes: self.node_spill.reader()?,
            line: 0,
            node: 0,
        })
    }

    fn kept(&self, n: u32) -> bool {
        self.flags[n as usize] & F_KEPT != 0
    }

    /// The nearest kept ancestor of record `n`'s parent (whose record,
    /// `parent[n]`, is not kept): as the re-pointed link.
    fn nearest_kept(&self, n: u32) -> Target {
        let mut m = n;
        for _ in 0..=self.parent.len() {
            let p = self.parent[m as usize];
            if p == OUTSIDE || (p != NONE && self.kept(p)) {
                return Target::ParentOf(m); // kept, or not in this file: as it is
            }
            if p == NONE {
                return Target::Null;
            }
            m = p;
        }
        Target::Null
    }

    fn target_key(&self, t: Target) -> Result<Option<Key>, TrimError> {
        match t {
            Target::Null => Ok(None),
            Target::ParentOf(m) => Ok(Some(node_rec(&self.node_spill.get(u64::from(m))?).1)),
        }
    }

    /// The edit of record `n` (kept), its spill record `rec`: a re-link
    /// and / or the `toolUseResult` removal.
    fn node_edit(&self, n: u32, line: u32, tur_len: u32) -> Result<Option<Edit>, TrimError> {
        let f = self.flags[n as usize];
        let p = self.parent[n as usize];
        let mut e = Edit {
            line,
            parent: None,
            leaf: None,
            strip_tool_use_result: f & F_USER != 0 && tur_len > 0,
        };
        if p < OUTSIDE && !self.kept(p) {
            e.parent = Some(self.target_key(self.nearest_kept(n))?);
        }
        Ok((e.parent.is_some() || e.strip_tool_use_result).then_some(e))
    }

    /// The first fate of line `line`, before the chain is decided.
    fn first_fate(&self, line: u32, base_drop: bool, label: u16) -> Fate {
        let name = self.labels[label as usize].as_str();
        if (name == "last-prompt" && self.newest_prompt_line != Some(line))
            || (name == "ai-title" && self.newest_title_line != Some(line))
        {
            Fate::DropOlder
        } else if base_drop {
            Fate::DropRule
        } else {
            Fate::Keep
        }
    }
}

/// The lines of a [`Scan`] in order: see [`Scan::lines`].
pub(crate) struct Lines<'a> {
    s: &'a Scan,
    lines: SpillReader<'a, LINE_REC>,
    nodes: SpillReader<'a, NODE_REC>,
    line: u32,
    node: u32,
}

impl Lines<'_> {
    /// The next line: what it is, and its edit when it is [`Fate::Edit`].
    pub fn next_line(&mut self) -> Result<Option<(LineInfo, Option<Edit>)>, TrimError> {
        let Some(rec) = self.lines.next_rec()? else {
            return Ok(None);
        };
        let s = self.s;
        let line = self.line;
        self.line += 1;
        let len = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]);
        let label = u16::from_le_bytes([rec[4], rec[5]]);
        let first = s.first_fate(line, rec[6] != 0, label);
        let mut edit = None;
        let fate = if rec[7] != 0 {
            let n = self.node;
            self.node += 1;
            let nrec = self.nodes.next_rec()?.ok_or_else(|| {
                TrimError::io("the trim's spill file")(std::io::Error::other("short"))
            })?;
            let f = s.flags[n as usize];
            if f & F_KEPT != 0 {
                edit = s.node_edit(n, line, node_rec(&nrec).2)?;
                Fate::Keep
            } else if f & F_DEAD != 0 {
                Fate::DropDead
            } else if f & F_RULE_DROP != 0 {
                Fate::DropRule
            } else {
                first
            }
        } else {
            first
        };
        if let Some(le) = s.leaf_edit.as_ref().filter(|e| e.line == line) {
            let e = edit.get_or_insert(Edit {
                line,
                parent: None,
                leaf: None,
                strip_tool_use_result: false,
            });
            e.leaf = le.leaf;
        }
        let fate = if edit.is_some() { Fate::Edit } else { fate };
        Ok(Some((LineInfo { len, label, fate }, edit)))
    }
}

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

/// (key, parent key — zero: none, `toolUseResult` length).
fn node_rec(r: &[u8; NODE_REC]) -> (Key, Key, u32) {
    let u = |a: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&r[a..a + 8]);
        u64::from_le_bytes(b)
    };
    (
        Key([u(0), u(8)]),
        Key([u(16), u(24)]),
        u32::from_le_bytes([r[32], r[33], r[34], r[35]]),
    )
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
    /// `logicalParentUuid` of the records that have one, by record.
    logical: Vec<(u32, Key)>,
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

fn text_of(k: Key, odd: &HashMap<Key, String>) -> String {
    odd.get(&k).cloned().unwrap_or_else(|| k.to_string())
}

/// The uuids of a scan matched to records (each names the first record
/// with it).
struct Resolved {
    /// `(record, its parent's record)`, for the parents named.
    logical: Vec<(u32, u32)>,
    /// Per preserved segment: its boundary, head and tail records.
    segments: Vec<(u32, u32, u32)>,
    /// The records of the keys asked for ([`NONE`]: no record has it).
    asked: Vec<u32>,
    /// `(record, the first record with its uuid)`, for the records that
    /// repeat an earlier one's uuid.
    repeats: Vec<(u32, u32)>,
}

/// Matches every uuid the scan names (parents, logical parents, segment
/// ends, `asked`) to the first record with it, and fills `s.parent`: one
/// slice of the key space at a time, each slice's `(key, record)` pairs
/// sorted in at most about [`RESOLVE_BUDGET`] bytes, re-reading the spill.
fn resolve(
    s: &mut Scan,
    compactions: &Compactions,
    asked: &[Key],
    budget: usize,
) -> Result<Resolved, TrimError> {
    use std::hash::BuildHasher;
    let n = s.flags.len();
    let per = std::mem::size_of::<(Key, u32)>();
    let cap = (budget / per).max(16);
    // Slices drawn with a key per trim: a file cannot aim its uuids at one.
    let parts = n.div_ceil(cap * 4 / 5).max(1) as u64;
    let seed = std::collections::hash_map::RandomState::new();
    let slice = |k: &Key| seed.hash_one(k) % parts;
    let mut parent = vec![NONE; n];
    let mut out = Resolved {
        logical: compactions
            .logical
            .iter()
            .map(|(i, _)| (*i, NONE))
            .collect(),
        segments: compactions
            .segments
            .iter()
            .map(|(i, _, _)| (*i, NONE, NONE))
            .collect(),
        asked: vec![NONE; asked.len()],
        repeats: Vec::new(),
    };
    let mut pairs: Vec<(Key, u32)> = Vec::with_capacity(cap.min(n));
    for p in 0..parts {
        pairs.clear();
        let mut r = s.node_spill.reader()?;
        let mut i = 0u32;
        while let Some(rec) = r.next_rec()? {
            let (key, _, _) = node_rec(&rec);
            if slice(&key) == p {
                if pairs.len() == pairs.capacity() {
                    first_of_each(&mut pairs, &mut out.repeats);
                }
                pairs.push((key, i));
            }
            i += 1;
        }
        first_of_each(&mut pairs, &mut out.repeats);
        let find = |k: &Key| -> Option<u32> {
            if slice(k) != p {
                return None;
            }
            let at = pairs.partition_point(|(x, _)| x < k);
            pairs.get(at).filter(|(x, _)| x == k).map(|(_, i)| *i)
        };
        let mut r = s.node_spill.reader()?;
        let mut i = 0usize;
        while let Some(rec) = r.next_rec()? {
            let (_, pk, _) = node_rec(&rec);
            if !pk.is_zero() && slice(&pk) == p {
                parent[i] = find(&pk).unwrap_or(OUTSIDE);
            }
            i += 1;
        }
        for (at, (_, k)) in compactions.logical.iter().enumerate() {
            if let Some(x) = find(k) {
                out.logical[at].1 = x;
            }
        }
        for (at, (_, h, t)) in compactions.segments.iter().enumerate() {
            if let Some(x) = find(h) {
                out.segments[at].1 = x;
            }
            if let Some(x) = find(t) {
                out.segments[at].2 = x;
            }
        }
        for (at, k) in asked.iter().enumerate() {
            if let Some(x) = find(k) {
                out.asked[at] = x;
            }
        }
    }
    drop(pairs);
    out.repeats.sort_unstable();
    s.parent = parent;
    Ok(out)
}

/// Sorts `pairs` by (key, record) and keeps the first record of each key,
/// noting the others in `repeats` as `(record, first)`.
fn first_of_each(pairs: &mut Vec<(Key, u32)>, repeats: &mut Vec<(u32, u32)>) {
    pairs.sort_unstable();
    let mut w = 0;
    for i in 0..pairs.len() {
        if w > 0 && pairs[w - 1].0 == pairs[i].0 {
            repeats.push((pairs[i].1, pairs[w - 1].1));
        } else {
            pairs[w] = pairs[i];
            w += 1;
        }
    }
    pairs.truncate(w);
}

/// The chain, dead branches, tool pairs and re-links, on record numbers.
fn decide_chain(
    s: &mut Scan,
    tools: &[(u64, u32, bool)],
    compactions: &Compactions,
    (newest_prompt, newest_conv): (Option<(u32, Option<Key>)>, Option<Key>),
    opts: &TrimOptions,
) -> Result<(), TrimError> {
    let prompt_leaf = newest_prompt.and_then(|(_, l)| l);
    let asked: Vec<Key> = [prompt_leaf, newest_conv].into_iter().flatten().collect();
    let res = resolve(s, compactions, &asked, opts.resolve_budget)?;
    let found = |k: Option<Key>| -> Option<u32> {
        let at = asked.iter().position(|a| Some(*a) == k)?;
        Some(res.asked[at]).filter(|x| *x != NONE)
    };
    let n = s.flags.len();
    let parent_of = |parent: &[u32], i: usize| -> Option<usize> {
        let p = parent[i];
        (p < OUTSIDE).then_some(p as usize)
    };
    // The leaf resume follows: the newest last-prompt's, if it names a
    // record here; else the newest user/assistant record. The chain of the
    // newest user/assistant record is kept too: a turn written after the
    // last last-prompt (a background task's notification) extends it, and
    // which of the two a resume takes then was not measured.
    let leaf = prompt_leaf
        .filter(|k| found(Some(*k)).is_some())
        .or(newest_conv);
    s.leaf = leaf.map(|k| s.key_text(k));
    let leaf_node = found(leaf);
    let conv_node = found(newest_conv);
    let flags = &mut s.flags;
    let parent = &s.parent;
    // Walk up: parentUuid, and across a compaction boundary its
    // logicalParentUuid (unless `--before-compact`).
    for start in [leaf_node, conv_node].into_iter().flatten() {
        let mut at = start as usize;
        let mut steps = 0usize;
        loop {
            if flags[at] & F_ON_CHAIN != 0 || steps > n {
                break;
            }
            steps += 1;
            flags[at] |= F_ON_CHAIN;
            if flags[at] & F_COMPACT != 0 {
                s.compact_boundary = true;
            }
            let next = if parent[at] != NONE {
                parent_of(parent, at)
            } else if flags[at] & F_COMPACT != 0 && opts.before_compact {
                None
            } else {
                let i = res.logical.partition_point(|(x, _)| (*x as usize) < at);
                res.logical
                    .get(i)
                    .filter(|(x, t)| *x as usize == at && *t != NONE)
                    .map(|(_, t)| *t as usize)
            };
            match next {
                Some(x) => at = x,
                None => break,
            }
        }
    }
    // The first record with the uuid of record `i`.
    let first_with = |i: usize| -> usize {
        let at = res.repeats.partition_point(|(x, _)| (*x as usize) < i);
        match res.repeats.get(at) {
            Some((x, f)) if *x as usize == i => *f as usize,
            _ => i,
        }
    };
    // With `--before-compact` the walk stops at a boundary; the messages
    // that boundary preserves (its segment, tail up to head) are sent
    // after the summary on resume, so they stay.
    if opts.before_compact {
        for &(boundary, head, tail) in &res.segments {
            if flags[boundary as usize] & F_ON_CHAIN == 0 {
                continue;
            }
            let mut at = (tail != NONE).then_some(tail as usize);
            let mut steps = 0usize;
            while let Some(x) = at {
                if steps > n {
                    break;
                }
                steps += 1;
                flags[x] |= F_ON_CHAIN;
                if head != NONE && first_with(x) == head as usize {
                    break;
                }
                at = parent_of(parent, x);
            }
        }
    }
    // What hangs below a leaf extends the chain (a record written after
    // the leaf was recorded): kept. Parents come before children in the
    // file, so one forward pass finds them.
    let flags2 = &mut s.flags2;
    for i in [leaf_node, conv_node].into_iter().flatten() {
        flags2[i as usize] |= G_BELOW;
    }
    for i in 0..n {
        if flags2[i] & G_BELOW == 0 {
            if let Some(p) = parent_of(parent, i) {
                if flags2[p] & G_BELOW != 0 && p != i {
                    flags2[i] |= G_BELOW;
                }
            }
        }
        if flags2[i] & G_BELOW != 0 {
            flags[i] |= F_ON_CHAIN;
        }
    }
    // Every record sharing a uuid with one on the chain is on it too.
    for &(i, first) in &res.repeats {
        if flags[i as usize] & F_ON_CHAIN != 0 || flags[first as usize] & F_ON_CHAIN != 0 {
            flags2[first as usize] |= G_GROUP_ON;
        }
    }
    for &(i, first) in &res.repeats {
        if flags2[first as usize] & G_GROUP_ON != 0 {
            flags[i as usize] |= F_ON_CHAIN;
            flags[first as usize] |= F_ON_CHAIN;
        }
    }
    // Dead branches, from each line's first fate (one read of the spill).
    {
        let mut lines = s.line_spill.reader()?;
        let mut line = 0u32;
        let mut node = 0usize;
        while let Some(rec) = lines.next_rec()? {
            let this = line;
            line += 1;
            if rec[7] == 0 {
                continue;
            }
            let label = u16::from_le_bytes([rec[4], rec[5]]);
            let name = s.labels[label as usize].as_str();
            let mut fate = if (name == "last-prompt" && s.newest_prompt_line != Some(this))
                || (name == "ai-title" && s.newest_title_line != Some(this))
            {
                Fate::DropOlder
            } else if rec[6] != 0 {
                Fate::DropRule
            } else {
                Fate::Keep
            };
            let f = &mut s.flags[node];
            node += 1;
            let on = *f & F_ON_CHAIN != 0;
            let dead = leaf.is_some() && !on && *f & F_CONVERSATION != 0 && *f & F_SIDECHAIN == 0;
            if *f & F_RULE_DROP != 0 {
                fate = Fate::DropRule;
            } else if dead {
                fate = Fate::DropDead;
                *f |= F_DEAD;
            }
            if fate == Fate::Keep {
                *f |= F_KEPT;
            }
        }
    }
    let flags = &mut s.flags;
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
                s.rescued += 1;
            }
        }
        i = j;
    }
    drop(by_id);
    // The leaf resume follows stays reachable: when no ancestor of a dropped
    // leaf is kept (it would become null), the leaf itself is kept.
    if let Some(l) = leaf_node.map(|l| l as usize) {
        let mut at = Some(l);
        let mut steps = 0;
        while let Some(i) = at {
            if flags[i] & F_KEPT != 0 || steps > n {
                break;
            }
            steps += 1;
            at = parent_of(parent, i);
        }
        if at.is_none() && flags[l] & F_KEPT == 0 {
            flags[l] |= F_KEPT;
            flags[l] &= !F_DEAD;
        }
    }
    // Re-link: a kept record whose parent is dropped points at its nearest
    // kept ancestor (a broken link cut the history in the spike). The
    // edits themselves are made as pass 2 reaches each line
    // (`Scan::lines`); here they are counted.
    {
        let mut nodes = s.node_spill.reader()?;
        let mut i = 0usize;
        while let Some(rec) = nodes.next_rec()? {
            let f = s.flags[i];
            let p = s.parent[i];
            i += 1;
            if f & F_KEPT == 0 {
                continue;
            }
            let relink = p < OUTSIDE && s.flags[p as usize] & F_KEPT == 0;
            let tur_len = node_rec(&rec).2;
            let strip = f & F_USER != 0 && tur_len > 0;
            if relink {
                s.relinked += 1;
            }
            if strip {
                s.tool_use_result.0 += 1;
                s.tool_use_result.1 += u64::from(tur_len) + "\"toolUseResult\":,".len() as u64;
            }
            if relink || strip {
                s.edit_count += 1;
            }
        }
    }
    // The kept last-prompt names a kept leaf.
    if let (Some((line, Some(k))), Some(_)) = (newest_prompt, leaf) {
        if let Some(i) = found(Some(k)) {
            if s.flags[i as usize] & F_KEPT == 0 {
                // Its nearest kept ancestor: itself is not kept, so the walk
                // starts at its parent link.
                let t = match s.parent[i as usize] {
                    NONE => Target::Null,
                    OUTSIDE => Target::ParentOf(i),
                    p if s.kept(p) => Target::ParentOf(i),
                    _ => s.nearest_kept(i),
                };
                let key = s.target_key(t)?;
                s.leaf_edit = Some(Edit {
                    line,
                    parent: None,
                    leaf: Some(key),
                    strip_tool_use_result: false,
                });
                s.relinked += 1;
                s.edit_count += 1;
            }
        }
    }
    Ok(())
}
