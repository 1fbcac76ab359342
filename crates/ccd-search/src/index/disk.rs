//! The index on disk: [`Index::save`] (compacted, written to a temporary
//! file in the same directory, synced, renamed over the old one) and
//! [`Index::load`] / [`Index::open_or_new`] (the magic, the format
//! version, the `postcard` body checked for references out of range);
//! the format is the parent module's header's "On disk".

use super::{Index, IndexError, Limits, Stored, FORMAT, MAGIC, NONE};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;

impl Index {
    /// Compacts and writes the index to `path` atomically.
    pub fn save(&mut self, path: &Path) -> Result<(), IndexError> {
        self.compact();
        let mut postings: Vec<(u32, Vec<u32>)> = self
            .postings
            .iter()
            .map(|(t, l)| {
                let mut prev = 0;
                let d = l
                    .iter()
                    .map(|&r| {
                        let d = r - prev;
                        prev = r;
                        d
                    })
                    .collect();
                (*t, d)
            })
            .collect();
        postings.sort_unstable_by_key(|p| p.0);
        let stored = Stored {
            files: self.files.clone(),
            records: self.records.clone(),
            postings,
            archive_root: self.archive_root.clone(),
        };
        let body = postcard::to_stdvec(&stored).map_err(|e| IndexError::Corrupt(e.to_string()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(MAGIC)?;
        tmp.write_all(&FORMAT.to_le_bytes())?;
        tmp.write_all(&body)?;
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
        decode(&bytes, limits)
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

fn decode(bytes: &[u8], limits: Limits) -> Result<Index, IndexError> {
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
    for (t, deltas) in s.postings {
        let mut prev = 0u32;
        let mut list = Vec::with_capacity(deltas.len());
        for (i, d) in deltas.into_iter().enumerate() {
            let r = prev.checked_add(d).filter(|r| *r < nr && (i == 0 || d > 0));
            let r = r.ok_or_else(|| corrupt("a posting out of range"))?;
            list.push(r);
            prev = r;
        }
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
