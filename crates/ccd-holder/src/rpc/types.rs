//! Params and results of the `holder.*` methods (shared by server and client).
//! See the crate README for the wire contract.

use ccd_screen::{ScreenState, TerminalModes};
use serde::{Deserialize, Serialize};

use crate::config::{KillSignal, Size};
use crate::exit::ExitInfo;
use crate::fanout::{AttachMode, ClientStats};
use crate::lifecycle::{AttentionReason, State};

/// `holder.info`.
pub const INFO: &str = "holder.info";
/// `holder.screen`.
pub const SCREEN: &str = "holder.screen";
/// `holder.attach`.
pub const ATTACH: &str = "holder.attach";
/// `holder.detach`.
pub const DETACH: &str = "holder.detach";
/// `holder.input`.
pub const INPUT: &str = "holder.input";
/// `holder.resize`.
pub const RESIZE: &str = "holder.resize";
/// `holder.kill`.
pub const KILL: &str = "holder.kill";
/// `holder.collect`.
pub const COLLECT: &str = "holder.collect";

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

/// One recorded state change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    /// `starting`, `trust`, `ready`, `exited`, `failed`, `needs_attention`,
    /// `attention_cleared`.
    pub state: String,
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
    pub reason: ccd_claude::id_switch::SwitchReason,
}

/// A tool permission dialog on the screen (see
/// [`ccd_screen::PermissionDialog`]).
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
    /// From a classified dialog.
    pub fn from_dialog(d: &ccd_screen::PermissionDialog) -> Self {
        Self {
            kind: serde_json::to_value(d.kind)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_else(|| "other".into()),
            heading: d.heading.clone(),
            detail: d.detail.clone(),
            options: d.options.iter().map(|o| o.label.clone()).collect(),
            selected: d.selected,
        }
    }

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
    pub size: Size,
    /// Attached clients.
    pub clients: Vec<ClientStats>,
    /// Last state changes, oldest first (at most 10).
    pub transitions: Vec<Transition>,
    /// Bytes of output read from the PTY so far.
    pub output_bytes: u64,
}

/// Screen formats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScreenFormat {
    /// Plain text rows.
    #[default]
    Text,
    /// Also the contents with SGR attributes (`contents_formatted`).
    Ansi,
}

/// Params of `holder.screen`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ScreenParams {
    /// Default `text`.
    #[serde(default)]
    pub format: ScreenFormat,
}

/// Cursor position, 0-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// Row.
    pub row: u16,
    /// Column.
    pub col: u16,
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
    /// Cursor.
    pub cursor: Cursor,
    /// Size.
    pub size: Size,
    /// Terminal modes.
    pub modes: TerminalModes,
    /// Window title.
    pub title: String,
    /// Classifier verdict.
    pub verdict: ScreenState,
}

/// The method a name stands for: on a direct stream (see
/// `docs/protocol.md`) a client uses the public names, which are these
/// four `holder.*` methods; every other name is itself.
pub fn canonical(method: &str) -> &str {
    match method {
        "session.attach" => ATTACH,
        "session.detach" => DETACH,
        "session.input" => INPUT,
        "session.resize" => RESIZE,
        other => other,
    }
}

/// Params of `holder.attach`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AttachParams {
    /// Default `interactive`.
    #[serde(default)]
    pub mode: AttachMode,
    /// The client's terminal size (interactive only): applied before the
    /// first redraw and remembered for the size policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Size>,
}

/// Result of `holder.attach` (sent before the first notification).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachResult {
    /// This client's id.
    pub client_id: u64,
    /// Stream offset of the initial resync.
    pub seq: u64,
    /// Size.
    pub size: Size,
}

/// Params of `holder.input`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InputParams {
    /// Bytes to type (base64 on the wire).
    #[serde(with = "ccd_protocol::b64")]
    pub data: Vec<u8>,
}

/// Params of `holder.kill`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KillParams {
    /// Default `term`.
    #[serde(default = "default_signal")]
    pub signal: KillSignal,
    /// If set (with `term`/`hup`): SIGKILL after this many ms if the child
    /// is still alive.
    #[serde(default)]
    pub grace_ms: Option<u64>,
}

fn default_signal() -> KillSignal {
    KillSignal::Term
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
    use ccd_screen::{classify_text, ScreenState, ScreenText};

    #[test]
    fn permission_info_from_a_classified_dialog() {
        let v = classify_text(&ScreenText::from_lines([
            "────────────────────────────────────────",
            " Bash command",
            "",
            "   echo hi > out.txt",
            "   Run echo hi > out.txt",
            "",
            " Do you want to proceed?",
            " ❯ 1. Yes",
            "   2. Yes, and always allow access to w/ from this project",
            "   3. No",
        ]));
        let ScreenState::PermissionDialog(d) = v else {
            panic!("not a permission dialog: {v:?}");
        };
        let p = PermissionInfo::from_dialog(&d);
        assert_eq!(p.kind, "bash");
        assert_eq!(p.heading.as_deref(), Some("Bash command"));
        assert_eq!(p.detail.as_deref(), Some("echo hi > out.txt"));
        assert_eq!(p.options.len(), 3);
        assert_eq!(p.selected, Some(0));
        let moved = PermissionInfo {
            selected: Some(2),
            ..p.clone()
        };
        assert!(p.same_dialog(&moved));
        let other = PermissionInfo {
            detail: Some("rm x".into()),
            ..p.clone()
        };
        assert!(!p.same_dialog(&other));
    }

    #[test]
    fn permission_is_optional_both_ways() {
        let p = PermissionInfo {
            kind: "bash".into(),
            heading: None,
            detail: None,
            options: vec![],
            selected: None,
        };
        let v = serde_json::to_value(&p).expect("serializes");
        let back: PermissionInfo = serde_json::from_value(v).expect("round trip");
        assert_eq!(back, p);
        let minimal: PermissionInfo =
            serde_json::from_value(serde_json::json!({"kind": "a_new_kind"})).expect("minimal");
        assert_eq!(minimal.kind, "a_new_kind");
    }
}
