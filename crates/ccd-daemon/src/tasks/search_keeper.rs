//! The search keeper: opens the daemon's search index in the background
//! at start (loaded from the state dir, brought up to date with every
//! transcript, built when absent) and saves it when searches' updates
//! changed it, at most every [`SAVE_EVERY`] and once at shutdown
//! ([`crate::search`] has the rest); it starts the transcript watch first,
//! and again every [`SAVE_EVERY`] while there is none (a projects folder
//! created later). Started by the server, handed the search service and
//! the shutdown flag. Its work runs on the blocking pool.

use crate::search::{SearchService, SAVE_EVERY};
use std::sync::Arc;
use tokio::sync::watch;

/// The keeper: runs until `stop` turns true.
pub async fn run(search: Arc<SearchService>, mut stop: watch::Receiver<bool>) {
    let s = search.clone();
    let opened = tokio::task::spawn_blocking(move || {
        // The watch first: what is written during the load is seen.
        s.watch();
        s.load()
    })
    .await;
    match opened {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(%error, "search index not opened: searches scan"),
        Err(error) => tracing::warn!(%error, "search index not opened: searches scan"),
    }
    loop {
        let stopping = tokio::select! {
            _ = tokio::time::sleep(SAVE_EVERY) => false,
            _ = stop.changed() => true,
        };
        let s = search.clone();
        let _ = tokio::task::spawn_blocking(move || {
            // A projects folder that appeared since is watched from now.
            s.watch();
            s.save_if_changed()
        })
        .await;
        if stopping || *stop.borrow() {
            return;
        }
    }
}
