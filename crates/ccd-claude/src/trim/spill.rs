//! The trim's spill files: fixed-size records written in order during
//! pass 1 and read back in order (or one at a time, by number), so the
//! per-line and per-record index lives on disk, not in memory.
//!
//! A spill file is anonymous (`tempfile::tempfile_in`: no name left
//! behind, removed when closed) in the folder the caller names (the state
//! dir for a trim).

use super::TrimError;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Buffer of a spill writer or reader.
const SPILL_BUF: usize = 64 * 1024;

/// A spill file of `N`-byte records.
pub(crate) struct Spill<const N: usize> {
    w: Option<BufWriter<File>>,
    f: Option<File>,
    /// Records written.
    pub len: u64,
}

impl<const N: usize> Spill<N> {
    pub fn new(dir: &Path) -> Result<Self, TrimError> {
        std::fs::create_dir_all(dir)
            .map_err(TrimError::io(format!("creating {}", dir.display())))?;
        let f = tempfile::tempfile_in(dir).map_err(TrimError::io(format!(
            "creating a spill file in {}",
            dir.display()
        )))?;
        Ok(Self {
            w: Some(BufWriter::with_capacity(SPILL_BUF, f)),
            f: None,
            len: 0,
        })
    }

    pub fn push(&mut self, rec: &[u8; N]) -> Result<(), TrimError> {
        let w = self.w.as_mut().ok_or_else(not_writing)?;
        w.write_all(rec)
            .map_err(TrimError::io("writing the trim's spill file"))?;
        self.len += 1;
        Ok(())
    }

    /// Ends the writing: from here on the file is read.
    pub fn finish(&mut self) -> Result<(), TrimError> {
        if let Some(w) = self.w.take() {
            let f = w
                .into_inner()
                .map_err(|e| TrimError::io("writing the trim's spill file")(e.into_error()))?;
            self.f = Some(f);
        }
        Ok(())
    }

    /// Record `i` (after [`Spill::finish`]).
    pub fn get(&self, i: u64) -> Result<[u8; N], TrimError> {
        let f = self.f.as_ref().ok_or_else(not_writing)?;
        let mut rec = [0u8; N];
        f.read_exact_at(&mut rec, i * N as u64)
            .map_err(TrimError::io("reading the trim's spill file"))?;
        Ok(rec)
    }

    /// The records in order (after [`Spill::finish`]).
    pub fn reader(&self) -> Result<SpillReader<'_, N>, TrimError> {
        let f = self.f.as_ref().ok_or_else(not_writing)?;
        Ok(SpillReader {
            r: std::io::BufReader::with_capacity(SPILL_BUF, At { f, pos: 0 }),
            left: self.len,
        })
    }
}

fn not_writing() -> TrimError {
    TrimError::io("the trim's spill file")(std::io::Error::other("used out of order"))
}

/// Reads a file from its own position (`pread`), so readers do not share
/// a cursor.
struct At<'a> {
    f: &'a File,
    pos: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.f.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// The records of a [`Spill`], in order.
pub(crate) struct SpillReader<'a, const N: usize> {
    r: std::io::BufReader<At<'a>>,
    left: u64,
}

impl<const N: usize> SpillReader<'_, N> {
    pub fn next_rec(&mut self) -> Result<Option<[u8; N]>, TrimError> {
        if self.left == 0 {
            return Ok(None);
        }
        let mut rec = [0u8; N];
        self.r
            .read_exact(&mut rec)
            .map_err(TrimError::io("reading the trim's spill file"))?;
        self.left -= 1;
        Ok(Some(rec))
    }
}
