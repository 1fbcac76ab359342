//! The terminal sanitizer ([`ccd_claude::display::sanitize`]).

use ccd_claude::display::{is_unsafe, sanitize, Breaks, BREAK_MARKER};

/// Arbitrary text (invalid UTF-8 replaced) through both modes: the output
/// holds no ESC, C0, C1, DEL or bidi control (a `\n` only where line
/// breaks are kept), sanitizing it again changes nothing, and text that
/// needed no change comes back as it was.
pub fn display_sanitizer(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for breaks in [Breaks::Marked, Breaks::Kept] {
        let once = sanitize(&text, breaks);
        for c in once.chars() {
            assert!(
                !is_unsafe(c) || (c == '\n' && breaks == Breaks::Kept),
                "{c:?} left in {once:?} ({breaks:?})"
            );
        }
        assert_eq!(sanitize(&once, breaks), once, "not idempotent");
        if !text.chars().any(is_unsafe) {
            assert_eq!(once, text);
        }
        if breaks == Breaks::Marked {
            // Every line feed is shown: none can start a row unseen.
            let feeds = text.chars().filter(|&c| c == '\n').count();
            let markers = once.chars().filter(|&c| c == BREAK_MARKER).count();
            assert!(markers >= feeds, "a line break vanished in {once:?}");
        }
    }
}
