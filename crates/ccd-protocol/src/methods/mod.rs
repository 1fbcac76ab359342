//! Typed params and results, one module per concern.
//!
//! Each method is a zero-sized marker type implementing [`Method`], which
//! ties its wire name to its params type, its result type and the error
//! codes it may answer with; each server-sent notification implements
//! [`NotificationKind`]. The list of methods exists once, in
//! [`method_table!`]'s invocation below: it makes [`MethodId`] (one variant
//! per method, matched exhaustively by the daemon's router, so a method
//! without a handler does not compile) and [`ALL_METHODS`].
//!
//! Compatibility rules for every type here: new optional fields may be added
//! at any time; readers ignore fields they do not know; enums a client reads
//! carry an `Other` variant for values added later.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::ErrorCode;

/// A request/response method.
pub trait Method {
    /// The wire name, e.g. `"sessions.list"`.
    const NAME: &'static str;
    /// The `params` object.
    type Params: Serialize + DeserializeOwned;
    /// The `result` value.
    type Result: Serialize + DeserializeOwned;
    /// The ccd error codes this method answers with besides the generic
    /// ones every method may send (`invalid_params`, `internal_error`,
    /// `handshake_required`, `shutting_down`). `docs/protocol.md` lists
    /// the same codes under the method (a test keeps the two in step).
    const ERRORS: &'static [ErrorCode] = &[];
    /// How long a client waits for the reply, as a rule ([`Wait`]).
    const WAIT: Wait = Wait::Call;
    /// How long a client waits for the reply to these params (a method
    /// whose wait depends on them overrides it; else [`Method::WAIT`]).
    fn wait(_params: &Self::Params) -> Wait {
        Self::WAIT
    }
}

/// How long a client waits for a method's reply, by kind: each method
/// declares its own ([`Method::WAIT`], [`Method::wait`]); the client turns
/// a kind into a duration (`ccd_client::deadline`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// A plain call.
    Call,
    /// Moves through the screen (send, respond) or stops the daemon.
    Slow,
    /// May start `claude` and wait for its prompt.
    Start,
    /// Reads and writes a transcript of any size.
    Trim,
    /// Waits out a grace period of `ms` first (a kill), then collects.
    Grace { ms: u64 },
}

/// A notification sent by the daemon (no id, no reply).
pub trait NotificationKind {
    /// The wire name, e.g. `"session.output"`.
    const NAME: &'static str;
    /// The `params` object.
    type Params: Serialize + DeserializeOwned;
}

/// `Method::ERRORS` of a method naming a session: the naming errors
/// (`SessionNotFound`, `AmbiguousSessionId`, `TranscriptMissing`), then
/// the codes given.
macro_rules! naming_errors {
    ($($code:ident),* $(,)?) => {
        &[
            $crate::ErrorCode::SessionNotFound,
            $crate::ErrorCode::AmbiguousSessionId,
            $crate::ErrorCode::TranscriptMissing,
            $($crate::ErrorCode::$code,)*
        ]
    };
}

/// `Method::ERRORS` of a method acting on a session ccd holds: the naming
/// errors, the session running elsewhere or not at all, then the codes
/// given.
macro_rules! held_errors {
    ($($code:ident),* $(,)?) => {
        naming_errors!(SessionLiveElsewhere, SessionNotRunning, $($code),*)
    };
}

pub mod attach;
pub mod daemon;
pub mod dirs;
pub mod events;
pub mod session;

/// Something done once per method type ([`MethodId::visit_all`]).
pub trait MethodVisitor {
    /// Called with each method's marker type.
    fn visit<M: Method>(&mut self);
}

/// Defines [`MethodId`] and [`ALL_METHODS`] from one list of
/// `Variant => marker type` pairs.
macro_rules! method_table {
    ($($variant:ident => $ty:ty),* $(,)?) => {
        /// One variant per method of this protocol version: what a server
        /// matches on (exhaustively) after [`MethodId::from_name`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum MethodId {
            $(
                #[doc = concat!("[`", stringify!($ty), "`]")]
                $variant,
            )*
        }

        impl MethodId {
            /// Every method, in table order.
            pub const ALL: &'static [MethodId] = &[$(MethodId::$variant),*];

            /// The method called `name`, if this protocol version has it.
            pub fn from_name(name: &str) -> Option<MethodId> {
                $(
                    if name == <$ty as Method>::NAME {
                        return Some(MethodId::$variant);
                    }
                )*
                None
            }

            /// The wire name.
            pub fn name(self) -> &'static str {
                match self {
                    $(MethodId::$variant => <$ty as Method>::NAME,)*
                }
            }

            /// Calls `v.visit::<M>()` for every method type `M`, in table
            /// order (what needs the types, not only the names: tests,
            /// schema checks).
            pub fn visit_all(v: &mut impl MethodVisitor) {
                $(v.visit::<$ty>();)*
            }

            /// The ccd error codes it answers with ([`Method::ERRORS`]).
            pub fn errors(self) -> &'static [ErrorCode] {
                match self {
                    $(MethodId::$variant => <$ty as Method>::ERRORS,)*
                }
            }

            /// How long a client waits for the reply to `params`
            /// ([`Method::wait`]; params that do not decode, which the
            /// daemon refuses at once, get [`Method::WAIT`]).
            pub fn wait(self, params: &serde_json::Value) -> Wait {
                match self {
                    $(MethodId::$variant => {
                        serde_json::from_value::<<$ty as Method>::Params>(params.clone())
                            .map(|p| <$ty as Method>::wait(&p))
                            .unwrap_or(<$ty as Method>::WAIT)
                    })*
                }
            }
        }

        /// Every method of this protocol version (for `method not found`
        /// checks and documentation tests).
        pub const ALL_METHODS: &[&str] = &[$(<$ty as Method>::NAME),*];
    };
}

method_table! {
    Hello => daemon::Hello,
    DaemonStatus => daemon::DaemonStatus,
    DaemonStop => daemon::DaemonStop,
    SessionsList => session::SessionsList,
    SessionsGet => session::SessionsGet,
    SessionsCosts => session::SessionsCosts,
    SessionsRestore => session::SessionsRestore,
    SessionsSearch => session::SessionsSearch,
    SessionNew => session::SessionNew,
    SessionFork => session::SessionFork,
    SessionKill => session::SessionKill,
    SessionScreen => session::SessionScreen,
    SessionTail => session::SessionTail,
    SessionAttach => attach::SessionAttach,
    SessionDetach => attach::SessionDetach,
    SessionInput => attach::SessionInput,
    SessionResize => attach::SessionResize,
    SessionFocus => attach::SessionFocus,
    SessionSend => session::SessionSend,
    SessionPin => session::SessionPin,
    SessionRespond => session::SessionRespond,
    SessionTrim => session::SessionTrim,
    EventsSubscribe => events::EventsSubscribe,
    DirsComplete => dirs::DirsComplete,
}

/// Every notification the daemon sends in this protocol version.
pub const ALL_NOTIFICATIONS: &[&str] = &[
    crate::stream::SessionOutput::NAME,
    crate::stream::SessionResync::NAME,
    crate::stream::SessionExited::NAME,
    session::SessionProgress::NAME,
    crate::stream::SessionTranscript::NAME,
    events::EventNotification::NAME,
];

/// True if `name` is a method of this protocol version.
pub fn is_known_method(name: &str) -> bool {
    MethodId::from_name(name).is_some()
}

/// An empty object: params of methods that take none (absent params decode
/// to it too), and results that carry nothing. Unknown fields are ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Empty {}

/// Params naming one session: a full session id or a unique prefix of one
/// (ambiguous prefixes fail with `AmbiguousSessionId`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRef {
    /// Session id or unique id prefix.
    pub session: String,
}

/// The most columns a session's terminal may have. With [`MAX_ROWS`] this
/// bounds what one size costs a holder: its screen model keeps two grids
/// (main and alternate) of about 24 bytes a cell, so 1000×500 is about
/// 25 MB (measured: VmRSS grows 24.7 MB for a filled 1000×500 model, 47 MB
/// for 1000×1000), while an 8K display with an 8-pixel-wide font is 960
/// columns.
pub const MAX_COLS: u16 = 1000;

/// The most rows a session's terminal may have (an 8K display with a
/// 16-pixel-high font is 270 rows; portrait and tiny fonts get headroom).
pub const MAX_ROWS: u16 = 500;

/// A size outside `1..=MAX_COLS` × `1..=MAX_ROWS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("size {cols}x{rows} (cols x rows) is out of range: cols must be 1..={max_cols} and rows 1..={max_rows}", max_cols = MAX_COLS, max_rows = MAX_ROWS)]
pub struct SizeOutOfRange {
    /// The columns asked for.
    pub cols: u16,
    /// The rows asked for.
    pub rows: u16,
}

/// Terminal size in character cells: `cols` 1..=[`MAX_COLS`], `rows`
/// 1..=[`MAX_ROWS`] wherever a client asks for one (decoding does not check:
/// use [`TermSize::checked`] or [`TermSize::clamped`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TermSize {
    /// Columns (1..=1000).
    pub cols: u16,
    /// Rows (1..=500).
    pub rows: u16,
}

impl TermSize {
    /// This size if it is within bounds.
    pub fn checked(self) -> Result<TermSize, SizeOutOfRange> {
        if (1..=MAX_COLS).contains(&self.cols) && (1..=MAX_ROWS).contains(&self.rows) {
            Ok(self)
        } else {
            Err(SizeOutOfRange {
                cols: self.cols,
                rows: self.rows,
            })
        }
    }

    /// The nearest size within bounds (what a holder applies when a size
    /// reached it unchecked).
    pub fn clamped(self) -> TermSize {
        TermSize {
            cols: self.cols.clamp(1, MAX_COLS),
            rows: self.rows.clamp(1, MAX_ROWS),
        }
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive_and_zero_or_huge_is_refused() {
        let s = |cols, rows| TermSize { cols, rows };
        assert!(s(1, 1).checked().is_ok());
        assert!(s(MAX_COLS, MAX_ROWS).checked().is_ok());
        for bad in [
            s(0, 24),
            s(80, 0),
            s(MAX_COLS + 1, 24),
            s(80, MAX_ROWS + 1),
            s(65535, 65535),
        ] {
            let e = bad.checked().unwrap_err();
            assert!(e.to_string().contains("1..=1000"), "{e}");
            assert!(e.to_string().contains("1..=500"), "{e}");
            assert!(bad.clamped().checked().is_ok());
        }
        assert_eq!(s(65535, 0).clamped(), s(MAX_COLS, 1));
    }
}
