//! The detach key: pressed once it detaches; pressed twice in a row it is
//! sent through to the session once. The holder filters a handed-off
//! terminal's keys with it (the terminal module); `ccd attach` filters its
//! own reads with it when it relays the keys itself.

use std::time::{Duration, Instant};

/// How long after a first press a second one counts as "twice".
pub const DOUBLE_PRESS: Duration = Duration::from_millis(400);

/// A detach key, as a byte (a control character).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DetachKey(pub u8);

impl Default for DetachKey {
    /// `Ctrl-\`.
    fn default() -> Self {
        Self(0x1c)
    }
}

impl std::str::FromStr for DetachKey {
    type Err = String;

    /// Accepts `ctrl-\`, `C-a`, `^]`, `ctrl-q`, ... (a control character).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        let rest = lower
            .strip_prefix("ctrl-")
            .or_else(|| lower.strip_prefix("ctrl+"))
            .or_else(|| lower.strip_prefix("c-"))
            .or_else(|| lower.strip_prefix('^'))
            .ok_or_else(|| {
                format!("{s:?}: write the detach key as ctrl-<key>, e.g. ctrl-\\\\ or ctrl-]")
            })?;
        let mut chars = rest.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            return Err(format!("{s:?}: one key after ctrl-"));
        };
        let byte = match c {
            'a'..='z' => c as u8 - b'a' + 1,
            '@' | ' ' | '2' => 0,
            '[' | '3' => 0x1b,
            '\\' | '4' => 0x1c,
            ']' | '5' => 0x1d,
            '^' | '6' => 0x1e,
            '_' | '/' | '7' => 0x1f,
            _ => return Err(format!("{s:?}: ctrl-{c} is not a control key")),
        };
        if matches!(byte, 0x0d | 0x09 | 0x1b | 0x03) {
            return Err(format!("{s:?}: that key is needed by Claude Code"));
        }
        Ok(Self(byte))
    }
}

/// What to do with a chunk of keyboard input.
#[derive(Debug, PartialEq, Eq)]
pub enum Filtered {
    /// Send these bytes (possibly none).
    Send(Vec<u8>),
    /// Detach (bytes before the key are sent first).
    Detach(Vec<u8>),
}

/// The detach-key state machine.
#[derive(Debug)]
pub struct DetachFilter {
    key: u8,
    pending_since: Option<Instant>,
}

impl DetachFilter {
    pub fn new(key: DetachKey) -> Self {
        Self {
            key: key.0,
            pending_since: None,
        }
    }

    /// Filters one chunk of input read at `now`.
    pub fn feed(&mut self, input: &[u8], now: Instant) -> Filtered {
        let mut out = Vec::with_capacity(input.len());
        for &b in input {
            if self.pending_since.take().is_some() {
                if b == self.key {
                    out.push(b); // twice: send it through once
                    continue;
                }
                return Filtered::Detach(out);
            }
            if b == self.key {
                self.pending_since = Some(now);
            } else {
                out.push(b);
            }
        }
        Filtered::Send(out)
    }

    /// A press with no second one within [`DOUBLE_PRESS`] detaches.
    pub fn expired(&self, now: Instant) -> bool {
        self.pending_since
            .is_some_and(|t| now.duration_since(t) >= DOUBLE_PRESS)
    }

    /// Time left before a pending press detaches.
    pub fn wait_hint(&self, now: Instant) -> Option<Duration> {
        self.pending_since
            .map(|t| DOUBLE_PRESS.saturating_sub(now.duration_since(t)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse() {
        assert_eq!("ctrl-\\".parse::<DetachKey>().unwrap(), DetachKey(0x1c));
        assert_eq!("C-a".parse::<DetachKey>().unwrap(), DetachKey(1));
        assert_eq!("^]".parse::<DetachKey>().unwrap(), DetachKey(0x1d));
        assert!("ctrl-m".parse::<DetachKey>().is_err());
        assert!("ctrl-c".parse::<DetachKey>().is_err());
        assert!("x".parse::<DetachKey>().is_err());
        assert!("ctrl-ab".parse::<DetachKey>().is_err());
    }

    #[test]
    fn once_detaches_twice_sends() {
        let t = Instant::now();
        let mut f = DetachFilter::new(DetachKey::default());
        assert_eq!(f.feed(b"ab", t), Filtered::Send(b"ab".to_vec()));
        assert_eq!(f.feed(b"x\x1c", t), Filtered::Send(b"x".to_vec()));
        assert!(!f.expired(t));
        assert!(f.expired(t + DOUBLE_PRESS));
        assert_eq!(f.feed(b"\x1cy", t), Filtered::Send(b"\x1cy".to_vec()));
        assert_eq!(f.feed(b"\x1c\x1c", t), Filtered::Send(b"\x1c".to_vec()));
        assert_eq!(f.feed(b"\x1cz", t), Filtered::Detach(Vec::new()));
    }
}
