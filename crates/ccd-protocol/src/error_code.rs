//! Stable JSON-RPC error codes.
//!
//! The numbers are part of the protocol: a code never changes meaning and is
//! never reused. New codes may be added (clients treat an unknown code like
//! [`ErrorCode::InternalError`], showing the message). The table in
//! `docs/protocol.md` lists the same codes; a test keeps the two in step.

/// Every error code ccd sends. `code()` gives the number on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i64)]
pub enum ErrorCode {
    // --- JSON-RPC 2.0 standard codes -------------------------------------
    /// The line is not valid JSON (or not UTF-8). The reply's `id` is `null`.
    ParseError = -32700,
    /// Valid JSON but not a JSON-RPC 2.0 request: not an object (batches are
    /// not supported), `jsonrpc` is not `"2.0"`, `method` missing or not a
    /// string, `id` not a string or integer, `params` not an object or array.
    InvalidRequest = -32600,
    /// No such method.
    MethodNotFound = -32601,
    /// The method exists but its `params` do not fit its schema (missing
    /// field, wrong type, bad base64, invalid range...).
    InvalidParams = -32602,
    /// A bug or unexpected failure inside the daemon.
    InternalError = -32603,

    // --- ccd codes (-32000..=-32099) -------------------------------------
    /// The line exceeded the maximum length (1 MiB) and was discarded.
    /// `data`: `{"len": <bytes>, "max": <bytes>}`. The reply's `id` is `null`.
    LineTooLong = -32000,
    /// No protocol version is supported by both sides.
    /// `data`: `{"server": {"min", "max"}, "client": {"min", "max"}}`.
    UnsupportedProtocolVersion = -32001,
    /// A method other than `hello` was called before a successful `hello`.
    HandshakeRequired = -32002,
    /// No session with that id (or id prefix) is known: no registry entry and
    /// no transcript. `data`: `{"session": "<as given>"}`.
    SessionNotFound = -32003,
    /// The id prefix matches several sessions.
    /// `data`: `{"session": "<prefix>", "candidates": ["<id>", ...]}`.
    AmbiguousSessionId = -32004,
    /// The session is live (or its liveness cannot be verified) in a process
    /// ccd does not own. ccd refuses to resume it (that would split the
    /// conversation) and cannot type into it; observe or fork instead.
    /// `data`: `{"session", "pid"?, "state": "elsewhere"|"unknown"}`.
    SessionLiveElsewhere = -32005,
    /// The session's original working directory no longer exists, so it
    /// cannot be resumed there. `data`: `{"session", "cwd"}`.
    CwdMissing = -32006,
    /// The session's transcript is gone (or was never written: a session
    /// without a single turn leaves nothing to resume).
    /// `data`: `{"session", "path"?}`.
    TranscriptMissing = -32007,
    /// The request needs Claude Code's input prompt, but the session shows
    /// something else (busy, a dialog, a permission prompt).
    /// `data`: `{"session", "shows": "<classification>", "screen": [lines]}`.
    NotAtPrompt = -32008,
    /// `claude` could not be started, or exited / was refused during startup
    /// (a failed resume included: "No conversation found", "Prompt is too
    /// long", untrusted folder, unrecognized blocking screen...).
    /// `data`: `{"reason": "<text>", "exit_code"?, "signal"?, "screen"?: [lines]}`.
    SpawnFailed = -32009,
    /// The caller may not do this (peer uid mismatch, write to an observe-only
    /// attachment, an operation the daemon's configuration forbids).
    PermissionDenied = -32010,
    /// The daemon is stopping and accepts no new work.
    ShuttingDown = -32011,
    /// ccd does not hold the session and no process runs it: there is
    /// nothing to type into, signal or look at (`session.attach` resumes
    /// it). `data`: `{"session"}`.
    SessionNotRunning = -32012,
    /// The request answers a tool permission prompt, but the session shows
    /// none, or not the one the request names (`prompt`): it was answered
    /// meanwhile, or another replaced it. Nothing was typed.
    /// `data`: `{"session", "shows", "expected"?, "prompt"?}` (`prompt`:
    /// the one on screen now, if any).
    PromptNotShown = -32013,
    /// `session.trim` did not change the transcript: the session is (or
    /// may be) running, a writer appeared meanwhile, its records are not
    /// ones ccd knows, a line is too long, or (undo) there is no backup or
    /// the file changed since the trim. `data`: `{"session", "reason",
    /// "transcript"?, "types"?}`.
    TrimRefused = -32014,
}

impl ErrorCode {
    /// Every code, in table order.
    pub const ALL: [ErrorCode; 20] = [
        ErrorCode::ParseError,
        ErrorCode::InvalidRequest,
        ErrorCode::MethodNotFound,
        ErrorCode::InvalidParams,
        ErrorCode::InternalError,
        ErrorCode::LineTooLong,
        ErrorCode::UnsupportedProtocolVersion,
        ErrorCode::HandshakeRequired,
        ErrorCode::SessionNotFound,
        ErrorCode::AmbiguousSessionId,
        ErrorCode::SessionLiveElsewhere,
        ErrorCode::CwdMissing,
        ErrorCode::TranscriptMissing,
        ErrorCode::NotAtPrompt,
        ErrorCode::SpawnFailed,
        ErrorCode::PermissionDenied,
        ErrorCode::ShuttingDown,
        ErrorCode::SessionNotRunning,
        ErrorCode::PromptNotShown,
        ErrorCode::TrimRefused,
    ];

    /// The number sent on the wire.
    pub const fn code(self) -> i64 {
        self as i64
    }

    /// The code for a wire number, if ccd knows it.
    pub fn from_code(code: i64) -> Option<ErrorCode> {
        Self::ALL.iter().copied().find(|c| c.code() == code)
    }

    /// A stable snake_case name (used in `docs/protocol.md`, logs, and by
    /// clients that prefer names to numbers).
    pub const fn name(self) -> &'static str {
        match self {
            ErrorCode::ParseError => "parse_error",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::MethodNotFound => "method_not_found",
            ErrorCode::InvalidParams => "invalid_params",
            ErrorCode::InternalError => "internal_error",
            ErrorCode::LineTooLong => "line_too_long",
            ErrorCode::UnsupportedProtocolVersion => "unsupported_protocol_version",
            ErrorCode::HandshakeRequired => "handshake_required",
            ErrorCode::SessionNotFound => "session_not_found",
            ErrorCode::AmbiguousSessionId => "ambiguous_session_id",
            ErrorCode::SessionLiveElsewhere => "session_live_elsewhere",
            ErrorCode::CwdMissing => "cwd_missing",
            ErrorCode::TranscriptMissing => "transcript_missing",
            ErrorCode::NotAtPrompt => "not_at_prompt",
            ErrorCode::SpawnFailed => "spawn_failed",
            ErrorCode::PermissionDenied => "permission_denied",
            ErrorCode::ShuttingDown => "shutting_down",
            ErrorCode::SessionNotRunning => "session_not_running",
            ErrorCode::PromptNotShown => "prompt_not_shown",
            ErrorCode::TrimRefused => "trim_refused",
        }
    }

    /// A short default message.
    pub const fn default_message(self) -> &'static str {
        match self {
            ErrorCode::ParseError => "parse error",
            ErrorCode::InvalidRequest => "invalid request",
            ErrorCode::MethodNotFound => "method not found",
            ErrorCode::InvalidParams => "invalid params",
            ErrorCode::InternalError => "internal error",
            ErrorCode::LineTooLong => "line too long",
            ErrorCode::UnsupportedProtocolVersion => "unsupported protocol version",
            ErrorCode::HandshakeRequired => "handshake required: call hello first",
            ErrorCode::SessionNotFound => "session not found",
            ErrorCode::AmbiguousSessionId => "ambiguous session id",
            ErrorCode::SessionLiveElsewhere => "session is live outside ccd",
            ErrorCode::CwdMissing => "session working directory is missing",
            ErrorCode::TranscriptMissing => "session transcript is missing",
            ErrorCode::NotAtPrompt => "session is not at its prompt",
            ErrorCode::SpawnFailed => "failed to start claude",
            ErrorCode::PermissionDenied => "permission denied",
            ErrorCode::ShuttingDown => "daemon is shutting down",
            ErrorCode::SessionNotRunning => "session is not running",
            ErrorCode::PromptNotShown => "the permission prompt is not shown",
            ErrorCode::TrimRefused => "the transcript was not trimmed",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_in_range() {
        for (i, a) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(ErrorCode::from_code(a.code()), Some(*a));
            for b in &ErrorCode::ALL[i + 1..] {
                assert_ne!(a.code(), b.code());
                assert_ne!(a.name(), b.name());
            }
            let c = a.code();
            assert!(
                (-32099..=-32000).contains(&c) || (-32768..=-32600).contains(&c),
                "{a} out of the reserved ranges"
            );
        }
        assert_eq!(ErrorCode::from_code(1), None);
    }
}
