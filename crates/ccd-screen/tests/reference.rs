//! The lane's reference (`vte` and `alacritty_terminal`, pinned at exact
//! versions in the workspace's Cargo.toml) against digests of the models it
//! left on recorded streams: the real CLI's recordings
//! (`tests/recordings/claude-cli/`) and a synthetic stream of the sequences
//! the lane handles itself (wide characters at the margin, charsets, repeat,
//! insert mode, scrolling regions, hyperlinks, the alternate screen).
//!
//! Each stream is parsed by `vte` alone (`Screen::set_vte_only`) and the
//! whole model (every cell with its attributes, scrollback included, the
//! cursor and saved cursor, modes, title) hashed (`Screen::model_digest`);
//! the digests are checked in (`tests/reference-digests.txt`). A mismatch
//! means the reference's behaviour changed: the lane (`src/lane/`) mirrors
//! it and must be re-verified before the new version is accepted.
//!
//! `CCD_UPDATE_REFERENCE_DIGESTS=1` rewrites the digest file (only after
//! that re-verification).

use std::fmt::Write as _;
use std::path::PathBuf;

use ccd_screen::Screen;

fn recordings_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/recordings/claude-cli")
}

fn digests_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/reference-digests.txt")
}

/// A stream of the sequences the lane does itself or follows `vte` through,
/// in a fixed order, on a 10 x 24 screen with scrollback.
fn synthetic() -> Vec<u8> {
    let mut s = String::new();
    for round in 0..6 {
        s.push_str("plain text that is longer than one row of the screen\r\n");
        s.push_str("漢字テ🚀🙂한界 wide at the margin 漢字漢字漢字\r\n");
        s.push_str(
            "\x1b[1;31mred\x1b[0m \x1b[38;5;100mindexed\x1b[48;2;10;20;30;1;3mrgb\x1b[m\r\n",
        );
        s.push_str("\x1b[4:3m\x1b[58:2::255:0:0mcurly\x1b[24m\x1b[59m\r\n");
        s.push_str("\x1b]8;id=x;http://example.com/a\x1b\\link\x1b]8;;\x1b\\\r\n");
        s.push_str("\x1b(0lqqk\x1b(B \x1b)0\x0elqk\x0f\r\n");
        s.push_str("x\x1b[5b \x1b[4hinsert\x1b[4l\x1b[3D\x1b[2@\x1b[P\x1b[2X\r\n");
        s.push_str("\x1b[2;6r\x1b[3;1Hin region\n\n\n\n\n\x1bM\x1bD\x1bE\x1b[r");
        s.push_str("\x1b7\x1b[5;10Hsaved\x1b8\x1b[K\x1b[1K\x1b[2K\x1b[L\x1b[M");
        s.push_str("\x1b[?7lno wrap past the right margin of the screen\x1b[?7h\r\n");
        s.push_str("é e\u{301} \u{200b}\u{fe0f} \u{a0}\u{ad} ─←·\t|\x08\x07\x7f\r\n");
        s.push_str("\x1b]0;a title\x07\x1b[?25l\x1b[?2004h\x1b[?1h\x1b[5 q");
        if round % 2 == 0 {
            s.push_str("\x1b[?1049h\x1b[2Jalternate\x1b[3;3H\x1b[J\x1b[?1049l");
        }
        s.push_str("\x1b[;7H\x1b[0;99999H\x1b[3A\x1b[2B\x1b[4C\x1b[D\x1b[2e\x1b[a\x1b[G\x1b[d");
        for n in 0..12 {
            let _ = write!(s, "scrolling line {round}.{n}\r\n");
        }
    }
    s.into_bytes()
}

/// One stream: name, rows, cols, bytes, chunk ends.
type Stream = (String, u16, u16, Vec<u8>, Vec<usize>);

/// Every stream.
fn streams() -> Vec<Stream> {
    let dir = recordings_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("recordings {} unreadable ({e})", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 3, "expected recordings in {}", dir.display());
    let mut out: Vec<_> = names
        .into_iter()
        .map(|name| {
            let data = std::fs::read(dir.join(format!("{name}.bin"))).unwrap();
            let meta: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.join(format!("{name}.json"))).unwrap())
                    .unwrap();
            let rows = meta["rows"].as_u64().unwrap() as u16;
            let cols = meta["cols"].as_u64().unwrap() as u16;
            let ends = meta["chunk_ends"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as usize)
                .collect();
            (name, rows, cols, data, ends)
        })
        .collect();
    let data = synthetic();
    let ends = (1..=data.len() / 37).map(|i| i * 37).collect();
    out.push(("synthetic".to_owned(), 10, 24, data, ends));
    out
}

/// The digest of the model `vte` alone leaves on one stream, fed in its
/// recorded chunks.
fn reference_digest(rows: u16, cols: u16, data: &[u8], ends: &[usize]) -> String {
    let mut screen = Screen::new(rows, cols);
    screen.set_vte_only(true);
    let mut start = 0;
    for &end in ends.iter().chain(std::iter::once(&data.len())) {
        let end = end.min(data.len());
        if end > start {
            screen.process(&data[start..end]);
            start = end;
        }
    }
    screen.model_digest()
}

#[test]
fn the_pinned_reference_leaves_the_recorded_models() {
    let actual: Vec<(String, String)> = streams()
        .into_iter()
        .map(|(name, rows, cols, data, ends)| (name, reference_digest(rows, cols, &data, &ends)))
        .collect();
    let text: String = actual.iter().map(|(n, d)| format!("{n} {d}\n")).collect();
    if std::env::var_os("CCD_UPDATE_REFERENCE_DIGESTS").is_some() {
        std::fs::write(digests_file(), &text).unwrap();
        return;
    }
    let recorded = std::fs::read_to_string(digests_file()).unwrap_or_else(|e| {
        panic!(
            "{} unreadable ({e}): run with CCD_UPDATE_REFERENCE_DIGESTS=1 to write it",
            digests_file().display()
        )
    });
    let changed: Vec<String> = actual
        .iter()
        .filter(|(n, d)| !recorded.lines().any(|l| l == format!("{n} {d}")))
        .map(|(n, _)| n.clone())
        .collect();
    assert!(
        changed.is_empty() && recorded == text,
        "THE LANE'S REFERENCE CHANGED BEHAVIOUR: `vte`/`alacritty_terminal` (pinned in \
         the workspace's Cargo.toml) no longer leave the recorded model on {changed:?} \
         (or the set of streams changed). ccd's lane (crates/ccd-screen/src/lane) mirrors \
         their private behaviour: re-verify it against the new version (vte's state \
         machine in lane/mirror.rs, UTF-8 reading in lane/utf8.rs, C0 and plain CSI \
         dispatch in lane/csi.rs, Term::input's grid writes, wraps, charsets and repeat in \
         lane/grid.rs, scroll-out in lane/scroll_out.rs), run tests/lane.rs, \
         tests/fixtures.rs and the `screen` fuzz target, then rewrite \
         tests/reference-digests.txt with CCD_UPDATE_REFERENCE_DIGESTS=1.\n\
         recorded:\n{recorded}\nnow:\n{text}"
    );
}
