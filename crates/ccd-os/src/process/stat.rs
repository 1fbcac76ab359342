//! A `/proc/<pid>/stat` line (proc(5)), parsed in one place: liveness
//! (state, parent, start), the cost probe (parent, CPU times, start,
//! resident pages), the run state (state letter) and the daemon's pacing
//! (thread count) all read their fields here. The command name (field 2)
//! may hold spaces and parentheses, so fields are counted after its
//! *last* `)`. Pure: compiled and tested on every system, though only
//! Linux writes such lines.

/// The fields of one stat line, numbered as proc(5) numbers them (1: the
/// pid, 2: the command name, 3: the state, ...); only fields 3 on are
/// kept.
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    /// Field n is `after[n - 3]`.
    after: Vec<&'a str>,
}

/// The most fields any reader here asks for (24: the resident pages).
const KEPT: usize = 24 - 2;

impl<'a> Fields<'a> {
    /// The fields of `line`; `None` without a command name's `)`.
    pub fn parse(line: &'a str) -> Option<Self> {
        let (_, rest) = line.rsplit_once(')')?;
        Some(Self {
            after: rest.split_ascii_whitespace().take(KEPT).collect(),
        })
    }

    /// The same, from bytes as read (`None` if what follows the command
    /// name is not UTF-8).
    pub fn parse_bytes(bytes: &'a [u8]) -> Option<Self> {
        let close = bytes.iter().rposition(|&b| b == b')')?;
        let rest = std::str::from_utf8(bytes.get(close..)?).ok()?;
        Self::parse(rest)
    }

    /// Field `n` as written (3 ≤ n ≤ 24).
    pub fn field(&self, n: usize) -> Option<&'a str> {
        self.after.get(n.checked_sub(3)?).copied()
    }

    /// Field `n` as a number (all digits).
    pub fn number(&self, n: usize) -> Option<u64> {
        let f = self.field(n)?;
        if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        f.parse().ok()
    }

    /// Field 3, the state letter (`R`, `S`, `T` stopped, `t` traced, `Z`
    /// zombie, ...).
    pub fn state(&self) -> Option<u8> {
        self.field(3)?.bytes().next()
    }

    /// Field 4, the parent's pid.
    pub fn ppid(&self) -> Option<u32> {
        u32::try_from(self.number(4)?).ok()
    }

    /// Fields 14 and 15, user and system time, in clock ticks.
    pub fn cpu_ticks(&self) -> Option<u64> {
        Some(self.number(14)?.saturating_add(self.number(15)?))
    }

    /// Field 20, the number of threads.
    pub fn threads(&self) -> Option<u64> {
        self.number(20)
    }

    /// Field 22, `starttime`: clock ticks since boot.
    pub fn start_ticks(&self) -> Option<u64> {
        self.number(22)
    }

    /// Field 24, the resident set in pages.
    pub fn rss_pages(&self) -> Option<u64> {
        self.number(24)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_counted_after_a_hostile_command_name() {
        let line = "1234 (a) b ) (c) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 7 0 98765 1000 10 18446744073709551615";
        let f = Fields::parse(line).expect("parsed");
        assert_eq!(f.state(), Some(b'S'));
        assert_eq!(f.ppid(), Some(1));
        assert_eq!(f.cpu_ticks(), Some(3));
        assert_eq!(f.threads(), Some(7));
        assert_eq!(f.start_ticks(), Some(98765));
        assert_eq!(f.rss_pages(), Some(10));
        let b = Fields::parse_bytes(line.as_bytes()).expect("parsed");
        assert_eq!(b.start_ticks(), Some(98765));
    }

    #[test]
    fn a_short_or_odd_line_answers_what_it_has() {
        let f = Fields::parse("42 (a) b) T 1 2").expect("a name");
        assert_eq!(f.state(), Some(b'T'));
        assert_eq!(f.ppid(), Some(1));
        assert_eq!(f.start_ticks(), None);
        assert!(Fields::parse("garbage").is_none());
        assert_eq!(Fields::parse("1 (x) S -1").and_then(|f| f.ppid()), None);
        assert!(Fields::parse_bytes(b"1 (x) S \xff").is_none());
    }
}
