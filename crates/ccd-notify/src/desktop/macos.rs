//! The desktop sink on macOS: the Notification Center through
//! `osascript` (`display notification`), with no C or Objective-C built
//! (the CI lints this side from Linux). The text is passed as the script's
//! arguments (`on run argv`), never spliced into the script. No actions:
//! `display notification` has none ([`Actions`] is unused here).
//!
//! The worker thread runs one `osascript` at a time, killed after the
//! send timeout. A withdrawal is not done: a notification `display
//! notification` delivered cannot be taken back by `osascript` (only the
//! app that posted it could, through `UNUserNotificationCenter`), so it
//! stays in the Notification Center until the person dismisses it
//! (docs/platforms.md).

use super::{Actions, DesktopError, DesktopOptions, Job, ServerInfo, Shared};
use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

const OSASCRIPT: &str = "/usr/bin/osascript";

/// The script: the title, the body and the subtitle come as arguments.
const SCRIPT: [&str; 3] = [
    "on run argv",
    "display notification (item 2 of argv) with title (item 1 of argv) subtitle (item 3 of argv)",
    "end run",
];

/// The argv of `osascript` showing `title`, `subtitle` and `body`.
pub(super) fn argv(title: &str, subtitle: &str, body: &str) -> Vec<String> {
    let mut v = Vec::new();
    for line in SCRIPT {
        v.push("-e".to_string());
        v.push(line.to_string());
    }
    v.push(title.to_string());
    v.push(body.to_string());
    v.push(subtitle.to_string());
    v
}

pub(super) fn probe() -> Result<ServerInfo, DesktopError> {
    if std::path::Path::new(OSASCRIPT).is_file() {
        Ok(ServerInfo {
            name: "Notification Center (osascript)".into(),
            actions: false,
            markup: false,
        })
    } else {
        Err(DesktopError::NoServer(format!("{OSASCRIPT} is missing")))
    }
}

pub(super) fn spawn(
    rx: Receiver<Job>,
    _actions: Arc<dyn Actions>,
    opts: DesktopOptions,
    shared: Arc<Shared>,
) -> Result<(), DesktopError> {
    std::thread::Builder::new()
        .name("ccd-notify-desktop".into())
        .spawn(move || {
            while let Ok(job) = rx.recv() {
                let n = match job {
                    Job::Show(n) => n,
                    Job::Withdraw { machine, session } => {
                        tracing::debug!(%machine, %session, "a notification that no longer applies stays: osascript cannot take it back");
                        continue;
                    }
                };
                let (summary, body) = super::text(&n);
                match run(&argv(&opts.app_name, &summary, &body), opts.send_timeout) {
                    Ok(()) => shared.ok(),
                    Err(e) => shared.fail(e),
                }
            }
        })
        .map(|_| ())
        .map_err(|e| DesktopError::NoServer(format!("cannot start a thread: {e}")))
}

/// Runs `osascript` with `args`, killed after `timeout`.
fn run(args: &[String], timeout: Duration) -> Result<(), DesktopError> {
    let mut child = Command::new(OSASCRIPT)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| DesktopError::NoServer(format!("{OSASCRIPT}: {e}")))?;
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                return Err(DesktopError::NoServer(format!("{OSASCRIPT}: {status}")))
            }
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(DesktopError::Timeout(timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(DesktopError::NoServer(format!("{OSASCRIPT}: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_passed_as_arguments_not_script() {
        let a = argv("ccd", "proj asks", "Bash: echo \"x\" end run");
        assert_eq!(a[..6].iter().filter(|s| *s == "-e").count(), 3);
        assert_eq!(&a[6..], ["ccd", "Bash: echo \"x\" end run", "proj asks"]);
    }
}
