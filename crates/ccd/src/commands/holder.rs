//! `ccd __holder`: the per-session holder process. Reads its spec (JSON)
//! from stdin, then runs until the daemon has collected the session's exit.

use ccd_protocol::holder::spec::HolderSpec;
use std::io::Read;
use std::process::ExitCode;

pub fn run() -> anyhow::Result<ExitCode> {
    let mut buf = Vec::new();
    std::io::stdin().take(1 << 20).read_to_end(&mut buf)?;
    let spec: HolderSpec = serde_json::from_slice(&buf)
        .map_err(|e| anyhow::anyhow!("invalid holder spec on stdin: {e}"))?;
    let _guard = spec.log_file.as_deref().map(crate::logging::init_file);
    // Nothing more comes on stdin; don't keep the daemon's pipe.
    if let Ok(null) = std::fs::File::open("/dev/null") {
        let _ = nix::unistd::dup2_stdin(&null);
    }
    match ccd_holder::run(ccd_holder::HolderConfig::from(spec)) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "holder failed");
            Err(e)
        }
    }
}
