//! `ccd status`: one short line (or one JSON object) saying how many
//! sessions need someone, on which machines, and how many are busy or
//! idle — for a tmux status line (`--format tmux`, run every second),
//! Claude Code's own `statusLine` command, or a script.
//!
//! Each machine (`--host`, several; this one by default) is asked on a
//! thread of its own and each running session judged by
//! [`crate::shared::activity`]. This machine: the sessions ccd holds from
//! its daemon's own table (`sessions.list` `held_only`, no file scan) and
//! the others from Claude Code's registry (`<config>/sessions/*.json`,
//! each entry's process checked), read here — a full `sessions.list`
//! would have the daemon look at every transcript (50 ms of its CPU per
//! call with 10,000 of them, every second under tmux). Another machine:
//! its running sessions (`sessions.list` `live_only`). The whole command
//! waits at most `--deadline-ms` for them: a machine that has not answered
//! by then shows as `?` and the line prints anyway (a thread still waiting
//! is left behind as the process exits), so a status line never hangs.
//! This machine's daemon is never started: without one the line is
//! `ccd: no daemon`, at the cost of a failed `connect`. (Another machine
//! is reached through ssh's `ccd dial-stdio`, in BatchMode, which starts
//! that machine's daemon as for `ccd ls --host`.)

use crate::cli::{GlobalArgs, StatusArgs, StatusFormat};
use crate::hosts::Target;
use crate::shared::activity::{self, Activity};
use crate::shared::connect::{connect_existing_local, CLIENT_NAME};
use crate::shared::listing::list_pages;
use ccd_claude::display;
use ccd_protocol::methods::session::{ListParams, SessionInfo};
use serde::Serialize;
use std::io::Write;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a machine said, or why it said nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    Counted(Counts),
    /// No daemon runs there (this machine only: never started).
    NoDaemon,
    Failed(String),
    /// Nothing by the deadline.
    Late,
}

/// Running sessions on one machine (or all), by what they are doing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub needs_you: u32,
    pub busy: u32,
    pub idle: u32,
    /// Running but none of the above (starting, an unknown status).
    pub other: u32,
}

impl Counts {
    fn add(&mut self, a: Activity) {
        match a {
            Activity::NeedsYou => self.needs_you += 1,
            Activity::Busy => self.busy += 1,
            Activity::Idle => self.idle += 1,
            Activity::Other => self.other += 1,
            Activity::Exited => {}
        }
    }

    fn plus(self, o: Counts) -> Counts {
        Counts {
            needs_you: self.needs_you + o.needs_you,
            busy: self.busy + o.busy,
            idle: self.idle + o.idle,
            other: self.other + o.other,
        }
    }
}

/// A session that needs someone, for `--format json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct Waiting {
    host: String,
    session: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
    /// The dialog, when known: `Bash command npm test`, `permission
    /// prompt`, a `needs-attention` reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<String>,
}

pub fn run(global: &GlobalArgs, args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let until = Instant::now() + Duration::from_millis(args.deadline_ms);
    let targets: Vec<Target> = if global.targets.is_empty() {
        vec![Target::Local]
    } else {
        global.targets.clone()
    };
    let (tx, rx) = mpsc::channel();
    for (i, t) in targets.iter().enumerate() {
        let (tx, global, t) = (tx.clone(), global.clone(), t.clone());
        std::thread::Builder::new()
            .name("ccd-status".into())
            .spawn(move || {
                let _ = tx.send((i, ask(&global, &t)));
            })?;
    }
    drop(tx);
    let mut answers: Vec<Result<Vec<Seen>, Answer>> = vec![Err(Answer::Late); targets.len()];
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok((i, a)) => answers[i] = a,
            Err(_) => break, // the deadline, or every machine answered
        }
    }
    let mut machines = Vec::new();
    let mut waiting = Vec::new();
    for (t, a) in targets.iter().zip(answers) {
        let host = t.label().to_string();
        let answer = match a {
            Ok(seen) => {
                let mut c = Counts::default();
                for s in seen {
                    c.add(s.activity);
                    if let Some(mut w) = s.waiting {
                        w.host = host.clone();
                        waiting.push(w);
                    }
                }
                Answer::Counted(c)
            }
            Err(e) => e,
        };
        machines.push((host, answer));
    }
    let all_answered = machines
        .iter()
        .all(|(_, a)| matches!(a, Answer::Counted(_)));
    let text = match args.format {
        StatusFormat::Json => display::json::to_string(&json(&machines, &waiting))?,
        f => line(&machines, f == StatusFormat::Tmux),
    };
    for (host, a) in &machines {
        match a {
            Answer::Failed(e) => {
                eprintln!("ccd status: {}: {}", display::line(host), display::line(e))
            }
            Answer::Late => eprintln!(
                "ccd status: {}: no answer within {} ms",
                display::line(host),
                args.deadline_ms
            ),
            _ => {}
        }
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(if all_answered {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// One running session: what it is doing and, when it needs someone,
/// who and why.
#[derive(Clone)]
struct Seen {
    activity: Activity,
    waiting: Option<Waiting>,
}

impl Seen {
    fn of_info(r: &SessionInfo) -> Seen {
        let activity = activity::of(r);
        Seen {
            activity,
            waiting: (activity == Activity::NeedsYou).then(|| waiting_of(r)),
        }
    }
}

/// One machine's running sessions: this one's daemon only if it runs;
/// another's through ssh in BatchMode (nobody could answer a question).
fn ask(global: &GlobalArgs, t: &Target) -> Result<Vec<Seen>, Answer> {
    let failed = |e: ccd_client::ClientError| Answer::Failed(e.to_string());
    match t {
        Target::Local => {
            let mut c = connect_existing_local(global)
                .map_err(failed)?
                .ok_or(Answer::NoDaemon)?;
            let params = ListParams {
                held_only: true,
                no_cost: true,
                ..Default::default()
            };
            let held = list_pages(&mut c, params).map_err(failed)?;
            let mut seen: Vec<Seen> = held.iter().map(Seen::of_info).collect();
            seen.extend(outside_ccd(global, &held).map_err(|e| Answer::Failed(format!("{e:#}")))?);
            Ok(seen)
        }
        Target::Remote(r) => {
            let mut r = r.clone();
            r.batch = true;
            let mut c = ccd_client::ssh::connect(&r, CLIENT_NAME).map_err(failed)?;
            let params = ListParams {
                live_only: true,
                no_cost: true,
                ..Default::default()
            };
            let rows = list_pages(&mut c, params).map_err(failed)?;
            Ok(rows.iter().map(Seen::of_info).collect())
        }
    }
}

/// The sessions running on this machine that ccd does not hold: Claude
/// Code's registry entries whose process may be running (the check the
/// daemon's registry watcher makes), less the ones of `held` (by pid or
/// session id), judged by their status.
fn outside_ccd(global: &GlobalArgs, held: &[SessionInfo]) -> anyhow::Result<Vec<Seen>> {
    let config = ccd_claude::ClaudeConfigDir::resolve(global.claude_config_dir.as_deref())?;
    let entries = match ccd_claude::registry::read_all(&config.sessions_dir()) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(anyhow::Error::new(e).context("reading Claude Code's registry")),
    };
    let probe = ccd_claude::liveness::system_probe();
    let held_live: Vec<&SessionInfo> = held
        .iter()
        .filter(|h| activity::of(h) != Activity::Exited)
        .collect();
    Ok(entries
        .into_iter()
        .filter(|e| {
            !held_live
                .iter()
                .any(|h| h.pid == Some(e.pid) || h.session_id == e.session_id)
        })
        .filter(|e| {
            ccd_claude::liveness::check(e, probe.as_ref())
                .liveness
                .may_be_running()
        })
        .map(|e| {
            let status = e.status.as_deref().map(activity::status_of);
            let activity = activity::of_status(status);
            let waiting = (activity == Activity::NeedsYou).then(|| Waiting {
                host: String::new(),
                session: e.session_id.clone(),
                name: e.name.clone(),
                title: None,
                cwd: e.cwd.clone(),
                why: e.waiting_for.clone(),
            });
            Seen { activity, waiting }
        })
        .collect())
}

fn waiting_of(r: &SessionInfo) -> Waiting {
    let why = r
        .ccd
        .as_ref()
        .and_then(|c| c.permission.clone().or_else(|| c.attention.clone()))
        .or_else(|| r.waiting_for.clone());
    Waiting {
        host: String::new(),
        session: r.session_id.clone(),
        name: r.name.clone(),
        title: r.title.clone(),
        cwd: r.cwd.clone(),
        why,
    }
}

/// The JSON object: the totals over the machines that answered, each
/// machine's counts (or its `error`), and the sessions that need someone.
fn json(machines: &[(String, Answer)], waiting: &[Waiting]) -> serde_json::Value {
    let mut total = Counts::default();
    let list: Vec<serde_json::Value> = machines
        .iter()
        .map(|(host, a)| {
            let mut v = serde_json::json!({ "host": host });
            match a {
                Answer::Counted(c) => {
                    total = total.plus(*c);
                    if let (Some(o), Ok(serde_json::Value::Object(m))) =
                        (v.as_object_mut(), serde_json::to_value(c))
                    {
                        o.extend(m);
                    }
                }
                Answer::NoDaemon => v["error"] = "no daemon".into(),
                Answer::Failed(e) => v["error"] = e.clone().into(),
                Answer::Late => v["error"] = "no answer in time".into(),
            }
            v
        })
        .collect();
    let mut v = serde_json::to_value(total).unwrap_or_default();
    v["machines"] = list.into();
    v["waiting"] = serde_json::to_value(waiting).unwrap_or_default();
    v
}

/// The one line of `plain` and `tmux`: `2 need you (local 1, devbox 1) ·
/// 3 busy · 4 idle`, a machine that did not answer as `devbox ?`; tmux
/// styles only in `tmux` (and a `#` of a host name doubled there, so
/// that tmux prints it rather than reads a format).
fn line(machines: &[(String, Answer)], tmux: bool) -> String {
    if let [(_, Answer::NoDaemon)] = machines {
        return "ccd: no daemon".to_string();
    }
    let name = |h: &str| {
        let h = display::line(h).into_owned();
        if tmux {
            h.replace('#', "##")
        } else {
            h
        }
    };
    let several = machines.len() > 1;
    let mut total = Counts::default();
    let mut needing = Vec::new();
    let mut missing = Vec::new();
    for (host, a) in machines {
        match a {
            Answer::Counted(c) => {
                total = total.plus(*c);
                if several && c.needs_you > 0 {
                    needing.push(format!("{} {}", name(host), c.needs_you));
                }
            }
            _ => missing.push(format!("{} ?", name(host))),
        }
    }
    let style = |on: &str, text: String| {
        if tmux {
            format!("#[{on}]{text}#[default]")
        } else {
            text
        }
    };
    let mut needs = format!(
        "{} need{} you",
        total.needs_you,
        if total.needs_you == 1 { "s" } else { "" }
    );
    if !needing.is_empty() {
        needs.push_str(&format!(" ({})", needing.join(", ")));
    }
    let mut parts = vec![if total.needs_you > 0 {
        style("fg=red,bold", needs)
    } else {
        needs
    }];
    parts.push(if total.busy > 0 {
        style("fg=yellow", format!("{} busy", total.busy))
    } else {
        format!("{} busy", total.busy)
    });
    parts.push(format!("{} idle", total.idle));
    parts.extend(missing);
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(needs_you: u32, busy: u32, idle: u32) -> Answer {
        Answer::Counted(Counts {
            needs_you,
            busy,
            idle,
            other: 0,
        })
    }

    #[test]
    fn one_machine_is_one_plain_line_and_tmux_styles_only_in_tmux() {
        let m = vec![("local".to_string(), counted(1, 2, 3))];
        assert_eq!(line(&m, false), "1 needs you · 2 busy · 3 idle");
        assert_eq!(
            line(&m, true),
            "#[fg=red,bold]1 needs you#[default] · #[fg=yellow]2 busy#[default] · 3 idle"
        );
        let m = vec![("local".to_string(), counted(0, 0, 1))];
        assert_eq!(line(&m, true), "0 need you · 0 busy · 1 idle");
    }

    #[test]
    fn several_machines_name_where_someone_is_needed_and_who_did_not_answer() {
        let m = vec![
            ("local".to_string(), counted(1, 0, 1)),
            ("dev#box".to_string(), counted(2, 1, 0)),
            ("far".to_string(), Answer::Late),
            ("near".to_string(), Answer::NoDaemon),
        ];
        assert_eq!(
            line(&m, false),
            "3 need you (local 1, dev#box 2) · 1 busy · 1 idle · far ? · near ?"
        );
        let tmux = line(&m, true);
        assert!(tmux.contains("(local 1, dev##box 2)"), "{tmux}");
        assert!(tmux.ends_with(" · far ? · near ?"), "{tmux}");
    }

    #[test]
    fn no_daemon_here_is_said_in_three_words() {
        let m = vec![("local".to_string(), Answer::NoDaemon)];
        assert_eq!(line(&m, false), "ccd: no daemon");
        assert_eq!(line(&m, true), "ccd: no daemon");
        let v = json(&m, &[]);
        assert_eq!(v["machines"][0]["error"], "no daemon");
        assert_eq!(v["needs_you"], 0);
    }

    #[test]
    fn the_json_totals_only_what_answered() {
        let m = vec![
            ("local".to_string(), counted(1, 2, 3)),
            ("far".to_string(), Answer::Failed("ssh: exit 255".into())),
        ];
        let w = Waiting {
            host: "local".into(),
            session: "s".into(),
            name: None,
            title: Some("fix it".into()),
            cwd: None,
            why: Some("Bash command ls".into()),
        };
        let v = json(&m, &[w]);
        assert_eq!(v["needs_you"], 1);
        assert_eq!(v["busy"], 2);
        assert_eq!(v["machines"][0]["idle"], 3);
        assert_eq!(v["machines"][1]["error"], "ssh: exit 255");
        assert_eq!(v["waiting"][0]["why"], "Bash command ls");
    }
}
