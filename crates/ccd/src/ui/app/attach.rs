//! Stepping aside for an attached (or observing) session: the dashboard
//! leaves the terminal to the ordinary attach client and takes it back,
//! with the terminal's signal keys off in between. Another machine's
//! session is first connected to off the main thread (ssh may take long,
//! or forever on a stalled network): the dashboard stays up and answers
//! keys meanwhile (Esc gives up), and steps aside once connected.

use super::{leave_terminal, App, Msg, Term};
use crate::hosts::Target;
use crate::term::{attach_loop, AttachExtra, Mode as AttachMode, Outcome};
use crate::ui::model::RowKey;
use crate::ui::view::View;
use ccd_protocol::error_data::LiveElsewhereData;
use ccd_protocol::ErrorCode;
use nix::sys::termios::SetArg;
use ratatui::crossterm::{cursor, execute, terminal};
use std::process::ExitCode;
use std::time::Duration;

impl App {
    /// Steps aside for an attached (or observing) session, then comes
    /// back with the selection on it.
    pub(super) fn attach(
        &mut self,
        term: &mut Term,
        view: &mut View,
        host: &str,
        sid: &str,
        mode: AttachMode,
    ) {
        let remote = self.link(host).and_then(|l| l.target.remote().cloned());
        let Some(remote) = remote else {
            let client =
                crate::shared::connect::connect(&self.global_for(host)).map_err(|e| e.to_string());
            self.attach_with(term, view, host, sid, mode, client);
            return;
        };
        let short = crate::shared::cells::short_id(sid).to_string();
        if let Some(k) = &self.attaching {
            view.message = Some(format!(
                "still connecting to {} for {}… (Esc gives up)",
                k.host,
                crate::shared::cells::short_id(&k.session)
            ));
            return;
        }
        self.attaching = Some(RowKey::new(host, sid));
        view.message = Some(format!("connecting to {host} for {short}… (Esc gives up)"));
        // Its own ssh, as quiet as the link's: nothing may be printed on
        // the dashboard, nor asked.
        let mut global = self.global.clone();
        global.targets = vec![Target::Remote(super::remote::quiet(&remote).0)];
        let tx = self.tx.clone();
        let (host, session) = (host.to_string(), sid.to_string());
        std::thread::spawn(move || {
            let client = crate::shared::connect::connect(&global)
                .map(Box::new)
                .map_err(|e| format!("{e:#}"));
            let _ = tx.send(Msg::Attachable {
                host,
                session,
                mode,
                client,
            });
        });
    }

    /// A connection for an attach to another machine's session came (or
    /// failed): attach, unless the user gave up meanwhile.
    pub(super) fn attachable(
        &mut self,
        term: &mut Term,
        view: &mut View,
        key: RowKey,
        mode: AttachMode,
        client: Result<Box<ccd_client::Client>, String>,
    ) {
        if self.attaching.as_ref() != Some(&key) {
            return; // given up: the connection is dropped
        }
        self.attaching = None;
        view.message = None;
        self.attach_with(
            term,
            view,
            &key.host,
            &key.session,
            mode,
            client.map(|c| *c),
        );
    }

    /// Esc while connecting for an attach: gives up (true when there was
    /// one).
    pub(super) fn give_up_attaching(&mut self, view: &mut View) -> bool {
        match self.attaching.take() {
            Some(k) => {
                view.message = Some(format!(
                    "gave up attaching to {}:{}",
                    k.host,
                    crate::shared::cells::short_id(&k.session)
                ));
                true
            }
            None => false,
        }
    }

    fn attach_with(
        &mut self,
        term: &mut Term,
        view: &mut View,
        host: &str,
        sid: &str,
        mode: AttachMode,
        client: Result<ccd_client::Client, String>,
    ) {
        self.input.pause();
        leave_terminal();
        // Until the attach client's raw mode, the terminal is cooked: a
        // detach key (Ctrl-\ is QUIT) or Ctrl-C pressed then must stay a
        // key, not kill the dashboard. Signal keys are off for the spell.
        let cooked = without_signal_keys();
        // A test hook: a key pressed in that spell.
        if let Some(ms) = ccd_test_hooks::Hook::UiAttachDelayMs.parse::<u64>() {
            std::thread::sleep(Duration::from_millis(ms.min(10_000)));
        }
        // Another machine's session is attached over its own ssh (the
        // link's connection carries no stream).
        let r = client.and_then(|client| {
            attach_loop(
                client,
                sid,
                mode,
                self.key,
                AttachExtra {
                    fresh_on_failure: false,
                    last: (mode == AttachMode::Observe).then_some(20),
                },
                &mut |_| {},
            )
            .map_err(|e| attach_error(sid, &e))
        });
        if let Some(t) = &cooked {
            let _ = nix::sys::termios::tcsetattr(std::io::stdin(), SetArg::TCSANOW, t);
        }
        let back = terminal::enable_raw_mode().and_then(|_| {
            execute!(
                std::io::stdout(),
                terminal::EnterAlternateScreen,
                cursor::Hide
            )
        });
        let _ = term.clear();
        self.input.resume();
        if let Err(e) = back {
            view.message = Some(format!("cannot take the terminal back: {e}"));
        }
        let short = crate::shared::cells::short_id(sid).to_string();
        view.message = Some(match r {
            Ok((outcome, attached)) => {
                view.model.select_id(host, &attached.session);
                match outcome {
                    Outcome::Detached => format!("detached from {short}"),
                    Outcome::Exited { code, signal } => match (code, signal) {
                        (Some(c), _) => format!("{short} exited with status {c}"),
                        (None, Some(s)) => format!("{short} was killed by signal {s}"),
                        _ => format!("{short} ended"),
                    },
                    Outcome::DaemonGone => "the ccd daemon went away".into(),
                    Outcome::HolderGone => format!("lost {short}: its ccd holder is gone"),
                    Outcome::Signalled(s) => {
                        self.quit = Some(ExitCode::from(128u8.wrapping_add(s as u8)));
                        format!("signal {s}")
                    }
                }
            }
            Err(e) => e,
        });
        self.preview_stale = true;
        self.reload(host);
    }
}

/// Turns the terminal's signal keys (ISIG: Ctrl-C, Ctrl-\, Ctrl-Z) off;
/// returns the settings to restore.
fn without_signal_keys() -> Option<nix::sys::termios::Termios> {
    use nix::sys::termios::{tcgetattr, tcsetattr, LocalFlags};
    let saved = tcgetattr(std::io::stdin()).ok()?;
    let mut t = saved.clone();
    t.local_flags.remove(LocalFlags::ISIG);
    tcsetattr(std::io::stdin(), SetArg::TCSANOW, &t).ok()?;
    Some(saved)
}

/// One line for a refused or failed attach.
fn attach_error(sid: &str, e: &ccd_client::ClientError) -> String {
    let short = crate::shared::cells::short_id(sid);
    match e.rpc() {
        Some(rpc) if rpc.code == ErrorCode::SessionLiveElsewhere.code() => {
            let pid = rpc
                .data_as::<LiveElsewhereData>()
                .and_then(|d| d.pid)
                .map(|p| format!(" (pid {p})"))
                .unwrap_or_default();
            format!("{short} runs outside ccd{pid}: o observes it, f forks it")
        }
        Some(rpc) => format!("{short}: {}", rpc.message),
        None => format!("{short}: {e}"),
    }
}
