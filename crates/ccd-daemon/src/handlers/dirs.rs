//! `dirs.complete`: a typed path completed to a directory on this machine
//! (`crate::complete`, the dashboard's Tab), off the reactor; a `~name/`
//! naming no user is `invalid_params`.

use ccd_protocol::methods::dirs::{CompleteParams, CompleteResult, MAX_COMPLETE_INPUT};
use ccd_protocol::RpcError;

pub async fn complete(p: CompleteParams) -> Result<CompleteResult, RpcError> {
    if p.input.len() > MAX_COMPLETE_INPUT {
        return Err(RpcError::invalid_params(format!(
            "input is {} bytes; at most {MAX_COMPLETE_INPUT}",
            p.input.len()
        )));
    }
    // Only what names a place by itself: an absolute path or `~`. A
    // relative one would be relative to the daemon's own directory.
    if !(p.input.starts_with('/') || p.input.starts_with('~')) {
        return Ok(CompleteResult {
            input: p.input,
            choices: vec![],
        });
    }
    // `~` is the daemon's user's home, `~name` that user's (a passwd
    // lookup, on the blocking pool with the reads); never the daemon's cwd.
    let home = std::env::var("HOME").ok();
    let (input, choices) = tokio::task::spawn_blocking(move || {
        crate::complete::try_complete(&p.input, home.as_deref())
    })
    .await
    .map_err(|e| RpcError::internal(e.to_string()))?
    .map_err(|e| RpcError::invalid_params(e.to_string()))?;
    Ok(CompleteResult { input, choices })
}
