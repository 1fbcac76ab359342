//! Keeps the restore record in step with the holder table: woken when the
//! table says something recorded changed (`HolderTable::changed`: a holder
//! added, pinned, gone, a new conversation), and every [`RECORD_CHECK`]
//! besides (a mode or model read later); each pass writes only when the
//! record differs (`Restore::sync`), off the reactor.

use crate::holders::HolderTable;
use crate::restore::Restore;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How often the record is compared with the table when nothing woke it.
pub const RECORD_CHECK: Duration = Duration::from_secs(2);

pub async fn run(
    holders: Arc<HolderTable>,
    restore: Arc<Restore>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        {
            let (h, r) = (holders.clone(), restore.clone());
            let _ = tokio::task::spawn_blocking(move || r.sync(&h)).await;
        }
        tokio::select! {
            _ = holders.changed.notified() => {}
            _ = tokio::time::sleep(RECORD_CHECK) => {}
            _ = shutdown.changed() => return,
        }
    }
}
