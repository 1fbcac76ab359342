//! Notifications to a person (issue 53): the `[notify]` rules
//! (`ccd_notify::Rules`, sans IO) for every session on this machine, held
//! or not, fed by the daemon's own event hub, and the command and webhook
//! sinks they go to.
//!
//! Who owns what, what may block: this task owns the rules (no lock); it
//! waits only on the hub, its next quiet-delay deadline and shutdown.
//! Each sink is a handle on its own worker (`ccd_notify::command`,
//! `ccd_notify::webhook`: a bounded queue, a timeout per send, bounded
//! retries); a send here only queues, so a command that hangs or a webhook
//! that answers 500 never delays an event, a session or a call. A sink's
//! record (`notify-<sink>.json` in the state dir) is what `ccd doctor`
//! reads; a failure is said once in the log.
//!
//! Focus comes with the hub's events too: `session.focus`, published by
//! `events::focus` from the attached clients' `session.focus`, becomes
//! the rules' `Input::Focus`. The desktop sink runs in `ccd notify`,
//! where the person sits.

use ccd_notify::command::CommandSink;
use ccd_notify::health::Health;
use ccd_notify::link::Minter;
use ccd_notify::webhook::WebhookSink;
use ccd_notify::{Input, Notification, NotifyConfig, Rules};
use ccd_protocol::methods::events::Event;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::{broadcast, watch};

/// The sinks the daemon sends to.
#[derive(Debug, Default)]
pub struct Sinks {
    command: Option<CommandSink>,
    webhook: Option<WebhookSink>,
    /// With `web_public_url`: a prompt's notification carries a link that
    /// answers it once on this machine's `ccd web` (`ccd_notify::link`),
    /// minted here, as it is sent.
    link: Option<Minter>,
}

impl Sinks {
    /// Whether any sink is configured.
    pub fn any(&self) -> bool {
        self.command.is_some() || self.webhook.is_some()
    }

    fn send(&self, n: &Notification) {
        let linked;
        let n = match &self.link {
            Some(m) if n.prompt_id.is_some() => {
                let mut with = n.clone();
                // `ccd web` names this machine `local`.
                m.apply(&mut with, LOCAL, crate::events::now_ms());
                linked = with;
                &linked
            }
            _ => n,
        };
        if let Some(c) = &self.command {
            c.send(n.clone());
        }
        if let Some(w) = &self.webhook {
            w.send(n.clone());
        }
    }
}

/// The name `ccd web` gives this machine (a prompt link names it).
const LOCAL: &str = "local";

/// Where a sink's record is kept (`ccd doctor` reads it).
pub fn record_file(state_dir: &Path, sink: &str) -> PathBuf {
    state_dir.join(format!("notify-{sink}.json"))
}

/// Starts the configured sinks on the current runtime. A sink that cannot
/// start (an invalid webhook URL or CA file) is said in the log and in its
/// record, and left out; a record of a sink no longer configured is
/// removed.
pub fn start_sinks(cfg: &NotifyConfig, state_dir: &Path) -> Sinks {
    let timeout = Duration::from_secs(cfg.send_timeout_secs.max(1));
    let mut sinks = Sinks {
        link: Minter::new(cfg, state_dir),
        ..Sinks::default()
    };
    let command_file = record_file(state_dir, "command");
    match &cfg.command {
        Some(argv) => {
            let target = argv.first().cloned().unwrap_or_default();
            let health = Health::new("command", &target, Some(command_file));
            if let Err(e) = ccd_notify::command::resolve(argv) {
                // Said now; each send retries the lookup (it may be
                // installed later) and records its own failure.
                health.failed(&e.to_string());
            }
            sinks.command = Some(CommandSink::spawn(argv.clone(), timeout, health));
        }
        None => {
            let _ = std::fs::remove_file(command_file);
        }
    }
    let webhook_file = record_file(state_dir, "webhook");
    match &cfg.webhook {
        Some(url) => {
            let health = Health::new("webhook", url, Some(webhook_file));
            match WebhookSink::spawn(url, cfg.webhook_ca.as_deref(), timeout, health.clone()) {
                Ok(w) => sinks.webhook = Some(w),
                Err(e) => health.failed(&e.to_string()),
            }
        }
        None => {
            let _ = std::fs::remove_file(webhook_file);
        }
    }
    sinks
}

/// This machine's name in notifications.
pub fn machine_name() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Runs the rules until shutdown (or the hub closes). `events` is
/// subscribed before the registry watcher starts, so the sessions it finds
/// first are seen with their folders.
pub async fn run(
    cfg: NotifyConfig,
    machine: String,
    sinks: Sinks,
    mut events: broadcast::Receiver<Event>,
    mut stop: watch::Receiver<bool>,
) {
    tracing::info!(
        machine = %machine,
        command = sinks.command.is_some(),
        webhook = sinks.webhook.is_some(),
        quiet_secs = cfg.quiet_secs,
        rate_per_minute = cfg.rate_per_minute,
        "notifications on"
    );
    let mut rules = Rules::new(cfg, machine);
    loop {
        let due = rules.next_due();
        let wait = async {
            match due {
                Some(t) => {
                    let ms = (t - crate::events::now_ms()).max(0) as u64;
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        let out = tokio::select! {
            r = events.recv() => match r {
                Ok(e) => {
                    let now = crate::events::now_ms();
                    let mut out = Vec::new();
                    for input in Input::from_event(&e) {
                        out.extend(rules.observe(input, now));
                    }
                    out
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "notify: fell behind the event hub; some events were not seen");
                    Vec::new()
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = wait => rules.tick(crate::events::now_ms()),
            _ = stop.changed() => return,
        };
        for n in out {
            tracing::info!(
                session = %n.session,
                reason = %n.reason,
                prompt = n.prompt_id.as_deref().unwrap_or(""),
                "notify"
            );
            sinks.send(&n);
        }
    }
}
