//! Why a running process's registry entry names another conversation.
//!
//! A process is not a conversation: `/clear` makes the running `claude`
//! rewrite its entry with a new session id at once (the next turn goes to a
//! new transcript), and a conversation picked inside the TUI (`/resume`)
//! makes it name that conversation's id (later turns append to its
//! existing transcript). Whoever sees an entry's id change — the holder of
//! the process, the daemon's registry watcher — tells the two apart the
//! same way, here: the id it moved to had a transcript that began before
//! the move (`resume`), or it had none, or one that began with the move
//! (`clear`: a new conversation — the real CLI writes the new id's file at
//! `/clear` itself, with the command's records). What cannot be looked at
//! is `unknown`.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Why the id a process writes changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwitchReason {
    /// A new, empty conversation (`/clear`, or anything else that starts
    /// over): the new id had no transcript yet.
    Clear,
    /// An existing conversation taken up inside the TUI: the new id's
    /// transcript was there before the switch.
    Resume,
    /// Not established (a reason added by a later ccd reads as this too).
    #[serde(other)]
    Unknown,
}

impl SwitchReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SwitchReason::Clear => "clear",
            SwitchReason::Resume => "resume",
            SwitchReason::Unknown => "unknown",
        }
    }
}

/// The reason a process that wrote some id until at least `seen_before`
/// (unix ms: when the old id was last seen in its entry) now writes `to`,
/// judged from `to`'s transcript under `projects` (looked for in `cwd`'s
/// folder first): none, or one whose first record is not older than
/// [`SAME_MOMENT`] before `seen_before`, is a new conversation (`/clear`
/// writes its file and the entry within moments, in either order); one
/// that began earlier was resumed.
pub fn reason(projects: &Path, to: &str, cwd: Option<&str>, seen_before: i64) -> SwitchReason {
    let found = match cwd {
        Some(cwd) => crate::transcript::locate::find_by_session_id_in_cwd(projects, to, cwd),
        None => crate::transcript::locate::find_by_session_id(projects, to),
    };
    let Some(path) = found else {
        return SwitchReason::Clear;
    };
    match crate::transcript::read_summary(&path) {
        Ok(s) => match s.created {
            Some(created) if unix_ms(created) < seen_before - SAME_MOMENT => SwitchReason::Resume,
            // Begun around the switch: the new file `/clear` writes starts
            // with the command itself; a conversation begun just before
            // and resumed at once does not.
            Some(_) if begins_with_clear(&path) => SwitchReason::Clear,
            Some(created) if unix_ms(created) < seen_before => SwitchReason::Resume,
            Some(_) => SwitchReason::Clear,
            // A file with no dated record yet: something wrote it before
            // the switch was seen; a `/clear` writes nothing until a turn.
            None => SwitchReason::Resume,
        },
        Err(error) => {
            tracing::debug!(path = %path.display(), %error, "transcript of a switched-to id unreadable");
            SwitchReason::Unknown
        }
    }
}

/// Whether the first records of the transcript at `path` hold the `/clear`
/// command (how both pinned CLI versions begin the file of a cleared
/// conversation: `<command-name>/clear</command-name>` in a `user` record).
fn begins_with_clear(path: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::with_capacity(HEAD);
    let read = std::fs::File::open(path).and_then(|f| f.take(HEAD as u64).read_to_end(&mut head));
    read.is_ok() && memchr::memmem::find(&head, b"<command-name>/clear</command-name>").is_some()
}

/// Bytes of a transcript's head looked at for the `/clear` command.
const HEAD: usize = 8 << 10;

/// How far apart (ms) a `/clear`'s new file and the last sight of the old
/// id can be and still be one moment.
pub const SAME_MOMENT: i64 = 2_000;

fn unix_ms(t: time::OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(projects: &Path, sid: &str, first_ts: &str) {
        let dir = projects.join("-w");
        std::fs::create_dir_all(&dir).expect("dir");
        let line = format!(
            "{{\"type\":\"user\",\"sessionId\":\"{sid}\",\"cwd\":\"/w\",\"uuid\":\"u1\",\"parentUuid\":null,\"timestamp\":\"{first_ts}\",\"message\":{{\"role\":\"user\",\"content\":\"hi\"}}}}\n"
        );
        std::fs::write(dir.join(format!("{sid}.jsonl")), line).expect("write");
    }

    #[test]
    fn no_transcript_is_a_clear_an_older_one_a_resume() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let p = tmp.path();
        // 2026-11-01T00:00:00Z
        let switch_seen = 1_793_491_200_000;
        assert_eq!(
            reason(p, "new", Some("/w"), switch_seen),
            SwitchReason::Clear
        );
        write(p, "old", "2026-10-01T00:00:00.000Z");
        assert_eq!(
            reason(p, "old", Some("/w"), switch_seen),
            SwitchReason::Resume
        );
        assert_eq!(reason(p, "old", None, switch_seen), SwitchReason::Resume);
        // Written after the switch was seen: the cleared conversation's
        // first turn, not a resume.
        write(p, "later", "2026-11-02T00:00:00.000Z");
        assert_eq!(
            reason(p, "later", Some("/w"), switch_seen),
            SwitchReason::Clear
        );
        // Begun within moments of the switch: the `/clear` command at its
        // head decides; without it, begun before the switch is a resume.
        let dir = p.join("-w");
        std::fs::write(
            dir.join("cleared.jsonl"),
            "{\"type\":\"user\",\"timestamp\":\"2026-10-31T23:59:59.500Z\",\"message\":{\"role\":\"user\",\"content\":\"<command-name>/clear</command-name>\"}}\n",
        )
        .expect("write");
        assert_eq!(
            reason(p, "cleared", Some("/w"), switch_seen),
            SwitchReason::Clear
        );
        write(p, "just-before", "2026-10-31T23:59:59.500Z");
        assert_eq!(
            reason(p, "just-before", Some("/w"), switch_seen),
            SwitchReason::Resume
        );
        // Names that are not plain file names are never looked up.
        assert_eq!(
            reason(p, "../x", Some("/w"), switch_seen),
            SwitchReason::Clear
        );
    }

    #[test]
    fn reasons_read_back_and_unknown_ones_are_unknown() {
        let r: SwitchReason = serde_json::from_str("\"resume\"").expect("resume");
        assert_eq!(r, SwitchReason::Resume);
        let r: SwitchReason = serde_json::from_str("\"branch\"").expect("other");
        assert_eq!(r, SwitchReason::Unknown);
        assert_eq!(
            serde_json::to_string(&SwitchReason::Clear).expect("ser"),
            "\"clear\""
        );
    }
}
