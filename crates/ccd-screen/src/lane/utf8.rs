//! UTF-8 as `vte` reads it in its ground state: a whole character checked
//! and decoded, a character repeated, the start of one kept for the next
//! call.

/// The length of the character that starts `bytes` (a byte 0x80 or above
/// first), if it is valid UTF-8 and whole (the ranges of the Unicode
/// standard's table 3-7, as `str::from_utf8` checks them), and whether it
/// is a C1 control (U+0080 to U+009F, which `vte` does not print).
#[inline]
pub(super) fn char_len_at(bytes: &[u8]) -> Option<(usize, bool)> {
    let b0 = *bytes.first()?;
    let (len, second) = match b0 {
        0xc2..=0xdf => (2, 0x80..=0xbf),
        0xe0 => (3, 0xa0..=0xbf),
        0xe1..=0xec | 0xee..=0xef => (3, 0x80..=0xbf),
        0xed => (3, 0x80..=0x9f),
        0xf0 => (4, 0x90..=0xbf),
        0xf1..=0xf3 => (4, 0x80..=0xbf),
        0xf4 => (4, 0x80..=0x8f),
        _ => return None,
    };
    let seq = bytes.get(..len)?;
    if !second.contains(&seq[1]) || seq[2..].iter().any(|&b| b & 0xc0 != 0x80) {
        return None;
    }
    Some((len, b0 == 0xc2 && seq[1] <= 0x9f))
}

/// The character at the start of `bytes` (a byte 0x80 or above first) and
/// its length, if it is valid UTF-8, whole, and printed (not a C1
/// control). Three-byte characters of the common leads (box drawing, CJK)
/// are checked and decoded together; the rest by [`char_len_at`] and
/// [`decode`].
#[inline(always)]
pub(super) fn printed_at(bytes: &[u8]) -> Option<(usize, char)> {
    if let [b0 @ (0xe1..=0xec | 0xee..=0xef), b1, b2, ..] = *bytes {
        if b1 & 0xc0 != 0x80 || b2 & 0xc0 != 0x80 {
            return None;
        }
        let v = (u32::from(b0 & 0x0f) << 12) | (u32::from(b1 & 0x3f) << 6) | u32::from(b2 & 0x3f);
        return char::from_u32(v).map(|c| (3, c));
    }
    match char_len_at(bytes)? {
        (len, false) => Some((len, decode(&bytes[..len]))),
        (_, true) => None,
    }
}

/// Whether `b` is printable ASCII (0x20 to 0x7e).
#[inline(always)]
pub(super) fn printable(b: u8) -> bool {
    b.wrapping_sub(0x20) < 0x5f
}

/// The character `seq` encodes: one whole, valid UTF-8 sequence (checked by
/// [`char_len_at`] first); U+FFFD if it is not.
pub(super) fn decode(seq: &[u8]) -> char {
    let lead = match seq.len() {
        0 => return char::REPLACEMENT_CHARACTER,
        1 => return char::from(seq[0]),
        2 => u32::from(seq[0] & 0x1f),
        3 => u32::from(seq[0] & 0x0f),
        _ => u32::from(seq[0] & 0x07),
    };
    let v = seq[1..]
        .iter()
        .fold(lead, |v, &b| (v << 6) | u32::from(b & 0x3f));
    char::from_u32(v).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// A character of two to four bytes, to find it again (a rule, a box's
/// edge repeat one): its bytes held in a word, compared a word at a time,
/// not through `memcmp` (a call per repeat cost more than the compare).
#[derive(Debug, Clone, Copy)]
pub(super) struct Repeated {
    /// The character's bytes, the first lowest.
    word: u32,
    /// The bits of `word` they take.
    mask: u32,
    len: usize,
}

impl Repeated {
    /// The character `seq` (2 to 4 bytes).
    #[inline(always)]
    pub(super) fn new(seq: &[u8]) -> Self {
        let len = seq.len().clamp(1, 4);
        Self {
            word: seq.iter().rev().fold(0, |w, &b| (w << 8) | u32::from(b)),
            mask: u32::MAX >> (8 * (4 - len)),
            len,
        }
    }

    /// Whether the character is at `at` in `bytes` (whole).
    #[inline(always)]
    pub(super) fn at(&self, bytes: &[u8], at: usize) -> bool {
        match bytes.get(at..at + 4) {
            Some(&[a, b, c, d]) => (u32::from_le_bytes([a, b, c, d]) ^ self.word) & self.mask == 0,
            _ => bytes.get(at..at + self.len).is_some_and(|next| {
                next.iter()
                    .zip(self.word.to_le_bytes())
                    .all(|(&a, b)| a == b)
            }),
        }
    }
}

/// The start of a character that more bytes could finish at the end of
/// `text`, read as `vte` reads text in its ground state (each invalid
/// sequence replaced, reading on after it): what `vte` keeps for its next
/// call.
pub(super) fn unfinished_end(mut text: &[u8]) -> Option<&[u8]> {
    loop {
        let e = std::str::from_utf8(text).err()?;
        match e.error_len() {
            None => return Some(&text[e.valid_up_to()..]),
            Some(n) => text = &text[e.valid_up_to() + n..],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_character_is_found_again_whole() {
        let rule = "──│".as_bytes();
        let line = Repeated::new(&rule[..3]);
        assert!(line.at(rule, 3), "with a word to read");
        assert!(!line.at(rule, 6), "another character");
        assert!(!line.at(rule, 7), "cut by the end");
        assert!(line.at(&rule[..6], 3), "at the end");
        assert!(!line.at(&rule[..5], 3), "cut");
        let e = Repeated::new("é".as_bytes());
        assert!(e.at("éé".as_bytes(), 2));
        assert!(e.at("ééxy".as_bytes(), 2), "bytes after it ignored");
        assert!(!e.at("éè".as_bytes(), 2));
        assert!(!e.at("éèxy".as_bytes(), 2));
        let rocket = Repeated::new("🚀".as_bytes());
        assert!(rocket.at("🚀🚀".as_bytes(), 4));
        assert!(!rocket.at("🚀🙂".as_bytes(), 4));
    }

    /// Every lead byte from 0x80 with a spread of continuations, and the
    /// character `str::from_utf8` reads at their start (if any), with its
    /// length.
    fn every_sequence(mut check: impl FnMut([u8; 4], Option<(usize, char)>)) {
        let tails = [0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xff];
        for lead in 0x80..=0xffu8 {
            for &b1 in &tails {
                for &b2 in &tails {
                    for &b3 in &tails {
                        let seq = [lead, b1, b2, b3];
                        let read = (1..=4).find_map(|n| {
                            let c = std::str::from_utf8(&seq[..n]).ok()?.chars().next()?;
                            Some((n, c))
                        });
                        check(seq, read);
                    }
                }
            }
        }
    }

    fn c1(c: char) -> bool {
        ('\u{80}'..='\u{9f}').contains(&c)
    }

    /// The printed character against `str::from_utf8` and the C1 range,
    /// whole and cut.
    #[test]
    fn printed_at_agrees_with_std() {
        every_sequence(|seq, read| {
            let want = read.filter(|&(_, c)| !c1(c));
            assert_eq!(printed_at(&seq), want, "{seq:x?}");
            for cut in 0..4 {
                let whole = want.filter(|&(n, _)| n <= cut);
                assert_eq!(printed_at(&seq[..cut]), whole, "{seq:x?} cut at {cut}");
            }
        });
    }

    /// Validation without decoding against `str::from_utf8` and the C1
    /// range.
    #[test]
    fn char_len_at_agrees_with_std() {
        every_sequence(|seq, read| {
            let want = read.map(|(n, c)| (n, c1(c)));
            assert_eq!(char_len_at(&seq), want, "{seq:x?}");
        });
    }
}
