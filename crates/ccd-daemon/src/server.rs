//! The accept loop: peer uid checked on every connection, at most
//! [`crate::limits::max_clients`] connections at once (derived from the fd
//! limit, which is raised to the hard one at start). A connection beyond
//! the cap gets one error line and is closed; an `accept` that fails for
//! want of descriptors pauses the loop (50 ms doubling to 1 s) instead of
//! spinning, with at most one warning a minute (`ccd_os::accept`).
//!
//! # Shutdown
//!
//! Ordered by signals, not by timers:
//! - **Who signals.** `Daemon::shutdown` (a `watch`, set once, never
//!   cleared) is set by `daemon.stop` once its own reply is queued
//!   (`ConnCtx::after_reply`), or by this loop on SIGTERM/SIGINT or an
//!   unusable socket.
//! - **Who listens.** This loop stops accepting, removes `ccd.sock` and
//!   closes the listening socket. Every connection ([`crate::connection`])
//!   stops reading and tears its streams down; its writer closes the
//!   connection's queue and writes what was queued before (`daemon.stop`'s
//!   reply among it), then the connection task ends. The background tasks
//!   (`crate::tasks`: refresh watch, registry watch, cost sampler,
//!   reaper) end on the same flag.
//! - **Drained.** This loop owns every connection task (a `JoinSet`) and
//!   waits for them all to end: that is the moment every queued line is
//!   written. Only then does [`run`] return (holders keep running).
//! - **What may block, and the bound.** A connection's writer blocks on a
//!   client that reads nothing; a request task may be in the middle of a
//!   long call. Neither holds the stop for long: the drain waits at most
//!   [`DRAIN_BOUND`] (then the remaining connections are dropped), and the
//!   runtime at most [`BLOCKING_BOUND`] for blocking tasks in flight. So
//!   once the flag is set the process is gone within
//!   `DRAIN_BOUND + BLOCKING_BOUND` (4 s); `daemon.stop` adds its own
//!   work before it (with `kill_sessions`: the sessions' grace and
//!   collection) and at most `DRAIN_BOUND` for its reply to be queued.

use crate::startup;
use crate::state::{Daemon, DaemonOptions};
use ccd_os::accept::{classify_accept_error, AcceptAction, Backoff};
use ccd_protocol::error_data::CapRefusedData;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;

pub use crate::state::DRAIN_BOUND;

/// The longest the stopping runtime waits for blocking tasks in flight.
pub const BLOCKING_BOUND: Duration = Duration::from_secs(2);

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
    // The accept loop runs on a worker, not in `block_on` on this thread:
    // the worker that sees the listener readable accepts and then runs the
    // new connection's task itself (its LIFO slot), so a client's first
    // line is read without waking another thread.
    let served = rt.block_on(async {
        match tokio::spawn(serve(options, claimed)).await {
            Ok(r) => r,
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(e) => Err(anyhow::anyhow!("the daemon's accept loop ended: {e}")),
            },
        }
    });
    rt.shutdown_timeout(BLOCKING_BOUND);
    served
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
    // The restore record: which sessions a reboot (or every holder gone)
    // lost, listed as `lost` until restored; kept in step from now on.
    {
        let ids: std::collections::HashSet<String> = daemon
            .holders
            .snapshot()
            .into_iter()
            .map(|h| h.id)
            .collect();
        let at = daemon.restore.start(&ids);
        let lost = daemon.restore.lost();
        tracing::info!(lost = lost.len(), newly = at.newly_lost.len(), rebooted = at.rebooted, mode = ?daemon.restore.mode, "restore record read");
        daemon
            .holders
            .list_lost(lost.iter().map(crate::restore::lost_finished).collect());
        tokio::spawn(crate::tasks::record::run(
            daemon.holders.clone(),
            daemon.restore.clone(),
            daemon.shutdown.subscribe(),
        ));
        if daemon.restore.mode == crate::restore::RestoreMode::Auto && !lost.is_empty() {
            let d = daemon.clone();
            tokio::spawn(async move {
                match crate::session_ops::restore::restore(d, &[]).await {
                    Ok(r) => tracing::info!(
                        restored = r.restored.len(),
                        failed = r.failed.len(),
                        "restore = \"auto\": done"
                    ),
                    Err(error) => tracing::warn!(%error, "restore = \"auto\" failed"),
                }
            });
        }
    }
    // The temporary files of trims killed before their rename (as large as
    // their transcripts, in Claude Code's projects folder): removed once,
    // off the reactor (`ccd_claude::trim::leftover`).
    {
        let projects = daemon.options.claude_config.projects_dir();
        tokio::task::spawn_blocking(move || {
            let r = ccd_claude::trim::leftover::remove_under(&projects);
            if r.files > 0 {
                tracing::info!(files = r.files, bytes = r.bytes, "trim leftovers removed");
            }
        });
    }
    // The tasks are given the parts of the daemon they use, not the
    // daemon itself.
    tokio::spawn(crate::tasks::log_prune::run(
        daemon.holders.clone(),
        daemon.options.state_dir.clone(),
    ));
    if daemon.options.archive_auto {
        tokio::spawn(crate::tasks::archive::run(
            daemon.options.claude_config.clone(),
            daemon.options.state_dir.clone(),
        ));
    }
    tokio::spawn(crate::tasks::usage_reader::run(
        daemon.usage.clone(),
        daemon.options.claude_config.clone(),
        daemon.options.state_dir.join(ccd_usage::cache::CACHE_FILE),
        daemon.options.prices.clone(),
        daemon.shutdown.subscribe(),
    ));
    tokio::spawn(crate::tasks::search_keeper::run(
        daemon.search.clone(),
        daemon.shutdown.subscribe(),
    ));
    tokio::spawn(crate::tasks::refresh_watch::run(
        daemon.holders.clone(),
        daemon.shutdown.subscribe(),
    ));
    {
        // Subscribed before the registry watcher starts: the sessions it
        // finds first are seen with their folders.
        let cfg = daemon.options.notify.clone();
        let sinks = crate::tasks::notify::start_sinks(&cfg, &daemon.options.state_dir);
        if sinks.any() {
            tokio::spawn(crate::tasks::notify::run(
                cfg,
                crate::tasks::notify::machine_name(),
                sinks,
                daemon.events.subscribe(),
                daemon.shutdown.subscribe(),
            ));
        }
    }
    tokio::spawn(crate::tasks::registry_watch::run(
        daemon.holders.clone(),
        daemon.events.clone(),
        daemon.options.claude_config.clone(),
        daemon.options.context_windows.clone(),
        daemon.shutdown.subscribe(),
    ));
    {
        let (holders, events) = (daemon.holders.clone(), daemon.events.clone());
        tokio::spawn(crate::tasks::cost_sampler::run(
            daemon.costs.clone(),
            daemon.options.cost_interval,
            daemon.options.memory_budget.is_some(),
            move || crate::cost::live_roots(&holders, &events),
            daemon.events.subscribe(),
            daemon.shutdown.subscribe(),
        ));
    }
    let rules = crate::tasks::reap::Rules {
        idle_limit: daemon.options.reap_idle,
        budget: daemon.options.memory_budget,
        min_idle: daemon.options.reap_min_idle,
    };
    if rules.any() {
        let reaper = crate::tasks::reap::Reaper {
            holders: daemon.holders.clone(),
            costs: daemon.costs.clone(),
            events: daemon.events.clone(),
            projects: daemon.options.claude_config.projects_dir(),
            shutdown: daemon.shutdown.subscribe(),
            stopping: daemon.stopping.clone(),
        };
        tokio::spawn(crate::tasks::reap::run(reaper, rules));
    }

    let our_uid = nix::unistd::getuid().as_raw();
    let mut stop = daemon.shutdown.subscribe();
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut backoff = Backoff::new("daemon");
    // Connections refused over the cap since the last one logged.
    let mut over_cap = 0u64;
    // Every connection task, so the stop can wait for them to drain.
    let mut conns = JoinSet::new();
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
                        conns.spawn(crate::connection::handle(daemon.clone(), stream));
                    }
                    Ok(cred) => {
                        daemon.refused.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(uid = cred.uid(), pid = ?cred.pid(), "refused a connection from another user");
                    }
                    Err(error) => tracing::warn!(%error, "refused a connection: no peer credentials"),
                }
            }
            // Reap connections that ended (the set keeps their results).
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = crate::connection::until_stopping(&mut stop) => break,
            _ = sigterm.recv() => { tracing::info!("SIGTERM"); break; }
            _ = sigint.recv() => { tracing::info!("SIGINT"); break; }
        }
    }
    let _ = daemon.shutdown.send(true);
    // Sessions live in holders and keep running; only the socket goes,
    // and no connection is accepted any more (the lock stays held until
    // the process exits, so no second daemon starts before).
    let _ = std::fs::remove_file(&claimed.socket);
    drop(listener);
    drop(claimed.listener);
    // Every connection writes what is queued for its client (daemon.stop's
    // reply among it) and ends.
    let drained = tokio::time::timeout(DRAIN_BOUND, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            connections = conns.len(),
            bound_ms = DRAIN_BOUND.as_millis() as u64,
            "connections still writing to their clients; closing them"
        );
        conns.abort_all();
    }
    tracing::info!("ccd daemon stopped");
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
    // What the client sent already (its `hello`, written with the
    // connect) is read away first: closing a socket with unread data
    // resets the connection, and the client would read the reset instead
    // of the line below — and say no daemon runs. Bounded: 64 KiB.
    let mut sink = [0u8; 4096];
    for _ in 0..16 {
        match stream.try_read(&mut sink) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
    let e = CapRefusedData::connections(max_clients).into_error(format!(
        "the ccd daemon serves at most {max_clients} connections at once; try again later"
    ));
    if let Ok(line) = ccd_protocol::encode(&ccd_protocol::Response::error(None, e)) {
        let _ = stream.try_write(&line);
    }
}
