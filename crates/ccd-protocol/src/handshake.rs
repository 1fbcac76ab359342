//! Protocol version negotiation for the `hello` handshake.
//!
//! The client sends the range of protocol versions it speaks; the daemon
//! answers with the highest version in both ranges, or
//! [`ErrorCode::UnsupportedProtocolVersion`]. Versions are bumped only for
//! incompatible changes: adding a method, a notification, an optional param
//! or a result field is not one (see "Versioning" in `docs/protocol.md`).

use serde::{Deserialize, Serialize};

use crate::error_code::ErrorCode;
use crate::jsonrpc::RpcError;

/// The protocol version this crate describes.
pub const PROTOCOL_VERSION: u32 = 1;
/// The oldest protocol version this crate can still speak.
pub const MIN_PROTOCOL_VERSION: u32 = 1;
/// The `server` field of the `hello` result.
pub const SERVER_NAME: &str = "ccd";

/// An inclusive range of protocol versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolRange {
    /// Lowest version spoken.
    pub min: u32,
    /// Highest version spoken.
    pub max: u32,
}

impl ProtocolRange {
    /// The range this crate speaks: `MIN_PROTOCOL_VERSION..=PROTOCOL_VERSION`.
    pub const CURRENT: ProtocolRange = ProtocolRange {
        min: MIN_PROTOCOL_VERSION,
        max: PROTOCOL_VERSION,
    };
}

impl Default for ProtocolRange {
    fn default() -> Self {
        Self::CURRENT
    }
}

/// Pick the version both sides speak: the highest version in
/// `client_min..=client_max` ∩ `server_min..=server_max`.
///
/// Errors: [`ErrorCode::InvalidParams`] if the client's range is empty
/// (`min > max`); [`ErrorCode::UnsupportedProtocolVersion`] if the ranges do
/// not overlap, with both ranges in `data`.
pub fn negotiate(
    client_min: u32,
    client_max: u32,
    server_min: u32,
    server_max: u32,
) -> Result<u32, RpcError> {
    if client_min > client_max {
        return Err(RpcError::invalid_params(format!(
            "protocol.min ({client_min}) is greater than protocol.max ({client_max})"
        )));
    }
    let lo = client_min.max(server_min);
    let hi = client_max.min(server_max);
    if lo <= hi {
        return Ok(hi);
    }
    Err(RpcError::new(
        ErrorCode::UnsupportedProtocolVersion,
        format!(
            "no common protocol version: client speaks {client_min}..={client_max}, \
             daemon speaks {server_min}..={server_max}"
        ),
    )
    .with_data(serde_json::json!({
        "client": { "min": client_min, "max": client_max },
        "server": { "min": server_min, "max": server_max },
    })))
}

/// [`negotiate`] against this crate's own range.
pub fn negotiate_current(client: ProtocolRange) -> Result<u32, RpcError> {
    negotiate(
        client.min,
        client.max,
        MIN_PROTOCOL_VERSION,
        PROTOCOL_VERSION,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation() {
        assert_eq!(negotiate(1, 1, 1, 1), Ok(1));
        assert_eq!(negotiate(1, 5, 1, 3), Ok(3));
        assert_eq!(negotiate(2, 5, 1, 3), Ok(3));
        assert_eq!(negotiate(1, 2, 2, 4), Ok(2));
        let e = negotiate(4, 5, 1, 3).expect_err("disjoint");
        assert_eq!(e.code, ErrorCode::UnsupportedProtocolVersion.code());
        assert_eq!(
            e.data.as_ref().and_then(|d| d.pointer("/server/max")),
            Some(&serde_json::json!(3))
        );
        let e = negotiate(1, 1, 2, 3).expect_err("too old");
        assert_eq!(e.code, ErrorCode::UnsupportedProtocolVersion.code());
        let e = negotiate(3, 2, 1, 3).expect_err("empty range");
        assert_eq!(e.code, ErrorCode::InvalidParams.code());
        assert_eq!(
            negotiate_current(ProtocolRange::CURRENT),
            Ok(PROTOCOL_VERSION)
        );
    }
}
