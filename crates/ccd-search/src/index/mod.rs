//! The search index: trigram postings over message text, kept up to date
//! from the transcripts' growth, verified against the files (issue 55).
//!
//! **What it holds.** Every transcript record that yields searchable
//! messages ([`crate::extract`]) is a *record* of the index: its file, byte
//! offset and length, and (for records without a timestamp of their own,
//! such as titles) the record whose timestamp it inherits. A *posting
//! list* maps each byte trigram of the records' messages' text, normalized
//! by [`query::normalize`] — the very function that normalizes the query
//! and the text [`Query::find`] matches — to the records holding it, in
//! ascending order.
//!
//! **Searching** ([`Index::search`]). Candidates: for words and phrases,
//! the records holding every trigram of every term of at least 3 bytes
//! (normalized; one CJK character is 3 bytes), intersected. A query whose
//! terms are all shorter, and every `--regex` query, has no trigram to
//! look up: it falls back to the scan of every file ([`crate::scan`]).
//! Then *verification*: each candidate record is read from its file by
//! offset and its messages matched exactly as the scan matches them
//! (the same [`crate::scan`] matcher, filters, ranking and snippets), so
//! the index only narrows what is read and the hits equal the scan's.
//! A file the index does not cover, or has not seen in its current state
//! (its inode or length differ from its [`ReadMark`]), is scanned whole
//! instead: a stale index is slower, never wrong.
//!
//! **Archived conversations** ([`archives`]): each archive's transcript
//! is a file of the index too, decompressed once when the archive is new
//! or changed, keyed by its folder; the archive folder's stamp says
//! whether any came or went ([`Index::update_archives`]). They are
//! searched apart from the transcripts in place
//! ([`Index::search_archives`]; [`Index::search`] and the transcripts'
//! early stop never see them), their candidates verified decompressed.
//!
//! **Top k, early stop** (the [`Freshness::TrustedAll`] path, every file
//! covered): each record also keeps its messages' best role weight, their
//! count and their time, so a candidate session's best possible place in
//! the ranking is known unread ([`topk`]). Sessions are verified
//! best bound first, stopping once `limit` are verified and the next
//! bound ranks below the `limit`-th hit: the exhaustive ranking's top
//! `limit` exactly, a phrase found everywhere reading about `limit` files.
//! The scan, and the path that stats every source, stay exhaustive.
//!
//! **Updating** ([`Index::update`]): each file's [`ReadMark`] says where
//! to read: only the appended complete lines of a file that grew (a
//! half-written last line waits for its newline), everything again for a
//! file replaced or shrunk (a trim) after its records are tombstoned, and
//! a file no longer listed or gone has its records tombstoned. Tombstoned
//! records are skipped by every lookup and dropped from the postings when
//! the index is saved ([`Index::save`] compacts). The whole index is kept
//! in memory and rewritten atomically on save: simpler than segment files
//! with merges, and a save costs what a load costs (one sequential write
//! of the file); segments come when a save's time shows in a profile.
//!
//! **On disk** ([`Index::save`], [`Index::load`]): [`MAGIC`], the format
//! version [`FORMAT`] (little-endian u32), then the body in `postcard`
//! (files, records, posting lists delta-encoded as varints, the archive
//! folder's last listing), written to a
//! temporary file in the same directory and renamed over the old one.
//! Another version, or a body that does not decode, is an
//! [`IndexError`]: the caller rebuilds ([`Index::open_or_new`] does).
//!
//! **Bounds.** The postings are at most [`Limits::max_postings`] entries
//! (default [`MAX_POSTINGS`], 4 bytes each in memory, with at most an
//! eighth spare: lists grow by an eighth, [`push_lean`], and a
//! compaction or a load leaves them exact); a file whose
//! records would pass it is left out of the index (its records dropped,
//! flagged) and scanned at every search, so exactness never depends on
//! the bound; an archived transcript counts against the same bound (one
//! left out is read whole, decompressed, at every search). An index file
//! over [`MAX_INDEX_FILE_BYTES`] is not loaded.

mod archives;
mod disk;
mod paths;
mod topk;

use crate::extract::{self, Message};
use crate::incremental::{read_appended, ReadMark, ReadPlan, MAX_RECORD_BYTES};
use crate::query::{self, Query};
use crate::scan::{self, search_file, Filters, Hit, Matcher, ScanStats, Source};
use ccd_claude::transcript::summary_cache::FileStamp;
use serde::{Deserialize, Serialize};

pub use archives::{ArchivesAnswer, RACY_NS};

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The first bytes of an index file.
pub const MAGIC: &[u8; 8] = b"CCDSIDX\n";

/// The on-disk format's version: another one is rebuilt.
pub const FORMAT: u32 = 3;

/// The most posting entries held (1 GiB of them in memory), a record
/// counting as [`RECORD_ENTRIES`] more.
pub const MAX_POSTINGS: u64 = 256 << 20;

/// What one record weighs against [`MAX_POSTINGS`]: its entry (with its
/// score bound's parts), its tombstone flag and its place in its file's
/// list are about 48 bytes.
pub const RECORD_ENTRIES: u64 = 12;

/// The largest index file loaded.
pub const MAX_INDEX_FILE_BYTES: u64 = 2 << 30;

const NONE: u32 = u32::MAX;

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("index file: {0}")]
    Io(#[from] std::io::Error),
    #[error("index file of format {found}, this ccd reads {FORMAT}")]
    Format { found: u32 },
    #[error("index file is not an index or is damaged: {0}")]
    Corrupt(String),
}

/// The index's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Posting entries, records counted as [`RECORD_ENTRIES`] each.
    pub max_postings: u64,
    /// The largest index file loaded.
    pub max_file_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_postings: MAX_POSTINGS,
            max_file_bytes: MAX_INDEX_FILE_BYTES,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct FileEntry {
    path: String,
    session_id: String,
    ino: u64,
    len: u64,
    offset: u64,
    /// The last record whose messages carry a timestamp (what a record
    /// without one inherits), or [`NONE`].
    last_ts: u32,
    /// False when the file was left out for the postings bound.
    indexed: bool,
    /// False once the file is gone or unlisted (dropped at compaction).
    live: bool,
    /// An archived conversation's transcript, read decompressed from its
    /// compressed copy (`path` is then the archive's folder, `ino` its
    /// inode, `len` the transcript's stated length); `None` for a
    /// transcript in place.
    archive: Option<archives::Archived>,
}

impl FileEntry {
    fn mark(&self) -> ReadMark {
        ReadMark {
            ino: self.ino,
            len: self.len,
            offset: self.offset,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct RecordEntry {
    file: u32,
    offset: u64,
    len: u32,
    /// The record whose timestamp this one's messages take, or [`NONE`].
    ts_from: u32,
    /// What bounds a session's score before its file is read: the
    /// highest [`query::role_weight`] of the record's messages,
    rank_weight: u8,
    /// how many messages it holds (saturating),
    messages: u16,
    /// and their time (its own or the inherited one), in Unix seconds
    /// rounded up, or [`NO_TIME`].
    time: i64,
}

/// A record's messages have no time (or none that parses).
const NO_TIME: i64 = i64::MIN;

/// The body of the index file. [`Index::save`] writes it through
/// `disk::StoredRef` (the same fields in the same order, borrowed): a
/// field added here is added there.
#[derive(Serialize, Deserialize)]
struct Stored {
    files: Vec<FileEntry>,
    records: Vec<RecordEntry>,
    /// (trigram, record ids delta-encoded).
    postings: Vec<(u32, Vec<u32>)>,
    /// The archive folder as last listed.
    archive_root: Option<archives::RootMark>,
}

/// What an update did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpdateStats {
    /// Files read (from their mark or from the start).
    pub files_read: usize,
    /// Files read again from the start (replaced, shrunk).
    pub restarted: usize,
    /// Files dropped (gone, unlisted).
    pub dropped: usize,
    /// Files left out for the postings bound (and archives that could
    /// not be decompressed: read whole at each search).
    pub left_out: usize,
    pub bytes: u64,
    /// Listings of the archive folder read ([`Index::update_archives`]).
    pub listings: usize,
}

/// How a search was answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexSearchStats {
    /// Candidate records read and verified.
    pub verified: usize,
    /// Files scanned whole (not covered, stale, or no trigram to look up).
    pub scanned: usize,
    /// Candidate sessions left unread: their score's bound was below the
    /// `limit`-th score found ([`Freshness::TrustedAll`] only).
    pub unverified: usize,
}

/// How a search judges whether the index has seen a file as it is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// A stat of each file against its mark (a stale file is scanned).
    Stat,
    /// The caller vouches that every file changed since it was read has
    /// been updated (a watcher told it): no stat. A file that changed
    /// under the search all the same is read whole when its record
    /// cannot be read as indexed.
    Trusted,
    /// [`Freshness::Trusted`], and the sources are every file of the list
    /// the index was last updated against in full (none filtered out):
    /// when the index covers as many files as there are sources, only
    /// the candidates' files are visited, not every source.
    TrustedAll,
}

/// The candidates of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Candidates {
    /// No trigram to look up (short terms, a regex): every record.
    All,
    /// Live record ids, ascending.
    Records(Vec<u32>),
}

/// The trigram index (see the module header).
#[derive(Debug, Default)]
pub struct Index {
    limits: Limits,
    files: Vec<FileEntry>,
    by_path: paths::PathIds,
    /// Each file's records, ascending.
    file_records: Vec<Vec<u32>>,
    records: Vec<RecordEntry>,
    dead: Vec<bool>,
    postings: HashMap<u32, Vec<u32>>,
    entries: u64,
    /// The archive folder as last listed ([`Index::update_archives`]).
    archive_root: Option<archives::RootMark>,
    /// [`Index::update_archives`] ran on this index in this process (not
    /// saved: a loaded index's archives are judged by the folder's stamp).
    archives_updated: bool,
}

fn trigram(w: &[u8]) -> u32 {
    (u32::from(w[0]) << 16) | (u32::from(w[1]) << 8) | u32::from(w[2])
}

/// The distinct trigrams of normalized `text`, added to `out`.
fn trigrams_of(norm: &str, out: &mut Vec<u32>) {
    out.extend(norm.as_bytes().windows(3).map(trigram));
}

/// Pushes `x`, growing a full `v` by an eighth (at least 4 items) rather
/// than doubling it: the postings and records live as long as the index,
/// so their spare capacity is bounded by an eighth of what they hold
/// instead of up to as much again (amortized O(1) all the same).
fn push_lean<T>(v: &mut Vec<T>, x: T) {
    if v.len() == v.capacity() {
        v.reserve_exact(v.len() / 8 + 4);
    }
    v.push(x);
}

impl Index {
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// Posting entries held (tombstoned records' included until a save).
    pub fn postings_len(&self) -> u64 {
        self.entries
    }

    /// Live records.
    pub fn records_len(&self) -> usize {
        self.dead.iter().filter(|d| !**d).count()
    }

    /// The file's id, a new (empty) entry when it is not known.
    pub fn file_id(&mut self, path: &str, session_id: &str) -> u32 {
        if let Some(id) = self.file_of(path) {
            let f = &mut self.files[id as usize];
            f.live = true;
            f.session_id = session_id.to_string();
            return id;
        }
        let id = self.files.len() as u32;
        self.files.push(FileEntry {
            path: path.to_string(),
            session_id: session_id.to_string(),
            ino: 0,
            len: 0,
            offset: 0,
            last_ts: NONE,
            indexed: true,
            live: true,
            archive: None,
        });
        self.file_records.push(Vec::new());
        self.by_path.insert(path, id);
        id
    }

    /// The id of the file at `path`, if the index has it.
    fn file_of(&self, path: &str) -> Option<u32> {
        self.by_path
            .get(path, |id| self.files[id as usize].path.as_str())
    }

    /// The file's mark (`None` before its first read).
    pub fn mark(&self, id: u32) -> Option<ReadMark> {
        let f = self.files.get(id as usize)?;
        (f.len > 0 || f.ino > 0).then(|| f.mark())
    }

    /// Records where the file was read up to.
    pub fn set_mark(&mut self, id: u32, mark: ReadMark) {
        if let Some(f) = self.files.get_mut(id as usize) {
            f.ino = mark.ino;
            f.len = mark.len;
            f.offset = mark.offset;
        }
    }

    /// Tombstones the file's records and forgets its mark (it is read
    /// from the start next).
    pub fn reset_file(&mut self, id: u32) {
        for r in std::mem::take(&mut self.file_records[id as usize]) {
            self.dead[r as usize] = true;
        }
        let f = &mut self.files[id as usize];
        f.ino = 0;
        f.len = 0;
        f.offset = 0;
        f.last_ts = NONE;
        f.indexed = true;
    }

    /// Drops the file: its records tombstoned, the file forgotten.
    pub fn drop_file(&mut self, id: u32) {
        self.reset_file(id);
        let f = &mut self.files[id as usize];
        f.live = false;
        self.by_path.remove(&f.path, id);
    }

    /// Indexes one complete line of file `id` at `offset` (sans IO).
    /// False when the postings bound left the file out (its records are
    /// dropped and it is scanned from then on).
    pub fn add_line(&mut self, id: u32, offset: u64, line: &[u8], msgs: &mut Vec<Message>) -> bool {
        let f = &self.files[id as usize];
        if !f.indexed {
            return false;
        }
        msgs.clear();
        extract::messages(line, offset, msgs);
        if msgs.is_empty() {
            return true;
        }
        let mut tris = Vec::new();
        for m in msgs.iter() {
            trigrams_of(&query::normalize(&m.text), &mut tris);
        }
        tris.sort_unstable();
        tris.dedup();
        let weight =
            self.entries + (self.records.len() as u64 + 1) * RECORD_ENTRIES + tris.len() as u64;
        if weight > self.limits.max_postings {
            tracing::warn!(path = %f.path, bound = self.limits.max_postings, "search index full: transcript left out, scanned instead");
            self.reset_file(id);
            self.files[id as usize].indexed = false;
            return false;
        }
        let rec = self.records.len() as u32;
        let has_ts = msgs.iter().any(|m| m.timestamp.is_some());
        let ts_from = if has_ts { NONE } else { f.last_ts };
        let time = if has_ts {
            msgs.iter()
                .find_map(|m| m.timestamp.as_deref())
                .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
                .map_or(NO_TIME, |t| {
                    t.unix_timestamp() + i64::from(t.nanosecond() > 0)
                })
        } else {
            self.records
                .get(ts_from as usize)
                .map_or(NO_TIME, |r| r.time)
        };
        let rank_weight = msgs
            .iter()
            .map(|m| query::role_weight(m.role) as u8)
            .max()
            .unwrap_or(0);
        push_lean(
            &mut self.records,
            RecordEntry {
                file: id,
                offset,
                len: line.len() as u32,
                ts_from,
                rank_weight,
                messages: u16::try_from(msgs.len()).unwrap_or(u16::MAX),
                time,
            },
        );
        push_lean(&mut self.dead, false);
        push_lean(&mut self.file_records[id as usize], rec);
        if has_ts {
            self.files[id as usize].last_ts = rec;
        }
        self.entries += tris.len() as u64;
        for t in tris {
            push_lean(self.postings.entry(t).or_default(), rec);
        }
        true
    }

    /// The records that may match `query` (see the module header).
    pub fn candidates(&self, query: &Query) -> Candidates {
        let Query::Terms(terms) = query else {
            return Candidates::All;
        };
        let mut tris = Vec::new();
        for t in terms {
            trigrams_of(t, &mut tris);
        }
        if tris.is_empty() {
            return Candidates::All;
        }
        tris.sort_unstable();
        tris.dedup();
        let mut lists: Vec<&[u32]> = Vec::with_capacity(tris.len());
        for t in &tris {
            match self.postings.get(t) {
                Some(l) => lists.push(l),
                None => return Candidates::Records(Vec::new()),
            }
        }
        lists.sort_by_key(|l| l.len());
        let mut out: Vec<u32> = lists[0]
            .iter()
            .copied()
            .filter(|r| !self.dead[*r as usize])
            .collect();
        for l in &lists[1..] {
            if out.is_empty() {
                break;
            }
            out.retain(|r| l.binary_search(r).is_ok());
        }
        Candidates::Records(out)
    }

    /// Brings the index up to date with `sources` (every transcript it
    /// should cover): reads what each file gained since its mark, reads a
    /// replaced or shrunk one again, drops the files no longer listed or
    /// gone.
    pub fn update(&mut self, sources: &[Source]) -> UpdateStats {
        self.update_listed(sources, true, &|_| None)
    }

    /// [`Index::update`] taking a file's stamp from `stamp_of` when it
    /// has one (taken by the caller in the same command: one stat a file
    /// for the whole search), else from a stat of its own.
    pub fn update_stamped(
        &mut self,
        sources: &[Source],
        stamp_of: &dyn Fn(&std::path::Path) -> Option<FileStamp>,
    ) -> UpdateStats {
        self.update_listed(sources, true, stamp_of)
    }

    /// [`Index::update`] of `sources` only (files changed, as a watcher
    /// saw them): the files not among them are left as they are.
    pub fn update_some(&mut self, sources: &[Source]) -> UpdateStats {
        self.update_listed(sources, false, &|_| None)
    }

    fn update_listed(
        &mut self,
        sources: &[Source],
        drop_unlisted: bool,
        stamp_of: &dyn Fn(&std::path::Path) -> Option<FileStamp>,
    ) -> UpdateStats {
        let mut stats = UpdateStats::default();
        let mut listed = vec![false; self.files.len()];
        let mut buf = Vec::new();
        let mut msgs = Vec::new();
        for src in sources {
            let Some(path) = src.path.to_str() else {
                continue; // not UTF-8: never indexed, always scanned
            };
            let id = self.file_id(path, &src.session_id);
            if listed.len() <= id as usize {
                listed.resize(id as usize + 1, false);
            }
            listed[id as usize] = true;
            if !self.files[id as usize].indexed {
                continue;
            }
            let mark = self.mark(id);
            let stamp = stamp_of(&src.path).map_or_else(
                || std::fs::metadata(&src.path).map(|m| FileStamp::of(&m)),
                Ok,
            );
            let restarted = match (mark, stamp) {
                (Some(m), Ok(st)) => match m.plan(&st) {
                    ReadPlan::Unchanged => continue,
                    ReadPlan::Restart => true,
                    ReadPlan::From(_) => false,
                },
                (_, Err(_)) => {
                    self.drop_file(id);
                    stats.dropped += 1;
                    continue;
                }
                (None, Ok(_)) => false,
            };
            if restarted {
                self.reset_file(id);
                stats.restarted += 1;
            }
            let mark = self.mark(id);
            let mut full = false;
            let read = read_appended(
                &src.path,
                mark.as_ref(),
                MAX_RECORD_BYTES,
                &mut buf,
                |off, line| {
                    if !full && !self.add_line(id, off, line, &mut msgs) {
                        full = true;
                    }
                },
            );
            match read {
                Ok(r) if !full => {
                    self.set_mark(id, r.mark);
                    stats.files_read += 1;
                    stats.bytes += r.bytes;
                }
                Ok(_) => stats.left_out += 1,
                Err(e) => {
                    tracing::debug!(path = %src.path.display(), error = %e, "transcript not indexed");
                    self.drop_file(id);
                    stats.dropped += 1;
                }
            }
        }
        for (id, seen) in listed.iter().enumerate() {
            // Archives are listed by `update_archives`, not here.
            let f = &self.files[id];
            if drop_unlisted && !seen && f.live && f.archive.is_none() {
                self.drop_file(id as u32);
                stats.dropped += 1;
            }
        }
        stats
    }

    /// Searches `sources` as [`scan::scan`] does, with the same hits: the
    /// candidates of files the index has seen as they are now are
    /// verified, every other file is scanned whole.
    pub fn search(
        &self,
        sources: &[Source],
        query: &Query,
        filters: &Filters,
        now: OffsetDateTime,
        limit: usize,
    ) -> (Vec<Hit>, ScanStats, IndexSearchStats) {
        self.search_with(sources, query, filters, now, limit, Freshness::Stat)
    }

    /// [`Index::search`], the files' freshness judged as `fresh` says.
    pub fn search_with(
        &self,
        sources: &[Source],
        query: &Query,
        filters: &Filters,
        now: OffsetDateTime,
        limit: usize,
        freshness: Freshness,
    ) -> (Vec<Hit>, ScanStats, IndexSearchStats) {
        let cands = self.candidates(query);
        let Candidates::Records(cands) = cands else {
            let (hits, stats) = scan::scan(sources, query, filters, now, limit);
            let scanned = sources.len();
            return (
                hits,
                stats,
                IndexSearchStats {
                    scanned,
                    ..IndexSearchStats::default()
                },
            );
        };
        let mut per_file: HashMap<u32, Vec<u32>> = HashMap::new();
        for r in cands {
            let file = self.records[r as usize].file;
            // Archives are searched apart (`search_archives`).
            if self.files[file as usize].archive.is_none() {
                per_file.entry(file).or_default().push(r);
            }
        }
        if freshness == Freshness::TrustedAll && self.covered() == sources.len() {
            return self.search_candidates(&per_file, query, filters, now, limit);
        }
        let mut hits = Vec::new();
        let mut stats = ScanStats::default();
        let mut istats = IndexSearchStats::default();
        let mut buf = Vec::new();
        for src in sources {
            if filters.expired() {
                stats.timed_out += 1;
                continue;
            }
            let fresh = src
                .path
                .to_str()
                .and_then(|p| self.file_of(p))
                .filter(|&id| {
                    let f = &self.files[id as usize];
                    f.indexed
                        && match freshness {
                            Freshness::Trusted | Freshness::TrustedAll => self.mark(id).is_some(),
                            Freshness::Stat => std::fs::metadata(&src.path).is_ok_and(|m| {
                                f.mark().plan(&FileStamp::of(&m)) == ReadPlan::Unchanged
                            }),
                        }
                });
            let hit = match fresh {
                Some(id) => {
                    let recs = per_file.get(&id).map_or(&[][..], Vec::as_slice);
                    istats.verified += recs.len();
                    match self.verify(src, recs, query, filters, now, &mut stats) {
                        Ok(hit) => hit,
                        // Changed under the query: read it whole.
                        Err(()) => {
                            istats.scanned += 1;
                            search_file(src, query, filters, now, &mut buf, &mut stats)
                        }
                    }
                }
                None => {
                    istats.scanned += 1;
                    search_file(src, query, filters, now, &mut buf, &mut stats)
                }
            };
            hits.extend(hit);
        }
        scan::rank(&mut hits);
        hits.truncate(limit);
        (hits, stats, istats)
    }

    /// Transcripts in place the index covers: live, indexed and read at
    /// least once (archives not counted).
    fn covered(&self) -> usize {
        self.files
            .iter()
            .filter(|f| f.live && f.indexed && f.archive.is_none() && (f.len > 0 || f.ino > 0))
            .count()
    }

    /// Reads `recs` (ascending) of `src` by offset and matches them; `Err`
    /// when the file cannot be read as indexed (changed under the search).
    fn verify(
        &self,
        src: &Source,
        recs: &[u32],
        query: &Query,
        filters: &Filters,
        now: OffsetDateTime,
        stats: &mut ScanStats,
    ) -> Result<Option<Hit>, ()> {
        if recs.is_empty() {
            return Ok(None);
        }
        let mut file = match std::fs::File::open(&src.path) {
            Ok(f) => f,
            Err(e) => {
                tracing::debug!(path = %src.path.display(), error = %e, "transcript changed under the search");
                return Err(());
            }
        };
        stats.files += 1;
        let mut line = Vec::new();
        let mut msgs = Vec::new();
        let mut matcher = Matcher::default();
        for &r in recs {
            let rec = self.records[r as usize];
            if read_at(&mut file, rec.offset, rec.len, &mut line).is_err() {
                tracing::debug!(path = %src.path.display(), "transcript changed under the search");
                return Err(());
            }
            stats.bytes += u64::from(rec.len);
            msgs.clear();
            extract::messages(&line, rec.offset, &mut msgs);
            let mut inherited: Option<Option<String>> = None;
            for mut m in msgs.drain(..) {
                if m.timestamp.is_none() {
                    let ts =
                        inherited.get_or_insert_with(|| self.timestamp_of(&mut file, rec.ts_from));
                    m.timestamp = ts.clone();
                }
                matcher.message(m, query, filters);
            }
        }
        Ok(matcher.finish(src, now))
    }

    /// The timestamp of record `r` (read from `file`), if any.
    fn timestamp_of(&self, file: &mut std::fs::File, r: u32) -> Option<String> {
        let rec = self.records.get(r as usize)?;
        let mut line = Vec::new();
        read_at(file, rec.offset, rec.len, &mut line).ok()?;
        ccd_claude::transcript::record::Record::parse(&line)?.timestamp
    }
}

fn read_at(
    file: &mut std::fs::File,
    offset: u64,
    len: u32,
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    file.seek(SeekFrom::Start(offset))?;
    out.resize(len as usize, 0);
    file.read_exact(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx_of(lines: &[&str]) -> Index {
        let mut i = Index::new(Limits::default());
        let id = i.file_id("/x.jsonl", "s");
        let mut msgs = Vec::new();
        let mut off = 0;
        for l in lines {
            i.add_line(id, off, l.as_bytes(), &mut msgs);
            off += l.len() as u64 + 1;
        }
        i
    }

    fn recs(i: &Index, q: &str) -> Vec<u32> {
        match i.candidates(&Query::terms(q).unwrap()) {
            Candidates::Records(r) => r,
            Candidates::All => panic!("{q}: all"),
        }
    }

    /// `update_stamped` judges a file by the stamp it is given (the
    /// caller's stat of it), a stat of its own only without one.
    #[test]
    fn an_update_takes_the_callers_stamp_for_a_file() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("s.jsonl");
        let line =
            |t: &str| serde_json::json!({"type":"user","message":{"content":t}}).to_string() + "\n";
        std::fs::write(&path, line("first words")).unwrap();
        let src = [Source {
            session_id: "s".into(),
            path: path.clone(),
        }];
        let mut i = Index::new(Limits::default());
        assert_eq!(i.update(&src).files_read, 1);
        let before = FileStamp::of(&std::fs::metadata(&path).unwrap());
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, line("second words").as_bytes()).unwrap();
        // Stamped as it was: unchanged, not read.
        let st = i.update_stamped(&src, &|p| (p == path).then_some(before));
        assert_eq!(st.files_read, 0);
        assert!(recs(&i, "second").is_empty());
        // Stamped as it is now (or not stamped: stat'ed): the growth read.
        let now = FileStamp::of(&std::fs::metadata(&path).unwrap());
        let st = i.update_stamped(&src, &|p| (p == path).then_some(now));
        assert_eq!(st.files_read, 1);
        assert_eq!(recs(&i, "second").len(), 1);
    }

    /// The index normalizes text as the query does: every text a term
    /// matches by [`Query::find`] is a candidate for it.
    #[test]
    fn candidates_cover_every_match_of_the_normalization() {
        let texts = [
            "Fixed the AUTH Bug",
            "昨日は認証バグを直した",
            "ＡＢＣ３ fullwidth",
            "xİstanbul",
            "STRASSE straße",
            "I ❤ 🦀 and Rust",
            "tab\there　ideographic space",
        ];
        let lines: Vec<String> = texts
            .iter()
            .map(|t| serde_json::json!({"type":"user","message":{"content":t}}).to_string())
            .collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let i = idx_of(&refs);
        for q in [
            "auth bug",
            "認証",
            "abc3",
            "i̇stan",
            "straße",
            "🦀 rust",
            "here ideo",
            "\"the auth\"",
        ] {
            let query = Query::terms(q).unwrap();
            let expect: Vec<u32> = texts
                .iter()
                .enumerate()
                .filter(|(_, t)| query.find(t).is_some())
                .map(|(n, _)| n as u32)
                .collect();
            assert!(!expect.is_empty(), "{q}");
            let got = recs(&i, q);
            for e in &expect {
                assert!(got.contains(e), "{q}: {got:?} misses {e}");
            }
        }
        // Trigrams narrow: a word in no message has no candidate.
        assert!(recs(&i, "nowhere").is_empty());
        assert_eq!(recs(&i, "auth"), vec![0]);
        // Short terms and regexes have nothing to look up.
        assert_eq!(i.candidates(&Query::terms("ab").unwrap()), Candidates::All);
        assert_eq!(
            i.candidates(&Query::regex("auth").unwrap()),
            Candidates::All
        );
    }

    #[test]
    fn the_postings_bound_leaves_a_file_out() {
        let mut i = Index::new(Limits {
            max_postings: 40,
            ..Limits::default()
        });
        let a = i.file_id("/a", "a");
        let b = i.file_id("/b", "b");
        let mut msgs = Vec::new();
        let line = |t: &str| serde_json::json!({"type":"user","message":{"content":t}}).to_string();
        assert!(i.add_line(
            a,
            0,
            line("abcdefghijklmnopqrstuvwxyz").as_bytes(),
            &mut msgs
        ));
        assert_eq!(i.postings_len(), 24);
        assert!(!i.add_line(
            b,
            0,
            line("zyxwvutsrqponmlkjihgfedcba").as_bytes(),
            &mut msgs
        ));
        assert!(i.postings_len() <= 40);
        assert!(!i.files[b as usize].indexed);
        assert!(!i.add_line(b, 99, line("x").as_bytes(), &mut msgs));
    }

    #[test]
    fn damaged_and_other_format_files_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("search.idx");
        let mut i = idx_of(&[r#"{"type":"user","message":{"content":"hello world"}}"#]);
        i.save(&p).unwrap();
        let back = Index::load(&p, Limits::default()).unwrap();
        assert_eq!(recs(&back, "world"), vec![0]);
        let mut bytes = std::fs::read(&p).unwrap();
        bytes[8..12].copy_from_slice(&(FORMAT + 1).to_le_bytes());
        std::fs::write(&p, &bytes).unwrap();
        assert!(matches!(
            Index::load(&p, Limits::default()),
            Err(IndexError::Format { found }) if found == FORMAT + 1
        ));
        assert_eq!(Index::open_or_new(&p, Limits::default()).records_len(), 0);
        let small = Limits {
            max_file_bytes: 8,
            ..Limits::default()
        };
        assert!(matches!(
            Index::load(&p, small),
            Err(IndexError::Corrupt(_))
        ));
        let mut damaged = MAGIC.to_vec();
        damaged.extend(FORMAT.to_le_bytes());
        damaged.extend(b"\xff\xff");
        std::fs::write(&p, &damaged).unwrap();
        assert!(matches!(
            Index::load(&p, Limits::default()),
            Err(IndexError::Corrupt(_))
        ));
    }
}
