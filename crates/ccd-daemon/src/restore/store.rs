//! The restore record on disk: `<state dir>/held.json`, replaced whole
//! and atomically on every write (a temporary file beside it, fsynced,
//! renamed over it, then the directory fsynced), so that a crash at any
//! instant leaves the old record or the new one, never a mix. A record
//! that does not parse (or is over [`MAX_BYTES`]) is moved aside to
//! `held.json.bad` (replacing an earlier one) and reported, never fatal.

use ccd_protocol::methods::session::HeldRecord;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The record's file name in the state dir.
pub const FILE: &str = "held.json";

/// Where a record that did not parse is moved.
pub const BAD_FILE: &str = "held.json.bad";

/// The most bytes a record may have: 1024 entries (two lists of
/// `record::MAX_ENTRIES`) of at most the argument bound and a path each
/// fit in it many times over; a larger file is not read (moved aside).
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// Why the record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("the restore record {path} is {bytes} bytes, over the bound of {MAX_BYTES}")]
    TooLarge { path: PathBuf, bytes: u64 },
    #[error("the restore record {path} does not parse: {source}")]
    Garbage {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("reading the restore record {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What reading found.
#[derive(Debug)]
pub enum Read {
    /// No record (a first start).
    Absent,
    Record(HeldRecord),
    /// Unreadable: moved aside to `moved_to` (when the move worked).
    Bad {
        error: RecordError,
        moved_to: Option<PathBuf>,
    },
}

/// Reads the record in `dir`, moving a bad one aside.
pub fn read(dir: &Path) -> Read {
    let path = dir.join(FILE);
    let bad = |error: RecordError| {
        let to = dir.join(BAD_FILE);
        let moved_to = std::fs::rename(dir.join(FILE), &to).ok().map(|_| to);
        Read::Bad { error, moved_to }
    };
    let bytes = match std::fs::metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Read::Absent,
        Err(source) => {
            return Read::Bad {
                error: RecordError::Io { path, source },
                moved_to: None,
            }
        }
        Ok(m) => m.len(),
    };
    if bytes > MAX_BYTES {
        return bad(RecordError::TooLarge { path, bytes });
    }
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(source) => {
            return Read::Bad {
                error: RecordError::Io { path, source },
                moved_to: None,
            }
        }
    };
    match serde_json::from_slice::<HeldRecord>(&text) {
        Ok(r) => Read::Record(r),
        Err(source) => bad(RecordError::Garbage { path, source }),
    }
}

/// Writes `record` to `dir` atomically (see the module doc).
pub fn write(dir: &Path, record: &HeldRecord) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let bytes = serde_json::to_vec(record).map_err(std::io::Error::other)?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(std::io::Error::other(format!(
            "the restore record would be {} bytes, over the bound of {MAX_BYTES}",
            bytes.len()
        )));
    }
    let tmp = dir.join(format!("{FILE}.tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join(FILE))?;
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccd_protocol::methods::session::RECORD_VERSION;

    #[test]
    fn a_record_round_trips_and_a_missing_one_is_absent() {
        let d = tempfile::tempdir().expect("dir");
        assert!(matches!(read(d.path()), Read::Absent));
        let r = HeldRecord {
            version: RECORD_VERSION,
            boot_id: Some("b".into()),
            ..Default::default()
        };
        write(d.path(), &r).expect("write");
        match read(d.path()) {
            Read::Record(back) => assert_eq!(back, r),
            other => panic!("{other:?}"),
        }
        assert!(!d.path().join(format!("{FILE}.tmp")).exists());
    }

    #[test]
    fn garbage_or_a_truncated_record_is_moved_aside_not_fatal() {
        let d = tempfile::tempdir().expect("dir");
        let r = HeldRecord {
            version: RECORD_VERSION,
            boot_id: Some("b".into()),
            ..Default::default()
        };
        write(d.path(), &r).expect("write");
        let full = std::fs::read(d.path().join(FILE)).expect("read");
        std::fs::write(d.path().join(FILE), &full[..full.len() / 2]).expect("truncate");
        match read(d.path()) {
            Read::Bad { error, moved_to } => {
                assert!(matches!(error, RecordError::Garbage { .. }), "{error}");
                assert_eq!(moved_to, Some(d.path().join(BAD_FILE)));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(read(d.path()), Read::Absent), "moved aside");
    }

    #[test]
    fn a_record_over_the_bound_is_not_read() {
        let d = tempfile::tempdir().expect("dir");
        let f = std::fs::File::create(d.path().join(FILE)).expect("create");
        f.set_len(MAX_BYTES + 1).expect("grow");
        match read(d.path()) {
            Read::Bad { error, .. } => assert!(matches!(error, RecordError::TooLarge { .. })),
            other => panic!("{other:?}"),
        }
    }
}
