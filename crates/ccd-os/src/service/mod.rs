//! The daemon started at login by the user's service manager: the file
//! `ccd service install` writes and the manager calls around it.
//!
//! Both files are written here, on every system, by pure functions (so
//! both are tested on Linux): [`systemd_unit`] (a systemd user unit) and
//! [`launchd_plist`] (a launchd agent, written with the `plist` crate),
//! and read back by [`unit_program`] / [`plist_program`] for `ccd service
//! status`. What holds across both:
//!
//! - **The holders outlive the service.** A held session lives in its
//!   holder (its own session, `setsid`), which a restarted daemon adopts.
//!   systemd kills a unit's whole cgroup on stop and restart by default,
//!   which would end every held session on `systemctl --user restart
//!   ccd`: the unit says `KillMode=process` (only the daemon is
//!   signalled). launchd kills the job's process group; the holders are
//!   not in it, and the agent says `AbandonProcessGroup` as well.
//! - **Restarted on failure only.** `Restart=on-failure` / `KeepAlive`
//!   `{SuccessfulExit = false}`: `ccd daemon stop` (exit 0) stays stopped.
//!   A daemon that finds another one serving the socket (one a client
//!   started outside the service) exits [`EXIT_ANOTHER_DAEMON`], which
//!   the unit's `RestartPreventExitStatus` keeps systemd from restarting
//!   (it would otherwise retry into its start limit); launchd has no such
//!   key and retries at its throttle (10 s) until the other one is gone.
//! - **What it runs** is a [`Spec`]: the absolute path of the ccd binary,
//!   its arguments and the environment carried from the install.
//!
//! The manager calls (`systemctl --user`, `launchctl`) are the platform
//! sides: `linux` (systemd) and `macos` (launchd), re-exported as
//! [`manager`]. Each runs the manager's own command line tool and says
//! what it printed when it fails; none blocks longer than that tool.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;

/// This system's service manager: systemd's user manager on Linux,
/// launchd on macOS.
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub mod manager {
    #[cfg(target_os = "linux")]
    pub use super::linux::*;
    #[cfg(target_os = "macos")]
    pub use super::macos::*;
}

/// The systemd unit's name (`~/.config/systemd/user/ccd.service`).
pub const SYSTEMD_UNIT: &str = "ccd.service";

/// `ccd daemon`'s exit code when another daemon holds its lock or
/// answers on its socket.
pub const EXIT_ANOTHER_DAEMON: u8 = 4;

/// The launchd agent's label (`~/Library/LaunchAgents/<label>.plist`).
pub const LAUNCHD_LABEL: &str = "dev.ccd.daemon";

/// What the service runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// The ccd binary, absolute.
    pub program: PathBuf,
    /// Its arguments (`daemon` and the global options carried).
    pub args: Vec<OsString>,
    /// The environment carried from the install, in this order.
    pub env: Vec<(String, OsString)>,
    /// launchd only: where the daemon's standard error goes (its own logs
    /// are in the state dir; this catches what comes before them).
    pub stderr_path: Option<PathBuf>,
}

/// Why a service file cannot be written or the manager failed.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// A path, argument or value that is not UTF-8: neither file format
    /// carries other bytes.
    #[error("{what} is not UTF-8: {value:?}")]
    NotUtf8 { what: &'static str, value: OsString },
    /// An environment name a unit cannot carry (empty, `=`, control or
    /// space characters).
    #[error("not a usable environment variable name: {0:?}")]
    BadEnvName(String),
    /// A relative program path: the manager starts it from `/`.
    #[error("the program path is not absolute: {0}")]
    RelativeProgram(PathBuf),
    /// The plist could not be written.
    #[error("writing the launchd plist: {0}")]
    Plist(String),
    /// The manager's tool could not be run.
    #[error("running {tool}: {source}")]
    Spawn {
        tool: String,
        #[source]
        source: std::io::Error,
    },
    /// The manager's tool ran and failed.
    #[error("`{command}` failed ({status}): {output}")]
    Failed {
        command: String,
        status: String,
        output: String,
    },
}

fn utf8<'a>(what: &'static str, s: &'a std::ffi::OsStr) -> Result<&'a str, ServiceError> {
    s.to_str().ok_or_else(|| ServiceError::NotUtf8 {
        what,
        value: s.to_owned(),
    })
}

fn check_spec(spec: &Spec) -> Result<(), ServiceError> {
    if !spec.program.is_absolute() {
        return Err(ServiceError::RelativeProgram(spec.program.clone()));
    }
    for (name, _) in &spec.env {
        if name.is_empty()
            || name
                .chars()
                .any(|c| c == '=' || c.is_control() || c.is_whitespace())
        {
            return Err(ServiceError::BadEnvName(name.clone()));
        }
    }
    Ok(())
}

/// `s` as one word of a systemd unit setting: double-quoted, with
/// systemd's C-style escapes inside (`\\`, `\"`, control characters as
/// `\xNN`), `%` doubled (specifiers) and, where `dollar` (command lines,
/// which expand `$VAR`), `$` doubled.
fn systemd_quote(s: &str, dollar: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            '$' if dollar => out.push_str("$$"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(out, "\\x{b:02x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The systemd user unit for `spec`.
pub fn systemd_unit(spec: &Spec) -> Result<String, ServiceError> {
    check_spec(spec)?;
    let mut exec = systemd_quote(utf8("the ccd path", spec.program.as_os_str())?, true);
    for a in &spec.args {
        exec.push(' ');
        exec.push_str(&systemd_quote(utf8("an argument", a)?, true));
    }
    let mut env = String::new();
    for (name, value) in &spec.env {
        let v = utf8("an environment value", value)?;
        let _ = writeln!(
            env,
            "Environment={}",
            systemd_quote(&format!("{name}={v}"), false)
        );
    }
    Ok(format!(
        "# Written by `ccd service install`; `ccd service uninstall` removes it.\n\
         [Unit]\n\
         Description=ccd: Claude Code sessions under PTYs\n\
         \n\
         [Service]\n\
         Type=exec\n\
         ExecStart={exec}\n\
         Restart=on-failure\n\
         RestartSec=2\n\
         # Another ccd daemon already serves the socket: not restarted.\n\
         RestartPreventExitStatus={another}\n\
         # The held sessions live in holder processes that outlive the daemon\n\
         # (the next daemon adopts them): stopping or restarting the unit\n\
         # signals the daemon alone, never the rest of its cgroup.\n\
         KillMode=process\n\
         {env}\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        another = EXIT_ANOTHER_DAEMON
    ))
}

/// Undoes [`systemd_quote`] on one double-quoted word at the start of
/// `s`; `None` when `s` does not start with one.
fn systemd_unquote(s: &str) -> Option<String> {
    let mut chars = s.strip_prefix('"')?.chars();
    let mut out = Vec::<u8>::new();
    let mut buf = [0u8; 4];
    while let Some(c) = chars.next() {
        match c {
            '"' => return String::from_utf8(out).ok(),
            '\\' => match chars.next()? {
                'n' => out.push(b'\n'),
                't' => out.push(b'\t'),
                'x' => {
                    let hex: String = chars.by_ref().take(2).collect();
                    out.push(u8::from_str_radix(&hex, 16).ok()?);
                }
                c => out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
            },
            '%' | '$' => {
                // Written doubled; a single one is not ours.
                if chars.next()? != c {
                    return None;
                }
                out.push(c as u8);
            }
            c => out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
        }
    }
    None
}

/// The program a unit written by [`systemd_unit`] starts (its
/// `ExecStart`'s first word); `None` for a unit that is not such.
pub fn unit_program(unit: &str) -> Option<PathBuf> {
    let line = unit.lines().find_map(|l| l.strip_prefix("ExecStart="))?;
    systemd_unquote(line).map(PathBuf::from)
}

/// The launchd agent for `spec`, labelled [`LAUNCHD_LABEL`], as XML.
pub fn launchd_plist(spec: &Spec) -> Result<Vec<u8>, ServiceError> {
    use plist::{Dictionary, Value};
    check_spec(spec)?;
    let mut args = vec![Value::String(
        utf8("the ccd path", spec.program.as_os_str())?.to_owned(),
    )];
    for a in &spec.args {
        args.push(Value::String(utf8("an argument", a)?.to_owned()));
    }
    let mut env = Dictionary::new();
    for (name, value) in &spec.env {
        env.insert(
            name.clone(),
            Value::String(utf8("an environment value", value)?.to_owned()),
        );
    }
    let mut keep_alive = Dictionary::new();
    // Restarted when it exits with a failure (or a signal), not after
    // `ccd daemon stop`.
    keep_alive.insert("SuccessfulExit".into(), Value::Boolean(false));
    let mut d = Dictionary::new();
    d.insert("Label".into(), Value::String(LAUNCHD_LABEL.into()));
    d.insert("ProgramArguments".into(), Value::Array(args));
    d.insert("EnvironmentVariables".into(), Value::Dictionary(env));
    d.insert("RunAtLoad".into(), Value::Boolean(true));
    d.insert("KeepAlive".into(), Value::Dictionary(keep_alive));
    // The holders (each in a session of its own) outlive the daemon; this
    // keeps launchd from killing what is left in its process group too.
    d.insert("AbandonProcessGroup".into(), Value::Boolean(true));
    d.insert("ProcessType".into(), Value::String("Interactive".into()));
    if let Some(p) = &spec.stderr_path {
        d.insert(
            "StandardErrorPath".into(),
            Value::String(utf8("the stderr path", p.as_os_str())?.to_owned()),
        );
    }
    let mut out = Vec::new();
    Value::Dictionary(d)
        .to_writer_xml(&mut out)
        .map_err(|e| ServiceError::Plist(e.to_string()))?;
    out.push(b'\n');
    Ok(out)
}

/// The program an agent written by [`launchd_plist`] starts (the first
/// of its `ProgramArguments`).
pub fn plist_program(bytes: &[u8]) -> Option<PathBuf> {
    let v = plist::Value::from_reader(std::io::Cursor::new(bytes)).ok()?;
    let first = v
        .as_dictionary()?
        .get("ProgramArguments")?
        .as_array()?
        .first()?
        .as_string()?;
    Some(PathBuf::from(first))
}

/// Where the systemd user unit goes: `$XDG_CONFIG_HOME/systemd/user`
/// (an absolute `XDG_CONFIG_HOME` only, as the spec says), else
/// `~/.config/systemd/user`.
pub fn systemd_unit_path(home: &Path, xdg_config_home: Option<&Path>) -> PathBuf {
    xdg_config_home
        .filter(|p| p.is_absolute())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| home.join(".config"))
        .join("systemd/user")
        .join(SYSTEMD_UNIT)
}

/// Where the launchd agent goes: `~/Library/LaunchAgents/<label>.plist`.
pub fn launchd_plist_path(home: &Path) -> PathBuf {
    home.join("Library/LaunchAgents")
        .join(format!("{LAUNCHD_LABEL}.plist"))
}

/// What the manager says of the installed service.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManagerState {
    /// Started at login (`systemctl --user is-enabled`; launchd: loaded
    /// and not disabled).
    pub enabled: bool,
    /// Running now.
    pub running: bool,
    /// The running daemon's pid, when the manager says.
    pub pid: Option<u32>,
    /// The manager's own word for the state (`active`, `failed`,
    /// `running`, ...).
    pub detail: String,
}

/// Runs `tool args…`, its output for a failure message; `Ok(stdout)` on
/// success. Used by both sides.
#[cfg_attr(not(any(target_os = "linux", target_os = "macos")), allow(dead_code))]
fn run_tool(tool: &str, args: &[&str]) -> Result<String, ServiceError> {
    let out = std::process::Command::new(tool)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|source| ServiceError::Spawn {
            tool: tool.to_owned(),
            source,
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        tracing::debug!(tool, ?args, "service manager call succeeded");
        return Ok(stdout);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let output = format!("{} {}", stderr.trim(), stdout.trim())
        .trim()
        .to_owned();
    tracing::debug!(tool, ?args, status = %out.status, %output, "service manager call failed");
    Err(ServiceError::Failed {
        command: format!("{tool} {}", args.join(" ")),
        status: out.status.to_string(),
        output,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(program: &str, env: &[(&str, &str)]) -> Spec {
        Spec {
            program: PathBuf::from(program),
            args: vec!["daemon".into()],
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
                .collect(),
            stderr_path: None,
        }
    }

    #[test]
    fn the_unit_keeps_the_holders_and_restarts_on_failure_only() {
        let unit = systemd_unit(&spec("/usr/bin/ccd", &[])).unwrap();
        let settings: Vec<&str> = unit.lines().filter(|l| !l.starts_with('#')).collect();
        // Not `control-group` (the default) nor `mixed`: both kill every
        // holder of the unit's cgroup on stop and restart.
        assert!(settings.contains(&"KillMode=process"), "{unit}");
        assert_eq!(
            settings
                .iter()
                .filter(|l| l.starts_with("KillMode="))
                .count(),
            1
        );
        assert!(settings.contains(&"Restart=on-failure"), "{unit}");
        assert!(settings.contains(&"RestartPreventExitStatus=4"), "{unit}");
        assert!(settings.contains(&"ExecStart=\"/usr/bin/ccd\" \"daemon\""));
        assert!(settings.contains(&"WantedBy=default.target"));
    }

    #[test]
    fn unit_words_are_escaped_by_systemd_s_rules() {
        let unit = systemd_unit(&spec(
            "/opt/my tools/ccd",
            &[
                ("PATH", "/usr/bin:/home/me/my bin"),
                ("CLAUDE_CONFIG_DIR", "/tmp/a \"q\" $HOME %h \\ end"),
            ],
        ))
        .unwrap();
        assert!(
            unit.contains("ExecStart=\"/opt/my tools/ccd\" \"daemon\"\n"),
            "{unit}"
        );
        assert!(unit.contains("Environment=\"PATH=/usr/bin:/home/me/my bin\"\n"));
        // Environment= expands specifiers (%) but not variables ($).
        assert!(
            unit.contains(
                "Environment=\"CLAUDE_CONFIG_DIR=/tmp/a \\\"q\\\" $HOME %%h \\\\ end\"\n"
            ),
            "{unit}"
        );
        // ExecStart= expands both.
        let unit = systemd_unit(&spec("/opt/$x/100%/a\"b\\c\nd", &[])).unwrap();
        assert!(
            unit.contains("ExecStart=\"/opt/$$x/100%%/a\\\"b\\\\c\\nd\" \"daemon\"\n"),
            "{unit}"
        );
        // A control character cannot start a line of its own.
        assert_eq!(unit.lines().filter(|l| l.starts_with("d\"")).count(), 0);
    }

    #[test]
    fn the_unit_s_program_reads_back() {
        for p in [
            "/usr/bin/ccd",
            "/opt/my tools/ccd",
            "/opt/$x/100%/a\"b\\c\nd\te\u{1}",
            "/home/zoë/ccd",
        ] {
            let unit = systemd_unit(&spec(p, &[("A", "b")])).unwrap();
            assert_eq!(unit_program(&unit), Some(PathBuf::from(p)), "{unit}");
        }
        assert_eq!(unit_program("[Service]\nExecStart=/bin/true\n"), None);
    }

    #[test]
    fn what_a_unit_cannot_carry_is_refused() {
        assert!(matches!(
            systemd_unit(&spec("ccd", &[])),
            Err(ServiceError::RelativeProgram(_))
        ));
        for bad in ["", "A=B", "A B", "A\nB"] {
            assert!(
                matches!(
                    systemd_unit(&spec("/bin/ccd", &[(bad, "x")])),
                    Err(ServiceError::BadEnvName(_))
                ),
                "{bad:?}"
            );
        }
        use std::os::unix::ffi::OsStringExt;
        let mut s = spec("/bin/ccd", &[]);
        s.program = PathBuf::from(OsString::from_vec(b"/bin/\xffccd".to_vec()));
        assert!(matches!(
            systemd_unit(&s),
            Err(ServiceError::NotUtf8 { .. })
        ));
        assert!(matches!(
            launchd_plist(&s),
            Err(ServiceError::NotUtf8 { .. })
        ));
    }

    #[test]
    fn the_plist_parses_back_with_what_was_asked() {
        let mut s = spec(
            "/Users/me/my tools/ccd",
            &[("PATH", "/usr/bin:/a&b<c>"), ("CCD_LOG", "info")],
        );
        s.args.push("--background".into());
        s.stderr_path = Some(PathBuf::from("/Users/me/state/launchd.err"));
        let bytes = launchd_plist(&s).unwrap();
        let v = plist::Value::from_reader(std::io::Cursor::new(&bytes)).unwrap();
        let d = v.as_dictionary().unwrap();
        assert_eq!(d["Label"].as_string(), Some(LAUNCHD_LABEL));
        let args: Vec<&str> = d["ProgramArguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_string().unwrap())
            .collect();
        assert_eq!(args, ["/Users/me/my tools/ccd", "daemon", "--background"]);
        let env = d["EnvironmentVariables"].as_dictionary().unwrap();
        assert_eq!(env["PATH"].as_string(), Some("/usr/bin:/a&b<c>"));
        assert_eq!(env["CCD_LOG"].as_string(), Some("info"));
        assert_eq!(d["RunAtLoad"].as_boolean(), Some(true));
        assert_eq!(d["AbandonProcessGroup"].as_boolean(), Some(true));
        let keep = d["KeepAlive"].as_dictionary().unwrap();
        assert_eq!(keep["SuccessfulExit"].as_boolean(), Some(false));
        assert_eq!(
            d["StandardErrorPath"].as_string(),
            Some("/Users/me/state/launchd.err")
        );
        assert_eq!(
            plist_program(&bytes),
            Some(PathBuf::from("/Users/me/my tools/ccd"))
        );
        assert_eq!(plist_program(b"not a plist"), None);
    }

    #[test]
    fn the_unit_goes_under_xdg_config_home_when_it_is_absolute() {
        let home = Path::new("/home/me");
        assert_eq!(
            systemd_unit_path(home, None),
            Path::new("/home/me/.config/systemd/user/ccd.service")
        );
        assert_eq!(
            systemd_unit_path(home, Some(Path::new("/cfg"))),
            Path::new("/cfg/systemd/user/ccd.service")
        );
        assert_eq!(
            systemd_unit_path(home, Some(Path::new("rel"))),
            Path::new("/home/me/.config/systemd/user/ccd.service")
        );
        assert_eq!(
            launchd_plist_path(Path::new("/Users/me")),
            Path::new("/Users/me/Library/LaunchAgents/dev.ccd.daemon.plist")
        );
    }
}
