//! The refresh watch: keeps the holder table fresh, asking each holder
//! how it is when [`crate::holders::pacing`] says it is due, until the
//! daemon stops. Started by the server, handed the table and the shutdown
//! flag; each pass is the table's (`HolderTable::refresh_due`), this loop
//! only sleeps between them.

use crate::holders::HolderTable;
use std::sync::Arc;

/// Refreshes the holders of `table` until `stop` turns true (the daemon
/// stops; see [`crate::holders::pacing`]).
pub async fn run(table: Arc<HolderTable>, mut stop: tokio::sync::watch::Receiver<bool>) {
    loop {
        let next = table.refresh_due().await;
        let sleep = async {
            match next {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                // No holder: nothing to do until one is added.
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = sleep => {}
            _ = table.woken() => {}
            _ = stop.changed() => return,
        }
    }
}
