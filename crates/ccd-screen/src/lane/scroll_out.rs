//! Plain lines that scroll out of the model before anything could show
//! them: found, so the lane can step past them instead of writing them.
//!
//! A stretch of *plain lines* is printable ASCII, CR and LF only. Fed to
//! the terminal with the scrolling region the whole screen, each LF moves
//! the cursor down a line or, on the bottom line, scrolls the screen up one
//! (a wrap at the margin does the same), and a scroll takes the top line
//! into the scrollback and brings a blank line in at the bottom. So once
//! the cursor is on the bottom line, `rows + scrollback` more LFs scroll
//! every line the model holds, screen and scrollback, out or in anew: no
//! cell written before them survives. What the lines before leave behind is
//! the cursor alone: after `\r\n`, with at least `rows` LFs before, column
//! 0 on the bottom line, no wrap pending. (The pen, the modes and the
//! charsets are not touched by plain lines; the scrollback is full either
//! way; the last character printed is the lane's to keep for `CSI b`.)
//!
//! [`scrolled_out`] finds the latest such point; the lane then puts the
//! cursor where the lines before it would have left it and parses on from
//! there. The model is the same as if every line had been written
//! (`tests/lane.rs` checks it against `vte` alone on streams of plain lines
//! under every mode and region its escapes set).

use super::utf8::printable;

/// Bytes looked at a time while scanning for the end of plain lines: the
/// test of a block is branch-free, so the compiler makes it vector code.
const BLOCK: usize = 32;

/// Whether `b` belongs to plain lines: printable ASCII, CR or LF.
fn is_plain(b: u8) -> bool {
    printable(b) | (b == b'\r') | (b == b'\n')
}

/// How many bytes at the start of `bytes` are plain lines.
pub(super) fn plain_len(bytes: &[u8]) -> usize {
    let mut at = 0;
    for block in bytes.chunks_exact(BLOCK) {
        let other = block
            .iter()
            .fold(0u8, |acc, &b| acc | u8::from(!is_plain(b)));
        if other != 0 {
            break;
        }
        at += BLOCK;
    }
    at + bytes[at..]
        .iter()
        .position(|&b| !is_plain(b))
        .unwrap_or(bytes.len() - at)
}

/// In `lines` (plain lines, fed with the scrolling region the whole
/// screen), where the lines that scroll out of a screen of `rows` lines and
/// `scrollback` lines of scrollback end: the latest point just after a
/// `\r\n` that has at least `rows` LFs before it (the cursor is then on the
/// bottom line, column 0) and `rows + scrollback` LFs after it (everything
/// written before it is scrolled out). `None` if there is no such point.
pub(super) fn scrolled_out(lines: &[u8], rows: usize, scrollback: usize) -> Option<usize> {
    let after_needed = rows.checked_add(scrollback)?;
    if lines.len() <= after_needed.saturating_add(rows) {
        return None;
    }
    for (after, lf) in memchr::memrchr_iter(b'\n', lines).enumerate() {
        if after >= after_needed && lf > 0 && lines[lf - 1] == b'\r' {
            let end = lf + 1;
            let before = memchr::memchr_iter(b'\n', &lines[..end]).take(rows).count();
            return (before >= rows).then_some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_end_at_the_first_other_byte() {
        let mut bytes = b"ab\r\ncd\n".repeat(20);
        assert_eq!(plain_len(&bytes), bytes.len());
        for (at, other) in [(0, 0x1b), (33, 0x7f), (64, 0x09), (139, 0xc3), (70, 0x00)] {
            let mut b = bytes.clone();
            b[at] = other;
            assert_eq!(plain_len(&b), at, "{other:#x} at {at}");
        }
        bytes.truncate(5);
        assert_eq!(plain_len(&bytes), 5);
        assert_eq!(plain_len(b""), 0);
    }

    #[test]
    fn the_cut_leaves_enough_lines_on_both_sides() {
        let lines = b"line\r\n".repeat(10);
        // 3 rows, no scrollback: 3 LFs after, 3 before (the cut's own among them).
        assert_eq!(scrolled_out(&lines, 3, 0), Some(6 * 7));
        // With 2 lines of scrollback: 5 after.
        assert_eq!(scrolled_out(&lines, 3, 2), Some(6 * 5));
        // Not enough lines on one side or the other.
        assert_eq!(scrolled_out(&lines, 5, 1), None);
        assert_eq!(scrolled_out(&lines, 6, 0), None);
        // Only after a CR LF: a bare LF is passed over.
        let mixed = b"a\r\nb\r\nc\r\nd\ne\nf\n";
        assert_eq!(scrolled_out(mixed, 1, 1), Some(9));
        assert_eq!(scrolled_out(b"a\nb\nc\nd\ne\n", 1, 0), None);
        assert_eq!(scrolled_out(&lines, usize::MAX, 1), None);
    }
}
