//! Which machine a command talks to: `--host` (repeatable for `ccd ls`),
//! else `$CCD_HOST` (comma-separated), else this machine. A host is `local`,
//! `ssh://[user@]host[:port]`, or a name from the config file's `[hosts]`.
//! A remote is reached through the system ssh (`$CCD_SSH_COMMAND`, split at
//! whitespace, else the config's `ssh_command`, else `ssh`) running
//! `<remote_ccd> dial-stdio` there (`--remote-ccd`, the host entry's or the
//! config's `remote_ccd`, else `ccd`).

use crate::cli::GlobalArgs;
use crate::settings::{HostEntry, Settings};
use anyhow::Context;
use ccd_client::ssh::{Remote, SshTarget, StderrSink};
use std::ffi::OsString;

/// The name `ccd ls` shows for this machine (and `--host local`).
pub const LOCAL: &str = "local";

/// One machine.
#[derive(Debug, Clone)]
pub enum Target {
    Local,
    Remote(Remote),
}

impl Target {
    /// The name shown in `ccd ls`'s `host` column and field.
    pub fn label(&self) -> &str {
        match self {
            Target::Local => LOCAL,
            Target::Remote(r) => &r.label,
        }
    }

    pub fn remote(&self) -> Option<&Remote> {
        match self {
            Target::Local => None,
            Target::Remote(r) => Some(r),
        }
    }
}

/// The hosts this invocation names (at least one: this machine by default).
pub fn resolve(global: &GlobalArgs) -> anyhow::Result<Vec<Target>> {
    let given: Vec<String> = if !global.hosts.is_empty() {
        global.hosts.clone()
    } else {
        std::env::var("CCD_HOST")
            .ok()
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    };
    if given.is_empty() {
        return Ok(vec![Target::Local]);
    }
    resolve_names(global, &given)
}

/// The machines a front end that shows several (`ccd ui`, `ccd web`)
/// serves: `--host` (or `$CCD_HOST`), else the config's `ui_hosts`, else
/// this one.
pub fn dashboard(global: &GlobalArgs, settings: &Settings) -> anyhow::Result<Vec<Target>> {
    let named =
        !global.hosts.is_empty() || std::env::var("CCD_HOST").is_ok_and(|v| !v.trim().is_empty());
    match &settings.ui_hosts {
        Some(hosts) if !named && !hosts.is_empty() => resolve_names(global, hosts),
        _ => resolve(global),
    }
}

/// The hosts `given` names (`local`, a URL or a `[hosts]` name each), in
/// order, each once.
pub fn resolve_names(global: &GlobalArgs, given: &[String]) -> anyhow::Result<Vec<Target>> {
    let settings = Settings::load(global.config.as_deref())?;
    let ssh = ssh_command(&settings);
    let mut out: Vec<Target> = Vec::new();
    for h in given {
        let t = resolve_one(h, &settings, global.remote_ccd.as_deref(), &ssh)?;
        if !out.iter().any(|o| o.label() == t.label()) {
            out.push(t);
        }
    }
    Ok(out)
}

fn resolve_one(
    given: &str,
    settings: &Settings,
    flag_remote_ccd: Option<&str>,
    ssh: &[OsString],
) -> anyhow::Result<Target> {
    if given == LOCAL {
        return Ok(Target::Local);
    }
    let (label, url, entry_ccd) = if given.starts_with("ssh://") {
        (
            given.trim_start_matches("ssh://").to_string(),
            given.to_string(),
            None,
        )
    } else {
        match settings.hosts.get(given) {
            Some(HostEntry::Url(u)) => (given.to_string(), u.clone(), None),
            Some(HostEntry::Full { url, remote_ccd }) => {
                (given.to_string(), url.clone(), remote_ccd.clone())
            }
            None => anyhow::bail!(
                "unknown host {:?}: give ssh://[user@]host[:port], `local`, or a name from the config file's [hosts]{}",
                ccd_claude::display::line(given),
                if settings.hosts.is_empty() {
                    String::new()
                } else {
                    format!(
                        " ({})",
                        settings.hosts.keys().cloned().collect::<Vec<_>>().join(", ")
                    )
                }
            ),
        }
    };
    let target: SshTarget = url
        .parse()
        .with_context(|| format!("host {}", ccd_claude::display::line(&label)))?;
    let (remote_ccd, from) = match (flag_remote_ccd, entry_ccd, &settings.remote_ccd) {
        (Some(f), _, _) => (f.to_string(), "--remote-ccd".to_string()),
        (None, Some(e), _) => (
            e,
            format!("remote_ccd of [hosts] {label} in the config file"),
        ),
        (None, None, Some(c)) => (c.clone(), "remote_ccd in the config file".to_string()),
        (None, None, None) => ("ccd".to_string(), "the default".to_string()),
    };
    ccd_client::ssh::check_remote_ccd(&remote_ccd).map_err(|e| {
        anyhow::anyhow!(
            "{}: {}; nothing was run",
            ccd_claude::display::line(&from),
            ccd_claude::display::line(&e.to_string())
        )
    })?;
    Ok(Target::Remote(Remote {
        target,
        label,
        ssh: ssh.to_vec(),
        remote_ccd,
        stderr: StderrSink::Lines(std::sync::Arc::new(print_remote_line)),
        batch: false,
    }))
}

/// One line ssh wrote on stderr (its own messages, or the remote shell's
/// and ccd's there): made safe to print, as every text from elsewhere.
/// ssh's questions do not come this way (it asks on the terminal).
fn print_remote_line(line: &[u8]) {
    use std::io::{IsTerminal, Write};
    let text = String::from_utf8_lossy(line);
    let text = ccd_claude::display::line(&text);
    let mut err = std::io::stderr().lock();
    // An attached terminal is raw: a bare newline would not return.
    let end = if err.is_terminal() { "\r\n" } else { "\n" };
    let _ = write!(err, "{text}{end}");
    let _ = err.flush();
}

/// The ssh program and its first options.
fn ssh_command(settings: &Settings) -> Vec<OsString> {
    if let Some(v) = std::env::var("CCD_SSH_COMMAND")
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        return v.split_whitespace().map(OsString::from).collect();
    }
    match &settings.ssh_command {
        Some(v) if !v.is_empty() => v.iter().map(OsString::from).collect(),
        _ => vec!["ssh".into()],
    }
}

/// The one host of a command that talks to one machine.
pub fn single(global: &GlobalArgs) -> anyhow::Result<&Target> {
    match global.targets.as_slice() {
        [] => Ok(&Target::Local),
        [one] => Ok(one),
        more => anyhow::bail!(
            "{} hosts given ({}): only `ccd ls` lists several; name one with --host",
            more.len(),
            more.iter()
                .map(|t| t.label())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// How to run a ccd command again on the same host: `ccd` or
/// `ccd --host <label>`.
pub fn ccd_on(global: &GlobalArgs) -> String {
    match single(global) {
        Ok(Target::Remote(r)) => {
            let url = r.target.to_string();
            if url.trim_start_matches("ssh://") == r.label {
                format!("ccd --host {url}")
            } else {
                format!("ccd --host {}", r.label)
            }
        }
        _ => "ccd".to_string(),
    }
}

/// `HOST:session` when neither `--host` nor `$CCD_HOST` names a host and
/// `HOST` is `local` or a name of the config's `[hosts]` (what `ccd ls`
/// shows in its HOST column): the host and the session. Anything else is
/// left alone (a session name may hold a colon).
pub fn split_session(
    global: &GlobalArgs,
    session: &str,
) -> anyhow::Result<Option<(String, String)>> {
    let env_host = std::env::var("CCD_HOST").is_ok_and(|v| !v.trim().is_empty());
    let Some((host, rest)) = session.split_once(':') else {
        return Ok(None);
    };
    if !global.hosts.is_empty() || env_host || rest.is_empty() {
        return Ok(None);
    }
    if host == LOCAL {
        return Ok(Some((host.to_string(), rest.to_string())));
    }
    let settings = Settings::load(global.config.as_deref())?;
    Ok(settings
        .hosts
        .contains_key(host)
        .then(|| (host.to_string(), rest.to_string())))
}
