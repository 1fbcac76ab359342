//! Decoding terminal input bytes into keys. Escape sequences we do not act on (terminal
//! query replies, focus and mouse reports, OSC/DCS strings) are consumed and ignored.

/// A decoded key press or paste.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Enter,
    Backspace,
    Up,
    Down,
    Left,
    Right,
    Esc,
    Tab,
    /// Shift-Tab (`ESC [ Z`).
    BackTab,
    CtrlC,
    CtrlD,
    Paste(String),
}

const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";

/// Stateful decoder: incomplete sequences and pastes spanning reads are kept for the next
/// `feed`.
#[derive(Default)]
pub struct Decoder {
    pending: Vec<u8>,
    paste: Option<Vec<u8>>,
}

enum Step {
    /// Consumed `n` bytes, maybe producing a key.
    Done(usize, Option<Key>),
    /// Need more bytes.
    Incomplete,
}

impl Decoder {
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Key> {
        self.pending.extend_from_slice(bytes);
        let mut keys = Vec::new();
        let mut pos = 0;
        loop {
            if let Some(paste) = self.paste.as_mut() {
                let rest = &self.pending[pos..];
                if let Some(end) = find(rest, PASTE_END) {
                    paste.extend_from_slice(&rest[..end]);
                    pos += end + PASTE_END.len();
                    let text = String::from_utf8_lossy(paste)
                        .replace("\r\n", "\n")
                        .replace('\r', "\n");
                    keys.push(Key::Paste(text));
                    self.paste = None;
                    continue;
                }
                // Keep a possible partial end marker for the next read.
                let keep = (1..PASTE_END.len())
                    .rev()
                    .find(|&k| rest.len() >= k && PASTE_END.starts_with(&rest[rest.len() - k..]))
                    .unwrap_or(0);
                paste.extend_from_slice(&rest[..rest.len() - keep]);
                pos = self.pending.len() - keep;
                break;
            }
            if pos >= self.pending.len() {
                break;
            }
            let rest = &self.pending[pos..];
            if rest.starts_with(PASTE_START) {
                self.paste = Some(Vec::new());
                pos += PASTE_START.len();
                continue;
            }
            match decode_one(rest) {
                Step::Done(n, key) => {
                    pos += n;
                    keys.extend(key);
                }
                Step::Incomplete => break,
            }
        }
        self.pending.drain(..pos);
        keys
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn decode_one(b: &[u8]) -> Step {
    match b[0] {
        0x1b => decode_escape(b),
        b'\r' | b'\n' => Step::Done(1, Some(Key::Enter)),
        0x7f | 0x08 => Step::Done(1, Some(Key::Backspace)),
        b'\t' => Step::Done(1, Some(Key::Tab)),
        0x03 => Step::Done(1, Some(Key::CtrlC)),
        0x04 => Step::Done(1, Some(Key::CtrlD)),
        c if c < 0x20 => Step::Done(1, None),
        c => {
            let len = match c {
                0xc0..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf7 => 4,
                0x80..=0xff => return Step::Done(1, None),
                _ => 1,
            };
            if b.len() < len {
                return Step::Incomplete;
            }
            match std::str::from_utf8(&b[..len])
                .ok()
                .and_then(|s| s.chars().next())
            {
                Some(ch) => Step::Done(len, Some(Key::Char(ch))),
                None => Step::Done(1, None),
            }
        }
    }
}

fn decode_escape(b: &[u8]) -> Step {
    if b.len() == 1 {
        // A lone ESC at the end of a read is the Esc key.
        return Step::Done(1, Some(Key::Esc));
    }
    match b[1] {
        b'[' => decode_csi(b),
        b'O' => {
            if b.len() < 3 {
                return Step::Incomplete;
            }
            let key = match b[2] {
                b'A' => Some(Key::Up),
                b'B' => Some(Key::Down),
                b'C' => Some(Key::Right),
                b'D' => Some(Key::Left),
                b'M' => Some(Key::Enter),
                _ => None,
            };
            Step::Done(3, key)
        }
        // OSC, DCS, APC, PM, SOS: strings ended by BEL or ST.
        b']' | b'P' | b'_' | b'^' | b'X' => {
            for i in 2..b.len() {
                if b[i] == 0x07 {
                    return Step::Done(i + 1, None);
                }
                if b[i] == 0x1b && i + 1 < b.len() && b[i + 1] == b'\\' {
                    return Step::Done(i + 2, None);
                }
            }
            Step::Incomplete
        }
        0x1b => Step::Done(1, Some(Key::Esc)),
        // Alt+key: ignore the key.
        _ => Step::Done(2, None),
    }
}

fn decode_csi(b: &[u8]) -> Step {
    // ESC [ params/intermediates (0x20..=0x3f) final (0x40..=0x7e)
    for i in 2..b.len() {
        let c = b[i];
        if (0x40..=0x7e).contains(&c) {
            let params = &b[2..i];
            let key = match (params, c) {
                (p, b'A') if !p.starts_with(b"?") => Some(Key::Up),
                (p, b'B') if !p.starts_with(b"?") => Some(Key::Down),
                (p, b'C') if !p.starts_with(b"?") => Some(Key::Right),
                (p, b'D') if !p.starts_with(b"?") => Some(Key::Left),
                (b"", b'Z') => Some(Key::BackTab),
                (b"13", b'u') => Some(Key::Enter),
                (b"27", b'u') => Some(Key::Esc),
                (b"127", b'u') => Some(Key::Backspace),
                _ => None,
            };
            return Step::Done(i + 1, key);
        }
        if !(0x20..=0x3f).contains(&c) {
            // Malformed: drop the ESC [ and go on.
            return Step::Done(2, None);
        }
    }
    Step::Incomplete
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_noise() {
        let mut d = Decoder::default();
        let keys = d.feed(b"a\x1b[B\x1bOA\x1b[?62;22c\x1b[I\x1bP>|xterm\x1b\\\r\x7f\x03");
        assert_eq!(
            keys,
            vec![
                Key::Char('a'),
                Key::Down,
                Key::Up,
                Key::Enter,
                Key::Backspace,
                Key::CtrlC
            ]
        );
    }

    #[test]
    fn split_sequences_and_paste() {
        let mut d = Decoder::default();
        assert_eq!(d.feed(b"\x1b["), vec![]);
        assert_eq!(d.feed(b"A\x1b[200~hel"), vec![Key::Up]);
        assert_eq!(d.feed(b"lo\r\nworld\x1b[20"), vec![]);
        assert_eq!(
            d.feed(b"1~x"),
            vec![Key::Paste("hello\nworld".into()), Key::Char('x')]
        );
        assert_eq!(d.feed("é".as_bytes()), vec![Key::Char('é')]);
        assert_eq!(d.feed(b"\x1b"), vec![Key::Esc]);
    }
}
