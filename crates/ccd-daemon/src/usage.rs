//! What each conversation cost in tokens and dollars (issue 56), kept on a
//! board that `sessions.list` / `sessions.get` read: every session's
//! totals by session id, as the usage reader (`tasks::usage_reader`) last
//! found them.
//!
//! The reader does the work off the request path: a pass that finds the
//! transcripts as the last one left them (their fingerprint: paths,
//! lengths, inodes, times) ends there; else it brings the usage cache in
//! the state dir up to date through
//! [`ccd_usage::here::by_session`] — the very code `ccd ls` and `ccd usage`
//! run, reading only the bytes appended since the last pass, on a blocking
//! thread — and replaces the board's totals. A list only copies from the
//! board: it never reads a transcript and never waits for a pass; a
//! session the reader has not seen yet simply has no `usage` yet.
//!
//! Pace: a pass at start, then one every [`WATCHED_INTERVAL`] while a
//! client asked for usage within [`WATCHED`] (a dashboard lists every few
//! seconds), else every [`SLOW_INTERVAL`]; a client's ask after a quiet
//! spell wakes the reader at once (but never sooner than
//! [`WATCHED_INTERVAL`] after the last pass).
//!
//! Bounds: the board holds one [`SessionUsage`] a session, at most
//! [`MAX_SESSIONS`] (the newest-keyed beyond it are left out and the log
//! says so); a pass holds the usage cache in memory only while it runs
//! (the cache is bounded by [`ccd_usage::cache::MAX_CACHE_BYTES`]).
//!
//! Locks: `totals` only to copy from or swap into, never across a pass or
//! an `.await`.

use ccd_protocol::methods::session::{SessionInfo, SessionUsage};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// The reader's period while a client asked lately.
pub const WATCHED_INTERVAL: Duration = Duration::from_secs(5);

/// How long one ask keeps the reader at [`WATCHED_INTERVAL`].
pub use crate::demand::WATCHED;

/// The period when nobody asked lately.
pub const SLOW_INTERVAL: Duration = Duration::from_secs(300);

/// The most sessions the board keeps totals for.
pub const MAX_SESSIONS: usize = 200_000;

/// Every session's tokens and dollars, as the last pass found them.
#[derive(Default)]
pub struct UsageBoard {
    totals: Mutex<HashMap<String, SessionUsage>>,
    /// Whether clients ask for usage (paces the reader).
    demand: crate::demand::Demand,
}

impl UsageBoard {
    /// Fills `usage` in every row of `rows` the board has totals for, and
    /// notes that a client asked.
    pub fn fill(&self, rows: &mut [SessionInfo]) {
        self.asked();
        let totals = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        for r in rows {
            if let Some(u) = totals.get(&r.session_id) {
                r.usage = Some(u.clone());
            }
        }
    }

    /// The board becomes `by_session` (at most [`MAX_SESSIONS`] of them).
    pub fn replace(&self, mut by_session: HashMap<String, SessionUsage>) {
        if by_session.len() > MAX_SESSIONS {
            let mut keys: Vec<String> = by_session.keys().cloned().collect();
            keys.sort_unstable();
            for k in &keys[MAX_SESSIONS..] {
                by_session.remove(k);
            }
            tracing::warn!(
                sessions = keys.len(),
                kept = MAX_SESSIONS,
                "more sessions than the usage board keeps: some show no usage"
            );
        }
        *self.totals.lock().unwrap_or_else(|p| p.into_inner()) = by_session;
    }

    /// How many sessions the board has totals for.
    pub fn len(&self) -> usize {
        self.totals.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A client asks for usage: keeps the reader at
    /// [`WATCHED_INTERVAL`] for [`WATCHED`], and wakes it if it was slow.
    pub fn asked(&self) {
        self.demand.asked()
    }

    /// Whether a client asked within [`WATCHED`].
    pub fn watched(&self) -> bool {
        self.demand.watched()
    }

    /// Resolves when a client asks after a quiet spell.
    pub async fn asked_again(&self) {
        self.demand.asked_again().await
    }
}

/// One report row (a session's totals over all dates) as the wire shows
/// it; `ccd ls` makes its rows' `usage` with it too.
pub fn on_the_wire(row: ccd_usage::Row) -> SessionUsage {
    SessionUsage {
        input_tokens: row.tokens.input,
        output_tokens: row.tokens.output,
        cache_creation_tokens: row.tokens.cache_creation,
        cache_read_tokens: row.tokens.cache_read,
        total_tokens: row.total_tokens,
        cost_usd: row.cost_usd,
        models: row.models.into_iter().collect(),
        unpriced: row.unpriced.into_iter().collect(),
    }
}

/// Every session's totals under `config_root`, read through the usage
/// cache at `cache_path` (blocking: the reader calls it on a blocking
/// thread; `ccd ls` on its own).
pub fn by_session_blocking(
    config_root: &std::path::Path,
    cache_path: &std::path::Path,
    prices: &ccd_usage::PriceTable,
) -> HashMap<String, SessionUsage> {
    ccd_usage::here::by_session(config_root, cache_path, prices)
        .into_iter()
        .map(|(sid, row)| (sid, on_the_wire(row)))
        .collect()
}

/// A fingerprint of every transcript under `config_root` (the files
/// [`ccd_usage::files::transcripts`] names, with each one's length, inode
/// and modification time; no file opened): equal fingerprints, nothing to
/// read again. An archive or a restore changes it too (it moves the
/// transcript out of or into its place); [`fingerprint_with_archives`]
/// also sees an archive removed or replaced by hand.
pub fn fingerprint_blocking(config_root: &std::path::Path) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for t in ccd_usage::files::transcripts(config_root) {
        t.path.hash(&mut h);
        stamp(&mut h, &t.path);
    }
    h.finish()
}

/// [`fingerprint_blocking`] and the archives beside the cache at
/// `cache_path` (each archive folder's name, inode and time: an archive is
/// renamed into place whole and never changed, so a new, replaced or
/// removed one changes them; no manifest read).
pub fn fingerprint_with_archives(
    config_root: &std::path::Path,
    cache_path: &std::path::Path,
) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    fingerprint_blocking(config_root).hash(&mut h);
    let archives = ccd_usage::here::archive_root(cache_path);
    if let Ok(rd) = std::fs::read_dir(&archives) {
        let mut names: Vec<_> = rd.flatten().map(|e| e.file_name()).collect();
        names.sort_unstable();
        for n in names {
            n.hash(&mut h);
            stamp(&mut h, &archives.join(&n));
        }
    }
    h.finish()
}

/// A file's length, time and inode into `h` (nothing when it is gone).
fn stamp(h: &mut impl std::hash::Hasher, p: &std::path::Path) {
    use std::hash::Hash;
    if let Ok(m) = std::fs::metadata(p) {
        m.len().hash(h);
        m.modified().ok().hash(h);
        #[cfg(unix)]
        std::os::unix::fs::MetadataExt::ino(&m).hash(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccd_protocol::methods::session::SessionState;

    fn usage(total: u64) -> SessionUsage {
        SessionUsage {
            input_tokens: total,
            output_tokens: 0,
            cache_creation_tokens: 0,
            cache_read_tokens: 0,
            total_tokens: total,
            cost_usd: 0.5,
            models: vec!["m".into()],
            unpriced: vec![],
        }
    }

    fn row(sid: &str) -> SessionInfo {
        let mut r: SessionInfo = serde_json::from_value(serde_json::json!({
            "session_id": sid,
            "state": "dead",
        }))
        .unwrap();
        r.state = SessionState::Dead;
        r
    }

    #[test]
    fn a_list_gets_the_totals_the_board_has_and_nothing_for_the_rest() {
        let b = UsageBoard::default();
        b.replace(HashMap::from([("a".to_string(), usage(7))]));
        let mut rows = vec![row("a"), row("b")];
        b.fill(&mut rows);
        assert_eq!(rows[0].usage.as_ref().map(|u| u.total_tokens), Some(7));
        assert!(rows[1].usage.is_none());
        assert!(b.watched());
    }

    #[test]
    fn the_fingerprint_changes_with_an_append_a_new_file_or_a_replacement_only() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("projects/-w");
        std::fs::create_dir_all(&dir).unwrap();
        let a = dir.join("a.jsonl");
        std::fs::write(&a, "{}\n").unwrap();
        let cache = d.path().join("state").join(ccd_usage::cache::CACHE_FILE);
        let first = fingerprint_with_archives(d.path(), &cache);
        assert_eq!(
            fingerprint_with_archives(d.path(), &cache),
            first,
            "nothing changed"
        );
        std::fs::write(dir.join("notes.txt"), "x").unwrap();
        assert_eq!(
            fingerprint_with_archives(d.path(), &cache),
            first,
            "not a transcript"
        );
        let mut f = std::fs::OpenOptions::new().append(true).open(&a).unwrap();
        std::io::Write::write_all(&mut f, b"{}\n").unwrap();
        let appended = fingerprint_with_archives(d.path(), &cache);
        assert_ne!(appended, first, "an append");
        std::fs::write(dir.join("b.jsonl"), "").unwrap();
        let added = fingerprint_with_archives(d.path(), &cache);
        assert_ne!(added, appended, "a new transcript");
        // Replaced by a file of the same length (another inode).
        let tmp = dir.join("a.tmp");
        std::fs::write(&tmp, "{}\n{}\n").unwrap();
        std::fs::rename(&tmp, &a).unwrap();
        let replaced = fingerprint_with_archives(d.path(), &cache);
        assert_ne!(replaced, added, "a replacement");
        // An archive comes (renamed into place whole), and goes.
        let archives = d.path().join("state").join(ccd_usage::here::ARCHIVE_DIR);
        std::fs::create_dir_all(archives.join(".s.tmp-1")).unwrap();
        std::fs::rename(archives.join(".s.tmp-1"), archives.join("s")).unwrap();
        let archived = fingerprint_with_archives(d.path(), &cache);
        assert_ne!(archived, replaced, "an archive");
        assert_eq!(fingerprint_with_archives(d.path(), &cache), archived);
        std::fs::remove_dir_all(archives.join("s")).unwrap();
        assert_ne!(
            fingerprint_with_archives(d.path(), &cache),
            archived,
            "an archive gone"
        );
    }

    #[test]
    fn the_board_keeps_at_most_its_bound() {
        let b = UsageBoard::default();
        let many: HashMap<String, SessionUsage> = (0..MAX_SESSIONS + 3)
            .map(|i| (format!("{i:08}"), usage(1)))
            .collect();
        b.replace(many);
        assert_eq!(b.len(), MAX_SESSIONS);
    }
}
