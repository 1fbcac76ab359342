//! The `command` sink: an argv run per notification, the notification as
//! JSON on its stdin and as `CCD_NOTIFY_*` environment variables
//! ([`Notification::env`]); works with ntfy, Pushover, Apprise, Slack or
//! Telegram scripts.
//!
//! Bounds (never blocking its caller): [`CommandSink::send`] only queues
//! (at most [`QUEUE`] waiting, more are dropped and counted); one worker
//! task runs at most [`CONCURRENCY`] commands at once; each is killed after
//! the send timeout (its whole process group, so a shell's children go
//! too). A command that is missing, cannot run, exits non-zero or times out
//! is a failure in [`Health`] (said once in the log).

use crate::health::{Health, Queue};
use crate::notification::Notification;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, Semaphore};

/// Notifications waiting for a command to run.
pub const QUEUE: usize = 64;
/// Commands running at once.
pub const CONCURRENCY: usize = 4;
/// The stderr kept to say why a command failed.
const STDERR_KEPT: usize = 2048;

/// Why a command cannot be used (said by `ccd doctor`).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CommandError {
    #[error("notify.command is empty")]
    Empty,
    #[error("notify.command: {0} not found on PATH")]
    NotFound(String),
    #[error("notify.command: {0} is not an executable file")]
    NotExecutable(String),
}

/// Where `argv[0]` resolves to: a path as given, else the first
/// executable of that name on `PATH`.
pub fn resolve(argv: &[String]) -> Result<PathBuf, CommandError> {
    let first = argv.first().ok_or(CommandError::Empty)?;
    if first.is_empty() {
        return Err(CommandError::Empty);
    }
    let p = std::path::Path::new(first);
    if p.components().count() > 1 {
        return if is_executable(p) {
            Ok(p.to_path_buf())
        } else if p.exists() {
            Err(CommandError::NotExecutable(first.clone()))
        } else {
            Err(CommandError::NotFound(first.clone()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let c = dir.join(first);
        if is_executable(&c) {
            return Ok(c);
        }
    }
    Err(CommandError::NotFound(first.clone()))
}

fn is_executable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A running command sink (see the module doc). Dropping it ends the
/// worker once the queue is drained.
#[derive(Debug, Clone)]
pub struct CommandSink {
    queue: Queue,
}

impl CommandSink {
    /// Starts the worker on the current tokio runtime.
    pub fn spawn(argv: Vec<String>, timeout: Duration, health: Health) -> Self {
        let (queue, rx) = Queue::new(QUEUE, health.clone());
        tokio::spawn(worker(argv, timeout, rx, health));
        Self { queue }
    }

    /// Queues `n` (never waits; a full queue drops it and counts it).
    pub fn send(&self, n: Notification) {
        self.queue.send(n);
    }

    pub fn health(&self) -> &Health {
        self.queue.health()
    }
}

async fn worker(
    argv: Vec<String>,
    timeout: Duration,
    mut rx: mpsc::Receiver<Notification>,
    health: Health,
) {
    let slots = Arc::new(Semaphore::new(CONCURRENCY));
    let argv = Arc::new(argv);
    while let Some(n) = rx.recv().await {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let argv = argv.clone();
        let health = health.clone();
        tokio::spawn(async move {
            match run(&argv, &n, timeout).await {
                Ok(()) => health.ok(),
                Err(e) => health.failed(&e),
            }
            drop(permit);
        });
    }
}

/// Runs the command once for `n`; the error says why it failed.
pub async fn run(argv: &[String], n: &Notification, timeout: Duration) -> Result<(), String> {
    let exe = resolve(argv).map_err(|e| e.to_string())?;
    let body = serde_json::to_vec(n).map_err(|e| e.to_string())?;
    let mut cmd = tokio::process::Command::new(&exe);
    cmd.args(&argv[1..])
        .envs(n.env())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("{}: {e}", exe.display()))?;
    let pid = child.id();
    let mut stdin = child.stdin.take();
    let mut stderr = child.stderr.take();
    let work = async {
        if let Some(mut i) = stdin.take() {
            // A command that does not read its stdin is fine.
            let _ = i.write_all(&body).await;
            let _ = i.shutdown().await;
        }
        let mut err = Vec::new();
        if let Some(e) = stderr.as_mut() {
            let _ = e.take(STDERR_KEPT as u64).read_to_end(&mut err).await;
        }
        let status = child.wait().await;
        (status, err)
    };
    match tokio::time::timeout(timeout, work).await {
        Ok((Ok(st), _)) if st.success() => Ok(()),
        Ok((Ok(st), err)) => {
            let err = String::from_utf8_lossy(&err);
            let last = err
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            Err(if last.is_empty() {
                format!("{}: {st}", argv[0])
            } else {
                format!("{}: {st}: {}", argv[0], last.trim())
            })
        }
        Ok((Err(e), _)) => Err(format!("{}: {e}", argv[0])),
        Err(_) => {
            if let Some(pid) = pid {
                kill_group(pid);
            }
            Err(format!(
                "{}: killed after {} s (send_timeout_secs)",
                argv[0],
                timeout.as_secs_f32()
            ))
        }
    }
}

/// Kills the command's process group (it leads its own).
fn kill_group(pid: u32) {
    use nix::sys::signal::{killpg, Signal};
    use nix::unistd::Pid;
    if let Ok(p) = i32::try_from(pid) {
        let _ = killpg(Pid::from_raw(p), Signal::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Reason;

    fn n() -> Notification {
        Notification {
            machine: "box".into(),
            session: "s1".into(),
            title: "proj".into(),
            cwd: None,
            reason: Reason::Permission,
            tool: Some("Bash command".into()),
            detail: Some("echo 'hi'; rm x".into()),
            prompt_id: Some("p1".into()),
            options: None,
            link: None,
            at: 5,
        }
    }

    fn sh(script: &str) -> Vec<String> {
        vec!["/bin/sh".into(), "-c".into(), script.into()]
    }

    #[tokio::test]
    async fn the_command_gets_the_json_on_stdin_and_the_env() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let script = format!(
            "cat > {0}.json; printf '%s' \"$CCD_NOTIFY_DETAIL\" > {0}.detail",
            out.display()
        );
        run(&sh(&script), &n(), Duration::from_secs(10))
            .await
            .unwrap();
        let got: Notification =
            serde_json::from_slice(&std::fs::read(out.with_extension("json")).unwrap()).unwrap();
        assert_eq!(got, n());
        assert_eq!(
            std::fs::read_to_string(out.with_extension("detail")).unwrap(),
            "echo 'hi'; rm x",
            "passed as one value, never through a shell"
        );
    }

    #[tokio::test]
    async fn a_failing_command_says_its_status_and_last_stderr_line() {
        let e = run(
            &sh("echo bad token >&2; exit 3"),
            &n(),
            Duration::from_secs(10),
        )
        .await
        .unwrap_err();
        assert!(
            e.contains("exit status: 3") && e.ends_with("bad token"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn a_hanging_command_and_its_children_are_killed_after_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
        let t = std::time::Instant::now();
        let e = run(&sh(&script), &n(), Duration::from_millis(500))
            .await
            .unwrap_err();
        assert!(e.contains("killed after"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The grandchild went with the group (reaped by init shortly).
        let gone = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.is_empty() || stat.contains(") Z ")
        });
        assert!(gone || !cfg!(target_os = "linux"), "sleep {pid} still runs");
    }

    #[test]
    fn a_missing_or_not_executable_command_is_named() {
        assert_eq!(resolve(&[]), Err(CommandError::Empty));
        assert_eq!(
            resolve(&["no-such-notifier-xyz".into()]),
            Err(CommandError::NotFound("no-such-notifier-xyz".into()))
        );
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("plain");
        std::fs::write(&f, "x").unwrap();
        let s = f.display().to_string();
        assert_eq!(
            resolve(std::slice::from_ref(&s)),
            Err(CommandError::NotExecutable(s))
        );
        assert!(resolve(&["sh".into()]).is_ok());
    }

    #[tokio::test]
    async fn the_sink_queues_without_waiting_and_records_failures() {
        let h = Health::new("command", "false", None);
        let sink = CommandSink::spawn(sh("exit 1"), Duration::from_secs(5), h.clone());
        sink.send(n());
        for _ in 0..100 {
            if h.report().failed == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(h.report().failed, 1);
        assert!(h.report().last_error.unwrap().contains("exit status: 1"));
    }
}
