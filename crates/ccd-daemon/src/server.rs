//! The accept loop: peer uid checked on every connection, at most
//! [`crate::limits::max_clients`] connections at once (derived from the fd
//! limit, which is raised to the hard one at start). A connection beyond
//! the cap gets one error line and is closed; an `accept` that fails for
//! want of descriptors pauses the loop (50 ms doubling to 1 s) instead of
//! spinning, logged once per run of failures (`ccd_holder::accept`).

use crate::startup;
use crate::state::{Daemon, DaemonOptions};
use ccd_holder::accept::{classify_accept_error, AcceptAction, Backoff};
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
        // Workers relay keystrokes and output: see ccd_sched.
        .on_thread_start(ccd_sched::short_slice)
        .enable_all()
        .build()?;
    rt.block_on(serve(options, claimed))
}

async fn serve(options: DaemonOptions, claimed: startup::Claimed) -> anyhow::Result<()> {
    claimed.listener.set_nonblocking(true)?;
    let listener = tokio::net::UnixListener::from_std(claimed.listener.try_clone()?)?;
    let daemon = Arc::new(Daemon::new(options));
    let max_clients = crate::limits::max_clients(crate::limits::raise_nofile());
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
    let mut backoff = Backoff::new("daemon");
    // Connections refused over the cap since the last one logged.
    let mut over_cap = 0u64;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((s, _)) => {
                        backoff.succeeded();
                        s
                    }
                    Err(error) => match classify_accept_error(&error) {
                        AcceptAction::Retry => continue,
                        AcceptAction::Pause => {
                            tokio::time::sleep(backoff.failed(&error)).await;
                            continue;
                        }
                        AcceptAction::Fatal => {
                            tracing::error!(%error, "the daemon socket is unusable; stopping");
                            break;
                        }
                    },
                };
                match stream.peer_cred() {
                    Ok(cred) if cred.uid() == our_uid => {
                        // Only this loop adds clients, so the check holds
                        // until the slot is taken just below.
                        if daemon.clients.load(Ordering::Acquire) >= max_clients {
                            refuse_over_cap(&stream, max_clients, over_cap);
                            over_cap += 1;
                            continue;
                        }
                        if over_cap > 0 {
                            tracing::info!(refused = over_cap, "accepting clients again");
                            over_cap = 0;
                        }
                        daemon.clients.fetch_add(1, Ordering::AcqRel);
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

/// Tells a client over the cap why it is closed (one line, best effort: a
/// fresh socket's buffer takes it) and closes it. Logs the first refusal
/// of a run only (`before`: refusals since the last one logged).
fn refuse_over_cap(stream: &tokio::net::UnixStream, max_clients: usize, before: u64) {
    if before == 0 {
        tracing::warn!(
            max_clients,
            "refusing connections: too many clients (logged once per run of refusals)"
        );
    }
    let e = ccd_protocol::RpcError::internal(format!(
        "the ccd daemon serves at most {max_clients} connections at once; try again later"
    ))
    .with_data(serde_json::json!({"reason": "too_many_connections", "limit": max_clients}));
    if let Ok(line) = ccd_protocol::encode(&ccd_protocol::Response::error(None, e)) {
        let _ = stream.try_write(&line);
    }
}
