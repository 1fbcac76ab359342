//! Pass 1 of a trim: one streaming read of the transcript that keeps a
//! compact index — never a record's body — and decides what goes.
//!
//! This module holds the index and its reading back: the spill record
//! formats, the per-record flags, [`Scan`] (the decisions) and [`Lines`]
//! (them in file order, with each line's edit). The read itself — the
//! record heads it parses and the loop over the lines — is [`read`]; the
//! matching of uuids to records and the decisions on the chain are
//! [`chain`].
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

mod chain;
mod read;

pub(crate) use read::{read_line, scan};

use super::spill::{Spill, SpillReader};
use super::{Key, TrimError};
use std::collections::{BTreeSet, HashMap};
use std::fmt;

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

/// The links across compaction boundaries, by node number.
#[derive(Default)]
struct Compactions {
    /// `logicalParentUuid` of the records that have one, by record.
    logical: Vec<(u32, Key)>,
    /// Per boundary: its preserved segment's head and tail (bounded like
    /// `logical`).
    segments: Vec<(u32, Key, Key)>,
}

fn text_of(k: Key, odd: &HashMap<Key, String>) -> String {
    odd.get(&k).cloned().unwrap_or_else(|| k.to_string())
}
