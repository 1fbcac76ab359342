//! The accept loop: peer uid checked on every connection.

use crate::startup;
use crate::state::{Daemon, DaemonOptions};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Runs the daemon until `daemon.stop` or SIGTERM/SIGINT. Returns an error
/// (before serving anything) when the socket directory is unsafe or another
/// daemon runs.
pub fn run(options: DaemonOptions) -> anyhow::Result<()> {
    let claimed = startup::claim(&options.socket_dir)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        // Workers relay keystrokes and output: see ccd_holder::sched.
        .on_thread_start(ccd_holder::sched::short_slice)
        .enable_all()
        .build()?;
    rt.block_on(serve(options, claimed))
}

async fn serve(options: DaemonOptions, claimed: startup::Claimed) -> anyhow::Result<()> {
    claimed.listener.set_nonblocking(true)?;
    let listener = tokio::net::UnixListener::from_std(claimed.listener.try_clone()?)?;
    let daemon = Arc::new(Daemon::new(options));
    tracing::info!(
        socket = %claimed.socket.display(),
        pid = std::process::id(),
        version = env!("CARGO_PKG_VERSION"),
        "ccd daemon listening"
    );
    let adopted = daemon.holders.adopt_all().await;
    tracing::info!(adopted, "holders adopted");
    tokio::spawn(crate::logfiles::prune_task(daemon.clone()));
    tokio::spawn(crate::holders::watch(daemon.clone()));
    tokio::spawn(crate::events::registry_watch::run(daemon.clone()));
    if let Some(limit) = daemon.options.reap_idle {
        tokio::spawn(crate::holders::reap::run(daemon.clone(), limit));
    }

    let our_uid = nix::unistd::getuid().as_raw();
    let mut stop = daemon.shutdown.subscribe();
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = match accepted {
                    Ok(s) => s,
                    Err(error) => {
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                match stream.peer_cred() {
                    Ok(cred) if cred.uid() == our_uid => {
                        tracing::debug!(pid = ?cred.pid(), "client connected");
                        tokio::spawn(crate::connection::handle(daemon.clone(), stream));
                    }
                    Ok(cred) => {
                        daemon.refused.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(uid = cred.uid(), pid = ?cred.pid(), "refused a connection from another user");
                    }
                    Err(error) => tracing::warn!(%error, "refused a connection: no peer credentials"),
                }
            }
            _ = stop.changed() => break,
            _ = sigterm.recv() => { tracing::info!("SIGTERM"); break; }
            _ = sigint.recv() => { tracing::info!("SIGINT"); break; }
        }
    }
    let _ = daemon.shutdown.send(true);
    // Sessions live in holders and keep running; only the socket goes.
    let _ = std::fs::remove_file(&claimed.socket);
    tracing::info!("ccd daemon stopped");
    // Let replies in flight (daemon.stop's own) reach their clients.
    tokio::time::sleep(Duration::from_millis(50)).await;
    Ok(())
}
