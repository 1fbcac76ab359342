//! `registry_parser`: one `sessions/<pid>.json` registry entry.

use std::path::Path;

use ccd_claude::registry::{parse_entry, pid_from_file_name, EntryError};

/// Bytes in: the whole file.
///
/// Property: [`parse_entry`] never panics; an entry it accepts has the
/// required fields (a non-empty `sessionId`), keeps the path it was given,
/// and serializes again (its known fields, and the unknown ones it keeps).
pub fn registry_parser(data: &[u8]) {
    let path = Path::new("/nonexistent/sessions/4242.json");
    match parse_entry(data, path) {
        Ok(entry) => {
            assert!(!entry.session_id.is_empty(), "accepted an empty sessionId");
            assert_eq!(entry.path, path);
            let json = serde_json::to_vec(&entry).expect("an accepted entry serializes");
            let back: serde_json::Value =
                serde_json::from_slice(&json).expect("serialized entry is JSON");
            assert_eq!(back["pid"].as_u64(), Some(u64::from(entry.pid)));
            assert_eq!(back["session_id"].as_str(), Some(entry.session_id.as_str()));
            serde_json::to_vec(&entry.extra).expect("unknown fields serialize");
            let _ = format!("{entry:?}");
            // The file name check `read_entry` applies.
            let name = format!("{}.json", entry.pid);
            assert_eq!(pid_from_file_name(&name), Some(entry.pid));
        }
        Err(e) => {
            // Parsing bytes never does I/O.
            assert!(
                !matches!(
                    e,
                    EntryError::Io(_)
                        | EntryError::Vanished
                        | EntryError::NotRegular
                        | EntryError::TooLarge(_)
                        | EntryError::NotAnEntryName
                        | EntryError::PidMismatch { .. }
                ),
                "parse_entry returned {e:?}"
            );
            let _ = e.to_string();
        }
    }
    // The name rule, on the first bytes as a name.
    if let Ok(name) = std::str::from_utf8(&data[..data.len().min(32)]) {
        if let Some(pid) = pid_from_file_name(name) {
            assert!(format!("{pid}.json").len() <= name.len());
        }
    }
}
