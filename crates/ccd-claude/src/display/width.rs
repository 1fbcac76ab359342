//! Columns of sanitized text: how wide a text shows on a terminal, and
//! how to fit it in a column. Widths are display columns
//! (`unicode-width`): a CJK character or an emoji takes two, a combining
//! mark or a zero-width space none. Meant for text [`super::line`] already
//! made safe (a control character counts as zero).

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// How many terminal columns `s` takes.
pub fn width(s: &str) -> usize {
    s.width()
}

/// `s` cut to at most `max` columns, `…` last when something was cut. The
/// cut falls between characters, before the first one that would not fit
/// (a wide character never straddles the edge); zero-width characters
/// that follow a kept one stay with it.
pub fn clip(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let room = max - 1; // for the `…`
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        out.push(c);
    }
    // A string's width can exceed the sum of its characters' (an emoji
    // presentation sequence): drop characters until it fits.
    while width(&out) > room {
        out.pop();
    }
    out.push('…');
    out
}

/// `s` followed by spaces up to `columns` display columns (as `{:<n}` does
/// by characters); `s` as it is when already that wide.
pub fn pad(s: &str, columns: usize) -> String {
    let w = width(s);
    let mut out = String::with_capacity(s.len() + columns.saturating_sub(w));
    out.push_str(s);
    out.extend(std::iter::repeat_n(' ', columns.saturating_sub(w)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_counts_display_columns() {
        assert_eq!(clip("日本語テキスト", 7), "日本語…");
        assert_eq!(clip("日本語", 6), "日本語");
        assert_eq!(clip("🚀🚀🚀", 4), "🚀…");
        assert_eq!(clip("abc", 0), "");
        assert_eq!(clip("abcdef", 4), "abc…");
        // A wide character that would straddle the edge is left out whole.
        assert_eq!(clip("ab日本", 4), "ab…");
        // Combining marks and zero-width characters stay with their base.
        assert_eq!(clip("e\u{301}e\u{301}e\u{301}x", 3), "e\u{301}e\u{301}…");
        assert_eq!(clip("a\u{200b}b\u{200b}c", 3), "a\u{200b}b\u{200b}c");
        for s in [
            "日本語テキスト",
            "🚀a🚀b",
            "❤\u{fe0f}❤\u{fe0f}❤\u{fe0f}",
            "e\u{301}🚀x",
        ] {
            for max in 0..10 {
                assert!(width(&clip(s, max)) <= max, "{s:?} in {max}");
            }
        }
    }

    #[test]
    fn padding_counts_display_columns() {
        assert_eq!(pad("日本", 6), "日本  ");
        assert_eq!(pad("a\u{200b}b", 4), "a\u{200b}b  ");
        assert_eq!(pad("abcdef", 3), "abcdef");
        assert_eq!(width(&pad("e\u{301}🚀", 8)), 8);
    }
}
