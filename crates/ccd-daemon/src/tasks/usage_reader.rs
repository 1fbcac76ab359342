//! The usage reader: keeps the usage board ([`crate::usage::UsageBoard`])
//! current as transcripts grow, at the pace the board's module doc
//! describes. Each pass, on a blocking thread, first takes the
//! transcripts' fingerprint ([`crate::usage::fingerprint_with_archives`]: their
//! paths, lengths, inodes and times, no file opened); when it is the last
//! pass's (and the archives beside the cache are as they were), nothing
//! changed and the pass ends there; else it runs
//! [`crate::usage::by_session_blocking`] (the usage cache in the state dir:
//! only appended bytes are read) and swaps the result in. Started by the server, handed the
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
    // What the transcripts looked like at the last pass: a pass that finds
    // them as they were reads nothing more (no cache decoded, no report).
    let mut last: Option<u64> = None;
    loop {
        let started = Instant::now();
        let (root, cache2, prices2) = (config.root().to_path_buf(), cache.clone(), prices.clone());
        let before = last;
        match tokio::task::spawn_blocking(move || {
            let now = crate::usage::fingerprint_with_archives(&root, &cache2);
            if before == Some(now) {
                return (now, None);
            }
            (
                now,
                Some(crate::usage::by_session_blocking(&root, &cache2, &prices2)),
            )
        })
        .await
        {
            Ok((now, by_session)) => {
                last = Some(now);
                let sessions = by_session.as_ref().map(|b| b.len());
                if let Some(b) = by_session {
                    board.replace(b);
                }
                tracing::trace!(
                    sessions,
                    unchanged = sessions.is_none(),
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
