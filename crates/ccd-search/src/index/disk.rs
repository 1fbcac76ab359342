//! The index on disk: [`Index::compact`] (what a save does first),
//! [`Index::save`] (written to a temporary file in the same directory,
//! synced, renamed over the old one) and [`Index::load`] /
//! [`Index::open_or_new`] (the magic, the format version, the `postcard`
//! body checked for references out of range); the format is the parent
//! module's header's "On disk".
//!
//! **Memory.** A save streams the body to the file ([`StoredRef`]: the
//! index's own lists by reference, each posting list delta-encoded as
//! it is written), so it needs no copy of the index nor of its encoding;
//! a load turns each decoded delta list into record ids in place, and
//! drops the file's bytes before the lookups are built.

use super::{
    archives, FileEntry, Index, IndexError, Limits, RecordEntry, Stored, FORMAT, MAGIC, NONE,
};
use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};
use std::collections::HashMap;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

/// [`Stored`] as [`Index::save`] writes it: the same fields in the same
/// order (postcard writes a struct as its fields in order, a slice as a
/// `Vec`), borrowed from the index instead of copied.
#[derive(Serialize)]
struct StoredRef<'a> {
    files: &'a [FileEntry],
    records: &'a [RecordEntry],
    postings: Postings<'a>,
    archive_root: &'a Option<archives::RootMark>,
}

/// The posting lists by ascending trigram, each written as
/// `(trigram, deltas)`.
struct Postings<'a>(Vec<(u32, &'a [u32])>);

/// One list's record ids, written delta-encoded.
struct Deltas<'a>(&'a [u32]);

impl Serialize for Postings<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (t, l) in &self.0 {
            seq.serialize_element(&(t, Deltas(l)))?;
        }
        seq.end()
    }
}

impl Serialize for Deltas<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        let mut prev = 0;
        for &r in self.0 {
            seq.serialize_element(&(r - prev))?;
            prev = r;
        }
        seq.end()
    }
}

impl Index {
    /// Compacts and writes the index to `path` atomically.
    pub fn save(&mut self, path: &Path) -> Result<(), IndexError> {
        self.compact();
        let mut postings: Vec<(u32, &[u32])> = self
            .postings
            .iter()
            .map(|(t, l)| (*t, l.as_slice()))
            .collect();
        postings.sort_unstable_by_key(|p| p.0);
        let stored = StoredRef {
            files: &self.files,
            records: &self.records,
            postings: Postings(postings),
            archive_root: &self.archive_root,
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        let mut w = BufWriter::with_capacity(1 << 16, tmp.as_file_mut());
        w.write_all(MAGIC)?;
        w.write_all(&FORMAT.to_le_bytes())?;
        let mut w = postcard::to_io(&stored, w).map_err(|e| match e {
            postcard::Error::SerializeBufferFull => IndexError::Corrupt(e.to_string()),
            e => IndexError::Io(std::io::Error::other(e)),
        })?;
        w.flush()?;
        drop(w);
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }

    /// Reads an index written by [`Index::save`].
    pub fn load(path: &Path, limits: Limits) -> Result<Index, IndexError> {
        let mut f = std::fs::File::open(path)?;
        let len = f.metadata()?.len();
        if len > limits.max_file_bytes {
            return Err(IndexError::Corrupt(format!(
                "{len} bytes, over the bound of {}",
                limits.max_file_bytes
            )));
        }
        let mut bytes = Vec::with_capacity(len as usize);
        f.read_to_end(&mut bytes)?;
        decode(bytes, limits)
    }

    /// Loads the index at `path`, or a new empty one when there is none,
    /// it is of another format or damaged (said in the log): the caller's
    /// next [`Index::update`] rebuilds it.
    pub fn open_or_new(path: &Path, limits: Limits) -> Index {
        match Index::load(path, limits) {
            Ok(i) => i,
            Err(IndexError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                Index::new(limits)
            }
            Err(e) => {
                tracing::info!(path = %path.display(), error = %e, "search index rebuilt");
                Index::new(limits)
            }
        }
    }
}

impl Index {
    /// Drops tombstoned records and dropped files, renumbering the rest,
    /// in place; every list and table is left with no spare capacity
    /// (what grows later grows by an eighth: [`super::push_lean`]).
    pub fn compact(&mut self) {
        let mut file_map = vec![NONE; self.files.len()];
        let mut n = 0;
        for (i, f) in self.files.iter().enumerate() {
            if f.live {
                file_map[i] = n;
                n += 1;
            }
        }
        self.files.retain(|f| f.live);
        let mut rec_map = vec![NONE; self.records.len()];
        let mut n = 0;
        for (i, r) in self.records.iter().enumerate() {
            if !self.dead[i] && file_map[r.file as usize] != NONE {
                rec_map[i] = n;
                n += 1;
            }
        }
        let mut i = 0;
        self.records.retain(|_| {
            i += 1;
            rec_map[i - 1] != NONE
        });
        let remap = |r: u32| if r == NONE { NONE } else { rec_map[r as usize] };
        for r in &mut self.records {
            r.file = file_map[r.file as usize];
            r.ts_from = remap(r.ts_from);
        }
        for f in &mut self.files {
            f.last_ts = remap(f.last_ts);
        }
        self.files.shrink_to_fit();
        self.records.shrink_to_fit();
        let mut entries = 0;
        self.postings.retain(|_, l| {
            l.retain_mut(|r| {
                *r = rec_map[*r as usize];
                *r != NONE
            });
            l.shrink_to_fit();
            entries += l.len() as u64;
            !l.is_empty()
        });
        self.postings.shrink_to_fit();
        self.entries = entries;
        self.rebuild_derived();
    }

    /// The lookups derived from `files` and `records`, built at their
    /// exact sizes.
    fn rebuild_derived(&mut self) {
        self.dead = vec![false; self.records.len()];
        self.by_path =
            super::paths::PathIds::with_capacity_and_hasher(self.files.len(), Default::default());
        for (i, f) in self.files.iter().enumerate() {
            self.by_path.insert(&f.path, i as u32);
        }
        let mut counts = vec![0usize; self.files.len()];
        for r in &self.records {
            counts[r.file as usize] += 1;
        }
        self.file_records = counts.into_iter().map(Vec::with_capacity).collect();
        for (i, r) in self.records.iter().enumerate() {
            self.file_records[r.file as usize].push(i as u32);
        }
    }
}

/// The index in `bytes` (dropped once decoded, before the lookups are
/// built).
fn decode(bytes: Vec<u8>, limits: Limits) -> Result<Index, IndexError> {
    let corrupt = |m: &str| IndexError::Corrupt(m.to_string());
    let rest = bytes
        .strip_prefix(&MAGIC[..])
        .ok_or_else(|| corrupt("no magic"))?;
    let (v, body) = rest
        .split_at_checked(4)
        .ok_or_else(|| corrupt("no version"))?;
    let found = u32::from_le_bytes([v[0], v[1], v[2], v[3]]);
    if found != FORMAT {
        return Err(IndexError::Format { found });
    }
    let s: Stored = postcard::from_bytes(body).map_err(|e| IndexError::Corrupt(e.to_string()))?;
    drop(bytes);
    let nf = s.files.len() as u32;
    let nr = s.records.len() as u32;
    let bad_ref = |r: u32| r != NONE && r >= nr;
    if s.records.iter().any(|r| r.file >= nf || bad_ref(r.ts_from))
        || s.files.iter().any(|f| bad_ref(f.last_ts))
    {
        return Err(corrupt("a reference out of range"));
    }
    let mut postings = HashMap::with_capacity(s.postings.len());
    let mut entries = 0u64;
    for (t, mut list) in s.postings {
        // The deltas become record ids where they are.
        let mut prev = 0u32;
        for (i, d) in list.iter_mut().enumerate() {
            let r = prev
                .checked_add(*d)
                .filter(|r| *r < nr && (i == 0 || *d > 0));
            let r = r.ok_or_else(|| corrupt("a posting out of range"))?;
            *d = r;
            prev = r;
        }
        list.shrink_to_fit();
        entries += list.len() as u64;
        postings.insert(t, list);
    }
    let mut idx = Index {
        limits,
        files: s.files,
        records: s.records,
        postings,
        entries,
        archive_root: s.archive_root,
        ..Index::default()
    };
    idx.rebuild_derived();
    Ok(idx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Limits;

    fn index_of(files: usize, lines: usize) -> Index {
        let mut i = Index::new(Limits::default());
        let mut msgs = Vec::new();
        for f in 0..files {
            let id = i.file_id(&format!("/p/{f}.jsonl"), &format!("s{f}"));
            let mut off = 0;
            for l in 0..lines {
                let line = serde_json::json!({"type":"user","timestamp":"2026-01-02T03:04:05Z",
                    "message":{"content":format!("word{} common text {f}-{l}", l % 7)}})
                .to_string();
                i.add_line(id, off, line.as_bytes(), &mut msgs);
                off += line.len() as u64 + 1;
            }
        }
        i
    }

    /// The streamed save writes exactly what [`Stored`] encodes (the
    /// format load reads), tombstones dropped.
    #[test]
    fn the_streamed_save_is_the_stored_encoding() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("search.idx");
        let mut i = index_of(5, 40);
        i.drop_file(2);
        i.save(&p).unwrap();
        let mut postings: Vec<(u32, Vec<u32>)> = i
            .postings
            .iter()
            .map(|(t, l)| {
                let mut prev = 0;
                (
                    *t,
                    l.iter()
                        .map(|&r| r - std::mem::replace(&mut prev, r))
                        .collect(),
                )
            })
            .collect();
        postings.sort_unstable_by_key(|p| p.0);
        let want = Stored {
            files: i.files.clone(),
            records: i.records.clone(),
            postings,
            archive_root: i.archive_root.clone(),
        };
        let mut bytes = MAGIC.to_vec();
        bytes.extend(FORMAT.to_le_bytes());
        bytes.extend(postcard::to_stdvec(&want).unwrap());
        let got = std::fs::read(&p).unwrap();
        assert!(got == bytes, "the saved file is not Stored's encoding");
        let back = Index::load(&p, Limits::default()).unwrap();
        assert_eq!(back.files.len(), 4);
        assert_eq!(back.records.len(), 160);
        assert_eq!(back.postings, i.postings);
    }

    /// What lives as long as the index keeps little spare capacity: an
    /// eighth (and 4 items) while it grows, none once compacted or
    /// loaded.
    #[test]
    fn the_index_keeps_little_spare_capacity() {
        let lean = |cap: usize, len: usize| cap <= len + len / 8 + 4;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("search.idx");
        let mut i = index_of(3, 3000);
        assert!(lean(i.records.capacity(), i.records.len()));
        for l in i.postings.values() {
            assert!(
                lean(l.capacity(), l.len()),
                "{} of {}",
                l.capacity(),
                l.len()
            );
        }
        for l in &i.file_records {
            assert!(lean(l.capacity(), l.len()));
        }
        i.save(&p).unwrap();
        let back = Index::load(&p, Limits::default()).unwrap();
        for ix in [&i, &back] {
            assert_eq!(ix.records.capacity(), ix.records.len());
            assert_eq!(ix.files.capacity(), ix.files.len());
            for l in ix.postings.values().chain(&ix.file_records) {
                assert_eq!(l.capacity(), l.len());
            }
        }
    }
}
