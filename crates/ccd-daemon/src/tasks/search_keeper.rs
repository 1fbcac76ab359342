//! The search keeper: opens the daemon's search index in the background
//! at start (loaded from the state dir, brought up to date with every
//! transcript, built when absent) and saves it when searches' updates
//! changed it, at most every [`SAVE_EVERY`] and once at shutdown
//! ([`crate::search`] has the rest). Started by the server, handed the
//! search service, Claude Code's config dir, the context windows, the
//! state dir and the shutdown flag. Its work runs on the blocking pool.

use crate::search::{SearchService, SAVE_EVERY};
use ccd_claude::context::ContextWindows;
use ccd_claude::ClaudeConfigDir;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::watch;

/// The keeper: runs until `stop` turns true.
pub async fn run(
    search: Arc<SearchService>,
    config: ClaudeConfigDir,
    windows: ContextWindows,
    state_dir: PathBuf,
    mut stop: watch::Receiver<bool>,
) {
    let s = search.clone();
    let opened = tokio::task::spawn_blocking(move || {
        match crate::search::sessions_blocking(&config, &windows, &state_dir) {
            Ok(sessions) => s.load(&sessions),
            Err(error) => {
                tracing::warn!(%error, "search index not opened: searches scan");
            }
        }
    })
    .await;
    if let Err(error) = opened {
        tracing::warn!(%error, "search index not opened: searches scan");
    }
    loop {
        let stopping = tokio::select! {
            _ = tokio::time::sleep(SAVE_EVERY) => false,
            _ = stop.changed() => true,
        };
        let s = search.clone();
        let _ = tokio::task::spawn_blocking(move || s.save_if_changed()).await;
        if stopping || *stop.borrow() {
            return;
        }
    }
}
