//! The decisions of pass 1 on record numbers, once the file is read:
//! uuids matched to records one slice of the key space at a time
//! ([`resolve`]), then the chain resume follows, dead branches, tool
//! pairs and re-links ([`decide_chain`]).

use super::{
    node_rec, Compactions, Edit, Fate, Scan, Target, F_COMPACT, F_CONVERSATION, F_DEAD, F_KEPT,
    F_ON_CHAIN, F_RULE_DROP, F_SIDECHAIN, F_USER, G_BELOW, G_GROUP_ON, NONE, OUTSIDE,
};
use crate::trim::{Key, TrimError, TrimOptions};

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
/// sorted in at most about [`RESOLVE_BUDGET`](super::RESOLVE_BUDGET)
/// bytes, re-reading the spill.
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
pub(super) fn decide_chain(
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
