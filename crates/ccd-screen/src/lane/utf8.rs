//! UTF-8 as `vte` reads it in its ground state: a whole character checked
//! and decoded, the last one printed, the start of one kept for the next
//! call.

/// The character that starts `bytes` (a byte 0x80 or above first) and its
/// length, if it is valid UTF-8 and whole (the ranges of the Unicode
/// standard's table 3-7, as `str::from_utf8` checks them).
pub(super) fn char_at(bytes: &[u8]) -> Option<(char, usize)> {
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
    Some((decode(seq), len))
}

/// The character `seq` encodes: one whole, valid UTF-8 sequence (checked by
/// [`char_at`] first); U+FFFD if it is not.
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

/// Bytes in the UTF-8 sequence `lead` starts (1 for ASCII and for a byte
/// that cannot start one).
pub(super) fn seq_len(lead: u8) -> usize {
    match lead {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}

/// The last character `vte` printed of `text` (valid UTF-8, no C0 control):
/// the last one that is not a C1 control.
pub(super) fn last_char(text: &[u8]) -> Option<char> {
    let mut end = text.len();
    while end > 0 {
        let start = (end.saturating_sub(4)..end)
            .rev()
            .find(|&i| text[i] & 0xc0 != 0x80)?;
        let c = decode(&text[start..end]);
        if !('\u{80}'..='\u{9f}').contains(&c) {
            return Some(c);
        }
        end = start;
    }
    None
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
