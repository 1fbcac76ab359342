//! Classifiers on synthetic screens, painted the way Claude Code paints: absolute
//! cursor moves and `CSI n C` instead of spaces, so the text only reads right
//! through the screen model.

use ccd_screen::{
    classify_screen, KeyMoves, NavKey, Screen, ScreenState, StartErrorKind, TerminalModes,
    TrustPath,
};

/// Paint `lines` on a 40x120 screen, replacing runs of spaces by cursor moves.
fn paint(lines: &[&str]) -> Screen {
    let mut s = Screen::new(40, 120);
    let mut out = String::from("\x1b[?25l\x1b[2J");
    for (i, line) in lines.iter().enumerate() {
        out.push_str(&format!("\x1b[{};1H", i + 2));
        let mut spaces = 0;
        for c in line.chars() {
            if c == ' ' {
                spaces += 1;
                continue;
            }
            if spaces > 0 {
                out.push_str(&format!("\x1b[{spaces}C"));
                spaces = 0;
            }
            out.push(c);
        }
    }
    s.process(out.as_bytes());
    s
}

#[test]
fn reordered_trust_dialog_never_picks_no() {
    let s = paint(&[
        " Accessing workspace:",
        "",
        " Quick safety check: Is this a project you created or one you trust?",
        "",
        " ❯ No, exit",
        "   No, and remember this folder",
        "   Yes, I trust this folder",
        "",
        " Enter to confirm · Esc to cancel",
    ]);
    let ScreenState::TrustDialog(d) = classify_screen(&s) else {
        panic!("not a trust dialog");
    };
    assert_eq!(d.options.len(), 3);
    assert_eq!(d.selected, Some(0));
    assert_eq!(d.trust_index, Some(2));
    assert!(d.options[0].is_exit && d.options[1].is_exit && d.options[2].is_trust);
    assert_eq!(
        d.to_trust,
        TrustPath::Keys(KeyMoves {
            key: NavKey::Down,
            count: 2
        })
    );
    assert_eq!(
        d.keys_to_trust().unwrap().to_bytes(false),
        b"\x1b[B\x1b[B".to_vec()
    );
    assert_eq!(
        d.keys_to_trust().unwrap().to_bytes(true),
        b"\x1bOB\x1bOB".to_vec()
    );
}

#[test]
fn trust_dialog_without_a_clear_trust_option_is_ambiguous() {
    let s = paint(&[
        " Do you trust the files in this folder?",
        "",
        " ❯ 1. No, exit",
        "   2. Maybe later",
    ]);
    let ScreenState::TrustDialog(d) = classify_screen(&s) else {
        panic!("not a trust dialog");
    };
    assert_eq!(d.keys_to_trust(), None);
    assert!(matches!(d.to_trust, TrustPath::Ambiguous(_)));
}

#[test]
fn api_key_dialog() {
    let s = paint(&[
        " Detected a custom API key in your environment",
        "",
        " ANTHROPIC_API_KEY: sk-ant-...0123456789abcdefghij",
        "",
        " Do you want to use this API key?",
        "",
        "   1. Yes",
        " ❯ 2. No (recommended)",
        "",
        " Enter to confirm · Esc to cancel",
    ]);
    match classify_screen(&s) {
        ScreenState::ApiKeyDialog(d) => {
            assert_eq!(d.options, vec!["Yes", "No (recommended)"]);
            assert_eq!(d.selected, Some(1));
        }
        other => panic!("expected API key dialog, got {other:?}"),
    }
}

#[test]
fn permission_prompt() {
    let rule = "─".repeat(120);
    let s = paint(&[
        "● Bash(rm -rf build)",
        "  ⎿  Running…",
        "",
        &rule,
        " Bash command",
        "",
        "   rm -rf build",
        "   Remove the build directory",
        "",
        " Do you want to proceed?",
        " ❯ 1. Yes",
        "   2. Yes, and don’t ask again for: rm:*",
        "   3. No, and tell Claude what to do differently (esc)",
    ]);
    match classify_screen(&s) {
        ScreenState::PermissionDialog(p) => {
            assert_eq!(p.question, "Do you want to proceed?");
            assert_eq!(p.options.len(), 3);
            assert_eq!(p.selected, Some(0));
        }
        other => panic!("expected permission prompt, got {other:?}"),
    }
}

#[test]
fn prompt_too_long() {
    let rule = "─".repeat(120);
    let s = paint(&[
        "> summarize everything",
        "  ⎿  Prompt is too long",
        "",
        &rule,
        "❯ ",
        &rule,
        "  ? for shortcuts",
    ]);
    match classify_screen(&s) {
        ScreenState::Error(e) => {
            assert_eq!(e.kind, StartErrorKind::PromptTooLong);
            assert_eq!(e.text, "⎿  Prompt is too long");
        }
        other => panic!("expected error, got {other:?}"),
    }
}

#[test]
fn session_id_in_use() {
    let s = paint(&["Error: Session ID 7d1d0b0e-2f7a-4c1e-9a55-1234567890ab is already in use."]);
    match classify_screen(&s) {
        ScreenState::Error(e) => assert_eq!(
            e.kind,
            StartErrorKind::SessionIdInUse {
                session_id: "7d1d0b0e-2f7a-4c1e-9a55-1234567890ab".into()
            }
        ),
        other => panic!("expected error, got {other:?}"),
    }
}

#[test]
fn folder_not_trusted() {
    let s = paint(&["Claude Code didn't start because this folder isn't trusted."]);
    assert!(matches!(
        classify_screen(&s),
        ScreenState::Error(e) if e.kind == StartErrorKind::FolderNotTrusted
    ));
}

#[test]
fn long_session_id_wrapped_by_the_margin() {
    let mut s = Screen::new(10, 50);
    s.process(b"No conversation found with session ID: 0b6c5c1e-1111-4222-8333-944455556666\r\n");
    assert!(matches!(
        classify_screen(&s),
        ScreenState::Error(e) if e.kind == StartErrorKind::NoConversationFound {
            session_id: "0b6c5c1e-1111-4222-8333-944455556666".into()
        }
    ));
}

#[test]
fn ready_with_a_draft() {
    let rule = "─".repeat(120);
    let s = paint(&[&rule, "❯ fix the failing test", &rule, "  ? for shortcuts"]);
    match classify_screen(&s) {
        ScreenState::Ready(r) => assert_eq!(r.input, "fix the failing test"),
        other => panic!("expected ready, got {other:?}"),
    }
}

#[test]
fn blank_is_loading_and_unknown_menus_are_reported() {
    assert_eq!(classify_screen(&Screen::new(10, 40)), ScreenState::Loading);
    let s = paint(&[
        " Choose the text style that looks best with your terminal:",
        "",
        " ❯ 1. Dark mode",
        "   2. Light mode",
    ]);
    assert_eq!(
        classify_screen(&s),
        ScreenState::Unknown {
            blocking_hint: Some("Choose the text style that looks best with your terminal:".into())
        }
    );
    let s = paint(&["✻ Welcoming…"]);
    assert_eq!(
        classify_screen(&s),
        ScreenState::Unknown {
            blocking_hint: None
        }
    );
}

#[test]
fn verdicts_and_modes_serialize() {
    let s = paint(&[
        " Accessing workspace:",
        " Quick safety check: Is this a project you created or one you trust?",
        "",
        " ❯ No, exit",
        "   Yes, I trust this folder",
    ]);
    let state = classify_screen(&s);
    let json = serde_json::to_string(&state).unwrap();
    let back: ScreenState = serde_json::from_str(&json).unwrap();
    assert_eq!(back, state);

    let mut s = Screen::new(5, 20);
    s.process(b"\x1b[?1004h\x1b[>1u\x1b[>4;2m\x1b[?1000h\x1b[?1006h");
    let modes = s.modes();
    let json = serde_json::to_string(&modes).unwrap();
    let back: TerminalModes = serde_json::from_str(&json).unwrap();
    assert_eq!(back, modes);
}

#[test]
fn reset_bytes_undo_the_modes() {
    let mut s = Screen::new(5, 20);
    s.process(
        b"\x1b[?1004h\x1b[?2004h\x1b[>1u\x1b[>3u\x1b[>4;2m\x1b[?1002h\x1b[?1006h\x1b[?2031h\x1b[?1049h\x1b[>5u\x1b[?1h\x1b=",
    );
    let reset = s.modes().reset_bytes();
    s.process(&reset);
    assert_eq!(s.modes(), TerminalModes::default());
}
