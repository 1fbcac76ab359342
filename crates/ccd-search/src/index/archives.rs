//! Archived conversations in the index (issue 55 with issue 56's
//! archives): `ccd archive` moves a dead conversation into
//! `<state>/archive/<sid>/` (a manifest and one zstd frame per file), and
//! search still finds it, without decompressing every archive on every
//! search.
//!
//! **What is indexed.** Each archive's transcript (the manifest's first
//! file), decompressed once when the archive is new or changed, its
//! records entered like any transcript's ([`Index::add_line`]): the same
//! trigrams, offsets (into the transcript's original bytes), timestamps
//! inherited and score bounds. Its file entry is keyed by the archive's
//! folder, with the compressed copy's path, the original path (a hit's
//! path) and the manifest's folder (a hit's folder, and what `cwd` is
//! judged on) in [`Archived`]. An archive that cannot be decompressed, or
//! that the postings bound leaves out, is kept unindexed and read whole at
//! each search, as before the index covered archives.
//!
//! **Kept current** ([`Index::update_archives`], every search of the
//! daemon and of `ccd search`). An archive is written once in a
//! temporary folder and renamed into the archive folder, and removed whole
//! (`--restore`, a put-back): every change adds or removes an entry of the
//! archive folder, so its stamp (inode, mtime) says whether anything came
//! or went — one `stat` when nothing did. When it changed, the folder is
//! listed again: an archive folder whose (inode, mtime) is not the one
//! indexed is indexed again whole, one no longer there is dropped. A
//! listing made within [`RACY_NS`] of the folder's mtime is not trusted
//! (a change in the same clock tick leaves the mtime as it was): the next
//! update lists again.
//!
//! **Searching** ([`Index::search_archives`]): the query's candidates in
//! the archives the request keeps (its `cwd` judged on the manifest's
//! folder), verified best score bound first with the transcripts' early
//! stop ([`super::topk`]); verifying one decompresses its archive up to
//! the last candidate record only. The hits equal those of reading every
//! archive whole (`crate::archived::search`). A query with no trigram to
//! look up (short terms, a regex) is answered by reading them all.

use super::{Candidates, Index, IndexSearchStats, UpdateStats, NONE};
use crate::extract;
use crate::incremental::{Lines, ReadMark, CHUNK_BYTES, MAX_RECORD_BYTES};
use crate::query::Query;
use crate::scan::{self, Filters, Hit, Matcher, ScanStats, Source};
use ccd_claude::archive;
use ccd_claude::paths::{is_within, normalize};
use ccd_claude::transcript::summary_cache::FileStamp;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use time::OffsetDateTime;

/// A listing of the archive folder made less than this after the
/// folder's mtime is listed again at the next update (1 s: far above a
/// file system's timestamp tick).
pub const RACY_NS: i128 = 1_000_000_000;

/// What the index keeps of one archived transcript besides its records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Archived {
    /// Its compressed copy (`<root>/<sid>/<store>`).
    pub(super) stored: String,
    /// Where the transcript was (and goes back to): a hit's path.
    pub(super) origin: String,
    /// The manifest's folder.
    pub(super) cwd: Option<String>,
    /// The archive folder's mtime (with the entry's inode: its identity).
    pub(super) mtime_ns: i128,
}

/// The archive folder as last listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct RootMark {
    path: String,
    /// Its inode and mtime then (`None`: there was none).
    stamp: Option<(u64, i128)>,
    /// When the listing started (ns since the epoch).
    listed_ns: i128,
}

impl RootMark {
    /// Whether the listing still holds for `path` with `stamp` now.
    fn holds(&self, path: &str, stamp: Option<(u64, i128)>) -> bool {
        self.path == path
            && self.stamp == stamp
            && self
                .stamp
                .is_none_or(|(_, mtime)| mtime + RACY_NS <= self.listed_ns)
    }
}

fn stamp_of(dir: &Path) -> Option<(u64, i128)> {
    let meta = std::fs::metadata(dir).ok().filter(|m| m.is_dir())?;
    let s = FileStamp::of(&meta);
    Some((s.ino, s.mtime_ns))
}

fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// The archives' part of a search ([`Index::search_archives`]).
#[derive(Debug, Default)]
pub struct ArchivesAnswer {
    /// At most `limit` hits, best first, each with its manifest's folder.
    pub hits: Vec<(Hit, Option<String>)>,
    pub stats: ScanStats,
    pub used: IndexSearchStats,
    /// The archives the request kept (what was searched).
    pub searched: usize,
}

impl Index {
    /// Brings the archived conversations under `root` (`<state>/archive`)
    /// up to date (see the module header): one `stat` of the folder when
    /// nothing came or went, else the folder listed, new or changed
    /// archives indexed whole, gone ones dropped.
    pub fn update_archives(&mut self, root: &Path) -> UpdateStats {
        self.archives_updated = true;
        let mut stats = UpdateStats::default();
        let Some(root_s) = root.to_str() else {
            return stats; // never listed: every search reads them all
        };
        let stamp = stamp_of(root);
        if self
            .archive_root
            .as_ref()
            .is_some_and(|m| m.holds(root_s, stamp))
        {
            return stats;
        }
        let listed_ns = now_ns();
        stats.listings += 1;
        let mut seen = vec![false; self.files.len()];
        let mut buf = Vec::new();
        let entries = std::fs::read_dir(root).into_iter().flatten().flatten();
        for e in entries {
            let name = e.file_name();
            let Some(name) = name.to_str().filter(|n| !n.starts_with('.')) else {
                continue;
            };
            let dir = e.path();
            let Some(key) = dir.to_str() else { continue };
            let Some((ino, mtime_ns)) = stamp_of(&dir) else {
                continue;
            };
            if let Some(id) = self.file_of(key) {
                let f = &self.files[id as usize];
                let same =
                    f.ino == ino && f.archive.as_ref().is_some_and(|a| a.mtime_ns == mtime_ns);
                if same {
                    seen[id as usize] = true;
                    continue;
                }
            }
            let m = match archive::manifest(root, name) {
                Ok(Some(m)) => m,
                Ok(None) => continue,
                Err(err) => {
                    tracing::warn!(archive = %dir.display(), error = %err, "archive: skipped");
                    continue;
                }
            };
            let Some(entry) = m.files.first() else {
                continue;
            };
            let (Some(stored), Some(origin)) = (
                archive::stored_path(root, &m, entry).and_then(|p| p.to_str().map(String::from)),
                entry.path.to_str().map(String::from),
            ) else {
                continue; // not UTF-8: never indexed, read at each search
            };
            let known = self.file_of(key).is_some();
            let id = self.file_id(key, &m.session_id);
            if seen.len() <= id as usize {
                seen.resize(id as usize + 1, false);
            }
            seen[id as usize] = true;
            if known {
                self.reset_file(id);
                stats.restarted += 1;
            }
            let a = Archived {
                stored,
                origin,
                cwd: m.cwd.clone(),
                mtime_ns,
            };
            let read = self.add_archived(id, &a, entry.len, &mut buf);
            match read {
                Ok(Some(r)) => {
                    stats.files_read += 1;
                    stats.bytes += r;
                }
                Ok(None) => stats.left_out += 1,
                Err(err) => {
                    // Read whole at each search (and counted unreadable there).
                    tracing::warn!(archive = %dir.display(), error = %err, "archive: not indexed");
                    self.reset_file(id);
                    self.files[id as usize].indexed = false;
                    stats.left_out += 1;
                }
            }
            let f = &mut self.files[id as usize];
            f.ino = ino;
            f.len = entry.len;
            f.archive = Some(a);
        }
        for id in 0..self.files.len() {
            let f = &self.files[id];
            if f.live && f.archive.is_some() && !seen.get(id).copied().unwrap_or(false) {
                self.drop_file(id as u32);
                stats.dropped += 1;
            }
        }
        self.archive_root = Some(RootMark {
            path: root_s.to_string(),
            stamp,
            listed_ns,
        });
        stats
    }

    /// Enters archive `a`'s transcript (`len` bytes decompressed) as file
    /// `id`'s records: the bytes read, or `None` when the postings bound
    /// left it out.
    fn add_archived(
        &mut self,
        id: u32,
        a: &Archived,
        len: u64,
        buf: &mut Vec<u8>,
    ) -> std::io::Result<Option<u64>> {
        let mut r = archive::open_stored(Path::new(&a.stored), len)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        let mut lines = Lines::new(0, MAX_RECORD_BYTES);
        let mut msgs = Vec::new();
        let mut full = false;
        let mut bytes = 0u64;
        buf.resize(CHUNK_BYTES, 0);
        loop {
            let n = match r.read(buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            bytes += n as u64;
            lines.push(&buf[..n], |off, line| {
                if !full && !self.add_line(id, off, line, &mut msgs) {
                    full = true;
                }
            });
        }
        if full {
            return Ok(None);
        }
        self.set_mark(
            id,
            ReadMark {
                ino: 0,
                len,
                offset: lines.complete_upto(),
            },
        );
        Ok(Some(bytes))
    }

    /// The archived conversations' hits for `query` (at most `limit`, best
    /// first), those whose manifest's folder is `cwd` or inside it when
    /// given; `None` when the index cannot answer for the archives under
    /// `root` (never listed from there, the folder changed since its last
    /// listing and not updated in this process, or a query with no
    /// trigram): the caller reads every archive.
    pub fn search_archives(
        &self,
        root: &Path,
        query: &Query,
        filters: &Filters,
        cwd: Option<&Path>,
        now: OffsetDateTime,
        limit: usize,
    ) -> Option<ArchivesAnswer> {
        let mark = self.archive_root.as_ref()?;
        let root_s = root.to_str()?;
        if mark.path != root_s || (!self.archives_updated && !mark.holds(root_s, stamp_of(root))) {
            return None;
        }
        let Candidates::Records(cands) = self.candidates(query) else {
            return None;
        };
        let kept = |f: &super::FileEntry| {
            f.live
                && f.archive.as_ref().is_some_and(|a| {
                    cwd.is_none_or(|dir| {
                        a.cwd
                            .as_deref()
                            .is_some_and(|c| is_within(&normalize(Path::new(c)), dir))
                    })
                })
        };
        let in_scope: Vec<bool> = self.files.iter().map(kept).collect();
        let mut per_file: HashMap<u32, Vec<u32>> = HashMap::new();
        for r in cands {
            let file = self.records[r as usize].file;
            if in_scope[file as usize] && self.files[file as usize].indexed {
                per_file.entry(file).or_default().push(r);
            }
        }
        let (mut hits, mut stats, mut used) =
            self.search_candidates(&per_file, query, filters, now, limit);
        let mut searched = 0;
        for (id, f) in self.files.iter().enumerate() {
            if !in_scope[id] {
                continue;
            }
            searched += 1;
            let Some(a) = f.archive.as_ref().filter(|_| !f.indexed) else {
                continue;
            };
            if filters.expired() {
                stats.timed_out += 1;
                continue;
            }
            used.scanned += 1;
            let src = Source {
                session_id: f.session_id.clone(),
                path: a.origin.clone().into(),
            };
            hits.extend(scan_archived(
                &src, a, f.len, query, filters, now, &mut stats,
            ));
        }
        scan::rank(&mut hits);
        hits.truncate(limit);
        let folder: HashMap<&str, &Option<String>> = self
            .files
            .iter()
            .enumerate()
            .filter(|(id, _)| in_scope[*id])
            .filter_map(|(_, f)| Some((f.session_id.as_str(), &f.archive.as_ref()?.cwd)))
            .collect();
        let hits = hits
            .into_iter()
            .map(|h| {
                let cwd = folder.get(h.session_id.as_str()).and_then(|c| (*c).clone());
                (h, cwd)
            })
            .collect();
        Some(ArchivesAnswer {
            hits,
            stats,
            used,
            searched,
        })
    }

    /// [`Index::verify`] of an archived transcript: the candidate records
    /// `recs` (ascending) and those they take their time from, read in
    /// one pass of the decompressed bytes, up to the last of them; `Err`
    /// when the archive cannot be read as indexed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn verify_archived(
        &self,
        src: &Source,
        a: &Archived,
        len: u64,
        recs: &[u32],
        query: &Query,
        filters: &Filters,
        now: OffsetDateTime,
        stats: &mut ScanStats,
    ) -> Result<Option<Hit>, ()> {
        if recs.is_empty() {
            return Ok(None);
        }
        let mut r = archive::open_stored(Path::new(&a.stored), len).map_err(|e| {
            tracing::debug!(archive = %a.stored, error = %e, "archive changed under the search");
        })?;
        stats.files += 1;
        let mut times_from: Vec<u32> = recs
            .iter()
            .map(|&r| self.records[r as usize].ts_from)
            .filter(|&t| t != NONE)
            .collect();
        times_from.sort_unstable();
        times_from.dedup();
        let mut wanted: Vec<u32> = recs.iter().chain(&times_from).copied().collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut times: HashMap<u32, Option<String>> = HashMap::new();
        let mut pos = 0u64;
        let mut line = Vec::new();
        let mut msgs = Vec::new();
        let mut matcher = Matcher::default();
        for id in wanted {
            let rec = self.records[id as usize];
            let skip = rec.offset.checked_sub(pos).ok_or(())?;
            let skipped = std::io::copy(&mut (&mut r).take(skip), &mut std::io::sink());
            if skipped.ok() != Some(skip) {
                return Err(());
            }
            line.resize(rec.len as usize, 0);
            r.read_exact(&mut line).map_err(|_| ())?;
            pos = rec.offset + u64::from(rec.len);
            if times_from.binary_search(&id).is_ok() {
                let ts =
                    ccd_claude::transcript::record::Record::parse(&line).and_then(|p| p.timestamp);
                times.insert(id, ts);
            }
            if recs.binary_search(&id).is_err() {
                continue;
            }
            msgs.clear();
            extract::messages(&line, rec.offset, &mut msgs);
            for mut m in msgs.drain(..) {
                if m.timestamp.is_none() {
                    m.timestamp = times.get(&rec.ts_from).cloned().flatten();
                }
                matcher.message(m, query, filters);
            }
        }
        stats.bytes += pos;
        Ok(matcher.finish(src, now))
    }
}

/// Archive `a`'s transcript (`len` bytes) read whole and searched, as
/// `crate::archived::search` reads it (unreadable: counted, `None`).
pub(super) fn scan_archived(
    src: &Source,
    a: &Archived,
    len: u64,
    query: &Query,
    filters: &Filters,
    now: OffsetDateTime,
    stats: &mut ScanStats,
) -> Option<Hit> {
    match archive::open_stored(Path::new(&a.stored), len) {
        Ok(mut r) => scan::search_reader(src, &mut r, query, filters, now, stats),
        Err(e) => {
            stats.unreadable += 1;
            tracing::warn!(session = %src.session_id, error = %e, "archived transcript not searched");
            None
        }
    }
}
