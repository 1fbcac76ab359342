//! The desktop sink: a notification shown where the person sits, with
//! actions where the notification server offers them.
//!
//! - Linux (`linux.rs`): the freedesktop notification service on the
//!   session D-Bus, through zbus (pure Rust, no libdbus). When the server
//!   lists the `actions` capability, a permission prompt carries Approve,
//!   Deny and Open, any other notification Open (and a click, the
//!   `default` action, opens too).
//! - macOS (`macos.rs`): the Notification Center through `osascript`
//!   (`display notification`, the text passed as arguments, never as
//!   script), without actions.
//! - Elsewhere: [`Desktop::start`] says it is unsupported.
//!
//! The sink stays free of the socket: Approve and Deny call
//! [`Actions::respond`], the caller's (`session.respond` with the
//! notification's prompt id, on the machine it came from); a refusal (a
//! stale prompt: answered meanwhile, or gone) is told with a follow-up
//! notification. Open runs [`Actions::attach_argv`] in a terminal
//! (`$TERMINAL`, else `x-terminal-emulator` on `PATH`) or, with none, opens
//! the notification's `link` (`web_public_url`) with `xdg-open` (`open` on
//! macOS); with neither, a follow-up says the command to run.
//!
//! Who owns what, and what may block: [`Desktop`] is a handle on one
//! worker thread that owns the connection; [`Desktop::send`] only
//! `try_send`s on a bounded queue ([`QUEUE`]; when full the notification
//! is dropped and counted) and never blocks. Every D-Bus call has a
//! method timeout (`send_timeout`). On Linux a second thread reads the
//! server's `ActionInvoked`/`NotificationClosed` signals and hands actions
//! to a third, which runs the caller's `respond` (it may block on the
//! network; nothing else waits for it). A failure to reach the bus or the
//! server is logged once (and kept in [`Desktop::last_error`] for `ccd
//! doctor`), retried at most every [`RETRY`].
//!
//! Withdrawal: [`Desktop::withdraw`] (queued like a notification) takes
//! back a session's permission and question notifications that no longer
//! apply (the rules' rule 7: answered elsewhere, ended). On Linux the
//! worker closes each with `CloseNotification` and the id `Notify`
//! returned; an action the person picked before it was closed is still
//! run (and refused if stale). macOS's `display notification` cannot take
//! one back: there it is a no-op (docs/platforms.md).

use crate::config::Reason;
use crate::Notification;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;

/// Notifications waiting for the worker at most; more are dropped.
pub const QUEUE: usize = 64;
/// A backend that failed (no bus, no server) is tried again after this.
pub const RETRY: Duration = Duration::from_secs(30);

/// An answer to a permission prompt, from a notification's action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Approve,
    Deny,
}

/// What the sink's actions do, provided by its owner (who holds the
/// sockets): the sink never talks to a daemon itself.
pub trait Actions: Send + Sync + 'static {
    /// Answers `n`'s prompt (`n.prompt_id`, on `n.machine`): `Ok` with
    /// what was picked, or `Err` with why it was refused (a stale prompt).
    /// Runs on the sink's action thread; may block.
    fn respond(&self, n: &Notification, choice: Choice) -> Result<String, String>;
    /// The argv that attaches a terminal to `n`'s session from here (e.g.
    /// `ccd --host devbox attach <sid>`).
    fn attach_argv(&self, n: &Notification) -> Vec<String>;
}

/// Why the desktop cannot be reached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DesktopError {
    /// No session bus (`DBUS_SESSION_BUS_ADDRESS` unset or dead).
    #[error("no D-Bus session bus: {0}")]
    NoBus(String),
    /// The bus answers, but no notification server is on it (or it
    /// failed a call).
    #[error("no desktop notification server: {0}")]
    NoServer(String),
    /// The worker or the probe did not answer in time.
    #[error("the desktop did not answer within {0:?}")]
    Timeout(Duration),
    /// This system has no desktop sink.
    #[error("desktop notifications are not supported on this system")]
    Unsupported,
}

/// What the notification server says it is and can do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerInfo {
    /// Its name and version (`GetServerInformation`), e.g. `dunst 1.9.0`.
    pub name: String,
    /// Whether it shows actions (the `actions` capability).
    pub actions: bool,
    /// Whether it reads markup in the body (`body-markup`).
    pub markup: bool,
}

/// The desktop sink's options.
#[derive(Debug, Clone)]
pub struct DesktopOptions {
    /// The bound of one call to the notification server.
    pub send_timeout: Duration,
    /// The application name the server shows (`ccd`).
    pub app_name: String,
}

impl Default for DesktopOptions {
    fn default() -> Self {
        Self {
            send_timeout: Duration::from_secs(5),
            app_name: "ccd".into(),
        }
    }
}

/// What the worker is handed.
#[derive(Debug, Clone)]
pub(crate) enum Job {
    /// Show it.
    Show(Notification),
    /// Take back the permission and question notifications shown for
    /// `session` of `machine`.
    Withdraw { machine: String, session: String },
}

/// A handle on the desktop sink's worker (see the module header). Dropping
/// every handle ends the worker after the queue drains.
#[derive(Clone)]
pub struct Desktop {
    tx: SyncSender<Job>,
    shared: Arc<Shared>,
}

/// What the handle and the worker share.
#[derive(Default)]
pub(crate) struct Shared {
    /// Notifications dropped on a full queue.
    pub(crate) dropped: AtomicU64,
    /// The last failure, cleared by a success.
    pub(crate) last_error: Mutex<Option<DesktopError>>,
    /// What the server said it is, once reached.
    pub(crate) server: Mutex<Option<ServerInfo>>,
}

impl Shared {
    /// Records a failure; logs it when it differs from the last one (said
    /// once, not per notification).
    pub(crate) fn fail(&self, e: DesktopError) {
        let mut last = self.last_error.lock().unwrap_or_else(|p| p.into_inner());
        if last.as_ref() != Some(&e) {
            tracing::warn!(error = %e, "desktop notifications fail");
        }
        *last = Some(e);
    }

    pub(crate) fn ok(&self) {
        let mut last = self.last_error.lock().unwrap_or_else(|p| p.into_inner());
        if last.take().is_some() {
            tracing::info!("desktop notifications work again");
        }
    }
}

impl Desktop {
    /// Starts the worker (it connects on its own thread: this never
    /// blocks). Fails only where there is no desktop sink.
    pub fn start(actions: Arc<dyn Actions>, opts: DesktopOptions) -> Result<Desktop, DesktopError> {
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let shared = Arc::new(Shared::default());
        spawn_worker(rx, actions, opts, shared.clone())?;
        Ok(Desktop { tx, shared })
    }

    /// Hands `n` to the worker; `false` when the queue is full (dropped
    /// and counted) or the worker ended.
    pub fn send(&self, n: Notification) -> bool {
        self.queue(Job::Show(n))
    }

    /// Takes back the permission and question notifications shown for
    /// `session` of `machine` (they no longer apply); queued like
    /// [`Desktop::send`], `false` when dropped.
    pub fn withdraw(&self, machine: &str, session: &str) -> bool {
        self.queue(Job::Withdraw {
            machine: machine.to_string(),
            session: session.to_string(),
        })
    }

    fn queue(&self, job: Job) -> bool {
        match self.tx.try_send(job) {
            Ok(()) => true,
            Err(TrySendError::Full(job)) => {
                let before = self.shared.dropped.fetch_add(1, Ordering::Relaxed);
                if before == 0 {
                    let session = match &job {
                        Job::Show(n) => n.session.as_str(),
                        Job::Withdraw { session, .. } => session.as_str(),
                    };
                    tracing::warn!(%session, "desktop notifications queue full: dropping");
                }
                false
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// The last failure to show a notification (none since the last
    /// success).
    pub fn last_error(&self) -> Option<DesktopError> {
        self.shared
            .last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The server, once the worker reached it.
    pub fn server(&self) -> Option<ServerInfo> {
        self.shared
            .server
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Notifications dropped on a full queue so far.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }
}

/// Whether a notification server is reachable now, and what it offers
/// (for `ccd doctor`), within `timeout`.
pub fn probe(timeout: Duration) -> Result<ServerInfo, DesktopError> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("ccd-notify-probe".into())
        .spawn(move || {
            let _ = tx.send(probe_now(timeout));
        })
        .map_err(|e| DesktopError::NoServer(e.to_string()))?;
    rx.recv_timeout(timeout + Duration::from_millis(500))
        .unwrap_or(Err(DesktopError::Timeout(timeout)))
}

#[cfg(target_os = "linux")]
fn probe_now(timeout: Duration) -> Result<ServerInfo, DesktopError> {
    linux::probe(timeout)
}
#[cfg(target_os = "macos")]
fn probe_now(_timeout: Duration) -> Result<ServerInfo, DesktopError> {
    macos::probe()
}
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn probe_now(_timeout: Duration) -> Result<ServerInfo, DesktopError> {
    Err(DesktopError::Unsupported)
}

#[cfg(target_os = "linux")]
fn spawn_worker(
    rx: mpsc::Receiver<Job>,
    actions: Arc<dyn Actions>,
    opts: DesktopOptions,
    shared: Arc<Shared>,
) -> Result<(), DesktopError> {
    linux::spawn(rx, actions, opts, shared)
}
#[cfg(target_os = "macos")]
fn spawn_worker(
    rx: mpsc::Receiver<Job>,
    actions: Arc<dyn Actions>,
    opts: DesktopOptions,
    shared: Arc<Shared>,
) -> Result<(), DesktopError> {
    macos::spawn(rx, actions, opts, shared)
}
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn spawn_worker(
    _rx: mpsc::Receiver<Job>,
    _actions: Arc<dyn Actions>,
    _opts: DesktopOptions,
    _shared: Arc<Shared>,
) -> Result<(), DesktopError> {
    Err(DesktopError::Unsupported)
}

/// The action keys of the freedesktop protocol this sink uses.
pub const APPROVE: &str = "approve";
pub const DENY: &str = "deny";
pub const OPEN: &str = "open";
/// The server's key for a click on the notification itself.
pub const DEFAULT: &str = "default";

/// The heading and the body of `n` as shown on the desktop (plain text;
/// the Linux side escapes it for a server that reads markup).
pub fn text(n: &Notification) -> (String, String) {
    let what = match n.reason {
        Reason::Permission => "asks for permission",
        Reason::Question => "needs you",
        Reason::TurnDone => "finished its turn",
        Reason::Exited => "exited",
        Reason::Failed => "failed",
        Reason::SecondWriter => "has a second writer",
        Reason::Reaped => "was stopped (idle)",
        Reason::Budget => "was stopped (memory budget)",
        Reason::Dropped => "",
    };
    let summary = if n.reason == Reason::Dropped {
        format!("ccd on {}: notifications dropped", n.machine)
    } else {
        format!("{} {what}", n.title)
    };
    let mut body = Vec::new();
    match (&n.tool, &n.detail) {
        (Some(t), Some(d)) => body.push(format!("{t}: {d}")),
        (Some(t), None) => body.push(t.clone()),
        (None, Some(d)) => body.push(d.clone()),
        (None, None) => {}
    }
    if n.reason != Reason::Dropped {
        let place = match &n.cwd {
            Some(cwd) => format!("{cwd} on {}", n.machine),
            None => format!("on {}", n.machine),
        };
        body.push(place);
    }
    (summary, body.join("\n"))
}

/// The actions (key, label) `n` carries on a server that shows them:
/// Approve and Deny for a prompt that can be answered (it has an id),
/// Open for any session, and the click (`default`) opening too.
pub fn actions_for(n: &Notification) -> Vec<(&'static str, &'static str)> {
    let mut v = Vec::new();
    if n.reason == Reason::Permission && n.prompt_id.is_some() {
        v.push((APPROVE, "Approve"));
        v.push((DENY, "Deny"));
    }
    if !n.session.is_empty() {
        v.push((OPEN, "Open"));
        v.push((DEFAULT, "Open"));
    }
    v
}

/// What Open runs for `n`: `attach` in a terminal (`terminal`, the
/// `$TERMINAL` or `x-terminal-emulator` found), else the link through
/// `opener` (`xdg-open`, `open`); `None` when neither is there.
pub fn open_argv(
    n: &Notification,
    attach: Vec<String>,
    terminal: Option<String>,
    opener: &str,
) -> Option<Vec<String>> {
    match (terminal, &n.link) {
        (Some(t), _) if !attach.is_empty() => {
            let mut v = vec![t, "-e".to_string()];
            v.extend(attach);
            Some(v)
        }
        (_, Some(link)) => Some(vec![opener.to_string(), link.clone()]),
        _ => None,
    }
}

/// The terminal Open uses: `$TERMINAL` (a program on `PATH` or a path),
/// else `x-terminal-emulator` on `PATH`.
pub fn find_terminal() -> Option<String> {
    if let Some(t) = std::env::var_os("TERMINAL").filter(|t| !t.is_empty()) {
        let t = t.to_string_lossy().into_owned();
        if on_path(&t) {
            return Some(t);
        }
    }
    on_path("x-terminal-emulator").then(|| "x-terminal-emulator".to_string())
}

/// Whether `prog` (a name or a path) is an executable file.
fn on_path(prog: &str) -> bool {
    let executable = |p: &std::path::Path| p.is_file();
    if prog.contains('/') {
        return executable(std::path::Path::new(prog));
    }
    std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).any(|d| executable(&d.join(prog))))
        .unwrap_or(false)
}

/// What the action thread does with an invoked action (shared by the
/// platforms that have actions): the follow-up to show, if any.
pub fn run_action(
    actions: &dyn Actions,
    key: &str,
    n: &Notification,
    opener: &str,
) -> Option<(String, String)> {
    let choice = match key {
        APPROVE => Some(Choice::Approve),
        DENY => Some(Choice::Deny),
        OPEN | DEFAULT => None,
        _ => return None,
    };
    if let Some(choice) = choice {
        let verb = if choice == Choice::Approve {
            "approved"
        } else {
            "denied"
        };
        return match actions.respond(n, choice) {
            Ok(picked) => {
                tracing::info!(session = %n.session, machine = %n.machine, prompt = ?n.prompt_id, %picked, "prompt {verb} from a notification");
                None
            }
            Err(why) => {
                tracing::info!(session = %n.session, machine = %n.machine, prompt = ?n.prompt_id, %why, "a notification's answer was refused");
                Some((format!("{}: not {verb}", n.title), why))
            }
        };
    }
    let attach = actions.attach_argv(n);
    match open_argv(n, attach.clone(), find_terminal(), opener) {
        Some(argv) => match spawn_detached(&argv) {
            Ok(()) => None,
            Err(e) => Some((
                format!("{}: could not open", n.title),
                format!("{}: {e}", argv.join(" ")),
            )),
        },
        None => Some((
            format!("{}: no terminal found", n.title),
            format!("Run: {}", attach.join(" ")),
        )),
    }
}

/// Starts `argv` with nothing of ours attached; a thread reaps it.
fn spawn_detached(argv: &[String]) -> std::io::Result<()> {
    let (prog, args) = argv
        .split_first()
        .ok_or_else(|| std::io::Error::other("empty command"))?;
    let mut child = std::process::Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    std::thread::Builder::new()
        .name("ccd-notify-open".into())
        .spawn(move || {
            let _ = child.wait();
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notification::sample_prompt as prompt;

    #[test]
    fn a_prompt_names_the_session_the_tool_the_command_and_the_machine() {
        let (s, b) = text(&prompt());
        assert_eq!(s, "proj asks for permission");
        assert_eq!(b, "Bash command: rm -rf build\n/home/me/proj on box");
        let mut n = prompt();
        n.reason = Reason::Exited;
        n.tool = None;
        n.detail = Some("status 1".into());
        n.cwd = None;
        assert_eq!(text(&n), ("proj exited".into(), "status 1\non box".into()));
    }

    #[test]
    fn only_an_answerable_prompt_has_approve_and_deny() {
        let keys = |n: &Notification| actions_for(n).iter().map(|a| a.0).collect::<Vec<_>>();
        assert_eq!(keys(&prompt()), [APPROVE, DENY, OPEN, DEFAULT]);
        let mut n = prompt();
        n.prompt_id = None; // a registry-only wait: nothing to name
        assert_eq!(keys(&n), [OPEN, DEFAULT]);
        n.reason = Reason::Dropped;
        n.session.clear();
        assert!(keys(&n).is_empty());
    }

    #[test]
    fn open_prefers_a_terminal_then_the_link() {
        let attach = vec!["ccd".to_string(), "attach".into(), "9b1d".into()];
        let mut n = prompt();
        assert_eq!(
            open_argv(&n, attach.clone(), Some("xterm".into()), "xdg-open").unwrap(),
            ["xterm", "-e", "ccd", "attach", "9b1d"]
        );
        assert_eq!(open_argv(&n, attach.clone(), None, "xdg-open"), None);
        n.link = Some("https://web.example/s/9b1d".into());
        assert_eq!(
            open_argv(&n, attach, None, "xdg-open").unwrap(),
            ["xdg-open", "https://web.example/s/9b1d"]
        );
    }

    struct Refusing;
    impl Actions for Refusing {
        fn respond(&self, _n: &Notification, _c: Choice) -> Result<String, String> {
            Err("prompt 5f1c is no longer shown".into())
        }
        fn attach_argv(&self, n: &Notification) -> Vec<String> {
            vec!["ccd".into(), "attach".into(), n.session.clone()]
        }
    }

    #[test]
    fn a_refused_answer_is_told_with_why() {
        let f = run_action(&Refusing, APPROVE, &prompt(), "xdg-open").unwrap();
        assert_eq!(f.0, "proj: not approved");
        assert_eq!(f.1, "prompt 5f1c is no longer shown");
        let f = run_action(&Refusing, DENY, &prompt(), "xdg-open").unwrap();
        assert_eq!(f.0, "proj: not denied");
        assert_eq!(run_action(&Refusing, "other", &prompt(), "xdg-open"), None);
    }
}
