//! [`Mirror`]: `vte`'s parser state, followed byte by byte while `vte` has
//! the bytes ([`super::Lane`] takes none while it is out of ground).

/// `vte` 0.15's parser states, moved between as its `Parser` moves (the
/// transitions of its `advance_*` functions, without their actions).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mirror {
    #[default]
    Ground,
    Escape,
    EscapeIntermediate,
    CsiEntry,
    CsiParam,
    CsiIntermediate,
    CsiIgnore,
    DcsEntry,
    DcsParam,
    DcsIntermediate,
    DcsPassthrough,
    DcsIgnore,
    OscString,
    SosPmApcString,
    /// Ground, but holding the start of a character ([`super::Lane`]'s `partial`):
    /// the lane's own state, which `vte` keeps in its `partial_utf8`.
    Utf8,
}

/// Whether `b` is a C0 control that `vte` executes (or ignores) inside a
/// sequence without leaving it: all but CAN, SUB and ESC.
fn inner_c0(b: u8) -> bool {
    matches!(b, 0x00..=0x17 | 0x19 | 0x1c..=0x1f)
}

impl Mirror {
    /// `vte`'s transitions that apply in any state not listed otherwise.
    fn anywhere(self, b: u8) -> Self {
        match b {
            0x18 | 0x1a => Self::Ground,
            0x1b => Self::Escape,
            _ => self,
        }
    }

    /// The state after `b`.
    fn next(self, b: u8) -> Self {
        use Mirror::*;
        match self {
            // The lane never steps the mirror in these ([`super::Lane::advance`]).
            Ground | Utf8 => self,
            Escape => match b {
                0x18 | 0x1a | 0x30..=0x4f | 0x51..=0x57 | 0x59 | 0x5a | 0x5c | 0x60..=0x7e => {
                    Ground
                }
                0x20..=0x2f => EscapeIntermediate,
                0x50 => DcsEntry,
                0x58 | 0x5e | 0x5f => SosPmApcString,
                0x5b => CsiEntry,
                0x5d => OscString,
                _ => Escape,
            },
            EscapeIntermediate => match b {
                _ if inner_c0(b) => self,
                0x20..=0x2f | 0x7f => self,
                0x30..=0x7e => Ground,
                _ => self.anywhere(b),
            },
            CsiEntry => match b {
                _ if inner_c0(b) => self,
                0x20..=0x2f => CsiIntermediate,
                0x30..=0x3f => CsiParam,
                0x40..=0x7e => Ground,
                _ => self.anywhere(b),
            },
            CsiParam => match b {
                _ if inner_c0(b) => self,
                0x30..=0x3b | 0x7f => self,
                0x20..=0x2f => CsiIntermediate,
                0x3c..=0x3f => CsiIgnore,
                0x40..=0x7e => Ground,
                _ => self.anywhere(b),
            },
            CsiIntermediate => match b {
                _ if inner_c0(b) => self,
                0x20..=0x2f => self,
                0x30..=0x3f => CsiIgnore,
                0x40..=0x7e => Ground,
                _ => self.anywhere(b),
            },
            CsiIgnore => match b {
                _ if inner_c0(b) => self,
                0x20..=0x3f | 0x7f => self,
                0x40..=0x7e => Ground,
                _ => self.anywhere(b),
            },
            DcsEntry => match b {
                _ if inner_c0(b) => self,
                0x7f => self,
                0x20..=0x2f => DcsIntermediate,
                0x30..=0x3f => DcsParam,
                0x40..=0x7e => DcsPassthrough,
                _ => self.anywhere(b),
            },
            DcsIntermediate => match b {
                _ if inner_c0(b) => self,
                0x20..=0x2f | 0x7f => self,
                0x30..=0x3f => DcsIgnore,
                0x40..=0x7e => DcsPassthrough,
                _ => self.anywhere(b),
            },
            DcsParam => match b {
                _ if inner_c0(b) => self,
                0x30..=0x3b | 0x7f => self,
                0x20..=0x2f => DcsIntermediate,
                0x3c..=0x3f => DcsIgnore,
                0x40..=0x7e => DcsPassthrough,
                _ => self.anywhere(b),
            },
            DcsPassthrough => match b {
                0x18 | 0x1a | 0x9c => Ground,
                0x1b => Escape,
                _ => self,
            },
            OscString => match b {
                0x07 | 0x18 | 0x1a => Ground,
                0x1b => Escape,
                _ => self,
            },
            DcsIgnore | SosPmApcString => self.anywhere(b),
        }
    }

    /// Step over `bytes` until the state is back to ground: how many bytes
    /// that took (all of them if it is not there yet).
    pub(super) fn until_ground(&mut self, bytes: &[u8]) -> usize {
        for (i, &b) in bytes.iter().enumerate() {
            *self = self.next(b);
            if *self == Mirror::Ground {
                return i + 1;
            }
        }
        bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mirror_follows_vte_through_each_kind_of_sequence() {
        let cases: [(&[u8], Mirror); 9] = [
            (b"\x1b[1;2H", Mirror::Ground),
            (b"\x1b[1;2", Mirror::CsiParam),
            (b"\x1b]0;title\x07", Mirror::Ground),
            (b"\x1b]0;title\x1b", Mirror::Escape),
            (b"\x1bP1$qm", Mirror::DcsPassthrough),
            (b"\x1bP1$qm\x1b\\", Mirror::Ground),
            (b"\x1b[1\x18", Mirror::Ground),
            (b"\x1b_apc", Mirror::SosPmApcString),
            (b"\x1b(0", Mirror::Ground),
        ];
        for (bytes, want) in cases {
            let mut m = Mirror::Escape;
            let n = m.until_ground(&bytes[1..]);
            assert_eq!(m, want, "{:?}", String::from_utf8_lossy(bytes));
            if want == Mirror::Ground {
                assert_eq!(n, bytes.len() - 1);
            }
        }
    }

    /// Whether `vte`, fed `bytes` from its start, ends in its ground state:
    /// a `Z` after them is printed only there.
    fn vte_in_ground(bytes: &[u8]) -> bool {
        use alacritty_terminal::vte::ansi::{Handler, Processor};

        #[derive(Default)]
        struct Printed(Vec<char>);
        impl Handler for Printed {
            fn input(&mut self, c: char) {
                self.0.push(c);
            }
        }
        let mut parser: Processor<crate::screen::Unbuffered> = Processor::new();
        let mut h = Printed::default();
        parser.advance(&mut h, bytes);
        h.0.clear();
        parser.advance(&mut h, b"Z");
        h.0.last() == Some(&'Z')
    }

    /// Every state the mirror has (but ground and `Utf8`, the lane's own),
    /// with bytes that lead `vte` into it from ground.
    const STATES: [(&[u8], Mirror); 13] = [
        (b"\x1b", Mirror::Escape),
        (b"\x1b(", Mirror::EscapeIntermediate),
        (b"\x1b[", Mirror::CsiEntry),
        (b"\x1b[1", Mirror::CsiParam),
        (b"\x1b[ ", Mirror::CsiIntermediate),
        (b"\x1b[1?", Mirror::CsiIgnore),
        (b"\x1bP", Mirror::DcsEntry),
        (b"\x1bP1", Mirror::DcsParam),
        (b"\x1bP ", Mirror::DcsIntermediate),
        (b"\x1bPq", Mirror::DcsPassthrough),
        (b"\x1bP1?", Mirror::DcsIgnore),
        (b"\x1b]", Mirror::OscString),
        (b"\x1bX", Mirror::SosPmApcString),
    ];

    #[test]
    fn the_mirror_reaches_ground_exactly_when_vte_does_for_any_two_bytes() {
        for (prefix, state) in STATES {
            let mut m = Mirror::Escape;
            m.until_ground(&prefix[1..]);
            assert_eq!(m, state, "{prefix:?}");
            for b1 in 0..=255u8 {
                let one = [prefix, &[b1]].concat();
                let after = m.next(b1);
                assert_eq!(
                    after == Mirror::Ground,
                    vte_in_ground(&one),
                    "{prefix:?} then {b1:#04x}"
                );
                if after == Mirror::Ground {
                    continue;
                }
                // A second byte, from every state the first can lead to.
                for b2 in 0..=255u8 {
                    let two = [&one[..], &[b2]].concat();
                    assert_eq!(
                        after.next(b2) == Mirror::Ground,
                        vte_in_ground(&two),
                        "{prefix:?} then {b1:#04x} {b2:#04x}"
                    );
                }
            }
        }
    }
}
