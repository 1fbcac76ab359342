//! `ccd trim`: shrink a dead session's transcript without changing what
//! Claude Code sends to the model when it resumes it.
//!
//! Two streaming passes over the file ([`scan`]: decide, keeping a compact
//! index; [`apply`]: write the kept lines, re-linked where needed, to a
//! temporary file beside the original, fsync, rename). What is dropped is
//! [`policy`]'s, which names the measurement each rule rests on. The
//! original is kept byte for byte under the caller's backup folder
//! ([`backup`]) and [`undo`] puts it back. A trim killed before its rename
//! leaves its temporary file; [`leftover`] recognises and removes those.
//!
//! Liveness is the caller's: it passes a `guard` that says whether the
//! session may be running *now*; it is asked before anything is read,
//! again right before the rename, and once more after it.

mod apply;
pub mod backup;
pub mod leftover;
pub mod policy;
mod scan;
mod spill;

pub use apply::{trim, undo, TrimHook, UndoOutcome};
pub use scan::{NODE_REC, RESOLVE_BUDGET};

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The longest line a trim reads (a longer one is refused, naming where it
/// is): it bounds the memory of both passes.
pub const DEFAULT_MAX_LINE: usize = 64 * 1024 * 1024;

/// What to drop beyond the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrimOptions {
    /// Drop `file-history-snapshot` / `file-history-delta` (loses
    /// `/rewind`'s checkpoints).
    pub drop_file_history: bool,
    /// Keep only what follows the last compaction boundary on the chain.
    pub before_compact: bool,
    /// Trim despite record types or shapes ccd does not know (they are
    /// kept as they are).
    pub force: bool,
    /// The longest line accepted.
    pub max_line: usize,
    /// The most memory the matching of uuids to records holds at once
    /// (default [`RESOLVE_BUDGET`]; see [`scan`]).
    pub resolve_budget: usize,
}

impl Default for TrimOptions {
    fn default() -> Self {
        Self {
            drop_file_history: false,
            before_compact: false,
            force: false,
            max_line: DEFAULT_MAX_LINE,
            resolve_budget: RESOLVE_BUDGET,
        }
    }
}

/// A uuid as 128 bits: parsed when it is a canonical lowercase UUID, else
/// an FNV-1a 128 hash of the text (kept beside, for writing it back).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Key([u64; 2]);

impl Key {
    pub(crate) fn parse(s: &str) -> Option<Key> {
        let b = s.as_bytes();
        if b.len() != 36 {
            return None;
        }
        let mut v: u128 = 0;
        for (i, c) in b.iter().enumerate() {
            if matches!(i, 8 | 13 | 18 | 23) {
                if *c != b'-' {
                    return None;
                }
                continue;
            }
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                _ => return None,
            };
            v = (v << 4) | u128::from(d);
        }
        Some(Key([(v >> 64) as u64, v as u64]))
    }

    pub(crate) fn hash(s: &str) -> Key {
        let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
        for b in s.bytes() {
            h ^= u128::from(b);
            h = h.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
        }
        Key([(h >> 64) as u64, h as u64])
    }

    pub(crate) fn is_zero(&self) -> bool {
        self.0 == [0, 0]
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let h = format!("{:016x}{:016x}", self.0[0], self.0[1]);
        write!(
            f,
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }
}

/// Records and bytes of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    pub records: u64,
    pub bytes: u64,
}

/// What a trim does (or, dry, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TrimReport {
    pub transcript: PathBuf,
    pub bytes_before: u64,
    /// Exact after a trim; for a dry run, the estimate (the
    /// `toolUseResult` removal counted with its key).
    pub bytes_after: u64,
    pub records_before: u64,
    /// Dropped records by kind (`attachment:<type>` for attachments;
    /// `dead branch: <kind>` for records off the chain resume follows;
    /// `older <kind>` for the superseded `last-prompt` / `ai-title`).
    pub dropped: BTreeMap<String, Count>,
    /// `toolUseResult` fields removed from `user` records.
    pub tool_use_result: Count,
    /// Kept records whose `parentUuid` (or the kept `last-prompt`'s
    /// `leafUuid`) was re-pointed at the nearest kept ancestor.
    pub relinked: u64,
    /// Records kept only because they hold the other half of a kept
    /// tool_use / tool_result.
    pub rescued_for_tool_pairs: u64,
    /// The CLI versions the records name.
    pub versions: Vec<String>,
    /// Those not among [`policy::MEASURED_VERSIONS`].
    pub unmeasured_versions: Vec<String>,
    /// The uuid of the leaf resume follows.
    pub leaf: Option<String>,
    /// A compaction boundary is on the chain.
    pub compact_boundary: bool,
    /// Bytes of a half-written last line, kept as they are.
    pub half_written_tail: Option<u64>,
    /// Nothing would change: the file was left alone.
    pub unchanged: bool,
    /// Where the original was kept (after a trim).
    pub backup: Option<PathBuf>,
}

impl TrimReport {
    pub(crate) fn from_scan(path: &Path, s: &scan::Scan) -> Result<TrimReport, TrimError> {
        let mut r = TrimReport {
            transcript: path.to_path_buf(),
            bytes_before: s.total_bytes,
            records_before: s.line_count,
            relinked: s.relinked,
            rescued_for_tool_pairs: s.rescued,
            tool_use_result: Count {
                records: s.tool_use_result.0,
                bytes: s.tool_use_result.1,
            },
            versions: s.versions.iter().cloned().collect(),
            leaf: s.leaf.clone(),
            compact_boundary: s.compact_boundary,
            half_written_tail: s.partial_tail,
            ..TrimReport::default()
        };
        r.unmeasured_versions = r
            .versions
            .iter()
            .filter(|v| !policy::MEASURED_VERSIONS.contains(&v.as_str()))
            .cloned()
            .collect();
        let mut dropped_bytes = 0u64;
        let mut lines = s.lines()?;
        while let Some((l, _)) = lines.next_line()? {
            let name = &s.labels[l.label as usize];
            let key = match l.fate {
                scan::Fate::Keep | scan::Fate::Edit => continue,
                scan::Fate::DropRule => name.clone(),
                scan::Fate::DropDead => format!("dead branch: {name}"),
                scan::Fate::DropOlder => format!("older {name}"),
            };
            let c = r.dropped.entry(key).or_default();
            c.records += 1;
            c.bytes += u64::from(l.len);
            dropped_bytes += u64::from(l.len);
        }
        r.bytes_after = s
            .total_bytes
            .saturating_sub(dropped_bytes)
            .saturating_sub(r.tool_use_result.bytes);
        r.unchanged = dropped_bytes == 0 && s.edit_count == 0;
        Ok(r)
    }
}

/// Why a trim (or an undo) did not happen. Nothing was changed unless the
/// variant says the original was put back.
#[derive(Debug, thiserror::Error)]
pub enum TrimError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the session may be running ({0}): a trim needs a dead session; the transcript was not touched")]
    Live(String),
    #[error("{path}: record types ccd does not know: {}; nothing was changed (`--force` keeps them as they are and trims the rest)", list_types(.types))]
    UnknownTypes {
        path: PathBuf,
        types: Vec<(String, u64)>,
    },
    #[error("{path}: line {line} (byte {offset}) is not a record ccd knows ({reason}); nothing was changed (`--force` keeps it as it is)")]
    BadRecord {
        path: PathBuf,
        line: u64,
        offset: u64,
        reason: String,
    },
    #[error("the line at byte {offset} is longer than {max} bytes, the most a trim reads; nothing was changed")]
    LineTooLong { offset: u64, max: usize },
    #[error("{0}")]
    WriterAppeared(String),
    #[error("no trim backup of this session in {0}: nothing to undo")]
    NoBackup(PathBuf),
    #[error("the transcript changed since it was trimmed ({0}); undoing would lose what was added. The original is still at {1}")]
    ChangedSinceTrim(String, PathBuf),
}

fn list_types(t: &[(String, u64)]) -> String {
    t.iter()
        .map(|(k, n)| format!("{k:?} ({n})"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl TrimError {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> TrimError {
        let what = what.into();
        move |source| TrimError::Io { what, source }
    }
}

/// Pass 1 only: what a trim of `path` would do. Its index spills to
/// anonymous files in `spill_dir` (the state dir; see [`scan`]).
pub fn plan(path: &Path, opts: &TrimOptions, spill_dir: &Path) -> Result<TrimReport, TrimError> {
    let f =
        std::fs::File::open(path).map_err(TrimError::io(format!("opening {}", path.display())))?;
    let s = scan::scan(f, path, opts, spill_dir)?;
    let r = TrimReport::from_scan(path, &s);
    drop(s);
    release_freed_memory();
    r
}

/// Hands the memory a trim freed back to the system (glibc keeps freed
/// heap in its arenas, the blocking thread's among them, so a long-lived
/// daemon would otherwise keep a trim's peak): `ccd_os::heap`. Called at
/// the end of [`trim`] and [`plan`]; a no-op where the allocator has no
/// such call.
pub fn release_freed_memory() {
    ccd_os::heap::release_freed();
}

#[cfg(test)]
mod tests;
