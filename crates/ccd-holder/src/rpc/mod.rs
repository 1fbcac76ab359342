//! The holder's JSON-RPC socket, serving the holder protocol
//! ([`ccd_protocol::holder`]: methods, params, results, version):
//! [`server`] (bind, accept), [`slots`] (which connections are taken: the
//! cap and the slots kept for the daemon), [`conn`] (one connection,
//! request dispatch, the output pump of an attached client).

pub mod conn;
pub mod server;
pub mod slots;

use ccd_protocol::holder::PermissionInfo;

/// The `holder.info` view of a classified permission dialog.
pub fn permission_info(d: &ccd_screen::PermissionDialog) -> PermissionInfo {
    PermissionInfo {
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
        let p = permission_info(&d);
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
