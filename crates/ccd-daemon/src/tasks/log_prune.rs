//! Log pruning: the holder logs of the state dir kept bounded
//! ([`crate::logfiles`]: by age and by count, a live holder's never
//! removed), now and every [`PRUNE_EVERY`]. Started by the server, handed
//! the table and the state dir.

use crate::holders::HolderTable;
use crate::logfiles::{prune_holder_logs, HOLDER_LOGS_KEPT, HOLDER_LOG_MAX_AGE};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How often a running daemon prunes holder logs (also once at start).
pub const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// Prunes the holder logs in `dir` (the state dir) now and every
/// [`PRUNE_EVERY`], sparing every holder the table knows and every one
/// whose socket is still there (a slow one not adopted yet).
pub async fn run(holders: Arc<HolderTable>, dir: PathBuf) {
    loop {
        let mut live: HashSet<String> = holders.snapshot().into_iter().map(|e| e.id).collect();
        if let Ok(rd) = std::fs::read_dir(holders.dir()) {
            live.extend(rd.flatten().filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".sock"))
                    .map(String::from)
            }));
        }
        let dir2 = dir.clone();
        let pruned = tokio::task::spawn_blocking(move || {
            prune_holder_logs(
                &dir2,
                &live,
                SystemTime::now(),
                HOLDER_LOG_MAX_AGE,
                HOLDER_LOGS_KEPT,
            )
        })
        .await
        .unwrap_or_default();
        if pruned.removed > 0 {
            tracing::info!(removed = pruned.removed, kept = pruned.kept, dir = %dir.display(), "old holder logs removed");
        }
        tokio::time::sleep(PRUNE_EVERY).await;
    }
}
