//! `ccd new`: start a claude session under ccd, show progress, print its id.

use crate::cli::{GlobalArgs, NewArgs};
use crate::term::AttachExtra;
use ccd_claude::display::line;
use ccd_protocol::error_data::ScreenData;
use ccd_protocol::methods::session::{self, Lifecycle, NewParams, SessionNew, SessionProgress};
use ccd_protocol::methods::TermSize;
use ccd_protocol::NotificationKind;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, args: &NewArgs) -> anyhow::Result<ExitCode> {
    let remote = crate::hosts::single(global)?.remote().is_some();
    let cwd = match &args.cwd {
        Some(c) => c.clone(),
        None if remote => anyhow::bail!(
            "on another machine, say where: --cwd DIR (a directory there; this one's current directory means nothing there)"
        ),
        None => std::env::current_dir()?,
    };
    // A remote path is the remote daemon's to check and normalize.
    let cwd = if remote {
        cwd
    } else {
        ccd_claude::paths::normalize(&cwd)
    };
    let mut client = crate::shared::connect::connect(global)?;
    let size = terminal_size();
    // Chosen here, so that a daemon lost before it replies cannot leave
    // the user without the id (and starting a duplicate).
    let mut sid_asked = uuid::Uuid::new_v4().to_string();
    let params = NewParams {
        cwd: cwd.to_string_lossy().into_owned(),
        args: args.claude_args.clone(),
        name: args.name.clone(),
        size: size.map(|(cols, rows)| TermSize { cols, rows }),
        auto_trust: !args.no_auto_trust,
        wait: true,
        session_id: Some(sid_asked.clone()),
    };
    let tty = std::io::stderr().is_terminal();
    let mut progress = Progress::new(tty);
    progress.show("starting claude");
    let r = client.call_with::<SessionNew>(&params, &mut |n| {
        if n.method == SessionProgress::NAME {
            let p = n.params_as::<session::Progress>().ok();
            if let Some(s) = p.as_ref().and_then(|p| p.session.as_deref()) {
                sid_asked = s.to_string();
            }
            if let Some(p) = &p {
                progress.show(match &p.lifecycle {
                    Lifecycle::Starting => "starting claude",
                    Lifecycle::Trust => "answering the folder-trust dialog",
                    Lifecycle::NeedsAttention => "needs attention",
                    other => other.as_str(),
                });
            }
        }
    });
    progress.done();
    let r = match r {
        Ok(r) => r,
        Err(e) => {
            if let Some(rpc) = e.rpc() {
                eprintln!("ccd new: {}", line(&rpc.message));
                super::attached::print_screen(
                    rpc.data_as::<ScreenData>()
                        .and_then(|d| d.screen)
                        .as_deref(),
                    "screen",
                );
                return Ok(ExitCode::FAILURE);
            }
            return Ok(lost(&sid_asked, &cwd, &e, &crate::hosts::ccd_on(global)));
        }
    };
    let lifecycle = &r.lifecycle;
    let sid = r.session.clone().unwrap_or_default();
    match lifecycle {
        Lifecycle::NeedsAttention
        | Lifecycle::Failed
        | Lifecycle::Exited
        | Lifecycle::Starting
        | Lifecycle::Trust => {
            eprintln!(
                "ccd new: session {} is {lifecycle}: {}",
                line(if sid.is_empty() { &r.holder } else { &sid }),
                line(r.reason.as_deref().unwrap_or("it did not reach the prompt"))
            );
            super::attached::print_screen(r.screen.as_deref(), "screen");
            if *lifecycle == Lifecycle::NeedsAttention {
                eprintln!(
                    "Answer it yourself with `{} attach {}`.",
                    crate::hosts::ccd_on(global),
                    line(crate::shared::cells::short_id(&sid))
                );
                println!("{}", line(&sid));
            }
            return Ok(ExitCode::FAILURE);
        }
        _ => {}
    }
    println!("{}", line(&sid));
    if args.detach || !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Ok(ExitCode::SUCCESS);
    }
    let key = crate::shared::terminal::detach_key(global, &args.key)?;
    super::attached::attach_and_report(
        global,
        client,
        &sid,
        crate::term::Mode::Interactive,
        key,
        AttachExtra::default(),
    )
}

/// The daemon went away (or stopped answering) after `session.new` was
/// sent: the session may well be starting under its holder, which a new
/// daemon adopts. Says which id it has and how to find it, so that
/// nobody starts a second one; the id goes to stdout as on success.
fn lost(sid: &str, cwd: &std::path::Path, e: &ccd_client::ClientError, ccd: &str) -> ExitCode {
    let short = crate::shared::cells::short_id(sid);
    eprintln!(
        "ccd new: lost the ccd daemon while starting session {sid} in {}: {e}",
        cwd.display()
    );
    eprintln!(
        "ccd new: the session may be running anyway; do not start another. `{ccd} ls` shows it once a daemon runs again (any ccd command starts one), and `{ccd} attach {short}` reaches it"
    );
    println!("{sid}");
    ExitCode::from(3)
}

/// The controlling terminal's size, if there is one (on stderr).
pub fn terminal_size() -> Option<(u16, u16)> {
    use std::os::fd::AsFd;
    crate::term::raw::size_of(std::io::stderr().as_fd())
}

/// One-line progress on stderr: a spinner line on a terminal, plain lines
/// otherwise.
struct Progress {
    tty: bool,
    last: String,
}

impl Progress {
    fn new(tty: bool) -> Self {
        Self {
            tty,
            last: String::new(),
        }
    }

    fn show(&mut self, what: &str) {
        if what == self.last {
            return;
        }
        self.last = what.to_string();
        let what = line(what);
        let mut e = std::io::stderr();
        if self.tty {
            let _ = write!(e, "\r\x1b[2K⠿ {what}…");
        } else {
            let _ = writeln!(e, "ccd: {what}");
        }
        let _ = e.flush();
    }

    fn done(&mut self) {
        if self.tty {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}
