//! UTF-8 as `vte` reads it in its ground state: where text ends, a whole
//! character checked and decoded, a character repeated, the start of one
//! kept for the next call.

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

/// How many bytes at the start of `bytes` come before the first C0
/// control (a byte below 0x20), eight at a time: in each 64-bit word, a
/// byte below 0x20 borrows when 0x20 is taken from it (and had its top bit
/// clear); a borrow reaches only the bytes above the one that caused it,
/// so the lowest byte flagged is the first control.
pub(super) fn text_len(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut at = 0;
    for word in bytes.chunks_exact(8) {
        let mut w = [0; 8];
        w.copy_from_slice(word);
        let x = u64::from_le_bytes(w);
        let below = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        if below != 0 {
            return at + (below.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + bytes[at..]
        .iter()
        .position(|&b| b < 0x20)
        .unwrap_or(bytes.len() - at)
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

/// Whether the `len` bytes at `at` in `bytes` (2 to 4: a character's) are
/// the `len` bytes before them again: a character repeated (a rule, a
/// box's edge). Compared byte by byte, not through `memcmp`: a call per
/// repeat cost more than the compare.
#[inline(always)]
pub(super) fn repeats(bytes: &[u8], at: usize, len: usize) -> bool {
    match (
        at.checked_sub(len).map(|from| &bytes[from..at]),
        bytes.get(at..at + len),
    ) {
        (Some(before), Some(next)) => before.iter().zip(next).all(|(a, b)| a == b),
        _ => false,
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

    /// The word-at-a-time scan against a byte-at-a-time one: every byte
    /// value at every place of a stretch of text, and after it every value
    /// again (a borrow of the first must not hide it).
    #[test]
    fn text_len_is_the_first_control() {
        let naive = |b: &[u8]| b.iter().take_while(|&&b| b >= 0x20).count();
        for len in 0..20 {
            for at in 0..len {
                for first in 0..=255u8 {
                    for after in [0x00, 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0x9f, 0xff] {
                        let mut bytes = vec![b'a'; len];
                        bytes[at] = first;
                        if at + 1 < len {
                            bytes[at + 1] = after;
                        }
                        assert_eq!(text_len(&bytes), naive(&bytes), "{bytes:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn repeats_compares_the_character_before() {
        let rule = "──│".as_bytes();
        assert!(repeats(rule, 3, 3));
        assert!(!repeats(rule, 6, 3), "another character");
        assert!(!repeats(rule, 7, 3), "cut by the end");
        assert!(!repeats(rule, 2, 3), "nothing before");
        assert!(repeats("éé".as_bytes(), 2, 2));
        assert!(!repeats("éè".as_bytes(), 2, 2));
    }

    /// Validation without decoding against `str::from_utf8` and the C1
    /// range, for every lead byte and a spread of continuations.
    #[test]
    fn char_len_at_agrees_with_std() {
        let tails = [0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xff];
        for lead in 0x80..=0xffu8 {
            for &b1 in &tails {
                for &b2 in &tails {
                    for &b3 in &tails {
                        let seq = [lead, b1, b2, b3];
                        let want = (1..=4).find_map(|n| {
                            let c = std::str::from_utf8(&seq[..n]).ok()?.chars().next()?;
                            Some((n, ('\u{80}'..='\u{9f}').contains(&c)))
                        });
                        assert_eq!(char_len_at(&seq), want, "{seq:x?}");
                    }
                }
            }
        }
    }
}
