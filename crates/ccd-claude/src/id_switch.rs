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

use std::path::Path;

/// Why the id a process writes changed (a holder-protocol type: holders
/// report it in `holder.info`).
pub use ccd_protocol::holder::SwitchReason;

/// The reason a process that wrote some id until at least `seen_before`
/// (unix ms: when the old id was last seen in its entry) writes `to` as of
/// `now`, judged from `to`'s transcript under `projects` (looked for in
/// `cwd`'s folder first):
///
/// - no file, one with no dated record yet, or one begun after
///   `seen_before`: a new conversation;
/// - one begun within [`FRESH`] of `now` that holds no reply yet or begins
///   with the `/clear` command: the conversation `/clear` just made (the
///   CLI writes its file, record by record, before it rewrites the entry —
///   by over a second on a loaded machine — while the old id is still
///   seen);
/// - anything older: a conversation taken up again (`resume`).
pub fn reason(
    projects: &Path,
    to: &str,
    cwd: Option<&str>,
    seen_before: i64,
    now: i64,
) -> SwitchReason {
    let found = match cwd {
        Some(cwd) => crate::transcript::locate::find_by_session_id_in_cwd(projects, to, cwd),
        None => crate::transcript::locate::find_by_session_id(projects, to),
    };
    let Some(path) = found else {
        return SwitchReason::Clear;
    };
    match crate::transcript::read_summary(&path) {
        Ok(s) => match s.created.map(unix_ms) {
            // No dated record yet: a file being written right now (its
            // first records, `mode` and the like, carry no time); any
            // conversation worked on before has dated records.
            None => SwitchReason::Clear,
            Some(created) if created >= seen_before => SwitchReason::Clear,
            // The CLI writes the new file's records one by one: the command
            // may not be there yet, but no reply is either.
            Some(created)
                if now - created <= FRESH && (s.model.is_none() || begins_with_clear(&path)) =>
            {
                SwitchReason::Clear
            }
            // Begun before the old id was last seen: taken up again.
            Some(_) => SwitchReason::Resume,
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

/// How recent (ms) a file that begins with `/clear` must be, when the
/// switch is seen, to be the conversation that `/clear` just made.
pub const FRESH: i64 = 30_000;

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

    /// A conversation with a prompt and a reply.
    fn write_replied(projects: &Path, sid: &str, first_ts: &str) {
        write(projects, sid, first_ts);
        let reply = format!(
            "{{\"type\":\"assistant\",\"sessionId\":\"{sid}\",\"uuid\":\"a1\",\"parentUuid\":\"u1\",\"timestamp\":\"{first_ts}\",\"message\":{{\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[{{\"type\":\"text\",\"text\":\"ok\"}}],\"usage\":{{\"input_tokens\":1,\"output_tokens\":1}}}}}}\n"
        );
        let path = projects.join("-w").join(format!("{sid}.jsonl"));
        let mut all = std::fs::read_to_string(&path).expect("read");
        all.push_str(&reply);
        std::fs::write(path, all).expect("write");
    }

    #[test]
    fn no_transcript_is_a_clear_an_older_one_a_resume() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let p = tmp.path();
        // 2026-11-01T00:00:00Z
        let switch_seen = 1_793_491_200_000;
        let reason =
            |p: &Path, to: &str, cwd: Option<&str>, seen: i64| reason(p, to, cwd, seen, seen + 500);
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
        // Begun before the old id was last seen (the CLI wrote the file
        // first): the `/clear` command at its head decides while it is
        // fresh; without it, begun before is a resume.
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
        write_replied(p, "just-before", "2026-10-31T23:59:59.500Z");
        assert_eq!(
            reason(p, "just-before", Some("/w"), switch_seen),
            SwitchReason::Resume
        );
        // Only undated records so far: being written now.
        std::fs::write(
            dir.join("undated.jsonl"),
            "{\"type\":\"mode\",\"mode\":\"normal\"}\n",
        )
        .expect("write");
        assert_eq!(
            reason(p, "undated", Some("/w"), switch_seen),
            SwitchReason::Clear
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
