//! Focus reports in a terminal's input, sans IO: [`FocusFilter`] finds
//! `ESC [ I` (focus in) and `ESC [ O` (focus out) in the keys read from a
//! person's terminal — one split across reads included — and takes them
//! out of the keys unless asked to leave them in (the program in the PTY
//! turned focus reporting on itself, so they are its keys). A report
//! inside a bracketed paste (`ESC [ 200 ~` … `ESC [ 201 ~`) is pasted
//! text, not a report. Anything else, `ESC [` followed by something else
//! included, passes untouched and in order.
//!
//! A read that ends in the beginning of a report (a lone `ESC`, `ESC [`,
//! `ESC [ 2 0`) keeps those bytes back until the next read decides them,
//! or until [`SPLIT_WAIT`] has passed ([`FocusFilter::expired`],
//! [`FocusFilter::flush`]): an Escape key pressed alone reaches the
//! session that much later, never lost. At most [`HELD_MAX`] bytes are
//! kept back. When the reports are passed (`pass`), nothing is kept back:
//! those bytes go at once and are only remembered to match the next read
//! against (a report they begin is then passed whole, whatever `pass`
//! says next). Used by the holder on a handed-off terminal
//! (`crate::terminal`) and by `ccd attach` when it relays the keys itself.

use std::time::{Duration, Instant};

/// How long bytes that may begin a report wait for the rest.
pub const SPLIT_WAIT: Duration = Duration::from_millis(30);

/// The longest sequence this filter reads (`ESC [ 2 0 1 ~`); at most one
/// byte less is ever kept back.
pub const HELD_MAX: usize = PASTE_END.len() - 1;

const FOCUS_IN: &[u8] = b"\x1b[I";
const FOCUS_OUT: &[u8] = b"\x1b[O";
const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";

/// What a read of keys holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// The keys for the session, in order (reports taken out unless
    /// passed).
    pub keys: Vec<u8>,
    /// The last focus report read (true: in), if any.
    pub focused: Option<bool>,
}

/// Finds focus reports in a terminal's input (see the module doc).
#[derive(Debug, Default)]
pub struct FocusFilter {
    /// The end of the last read that may begin a sequence.
    held: Vec<u8>,
    /// When `held` was kept back (`None`: it went with the keys already,
    /// and is kept only to match the next read against).
    held_at: Option<Instant>,
    /// Inside a bracketed paste.
    in_paste: bool,
}

impl FocusFilter {
    /// A filter outside any paste, holding nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads `input` (read at `now`). `pass`: leave the reports in the keys
    /// (the program asked for them); they are reported either way.
    pub fn feed(&mut self, input: &[u8], now: Instant, pass: bool) -> Seen {
        let mut buf = std::mem::take(&mut self.held);
        // Bytes at the front that went with the last read's keys.
        let sent = if self.held_at.take().is_some() {
            0
        } else {
            buf.len()
        };
        buf.extend_from_slice(input);
        let mut seen = Seen {
            keys: Vec::with_capacity(buf.len()),
            focused: None,
        };
        let keep = |keys: &mut Vec<u8>, from: usize, to: usize| {
            if to > sent {
                keys.extend_from_slice(&buf[from.max(sent)..to]);
            }
        };
        let mut i = 0;
        while i < buf.len() {
            if buf[i] != 0x1b {
                // Copy the run up to the next ESC at once.
                let run = buf[i..]
                    .iter()
                    .position(|&b| b == 0x1b)
                    .map_or(buf.len(), |p| i + p);
                keep(&mut seen.keys, i, run);
                i = run;
                continue;
            }
            let rest = &buf[i..];
            let wanted: &[&[u8]] = if self.in_paste {
                &[PASTE_END]
            } else {
                &[FOCUS_IN, FOCUS_OUT, PASTE_START]
            };
            if let Some(&seq) = wanted.iter().find(|s| rest.starts_with(s)) {
                match seq {
                    PASTE_START => self.in_paste = true,
                    PASTE_END => self.in_paste = false,
                    _ => {
                        seen.focused = Some(seq == FOCUS_IN);
                        // Begun in the keys already: the rest follows.
                        if !pass && i >= sent {
                            i += seq.len();
                            continue;
                        }
                    }
                }
                keep(&mut seen.keys, i, i + seq.len());
                i += seq.len();
                continue;
            }
            if wanted
                .iter()
                .any(|s| rest.len() < s.len() && s.starts_with(rest))
            {
                // The read ended inside what may be one: the next decides.
                self.held = rest.to_vec();
                if pass {
                    keep(&mut seen.keys, i, buf.len());
                } else {
                    if i < sent {
                        // Its beginning went already: the rest goes too.
                        keep(&mut seen.keys, i, buf.len());
                        self.held.clear();
                        break;
                    }
                    self.held_at = Some(now);
                }
                break;
            }
            keep(&mut seen.keys, i, i + 1);
            i += 1;
        }
        seen
    }

    /// Whether bytes kept back have waited [`SPLIT_WAIT`]: then
    /// [`Self::flush`] them.
    pub fn expired(&self, now: Instant) -> bool {
        self.held_at
            .is_some_and(|at| now.saturating_duration_since(at) >= SPLIT_WAIT)
    }

    /// How long until bytes kept back are due ([`Self::expired`]); `None`
    /// when nothing is kept back.
    pub fn wait_hint(&self, now: Instant) -> Option<Duration> {
        self.held_at
            .map(|at| SPLIT_WAIT.saturating_sub(now.saturating_duration_since(at)))
    }

    /// The bytes kept back, as keys (no report came of them).
    pub fn flush(&mut self) -> Vec<u8> {
        if self.held_at.take().is_none() {
            return Vec::new(); // they went already
        }
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(f: &mut FocusFilter, reads: &[&[u8]], pass: bool) -> (Vec<u8>, Vec<bool>) {
        let now = Instant::now();
        let mut keys = Vec::new();
        let mut reports = Vec::new();
        for r in reads {
            let s = f.feed(r, now, pass);
            keys.extend(s.keys);
            reports.extend(s.focused);
        }
        (keys, reports)
    }

    #[test]
    fn reports_are_taken_out_of_the_keys_and_said() {
        let mut f = FocusFilter::new();
        let (keys, reports) = feed_all(&mut f, &[b"ab\x1b[Icd\x1b[Oe"], false);
        assert_eq!(keys, b"abcde");
        assert_eq!(reports, vec![false]); // the last of the read
        let (keys, reports) = feed_all(&mut f, &[b"\x1b[I"], false);
        assert!(keys.is_empty());
        assert_eq!(reports, vec![true]);
    }

    #[test]
    fn passed_reports_stay_in_the_keys() {
        let mut f = FocusFilter::new();
        let (keys, reports) = feed_all(&mut f, &[b"x\x1b[O"], true);
        assert_eq!(keys, b"x\x1b[O");
        assert_eq!(reports, vec![false]);
    }

    #[test]
    fn passed_reports_split_across_reads_hold_nothing_back() {
        for cut in 1..3 {
            let mut f = FocusFilter::new();
            let (a, b) = b"\x1b[O".split_at(cut);
            let first = f.feed(a, Instant::now(), true);
            assert_eq!(first.keys, a, "nothing kept back");
            assert_eq!(f.wait_hint(Instant::now()), None);
            assert!(f.flush().is_empty());
            let second = f.feed(b, Instant::now(), true);
            assert_eq!(second.keys, b);
            assert_eq!(second.focused, Some(false));
            // Begun passed, it ends passed, whatever `pass` says next.
            let mut f = FocusFilter::new();
            f.feed(a, Instant::now(), true);
            let second = f.feed(b, Instant::now(), false);
            assert_eq!(second.keys, b);
            assert_eq!(second.focused, Some(false));
        }
        // A lone Escape passed at once, then another key.
        let mut f = FocusFilter::new();
        assert_eq!(f.feed(b"\x1b", Instant::now(), true).keys, b"\x1b");
        assert_eq!(f.feed(b"x", Instant::now(), true).keys, b"x");
    }

    #[test]
    fn a_report_split_across_reads_is_found() {
        for cut in 1..3 {
            let mut f = FocusFilter::new();
            let (a, b) = b"\x1b[I".split_at(cut);
            let first = f.feed(a, Instant::now(), false);
            assert!(first.keys.is_empty() && first.focused.is_none());
            assert!(f.wait_hint(Instant::now()).is_some());
            let second = f.feed(b, Instant::now(), false);
            assert!(second.keys.is_empty(), "cut at {cut}");
            assert_eq!(second.focused, Some(true));
            assert_eq!(f.wait_hint(Instant::now()), None);
        }
    }

    #[test]
    fn a_lone_escape_is_kept_back_then_flushed_never_lost() {
        let mut f = FocusFilter::new();
        let t0 = Instant::now();
        let s = f.feed(b"q\x1b", t0, false);
        assert_eq!(s.keys, b"q");
        assert!(!f.expired(t0));
        assert!(f.expired(t0 + SPLIT_WAIT));
        assert_eq!(f.flush(), b"\x1b");
        assert!(!f.expired(t0 + SPLIT_WAIT * 2));
        // An Escape followed by another key in the next read goes as is.
        let s = f.feed(b"\x1b", t0, false);
        assert!(s.keys.is_empty());
        let s = f.feed(b"x", t0, false);
        assert_eq!(s.keys, b"\x1bx");
        assert_eq!(s.focused, None);
    }

    #[test]
    fn other_escape_sequences_pass_untouched() {
        let mut f = FocusFilter::new();
        let input: &[u8] = b"\x1b[A\x1b[1;5C\x1bOA\x1b[Z\x1b[II\x1b\x1b[i\x1b[2~";
        let (keys, reports) = feed_all(&mut f, &[input], false);
        // `ESC [ I I`: a report, then the key I.
        assert_eq!(
            keys,
            b"\x1b[A\x1b[1;5C\x1bOA\x1b[ZI\x1b\x1b[i\x1b[2~".to_vec()
        );
        assert_eq!(reports, vec![true]);
        // Split byte by byte, the same.
        let mut f = FocusFilter::new();
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        let (keys2, reports2) = feed_all(&mut f, &bytes, false);
        assert_eq!(keys2, keys);
        assert_eq!(reports2, reports);
    }

    #[test]
    fn a_report_inside_a_bracketed_paste_is_pasted_text() {
        let mut f = FocusFilter::new();
        let paste: &[u8] = b"\x1b[200~see \x1b[I and \x1b[O\x1b[201~";
        let (keys, reports) = feed_all(&mut f, &[paste, b"\x1b[O"], false);
        let want = paste.to_vec();
        assert_eq!(&keys[..], &want[..]);
        assert_eq!(reports, vec![false]); // only the one after the paste
                                          // The paste's ends split across reads too.
        let mut f = FocusFilter::new();
        let bytes: Vec<&[u8]> = paste.chunks(2).collect();
        let (keys, reports) = feed_all(&mut f, &bytes, false);
        assert_eq!(keys, want);
        assert!(reports.is_empty());
    }

    #[test]
    fn nothing_more_than_the_longest_sequence_is_kept_back() {
        let mut f = FocusFilter::new();
        // Outside a paste, `ESC [ 2 0 1` begins nothing this reads.
        let s = f.feed(b"\x1b[201", Instant::now(), false);
        assert_eq!(s.keys, b"\x1b[201");
        let s = f.feed(b"\x1b[200", Instant::now(), false);
        assert!(s.keys.is_empty());
        assert_eq!(f.held.len(), HELD_MAX);
        let s = f.feed(b"~x", Instant::now(), false);
        assert_eq!(s.keys, b"\x1b[200~x");
    }
}
