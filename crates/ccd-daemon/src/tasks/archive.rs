//! `archive = "auto"`: dead conversations moved out of reach of Claude
//! Code's retention sweep before its horizon (`cleanupPeriodDays` less
//! [`ccd_claude::archive::AUTO_MARGIN_DAYS`]), at start and every
//! [`ARCHIVE_EVERY`], into `<state dir>/archive/` ([`ccd_claude::archive`]:
//! never a live one, never one written during the move). Started by the
//! server only when the config asks for it.

use ccd_claude::ClaudeConfigDir;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// How often a running daemon looks (also once at start).
pub const ARCHIVE_EVERY: Duration = Duration::from_secs(3600);

/// Archives now and every [`ARCHIVE_EVERY`].
pub async fn run(config: ClaudeConfigDir, state_dir: PathBuf) {
    let root = state_dir.join("archive");
    loop {
        let (config2, root2) = (config.clone(), root.clone());
        let done = tokio::task::spawn_blocking(move || {
            let probe = ccd_claude::liveness::system_probe();
            let live = |sid: &str| {
                ccd_claude::liveness::running_entries(&config2.sessions_dir(), probe.as_ref())
                    .into_iter()
                    .find(|e| e.session_id == sid)
                    .map(|e| format!("pid {}", e.pid))
            };
            ccd_claude::archive::auto(&config2, &root2, &live, SystemTime::now())
        })
        .await
        .unwrap_or_default();
        for (sid, r) in done {
            match r {
                Ok(m) => {
                    tracing::info!(session = %sid, files = m.files.len(), bytes = m.bytes(), stored = m.stored_bytes, "archived before the retention sweep")
                }
                Err(e) => tracing::warn!(session = %sid, error = %e, "not archived"),
            }
        }
        tokio::time::sleep(ARCHIVE_EVERY).await;
    }
}
