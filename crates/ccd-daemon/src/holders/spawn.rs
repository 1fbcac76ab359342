//! Starting a holder process: `<ccd> __holder`, its spec on stdin, in its
//! own session (setsid) so it outlives the daemon and the terminal.

use super::spec::{HolderMeta, HolderSpec};
use super::HolderTable;
use crate::options::DaemonOptions;
use ccd_protocol::{ErrorCode, RpcError};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

/// How long a new holder may take to listen.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(10);

/// A fresh holder id (`h` + 8 hex digits).
pub fn new_holder_id() -> String {
    let u = uuid::Uuid::new_v4();
    format!("h{}", &u.simple().to_string()[..8])
}

/// What to run in a new holder.
pub struct Launch {
    pub args: Vec<String>,
    pub cwd: std::path::PathBuf,
    pub rows: u16,
    pub cols: u16,
    pub auto_trust: bool,
    pub meta: HolderMeta,
}

/// Starts a holder as the daemon's options `o` say and waits until it
/// listens. The entry is in `holders` when this returns.
pub async fn spawn_holder(
    holders: &HolderTable,
    o: &DaemonOptions,
    launch: Launch,
) -> Result<(), RpcError> {
    holders.verify_dir_rpc()?;
    let id = launch.meta.id.clone();
    let socket = holders.socket_of(&id);
    let log_file = o.state_dir.join(format!("holder-{id}.log"));
    let mut env = Vec::new();
    if o.claude_config_explicit {
        env.push((
            "CLAUDE_CONFIG_DIR".to_string(),
            o.claude_config.root().to_string_lossy().into_owned(),
        ));
    }
    let spec = HolderSpec {
        socket: socket.clone(),
        program: o.claude_bin.clone(),
        args: launch.args.clone(),
        cwd: launch.cwd.clone(),
        rows: launch.rows,
        cols: launch.cols,
        claude_config_dir: Some(o.claude_config.root().to_path_buf()),
        env,
        auto_trust: launch.auto_trust,
        trust_stable_ms: o.trust_stable_ms,
        log_file: Some(log_file.clone()),
        session_id: launch.meta.session_id.clone(),
    };
    let spawn_failed = |reason: String| {
        RpcError::new(
            ErrorCode::SpawnFailed,
            format!("could not start the session: {reason}"),
        )
        .with_data(serde_json::json!({"reason": reason}))
    };
    let spec_json = serde_json::to_vec(&spec).map_err(|e| spawn_failed(e.to_string()))?;
    let _ = std::fs::create_dir_all(&o.state_dir);
    let mut cmd = tokio::process::Command::new(&o.holder_exe);
    cmd.arg("__holder")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(false);
    // Its own session: neither the daemon's death nor its terminal's
    // signals reach the holder.
    // The user's umask again (the daemon's is 077, for its logs): claude
    // creates the user's files as it would anywhere else. The holder makes
    // its own log 0600 itself.
    ccd_sched::session::own_session(cmd.as_std_mut(), Some(crate::logfiles::user_umask()));
    tracing::info!(holder = %id, program = %o.claude_bin.display(), args = ?launch.args, cwd = %launch.cwd.display(), "starting holder");
    let mut child = cmd
        .spawn()
        .map_err(|e| spawn_failed(format!("{}: {e}", o.holder_exe.display())))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(&spec_json)
            .await
            .map_err(|e| spawn_failed(format!("handing the spec to the holder: {e}")))?;
    }
    let mut meta = launch.meta;
    meta.holder_pid = child.id();
    holders
        .insert(meta)
        .map_err(|e| spawn_failed(format!("recording the holder: {e}")))?;
    let deadline = Instant::now() + LISTEN_TIMEOUT;
    loop {
        if tokio::net::UnixStream::connect(&socket).await.is_ok() {
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(&log_file).unwrap_or_default();
            let last = log
                .lines()
                .rev()
                .find(|l| l.contains("ERROR") || l.contains("rror"))
                .unwrap_or("")
                .trim()
                .to_string();
            holders.forget(&id);
            return Err(spawn_failed(if last.is_empty() {
                format!(
                    "the holder exited with {status} (log: {})",
                    log_file.display()
                )
            } else {
                last
            }));
        }
        if Instant::now() > deadline {
            holders.forget(&id);
            let _ = child.start_kill();
            return Err(spawn_failed("the holder did not start listening".into()));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Reap it whenever it exits while this daemon lives.
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    holders.refresh(&id).await;
    Ok(())
}
