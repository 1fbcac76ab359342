//! The daemon itself: `hello`, `daemon.status`, `daemon.stop`.

use serde::{Deserialize, Serialize};

use crate::ErrorCode;

use super::{Empty, Method, Wait};
use crate::handshake::ProtocolRange;

/// `hello`: the first request on every connection. Any other method before a
/// successful `hello` fails with `HandshakeRequired`; a `hello` whose ranges
/// do not overlap fails with `UnsupportedProtocolVersion` and the connection
/// stays open (the client may retry with another range).
pub struct Hello;

impl Method for Hello {
    const NAME: &'static str = "hello";
    type Params = HelloParams;
    type Result = HelloResult;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::UnsupportedProtocolVersion];
}

/// Params of `hello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloParams {
    /// `"<name>/<version>"` of the client, e.g. `"ccd-cli/0.1.0"`,
    /// `"ccd.nvim/0.1"`. For logs and `daemon.status`; never interpreted.
    pub client: String,
    /// Protocol versions the client speaks.
    pub protocol: ProtocolRange,
}

/// Result of `hello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloResult {
    /// The daemon's crate version, e.g. `"0.1.0"`.
    pub daemon_version: String,
    /// The negotiated protocol version, used for the rest of the connection.
    pub protocol: u32,
    /// Always `"ccd"`.
    pub server: String,
}

/// `daemon.status`: health and counters.
pub struct DaemonStatus;

impl Method for DaemonStatus {
    const NAME: &'static str = "daemon.status";
    type Params = Empty;
    type Result = DaemonStatusResult;
}

/// Result of `daemon.status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonStatusResult {
    /// The daemon's crate version.
    pub daemon_version: String,
    /// The protocol version negotiated on this connection.
    pub protocol: u32,
    /// The daemon's process id.
    pub pid: u32,
    /// When the daemon started, unix milliseconds.
    pub started_at: u64,
    /// The socket path the daemon listens on.
    pub socket: String,
    /// Sessions whose PTY ccd holds.
    pub sessions: u32,
    /// Connected clients, this one included.
    pub clients: u32,
    /// Connections refused since the daemon started (over its limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_connections: Option<u64>,
    /// The `claude` binary the daemon starts sessions with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claude_bin: Option<String>,
    /// The Claude Code config directory the daemon reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claude_config_dir: Option<String>,
    /// Where the daemon keeps its state and logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_dir: Option<String>,
}

/// `daemon.stop`: stop the daemon. The reply is sent before the daemon
/// closes its connections. Sessions live in their own holder processes and
/// keep running unless `kill_sessions` is set; a restarted daemon adopts
/// them again.
pub struct DaemonStop;

impl Method for DaemonStop {
    const NAME: &'static str = "daemon.stop";
    type Params = DaemonStopParams;
    type Result = DaemonStopResult;
    const WAIT: Wait = Wait::Slow;
}

/// Params of `daemon.stop`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonStopParams {
    /// Also end every session ccd holds (SIGHUP, as when a terminal closes).
    /// Default `false`.
    #[serde(default)]
    pub kill_sessions: bool,
}

/// Result of `daemon.stop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonStopResult {
    /// Always `true`: the daemon is stopping. New requests on any connection
    /// now fail with `ShuttingDown`.
    pub stopping: bool,
}
