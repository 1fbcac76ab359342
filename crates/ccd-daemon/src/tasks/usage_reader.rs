//! The usage reader: keeps the usage board ([`crate::usage::UsageBoard`])
//! current as transcripts grow, at the pace the board's module doc
//! describes. Each pass runs [`crate::usage::by_session_blocking`] on a
//! blocking thread (the usage cache in the state dir: only appended bytes
//! are read) and swaps the result in. Started by the server, handed the
//! board, Claude Code's config dir, the cache's path, the price table and
//! the shutdown flag.

use crate::usage::{UsageBoard, SLOW_INTERVAL, WATCHED_INTERVAL};
use ccd_claude::ClaudeConfigDir;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::watch;

/// The reader: runs until `stop` turns true.
pub async fn run(
    board: Arc<UsageBoard>,
    config: ClaudeConfigDir,
    cache: PathBuf,
    prices: ccd_usage::PriceTable,
    mut stop: watch::Receiver<bool>,
) {
    let prices = Arc::new(prices);
    loop {
        let started = Instant::now();
        let (root, cache2, prices2) = (config.root().to_path_buf(), cache.clone(), prices.clone());
        match tokio::task::spawn_blocking(move || {
            crate::usage::by_session_blocking(&root, &cache2, &prices2)
        })
        .await
        {
            Ok(by_session) => {
                let sessions = by_session.len();
                board.replace(by_session);
                tracing::trace!(
                    sessions,
                    took_us = started.elapsed().as_micros() as u64,
                    "usage pass"
                );
            }
            Err(error) => tracing::warn!(%error, "a usage pass failed"),
        }
        // At least WATCHED_INTERVAL between passes; longer while nobody
        // asks, unless someone does.
        tokio::select! {
            _ = tokio::time::sleep(WATCHED_INTERVAL) => {}
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
        if board.watched() {
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(SLOW_INTERVAL - WATCHED_INTERVAL) => {}
            _ = board.asked_again() => {}
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
    }
}
