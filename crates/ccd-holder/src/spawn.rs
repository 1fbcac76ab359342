//! Starting the child under a fresh PTY.
//!
//! - The cwd is normalized ([`ccd_claude::paths::normalize`]) and must be an
//!   existing directory: portable-pty would silently fall back to `$HOME`.
//! - The environment is the base one (the caller's by default) minus every
//!   `CCD_*` variable, with `TERM=xterm-256color`.
//! - No descriptor leaks into the child: portable-pty closes every fd ≥ 3 in
//!   the child before `exec`, and everything the holder opens itself (the
//!   listening socket, connections, the PTY master) is close-on-exec anyway
//!   (std and portable-pty set `O_CLOEXEC`); `tests/basic.rs` checks
//!   `/proc/<child>/fd`.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use portable_pty::{native_pty_system, Child, CommandBuilder, MasterPty, PtySize};
use thiserror::Error;

use crate::config::{HolderConfig, Size};

/// Why the child could not be started.
#[derive(Debug, Error)]
pub enum SpawnError {
    /// The cwd does not exist.
    #[error("working directory {0} does not exist")]
    CwdMissing(PathBuf),
    /// The cwd exists but is not a directory.
    #[error("working directory {0} is not a directory")]
    CwdNotDirectory(PathBuf),
    /// Opening the PTY failed.
    #[error("cannot open a pty: {0}")]
    Pty(String),
    /// Spawning the program failed.
    #[error("cannot start {program}: {reason}")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// What failed.
        reason: String,
    },
}

/// A running child and the master side of its PTY.
pub struct Spawned {
    /// The PTY master (resize).
    pub master: Box<dyn MasterPty + Send>,
    /// The child handle (wait).
    pub child: Box<dyn Child + Send + Sync>,
    /// Its pid.
    pub pid: u32,
    /// Reads the child's output.
    pub reader: Box<dyn Read + Send>,
    /// Writes the child's input.
    pub writer: Box<dyn Write + Send>,
    /// The normalized cwd it runs in.
    pub cwd: PathBuf,
    /// Program and arguments.
    pub argv: Vec<String>,
    /// The environment it was given (needed to resolve the config dir).
    pub env: Vec<(OsString, OsString)>,
}

/// Normalize `cwd` and refuse anything but an existing directory.
pub fn checked_cwd(cwd: &Path) -> Result<PathBuf, SpawnError> {
    let cwd = ccd_claude::paths::normalize(cwd);
    match std::fs::metadata(&cwd) {
        Ok(m) if m.is_dir() => Ok(cwd),
        Ok(_) => Err(SpawnError::CwdNotDirectory(cwd)),
        Err(_) => Err(SpawnError::CwdMissing(cwd)),
    }
}

fn is_ccd_var(name: &OsStr) -> bool {
    name.as_encoded_bytes().starts_with(b"CCD_")
}

/// The child's environment: base (or this process's), overrides, minus
/// `CCD_*`, plus `TERM=xterm-256color`.
pub fn child_env(config: &HolderConfig) -> Vec<(OsString, OsString)> {
    let base: Vec<(OsString, OsString)> = match &config.base_env {
        Some(b) => b.clone(),
        None => std::env::vars_os().collect(),
    };
    let mut env: Vec<(OsString, OsString)> = Vec::with_capacity(base.len() + config.env.len());
    for (k, v) in base.into_iter().chain(config.env.iter().cloned()) {
        env.retain(|(ek, _)| ek != &k);
        env.push((k, v));
    }
    env.retain(|(k, _)| !is_ccd_var(k) && k != "TERM");
    env.push(("TERM".into(), "xterm-256color".into()));
    env
}

fn pty_size(size: Size) -> PtySize {
    let size = size.clamped();
    PtySize {
        rows: size.rows,
        cols: size.cols,
        pixel_width: 0,
        pixel_height: 0,
    }
}

/// Start `config.program` under a new PTY.
pub fn spawn(config: &HolderConfig) -> Result<Spawned, SpawnError> {
    let cwd = checked_cwd(&config.cwd)?;
    let env = child_env(config);
    let pair = native_pty_system()
        .openpty(pty_size(config.size))
        .map_err(|e| SpawnError::Pty(format!("{e:#}")))?;

    let mut cmd = CommandBuilder::new(config.program.as_os_str());
    cmd.args(&config.args);
    cmd.cwd(cwd.as_os_str());
    cmd.env_clear();
    for (k, v) in &env {
        cmd.env(k, v);
    }
    let argv: Vec<String> = cmd
        .get_argv()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();

    let spawn_err = |e: anyhow::Error| SpawnError::Spawn {
        program: config.program.clone(),
        reason: format!("{e:#}"),
    };
    let child = pair.slave.spawn_command(cmd).map_err(spawn_err)?;
    // Only the child keeps the slave open, so the master reads EOF/EIO when
    // it (and its descendants) are gone.
    drop(pair.slave);
    let pid = child.process_id().ok_or_else(|| SpawnError::Spawn {
        program: config.program.clone(),
        reason: "no pid for the child".into(),
    })?;
    let reader = pair.master.try_clone_reader().map_err(spawn_err)?;
    let writer = pair.master.take_writer().map_err(spawn_err)?;
    tracing::info!(pid, cwd = %cwd.display(), argv = ?argv, "child started");
    Ok(Spawned {
        master: pair.master,
        child,
        pid,
        reader,
        writer,
        cwd,
        argv,
        env,
    })
}

/// A descriptor of our own on the PTY's `master` (a duplicate: the same
/// open file description), to poll it. None: the PTY has no descriptor,
/// or none could be duplicated (out of descriptors).
#[allow(unsafe_code)] // reason: portable-pty lends the master only as a raw descriptor number
pub fn master_fd(master: &dyn MasterPty) -> Option<std::os::fd::OwnedFd> {
    let raw = master.as_raw_fd()?;
    // SAFETY: `raw` is the descriptor `master` owns and keeps open while it
    // is borrowed here; the borrow ends within this call, once duplicated.
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(raw) };
    borrowed.try_clone_to_owned().ok()
}

/// Resize the PTY.
pub fn resize(master: &dyn MasterPty, size: Size) -> anyhow::Result<()> {
    master.resize(pty_size(size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_filters_ccd_and_sets_term() {
        let mut c = HolderConfig::new("/s".into(), "/bin/true".into(), "/".into());
        c.base_env = Some(vec![
            ("CCD_SOCKET".into(), "x".into()),
            ("PATH".into(), "/bin".into()),
            ("TERM".into(), "dumb".into()),
        ]);
        c.env = vec![
            ("HOME".into(), "/h".into()),
            ("PATH".into(), "/usr/bin".into()),
        ];
        let env = child_env(&c);
        assert!(env.iter().all(|(k, _)| k != "CCD_SOCKET"));
        assert!(env.contains(&("PATH".into(), "/usr/bin".into())));
        assert!(env.contains(&("TERM".into(), "xterm-256color".into())));
        assert_eq!(env.iter().filter(|(k, _)| k == "PATH").count(), 1);
    }

    #[test]
    fn cwd_must_be_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("file");
        std::fs::write(&f, b"x").unwrap();
        assert!(matches!(
            checked_cwd(&f),
            Err(SpawnError::CwdNotDirectory(_))
        ));
        assert!(matches!(
            checked_cwd(&dir.path().join("nope")),
            Err(SpawnError::CwdMissing(_))
        ));
        assert!(checked_cwd(dir.path()).is_ok());
    }
}
