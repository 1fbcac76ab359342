//! The holder protocol: what the daemon (and a client on a direct stream)
//! says to a session's holder process over its Unix socket.
//!
//! The contract: the same framing as the public protocol (JSON-RPC 2.0, one
//! message per `\n`-terminated line, [`crate::MAX_LINE_BYTES`]), the
//! `holder.*` methods below, one zero-sized marker type per method
//! implementing [`Method`], and the stream notifications of
//! [`crate::stream`] (`session.resync`, `session.output`, `session.exited`)
//! after an attach. Types that mean the same as the public protocol's are
//! the public ones ([`AttachMode`], [`TermSize`], [`ScreenFormat`],
//! [`Cursor`], [`KillSignal`]).
//!
//! **Versioned.** Holders outlive daemon upgrades, so a daemon meets holders
//! started by an older ccd. [`Hello`] (`holder.hello`) negotiates a version
//! from a [`ProtocolRange`] like the public `hello`
//! ([`negotiate_holder`]); it is optional: a connection that sends none is
//! served at [`MIN_HOLDER_PROTOCOL_VERSION`]. A holder that answers
//! `method_not_found` to it predates versioning: it speaks version
//! [`PRE_VERSIONING`] (0), which has every method here except `hello`, may
//! lack the direct-stream names ([`canonical`]) and may ignore an attach's
//! `size`. The rules for new fields are the public protocol's: optional
//! fields may be added without a version bump; a version bump is for what
//! an older peer would misread.
//!
//! [`screen`]: the screen model's types a holder reports (terminal modes,
//! the classifier's verdict). [`spec`]: how the daemon starts a holder ([`spec::HolderSpec`] on its
//! stdin) and what it keeps beside the holder's socket ([`spec::HolderMeta`]).
//! [`table`]: the list of the methods, once ([`HolderMethodId`],
//! [`HolderMethod`], [`ALL_HOLDER_METHODS`]), and [`canonical`].
//!
//! This module is plain data: the holder (`ccd-holder`) serves it, the
//! daemon calls it; neither's I/O lives here.

use serde::{Deserialize, Serialize};

use crate::handshake::{negotiate, ProtocolRange};
use crate::jsonrpc::RpcError;
use crate::methods::{Empty, Method};

pub use crate::methods::attach::AttachMode;
pub use crate::methods::session::{Cursor, KillSignal, RespondChoice, ScreenFormat};
pub use crate::methods::TermSize;

pub mod screen;
pub mod spec;
pub mod table;

pub use screen::{ScreenState, TerminalModes};
pub use table::{canonical, HolderMethod, HolderMethodId, ALL_HOLDER_METHODS};

/// The holder protocol version this crate describes.
pub const HOLDER_PROTOCOL_VERSION: u32 = 4;
/// The oldest holder protocol version a holder of this crate speaks (and
/// the version of a connection that sends no `holder.hello`).
pub const MIN_HOLDER_PROTOCOL_VERSION: u32 = 1;
/// The version of a holder that answers `method_not_found` to
/// `holder.hello`: one started by a ccd from before the holder protocol had
/// versions.
pub const PRE_VERSIONING: u32 = 0;

/// The first version whose holders are sure to serve a direct stream (the
/// public names of [`canonical`] on a connection the daemon passes to a
/// client); a version-0 holder is attached through the daemon instead.
pub const DIRECT_STREAM_VERSION: u32 = 1;

/// The first version whose holders take a client's terminal
/// ([`Terminal`], `holder.terminal`).
pub const TERMINAL_VERSION: u32 = 2;

/// The first version whose holders walk the permission prompt and submit
/// a prompt themselves ([`Respond`], [`Submit`]): the daemon makes one
/// call where an older holder is driven key by key through `holder.input`
/// and `holder.screen`. A connection that negotiated less gets
/// `method_not_found` for them, as an older holder would answer.
pub const WALK_VERSION: u32 = 3;

/// The first version whose holders read focus reports from a handed-off
/// terminal for the client ([`TerminalParams::focus`], [`Focus`]): an
/// older holder would pass them to the program as keys, so a client asks
/// its terminal for them only from this version on.
pub const FOCUS_VERSION: u32 = 4;

/// The id of the `holder.hello` the daemon sends on a direct stream's
/// connection, in the same write as the attach (id
/// [`crate::methods::attach::DIRECT_ATTACH_ID`]): the client reads past its
/// reply (a reply to a request it did not send) to the attach's.
pub const DIRECT_HELLO_ID: &str = "hello";

/// The range of holder protocol versions this crate speaks.
pub const HOLDER_PROTOCOL_RANGE: ProtocolRange = ProtocolRange {
    min: MIN_HOLDER_PROTOCOL_VERSION,
    max: HOLDER_PROTOCOL_VERSION,
};

/// The version a holder speaks with a peer offering `client`: the highest
/// in both ranges, or [`crate::ErrorCode::UnsupportedProtocolVersion`] with
/// both ranges in `data`.
pub fn negotiate_holder(client: ProtocolRange) -> Result<u32, RpcError> {
    negotiate(
        client.min,
        client.max,
        MIN_HOLDER_PROTOCOL_VERSION,
        HOLDER_PROTOCOL_VERSION,
    )
    .map_err(|mut e| {
        e.message = e.message.replace("daemon speaks", "holder speaks");
        e
    })
}

/// `holder.hello`: negotiate the holder protocol version of this connection.
pub struct Hello;

impl Method for Hello {
    const NAME: &'static str = "holder.hello";
    type Params = HelloParams;
    type Result = HelloResult;
}

/// Params of `holder.hello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloParams {
    /// Holder protocol versions the caller speaks.
    pub protocol: ProtocolRange,
    /// This connection is a direct stream the daemon is about to pass to a
    /// client: the holder takes it only within the connections it serves
    /// besides the daemon's own, and refuses this hello otherwise
    /// (`too_many_connections`). Absent: `false` (an older daemon, or a
    /// connection of the daemon's own). A holder that predates it ignores
    /// it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub direct: bool,
}

/// Result of `holder.hello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloResult {
    /// The negotiated version, used for the rest of the connection.
    pub protocol: u32,
    /// The ccd version that built the holder, e.g. `"0.1.0"`.
    pub holder_version: String,
}

/// `holder.info`: the session's state.
pub struct Info;

impl Method for Info {
    const NAME: &'static str = "holder.info";
    type Params = Empty;
    type Result = InfoResult;
}

/// `holder.screen`: the screen model now.
pub struct Screen;

impl Method for Screen {
    const NAME: &'static str = "holder.screen";
    type Params = ScreenParams;
    type Result = ScreenResult;
}

/// `holder.attach`: become an attached client of this connection; the
/// reply comes before the first notification.
pub struct Attach;

impl Method for Attach {
    const NAME: &'static str = "holder.attach";
    type Params = AttachParams;
    type Result = AttachResult;
}

/// `holder.detach`: stop this connection's stream.
pub struct Detach;

impl Method for Detach {
    const NAME: &'static str = "holder.detach";
    type Params = Empty;
    type Result = Done;
}

/// `holder.input`: bytes for the PTY (also accepted as a notification).
pub struct Input;

impl Method for Input {
    const NAME: &'static str = "holder.input";
    type Params = InputParams;
    type Result = Done;
}

/// `holder.resize`: set the terminal size (also accepted as a notification).
pub struct Resize;

impl Method for Resize {
    const NAME: &'static str = "holder.resize";
    type Params = TermSize;
    type Result = Done;
}

/// `holder.kill`: signal the child.
pub struct Kill;

impl Method for Kill {
    const NAME: &'static str = "holder.kill";
    type Params = KillParams;
    type Result = KillResult;
}

/// `holder.collect`: the child's final status; the holder exits after a
/// reply with `collected: true`.
pub struct Collect;

impl Method for Collect {
    const NAME: &'static str = "holder.collect";
    type Params = CollectParams;
    type Result = CollectResult;
}

/// `holder.terminal`: the attached client of this connection hands its
/// terminal to the holder, which from then on reads the keys and writes
/// the output itself (no hop through the client). The request carries the
/// terminal's input and output descriptors (`SCM_RIGHTS`, in that order)
/// with its first bytes; see "Terminal hand-off" in `docs/protocol.md`.
pub struct Terminal;

impl Method for Terminal {
    const NAME: &'static str = "holder.terminal";
    type Params = TerminalParams;
    type Result = TerminalResult;
}

/// Params of `holder.terminal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalParams {
    /// The stream offset up to which the client has drawn this
    /// connection's output (the end of the last chunk or the `seq` of the
    /// last redraw it wrote to the terminal). When the holder has sent
    /// more, it redraws the terminal instead.
    pub drawn: u64,
    /// The detach key (a control character): pressed once it ends the
    /// hand-off ([`Released`]); twice in a row it reaches the session once.
    pub detach_key: u8,
    /// The client turned focus reports on in its terminal (`CSI ? 1004 h`)
    /// and wants to hear of them ([`Focus`]): the holder takes the reports
    /// (`ESC [ I`, `ESC [ O`) out of the keys unless the program turned
    /// focus reporting on itself, and tells the client of each change.
    /// Since [`FOCUS_VERSION`]; absent: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub focus: bool,
}

/// `holder.focus`, a notification to a client that handed its terminal
/// over with [`TerminalParams::focus`]: the terminal's focus changed (read
/// from its focus reports). Since [`FOCUS_VERSION`].
pub struct Focus;

impl crate::methods::NotificationKind for Focus {
    const NAME: &'static str = "holder.focus";
    type Params = FocusParams;
}

/// Params of `holder.focus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FocusParams {
    /// True: the terminal has the focus.
    pub focused: bool,
}

/// Result of `holder.terminal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalResult {
    /// True when output the client had not drawn was in flight: the
    /// holder's first write to the terminal is a full redraw.
    pub redraw: bool,
}

/// `holder.released`, a notification: the holder no longer reads or
/// writes the client's terminal (its descriptors are closed); nothing of
/// the stream follows on the connection.
pub struct Released;

impl crate::methods::NotificationKind for Released {
    const NAME: &'static str = "holder.released";
    type Params = ReleasedParams;
}

/// Params of `holder.released`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleasedParams {
    /// Why: the detach key was pressed.
    pub reason: ReleaseReason,
}

/// Why the holder let a terminal go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReleaseReason {
    /// The person pressed the detach key.
    DetachKey,
    /// The terminal hung up (its reads fail).
    Hangup,
    /// A reason a later ccd adds.
    #[serde(other)]
    Other,
}

/// `holder.respond`: answer the permission prompt on the screen (see
/// "Walking a dialog" in `docs/protocol.md`): the holder finds the option
/// by its label, moves the pointer one arrow at a time and sees each move
/// on its screen model before the next, presses Enter only with the
/// pointer on that option once the prompt has been shown for a settle
/// time, and answers once the prompt has gone. With `message` (a
/// refusal's), it then waits for the input prompt and submits the message
/// like [`Submit`]. Since [`WALK_VERSION`].
pub struct Respond;

impl Method for Respond {
    const NAME: &'static str = "holder.respond";
    type Params = RespondParams;
    type Result = RespondResult;
}

/// Params of `holder.respond`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RespondParams {
    /// The prompt id the caller saw; another prompt (or none) on screen
    /// refuses the call with nothing typed (`prompt_not_shown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The answer.
    pub choice: RespondChoice,
    /// With `choice` `no`: what Claude should do instead, submitted as the
    /// next prompt once the input prompt is back (already bounded by the
    /// caller).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Result of `holder.respond`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RespondResult {
    /// The prompt answered.
    pub prompt: String,
    /// The label of the option chosen.
    pub option: String,
    /// Arrow keys pressed.
    pub arrows: u32,
    /// Enter presses (a lost Enter is pressed again).
    pub enters: u32,
    /// With a `message`: whether it was submitted (the draft left the box).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_submitted: Option<bool>,
}

/// `holder.submit`: type `text` into the input box as text (escape
/// sequences and controls removed, inside a bracketed paste when the
/// session has it on: it never becomes keys) and submit it, each step seen
/// on the screen model (the draft shows the text, then leaves the box);
/// only at the input prompt unless `force`. Since [`WALK_VERSION`].
pub struct Submit;

impl Method for Submit {
    const NAME: &'static str = "holder.submit";
    type Params = SubmitParams;
    type Result = SubmitResult;
}

/// Params of `holder.submit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitParams {
    /// The text (already bounded by the caller).
    pub text: String,
    /// Type it even when the screen is not the input prompt (nothing is
    /// checked then).
    #[serde(default)]
    pub force: bool,
}

/// Result of `holder.submit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitResult {
    /// Bytes written to the terminal (the text, its paste markers, the
    /// Enters).
    pub bytes: u64,
    /// Whether the draft left the box; `None` when forced past a screen
    /// that was not the prompt (nothing to check).
    pub submitted: Option<bool>,
    /// Characters of the text not typed (escape sequences and controls).
    pub removed: u64,
}

/// How the child ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitInfo {
    /// Exit status, if it exited normally.
    pub code: Option<i32>,
    /// Signal number, if it was killed by a signal.
    pub signal: Option<i32>,
}

/// Per-client counters, as reported by `holder.info`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientStats {
    /// Client id (unique within this holder).
    pub id: u64,
    /// Attach mode.
    pub mode: AttachMode,
    /// Output bytes this client never received (replaced by a resync).
    pub bytes_dropped: u64,
    /// Resyncs sent after an overflow (the initial attach resync not counted).
    pub resyncs: u64,
    /// Bytes currently queued.
    pub queued: usize,
}

/// Where the session is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Spawned; nothing recognized yet.
    Starting,
    /// The trust dialog was seen (and possibly answered); not ready yet.
    Trust,
    /// The registry entry for the child is live.
    Ready,
    /// The child exited after being ready.
    Exited,
    /// Start failed (error on screen, or exit before ready).
    Failed,
}

impl State {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Trust => "trust",
            State::Ready => "ready",
            State::Exited => "exited",
            State::Failed => "failed",
        }
    }
}

/// Why a person must look at the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum AttentionReason {
    /// The custom API key dialog: a security choice, never answered by ccd.
    ApiKeyDialog,
    /// The trust dialog, and auto-trust is off.
    TrustDialog,
    /// The trust dialog cannot be answered safely.
    TrustAmbiguous {
        /// What is ambiguous.
        detail: String,
    },
    /// Navigation to the trust option could not be verified.
    TrustUnverified {
        /// What went wrong.
        detail: String,
    },
    /// An unrecognized screen that seems to wait for the user.
    UnknownBlockingScreen {
        /// The classifier's hint.
        hint: String,
    },
}

/// Why the id a process writes changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwitchReason {
    /// A new, empty conversation (`/clear`, or anything else that starts
    /// over): the new id had no transcript yet.
    Clear,
    /// An existing conversation taken up inside the TUI: the new id's
    /// transcript was there before the switch.
    Resume,
    /// Not established (a reason added by a later ccd reads as this too).
    #[serde(other)]
    Unknown,
}

impl SwitchReason {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            SwitchReason::Clear => "clear",
            SwitchReason::Resume => "resume",
            SwitchReason::Unknown => "unknown",
        }
    }
}

/// The session needs a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attention {
    /// Why.
    pub reason: AttentionReason,
    /// Screen text when it was raised.
    pub screen: String,
    /// Unix ms when it was raised.
    pub since: i64,
}

open_enum! {
    /// What a [`Transition`] records: a [`State`] entered, or attention
    /// raised or cleared.
    pub enum TransitionState {
        Starting = "starting",
        Trust = "trust",
        Ready = "ready",
        Exited = "exited",
        Failed = "failed",
        NeedsAttention = "needs_attention",
        AttentionCleared = "attention_cleared";
        /// A value a later holder records, kept as sent.
        Other(String),
    }
}

impl From<State> for TransitionState {
    fn from(s: State) -> Self {
        match s {
            State::Starting => TransitionState::Starting,
            State::Trust => TransitionState::Trust,
            State::Ready => TransitionState::Ready,
            State::Exited => TransitionState::Exited,
            State::Failed => TransitionState::Failed,
        }
    }
}

/// One recorded state change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    pub state: TransitionState,
    /// Unix ms.
    pub at: i64,
    /// Detail (failure reason, attention reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Screen text at that moment.
    pub screen: String,
}

/// Registry status of the session, read when asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegistryStatus {
    /// `idle`, `busy`, `waiting`, or whatever the CLI wrote.
    pub status: Option<String>,
    /// For `waiting`: what for.
    pub waiting_for: Option<String>,
    /// Session id as the entry holds it now.
    pub session_id: String,
}

/// A conversation the child wrote before the one it writes now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EarlierId {
    /// The id it wrote.
    pub session_id: String,
    /// Unix ms when the holder saw the entry name the next id.
    pub until: i64,
    /// The id it wrote next.
    pub superseded_by: String,
    /// `clear` (a new, empty conversation), `resume` (an existing one taken
    /// up inside the TUI), `unknown`.
    pub reason: SwitchReason,
}

/// A tool permission dialog on the screen (built by the holder from
/// `ccd_screen::PermissionDialog`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionInfo {
    /// `bash`, `file_edit`, `web_fetch`, `mcp`, `other`.
    pub kind: String,
    /// The heading as shown ("Bash command").
    #[serde(default)]
    pub heading: Option<String>,
    /// The command or the path, as shown.
    #[serde(default)]
    pub detail: Option<String>,
    /// Option labels in screen order.
    #[serde(default)]
    pub options: Vec<String>,
    /// Index of the option under the pointer.
    #[serde(default)]
    pub selected: Option<usize>,
}

impl PermissionInfo {
    /// The same dialog as `other` (the pointer may have moved).
    pub fn same_dialog(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.heading == other.heading
            && self.detail == other.detail
            && self.options == other.options
    }
}

/// Result of `holder.info`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InfoResult {
    /// The holder's pid.
    pub holder_pid: u32,
    /// The child's pid.
    pub child_pid: u32,
    /// The conversation the child writes now: what its registry entry
    /// names (the expected id until the entry exists).
    pub session_id: Option<String>,
    /// The conversations it wrote before, oldest first (absent from older
    /// holders).
    #[serde(default)]
    pub earlier_ids: Vec<EarlierId>,
    /// Normalized cwd.
    pub cwd: String,
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Lifecycle state.
    pub state: State,
    /// Why it failed, when `state` is `failed`.
    pub failure: Option<String>,
    /// Set while the session waits for a person.
    pub needs_attention: Option<Attention>,
    /// The tool permission dialog the screen shows now, if any (absent
    /// from older holders).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<PermissionInfo>,
    /// Registry status (when an entry for the child exists).
    pub status: Option<RegistryStatus>,
    /// How the child ended.
    pub exit: Option<ExitInfo>,
    /// Unix ms when the child was started.
    pub started_at: i64,
    /// Current terminal size.
    pub size: TermSize,
    /// Attached clients.
    pub clients: Vec<ClientStats>,
    /// Last state changes, oldest first (at most 10).
    pub transitions: Vec<Transition>,
    /// Bytes of output read from the PTY so far.
    pub output_bytes: u64,
    /// The model as the CLI's welcome banner names it ("Opus 4.8"), once
    /// read (absent from older holders, and until the banner shows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The context window, in tokens, when the banner states it
    /// ("(1M context)"); absent when it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The permission mode the footer under the input box showed last
    /// (Shift-Tab changes included; kept while the footer shows none, as
    /// under a dialog); absent until read, and from older holders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<screen::PermissionMode>,
    /// Connections the holder has accepted so far, the one asking
    /// included (absent from older holders): what a caller's work cost in
    /// connections is the difference of two readings, less one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// Unix ms of the last input written to the PTY by anyone (a client's
    /// keys, a submit, an answer); absent before any, and from older
    /// holders. The reaper leaves a session alone for a while after it
    /// (a prompt just submitted is not `busy` yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_input_at: Option<i64>,
}

/// Params of `holder.screen`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ScreenParams {
    /// Default `text`.
    #[serde(default)]
    pub format: ScreenFormat,
}

/// Result of `holder.screen`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenResult {
    /// Text of each visible row.
    pub rows: Vec<String>,
    /// The rows joined (trailing blanks dropped).
    pub text: String,
    /// With `format: ansi`: the screen with attributes (escape sequences).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ansi: Option<String>,
    /// Cursor (`visible` absent from older holders: read as `true`).
    pub cursor: Cursor,
    /// Size.
    pub size: TermSize,
    /// Terminal modes.
    pub modes: TerminalModes,
    /// Window title.
    pub title: String,
    /// Classifier verdict.
    pub verdict: ScreenState,
}

/// Params of `holder.attach`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AttachParams {
    /// Default `interactive` (`other` is refused).
    #[serde(default)]
    pub mode: AttachMode,
    /// The client's terminal size (interactive only): applied before the
    /// first redraw and remembered for the size policy. A version-0 holder
    /// may ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<TermSize>,
}

/// Result of `holder.attach` (sent before the first notification).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachResult {
    /// This client's id.
    pub client_id: u64,
    /// Stream offset of the initial resync.
    pub seq: u64,
    /// Size.
    pub size: TermSize,
}

/// Params of `holder.input`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InputParams {
    /// Bytes to type (base64 on the wire).
    #[serde(with = "crate::b64")]
    pub data: Vec<u8>,
}

/// Params of `holder.kill`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KillParams {
    /// Default `term`.
    #[serde(default)]
    pub signal: KillSignal,
    /// If set (with `term`/`hup`): SIGKILL after this many ms if the child
    /// is still alive.
    #[serde(default)]
    pub grace_ms: Option<u64>,
    /// Refuse (`not_at_prompt`, nothing sent) when input reached the PTY
    /// after this unix ms: the reaper's stop is for a session nobody typed
    /// into since it last looked. Checked with the input gate held, so no
    /// input slips in between the check and the signal. Older holders
    /// ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unless_input_after: Option<i64>,
}

/// Result of `holder.kill`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillResult {
    /// False when the child had already exited (nothing sent).
    pub sent: bool,
}

/// Params of `holder.collect`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CollectParams {
    /// Wait up to this long for the child to exit (default 0).
    #[serde(default)]
    pub wait_ms: u64,
}

/// Result of `holder.collect`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectResult {
    /// True: the child exited, this is its final status, and the holder
    /// exits after this reply. False: still running, nothing changed.
    pub collected: bool,
    /// Exit status.
    pub exit: Option<ExitInfo>,
    /// Final lifecycle state.
    pub state: State,
    /// Failure reason, if failed.
    pub failure: Option<String>,
    /// Last screen text.
    pub screen: String,
    /// The conversation the child wrote last (absent from older holders).
    #[serde(default)]
    pub session_id: Option<String>,
}

/// Result of methods that return nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {
    /// Always true.
    pub ok: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn negotiation_names_the_holder() {
        assert_eq!(
            negotiate_holder(HOLDER_PROTOCOL_RANGE),
            Ok(HOLDER_PROTOCOL_VERSION)
        );
        let e = negotiate_holder(ProtocolRange { min: 7, max: 9 }).expect_err("disjoint");
        assert!(e.message.contains("holder speaks"), "{}", e.message);
    }

    #[test]
    fn wire_shapes_are_the_holders() {
        // Sizes are `{rows, cols}` objects whatever the field order.
        let s: TermSize = serde_json::from_value(json!({"rows": 24, "cols": 80})).expect("size");
        assert_eq!(s, TermSize { cols: 80, rows: 24 });
        // Kill: signal defaults to term, grace_ms may be absent.
        let k: KillParams = serde_json::from_value(json!({})).expect("kill");
        assert_eq!(k.signal, KillSignal::Term);
        assert_eq!(k.grace_ms, None);
        // A version-0 holder's cursor has no `visible`.
        let r: ScreenResult = serde_json::from_value(json!({
            "rows": [], "text": "", "cursor": {"row": 1, "col": 2},
            "size": {"rows": 24, "cols": 80}, "modes": TerminalModes::default(), "title": "",
            "verdict": {"state": "loading"},
        }))
        .expect("screen");
        assert!(r.cursor.visible);
        let a = serde_json::to_value(AttachParams {
            mode: AttachMode::Observe,
            size: None,
        })
        .expect("attach");
        assert_eq!(a, json!({"mode": "observe"}));
        for m in ALL_HOLDER_METHODS {
            assert!(m.starts_with("holder."));
        }
        assert_eq!(canonical("session.input"), Input::NAME);
    }
}
