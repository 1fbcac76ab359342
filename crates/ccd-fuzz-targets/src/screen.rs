//! `screen`: the screen model, its classifiers and redraw snapshots.

use ccd_screen::{classify_screen, classify_text, ModeScanner, Screen};

use crate::steer::{split, Steer};

/// Most rows a fuzzed screen gets.
pub const MAX_ROWS: u16 = 60;
/// Most columns a fuzzed screen gets.
pub const MAX_COLS: u16 = 200;

/// Bytes in: one byte for the rows (`1 + b % 60`), one for the columns
/// (`1 + b % 200`), chunk lengths ([`Steer`]), then raw PTY output.
///
/// Property: no panic escapes [`Screen::process`] (it survives a panic
/// inside the terminal model by design), classification never panics, and
/// [`Screen::redraw`] replayed into a fresh screen of the same size
/// reproduces what `ccd-screen`'s own round-trip tests compare: every cell
/// ([`Screen::cells`]: characters, attributes, colours, links, wraps, the
/// cursor and its pen), the modes and the title — and so the
/// same verdict. [`ModeScanner`] ends in the same state whether the bytes
/// come in one chunk or in these chunks. ccd's lane in front of `vte` ends
/// in the same model as `vte` alone ([`Screen::set_vte_only`]), with the
/// default scrollback and with none (the holder's, where the fewest lines
/// make plain lines scroll out: the lane steps over them).
pub fn screen(data: &[u8]) {
    let mut steer = Steer::new(data);
    let rows = 1 + u16::from(steer.byte()) % MAX_ROWS;
    let cols = 1 + u16::from(steer.byte()) % MAX_COLS;
    let lens = steer.chunk_lens();
    let payload = steer.rest();
    let chunks = split(payload, &lens);

    let mut s = Screen::new(rows, cols);
    let mut vte_only = Screen::new(rows, cols);
    vte_only.set_vte_only(true);
    let mut bare = Screen::with_scrollback(rows, cols, 0);
    let mut bare_vte_only = Screen::with_scrollback(rows, cols, 0);
    bare_vte_only.set_vte_only(true);
    let mut scanner = ModeScanner::new();
    for chunk in &chunks {
        s.process(chunk);
        vte_only.process(chunk);
        bare.process(chunk);
        bare_vte_only.process(chunk);
        scanner.feed(chunk);
    }
    assert_eq!(
        s.model_difference(&vte_only),
        None,
        "the lane differs from vte alone"
    );
    assert_eq!(
        bare.model_difference(&bare_vte_only),
        None,
        "the lane differs from vte alone without scrollback"
    );
    assert_eq!(s.size(), (rows, cols.max(ccd_screen::screen::MIN_COLS)));
    assert_eq!(s.rebuilds(), 0, "the terminal model panicked");
    let (rows, cols) = s.size();

    let mut whole = ModeScanner::new();
    whole.feed(payload);
    assert_eq!(
        whole.modes(),
        scanner.modes(),
        "ModeScanner depends on how the bytes are chunked"
    );

    let verdict = classify_screen(&s);
    let text = s.text();
    assert_eq!(text.rows().len(), usize::from(rows));
    assert_eq!(classify_text(&text), verdict);
    let _ = text.logical_lines();
    let _ = s.contents();
    let modes = s.modes();
    let _ = modes.reset_bytes();
    let (row, col) = s.cursor_position();
    assert!(row < rows, "cursor row {row} outside {rows} rows");
    assert!(col <= cols, "cursor column {col} beyond {cols} columns");

    let redraw = s.redraw();
    let mut fresh = Screen::new(rows, cols);
    fresh.process(&redraw);
    let (want, got) = (s.cells(), fresh.cells());
    assert_eq!(got.first_difference(&want), None, "redraw: cells");
    assert_eq!(got, want, "redraw: cells");
    assert_eq!(fresh.contents(), s.contents(), "redraw: contents");
    assert_eq!(fresh.modes(), modes, "redraw: modes");
    assert_eq!(fresh.title(), s.title(), "redraw: title");
    assert_eq!(classify_screen(&fresh), verdict, "redraw: verdict");
}
