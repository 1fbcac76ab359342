//! ccd's lane in front of `vte` (`ccd_screen::lane`: text written a row
//! segment at a time, C0 controls and plain CSI sequences dispatched by ccd,
//! the rest followed through `vte`'s state machine) against `vte` alone
//! (`Screen::set_vte_only`) on random streams cut at random points: the
//! same model, cell for cell (every field, scrollback included), cursor,
//! saved cursor, modes, title.
//!
//! The streams are weighted to what the lane must get right: long and
//! short printable runs, runs that continue an escape sequence's printable
//! parameters or a string sequence's text, one-cell and wide characters at
//! the right margin, one character repeated past the margin and over wide
//! ones, wraps, insert mode, the line-drawing charset, repeat
//! (`CSI b`) after the lane's prints and after `vte`'s, cell edits over wide
//! characters, hyperlinks and underline colours, the alternate screen, CSI
//! sequences in every odd shape (controls, markers and DEL inside,
//! intermediates, sub-parameters, too many parameters, huge values), C1
//! controls and DEL, stray and invalid bytes; and stretches of plain lines
//! long enough to scroll out of the model (which the lane steps over)
//! after every mode, region and screen those escapes set.

use ccd_screen::Screen;

/// splitmix64: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const WIDE: &[&str] = &["漢", "字", "テ", "🚀", "🙂", "한", "界"];
const OTHER: &[&str] = &[
    "é",
    "e\u{301}",
    "·",
    "←",
    "─",
    "\u{200b}",
    "\u{fe0f}",
    "\u{85}",
    "\u{9b}",
    "\x7f",
    "╭──╮",
    "\u{a0}",
    "\u{ad}",
];
const ESCAPES: &[&str] = &[
    "\x1b[0m",
    "\x1b[1;31m",
    "\x1b[38;5;100m",
    "\x1b[48;2;10;20;30;1;3m",
    "\x1b[4:3m\x1b[58:2::255:0:0m",
    "\x1b]8;;http://example.com/a-long-printable-link-target?x=1\x1b\\",
    "\x1b]8;;\x1b\\",
    "\x1b[4h",
    "\x1b[4l",
    "\x1b[?7l",
    "\x1b[?7h",
    "\x1b(0",
    "\x1b(B",
    "\x1b)0",
    "\x0e",
    "\x0f",
    "\x1b[3b",
    "\x1b[H",
    "\x1b[2J",
    "\x1b[K",
    "\x1b[1K",
    "\x1b[3X",
    "\x1b[2@",
    "\x1b[2P",
    "\x1b[L",
    "\x1b[M",
    "\x1b[2;4r",
    "\x1b[r",
    "\x1bM",
    "\x1bD",
    "\x1bE",
    "\x1b7",
    "\x1b8",
    "\x1b[?1049h",
    "\x1b[?1049l",
    "\x1b[?2026h",
    "\x1b[?2026l",
    "\x1b[20h",
    "\x1b[20l",
    "\x1bc",
    "\r",
    "\n",
    "\r\n",
    "\x08",
    "\t",
    "\x7f",
    "\x07",
    "\x1b]0;a title that is long and printable enough to be a run\x07",
    "\x1bP1$qm a device control string long enough to be a run\x1b\\",
    "\x1b[",
    "\x1b",
    "\x1b[?",
    "\x1b[38;2;",
    "\x1b[5;10H",
    "\x1b[;7H",
    "\x1b[0;99999H",
    "\x1b[3A",
    "\x1b[2B",
    "\x1b[4C",
    "\x1b[D",
    "\x1b[2e",
    "\x1b[a",
    "\x1b[3d",
    "\x1b[2E",
    "\x1b[F",
    "\x1b[`",
    "\x1b[0J",
    "\x1b[1J",
    "\x1b[3J",
    "\x1b[9J",
    "\x1b[2K",
    "\x1b[7K",
    "\x1b[2S",
    "\x1b[T",
    "\x1b[0m\x1b[1;2;3;4;5;7;8;9m",
    "\x1b[21;22;23;24;25;27;28;29m",
    "\x1b[30;41;92;103;39;49m",
    "\x1b[38;2;300;1;2m",
    "\x1b[38;2;1m",
    "\x1b[38;5m",
    "\x1b[48;5;256;1m",
    "\x1b[58;5;9m\x1b[59m",
    "\x1b[38;7;1m",
    "\x1b[m",
    "\x1b[1;\n31m",
    "\x1b[1\x7f;31m",
    "\x1b[1?m",
    "\x1b[?1;2$p",
    "\x1b[1 q",
    "\x1b[>4;2m",
    "\x1b[1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18;19;20;21;22;23;24;25;26;27;28;29;30;31;32;33m",
    "\x1b[1\x1b[2J",
    "\x1b[1\x18x",
    "\x1b[\u{e9}m",
    "\x1b[2b",
    "\x1b[?25l",
    "\x1b[?25h",
    "\x1b[?1000;1006h",
    "\x1b]0;title\x1b\\",
    "\x1b_an APC string\x1b\\",
    "\x1bX\x1b[31m",
    "\x1b#8",
    "\x0b\x0c",
    "\x18",
    "\x1a",
];

/// Printable ASCII, `n` bytes.
fn ascii(rng: &mut Rng, n: u64, out: &mut Vec<u8>) {
    for _ in 0..n {
        out.push(0x20 + rng.below(0x5f) as u8);
    }
}

/// Plain lines (printable ASCII, mostly `\r\n` ends, some bare `\n` or
/// `\r`), as many as `scroll` lines and then some, up to twice as wide as
/// the screen.
fn lines(rng: &mut Rng, scroll: u64, cols: u16, out: &mut Vec<u8>) {
    for _ in 0..rng.below(3 * scroll + 4) {
        let n = rng.below(2 * u64::from(cols) + 3);
        ascii(rng, n, out);
        out.extend_from_slice(match rng.below(10) {
            0 => b"\n",
            1 => b"\r",
            2 => b"\n\r",
            _ => b"\r\n",
        });
    }
}

fn stream(rng: &mut Rng, rows: u16, cols: u16, scrollback: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..rng.below(60) {
        match rng.below(14) {
            12 => lines(rng, u64::from(rows) + scrollback as u64, cols, &mut out),
            13 => {
                // One character again and again (a rule, a box's edge),
                // past the margin or over wide characters.
                let c = match rng.below(2) {
                    0 => rng.pick(WIDE),
                    _ => rng.pick(OTHER),
                };
                for _ in 0..1 + rng.below(u64::from(cols) * 2) {
                    out.extend_from_slice(c.as_bytes());
                }
            }
            0..=3 => {
                let n = match rng.below(3) {
                    0 => 1 + rng.below(8),
                    1 => 1 + rng.below(u64::from(cols) * 2),
                    _ => 40 + rng.below(300),
                };
                ascii(rng, n, &mut out);
            }
            4 => out.extend_from_slice(rng.pick(WIDE).as_bytes()),
            5 => out.extend_from_slice(rng.pick(OTHER).as_bytes()),
            6 => {
                // To the last columns, then text or a wide character.
                let col = u64::from(cols).saturating_sub(rng.below(3));
                out.extend_from_slice(format!("\x1b[{col}G").as_bytes());
            }
            7 => {
                let (r, c) = (1 + rng.below(10), 1 + rng.below(u64::from(cols) + 2));
                out.extend_from_slice(format!("\x1b[{r};{c}H").as_bytes());
            }
            8 => {
                // An escape whose printable tail runs into text.
                out.extend_from_slice(rng.pick(ESCAPES).as_bytes());
                let n = 20 + rng.below(80);
                ascii(rng, n, &mut out);
            }
            9 => {
                for _ in 0..1 + rng.below(4) {
                    out.push(rng.below(256) as u8);
                }
            }
            _ => out.extend_from_slice(rng.pick(ESCAPES).as_bytes()),
        }
    }
    out
}

#[test]
fn the_lane_leaves_the_model_vte_alone_leaves() {
    let mut rng = Rng(0x5eed);
    let cases: u64 = std::env::var("LANE_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3000);
    let (mut stepped, mut steps) = (0, 0);
    for case in 0..cases {
        let rows = 1 + rng.below(8) as u16;
        let cols = 1 + rng.below(40) as u16;
        let scrollback = [0, 3, 50][rng.below(3) as usize];
        let bytes = stream(&mut rng, rows, cols, scrollback);
        let mut fast = Screen::with_scrollback(rows, cols, scrollback);
        let mut slow = Screen::with_scrollback(rows, cols, scrollback);
        slow.set_vte_only(true);
        let mut at = 0;
        while at < bytes.len() {
            let n = match rng.below(3) {
                0 => 1 + rng.below(4),
                1 => 1 + rng.below(64),
                _ => bytes.len() as u64,
            };
            let end = (at + n as usize).min(bytes.len());
            if std::env::var("LANE_DEBUG").is_ok_and(|c| c == case.to_string()) {
                eprintln!("chunk {:?}", &bytes[at..end]);
            }
            fast.process(&bytes[at..end]);
            slow.process(&bytes[at..end]);
            at = end;
            assert_eq!(
                fast.model_difference(&slow),
                None,
                "case {case} ({rows}x{cols}, scrollback {scrollback}) after {at} of {:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
        assert_eq!(fast.rebuilds(), slow.rebuilds(), "case {case}");
        stepped += fast.lines_stepped_over();
        steps += u64::from(fast.lines_stepped_over() > 0);
    }
    // Plain lines that scroll out were stepped over, in many of the cases.
    eprintln!("{steps} of {cases} cases stepped over {stepped} bytes of plain lines");
    assert!(
        steps * 20 > cases,
        "{steps} of {cases} cases stepped over lines"
    );
}

#[test]
fn runs_after_escapes_in_strings_and_repeats() {
    // Each shape once, by hand: a run that starts in a CSI's parameters, in
    // an OSC title, in a DCS string, after a wide character, then repeat.
    let text = "0123456789abcdefghijklmnopqrstuvwxyz".repeat(4);
    let cases = [
        format!("\x1b[1;31m{text}\x1b[2b"),
        format!("\x1b]0;{text}\x07{text}"),
        format!("\x1bP{text}\x1b\\{text}"),
        format!("界{text}\x1b[5b"),
        format!("\x1b(0{text}\x1b(B{text}"),
        format!("\x1b[4h{text}\x1b[4l{text}"),
        // Repeat after a print of vte's (invalid UTF-8), then after the lane's.
        format!("ab\u{fffd}\x1b[3b{text}\x1b[2b"),
        "─\x1b]0;t\x07\x1b[3b".to_owned(),
        "x\x7f\x1b[3b".to_owned(),
        "y\u{85}\x1b[3b".to_owned(),
    ];
    let mut cases: Vec<Vec<u8>> = cases.into_iter().map(String::into_bytes).collect();
    // vte prints a replacement for invalid UTF-8: repeat takes it, then the
    // lane's last character again.
    cases.push([&b"ab\xff\x1b[3b"[..], text.as_bytes(), b"\x1b[2b"].concat());
    cases.push(
        [
            &b"ab\xe2\x82\x1b[3b"[..],
            text.as_bytes(),
            b"\xe2\x82\n\x1b[2b",
        ]
        .concat(),
    );
    for (i, case) in cases.iter().enumerate() {
        let mut fast = Screen::new(6, 30);
        let mut slow = Screen::new(6, 30);
        slow.set_vte_only(true);
        let bytes = &case[..];
        fast.process(bytes);
        slow.process(bytes);
        assert_eq!(fast.model_difference(&slow), None, "case {i}");
    }
}

#[test]
fn text_over_either_half_of_a_wide_character() {
    // Text written over a wide character's cell or its spacer, from every
    // column of a 12-column row: the other half is undone as `Term::input`
    // undoes it, inside the lane's segment, at its end (the other half
    // outside it), at the row's first two columns (the line above's
    // leading spacer, from a wide character that did not fit), and over a
    // spacer whose wide character is gone (`CSI P`).
    let setups = [
        // Wide characters across the second line.
        "\x1b[2;1H漢字テ界한🚀",
        "\x1b[2;2H漢字テ界한",
        // A wide character that did not fit at the end of the first line:
        // a leading spacer there, the character at the second's start.
        "\x1b[1;1H12345678901漢字",
        // The same, the wide character moved to the second column (`CSI @`).
        "\x1b[1;1H12345678901漢字\x1b[2;1H\x1b[@",
        // A spacer left alone: its wide character deleted.
        "\x1b[2;1Ha漢b字c\x1b[2;2H\x1b[P\x1b[2;4H\x1b[P",
        // And one whose spacer was deleted.
        "\x1b[2;1Ha漢b字c\x1b[2;3H\x1b[P",
    ];
    let texts = [
        "x",
        "xy",
        "xyz",
        "0123456789ab",
        "─",
        "──",
        "─x─",
        "é",
        "漢",
    ];
    let mut checked = 0;
    for setup in setups {
        for text in texts {
            for col in 1..=12 {
                for cut in [false, true] {
                    let mut fast = Screen::new(4, 12);
                    let mut slow = Screen::new(4, 12);
                    slow.set_vte_only(true);
                    let over = format!("{setup}\x1b[2;{col}H{text}");
                    let bytes = over.as_bytes();
                    // Cut or whole: the segment ends where the chunk does.
                    let at = if cut { bytes.len() - 1 } else { bytes.len() };
                    for part in [&bytes[..at], &bytes[at..]] {
                        fast.process(part);
                        slow.process(part);
                    }
                    assert_eq!(fast.model_difference(&slow), None, "{over:?}, cut {cut}");
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, setups.len() * texts.len() * 12 * 2);
}

#[test]
fn every_plain_csi_the_lane_dispatches_is_vte_s_dispatch() {
    // The finals the lane dispatches itself, and some it gives to vte, each
    // with random parameter lists of values at the edges (0, 1, the
    // defaults, colours' sub-forms, past a byte, past u16).
    const FINALS: &[u8] = b"@ABCDEFGHJKLMPSTXademfbrhlsu`";
    const VALUES: &[u32] = &[
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 21, 22, 23, 24, 25, 27, 28, 29, 30, 37, 38, 39, 40, 47,
        48, 49, 58, 59, 90, 97, 100, 107, 108, 255, 256, 999, 65535, 70000,
    ];
    let mut rng = Rng(0xc51);
    for case in 0..4000 {
        let mut final_byte = FINALS[rng.below(FINALS.len() as u64) as usize];
        let n = rng.below(7);
        let mut params: Vec<String> = (0..n)
            .map(|_| {
                if rng.below(8) == 0 {
                    String::new()
                } else {
                    VALUES[rng.below(VALUES.len() as u64) as usize].to_string()
                }
            })
            .collect();
        if rng.below(3) == 0 {
            // An SGR colour in its long forms, whole or cut short.
            final_byte = b'm';
            params.push(["38", "48", "58"][rng.below(3) as usize].to_owned());
            params.push(["2", "5", "7"][rng.below(3) as usize].to_owned());
            for _ in 0..rng.below(5) {
                params.push(VALUES[rng.below(VALUES.len() as u64) as usize].to_string());
            }
        }
        let (rows, cols) = (1 + rng.below(6) as u16, 2 + rng.below(20) as u16);
        let mut bytes = Vec::new();
        bytes.extend_from_slice(b"\x1b[3;4Hab\xe2\x94\x80cd\x1b[1;31m\xe6\xbc\xa2e\r\n  fg");
        if rng.below(2) == 0 {
            // Every attribute and colour set, for SGR to take apart.
            bytes.extend_from_slice(b"\x1b[1;2;3;4;5;7;8;9;38;5;3;48;2;1;2;3;58;5;4m");
        }
        bytes.extend_from_slice(format!("\x1b[{}", params.join(";")).as_bytes());
        bytes.push(final_byte);
        bytes.extend_from_slice("xy─漢z".as_bytes());
        let mut fast = Screen::new(rows, cols);
        let mut slow = Screen::new(rows, cols);
        slow.set_vte_only(true);
        fast.process(&bytes);
        slow.process(&bytes);
        assert_eq!(
            fast.model_difference(&slow),
            None,
            "case {case} ({rows}x{cols}): {:?}",
            String::from_utf8_lossy(&bytes)
        );
    }
}

#[test]
fn plain_lines_that_scroll_out_are_stepped_over_to_the_same_model() {
    // Each shape by hand, whole and cut in two at every eighth byte: the
    // lane steps over the lines where it may (and says so), never where the
    // scrolling region is not known to be the whole screen.
    let lines = |n: usize| {
        (0..n)
            .map(|i| format!("line {i} {}\r\n", "x".repeat(i % 37)))
            .collect::<String>()
    };
    let many = lines(60);
    let cases: Vec<(String, bool)> = vec![
        (many.clone(), true),
        (format!("\x1b[1;31mab\x1b[4h{many}"), true),
        (format!("\x1b[20h{many}"), true),
        (format!("\x1b[?7l{many}"), true),
        (format!("\x1b[?1049h\x1b[3;5H{many}\x1b[?1049l"), true),
        (format!("\x1b(0{many}"), true),
        // Lines then only line ends: the repeat takes the last character
        // of the lines stepped over.
        (format!("{many}{}\x1b[3b", "\r\n".repeat(20)), true),
        // A region set: no step, until it is the whole screen again.
        (format!("\x1b[2;5r{many}"), false),
        (format!("\x1b[2;5r{many}\x1b[r{many}"), true),
        (format!("\x1b[2;5r{many}\x1b[1;99r{many}"), true),
        (format!("\x1b[2;5r\x1b[9;3r{many}"), false),
        (format!("\x1b[1;4r{many}"), false),
        (format!("\x1b[3;99r{many}"), false),
        // A region `vte` sets (a sub-parameter): not known; nor after any
        // other sequence `vte` takes that ends in `r`, harmless or not.
        (format!("\x1b[2:1;5r{many}"), false),
        (format!("\x1b[?2r{many}"), false),
        (format!("\x1b[?2r\x1b[r{many}"), true),
    ];
    for (i, (case, steps)) in cases.iter().enumerate() {
        let bytes = case.as_bytes();
        for cut in (0..bytes.len()).step_by(8).chain([bytes.len()]) {
            for scrollback in [0, 10] {
                let mut fast = Screen::with_scrollback(6, 30, scrollback);
                let mut slow = Screen::with_scrollback(6, 30, scrollback);
                slow.set_vte_only(true);
                for part in [&bytes[..cut], &bytes[cut..]] {
                    fast.process(part);
                    slow.process(part);
                }
                assert_eq!(
                    fast.model_difference(&slow),
                    None,
                    "case {i}, cut at {cut}, scrollback {scrollback}"
                );
                if cut == bytes.len() {
                    assert_eq!(
                        fast.lines_stepped_over() > 0,
                        *steps,
                        "case {i}, scrollback {scrollback}: stepped over {}",
                        fast.lines_stepped_over()
                    );
                }
            }
        }
    }
    // Just enough lines, or one short, on either side of the cut, from the
    // top line and from the bottom one, over a screen full of `E` (which a
    // line written over a row keeps past its end, and a row scrolled in
    // does not).
    for start in ["\x1b#8\x1b[H", "\x1b#8\x1b[6H", "\x1b#8\x1b[3H"] {
        for scrollback in [0, 2] {
            for n in 6 + scrollback..6 + scrollback + 8 {
                let bytes = format!("{start}{}", lines(n));
                let mut fast = Screen::with_scrollback(6, 30, scrollback);
                let mut slow = Screen::with_scrollback(6, 30, scrollback);
                slow.set_vte_only(true);
                fast.process(bytes.as_bytes());
                slow.process(bytes.as_bytes());
                assert_eq!(
                    fast.model_difference(&slow),
                    None,
                    "{n} lines after {start:?}, scrollback {scrollback}"
                );
            }
        }
    }
    // A resize makes the region the whole screen again.
    let mut fast = Screen::with_scrollback(6, 30, 0);
    let mut slow = Screen::with_scrollback(6, 30, 0);
    slow.set_vte_only(true);
    for s in [&mut fast, &mut slow] {
        s.process(b"\x1b[2;4r");
        s.resize(6, 30);
        s.process(many.as_bytes());
    }
    assert_eq!(fast.lines_stepped_over(), 0, "same size: region kept");
    for s in [&mut fast, &mut slow] {
        s.resize(7, 30);
        s.process(many.as_bytes());
    }
    assert!(fast.lines_stepped_over() > 0);
    assert_eq!(fast.model_difference(&slow), None);
}
