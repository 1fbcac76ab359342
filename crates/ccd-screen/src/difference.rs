//! [`Screen::model_difference`]: two models compared field by field, for
//! testing ccd's lane in front of `vte` against `vte` alone
//! ([`Screen::set_vte_only`]); [`Screen::model_digest`]: the same fields
//! hashed, for checking the pinned reference against recorded digests.

use alacritty_terminal::grid::Dimensions;
use alacritty_terminal::index::Column;
use alacritty_terminal::term::cell::Cell;

use crate::Screen;

impl Screen {
    /// The first difference between this model and `other`, described, or
    /// `None` when they are the same: every row of the active grid
    /// (scrollback included) cell by cell with all its fields, the cursor
    /// and the saved cursor (position, pen, charsets, pending wrap), the
    /// terminal's modes, cursor style and title, and the scanned modes.
    /// For comparing the lane with [`Screen::set_vte_only`].
    pub fn model_difference(&self, other: &Self) -> Option<String> {
        let (a, b) = (self.term.grid(), other.term.grid());
        if (a.screen_lines(), a.columns(), a.history_size())
            != (b.screen_lines(), b.columns(), b.history_size())
        {
            return Some("sizes differ".to_owned());
        }
        for i in a.topmost_line().0..=a.bottommost_line().0 {
            let line = alacritty_terminal::index::Line(i);
            let (ra, rb) = (&a[line], &b[line]);
            if ra.len() != rb.len() {
                return Some(format!("line {i}: {} vs {} cells", ra.len(), rb.len()));
            }
            if let Some(c) = (0..ra.len()).find(|&c| !same_cell(&ra[Column(c)], &rb[Column(c)])) {
                let (x, y) = (&ra[Column(c)], &rb[Column(c)]);
                return Some(format!("line {i} col {c}: {x:?} vs {y:?}"));
            }
        }
        self.state_fields()
            .into_iter()
            .zip(other.state_fields())
            .find(|((_, x), (_, y))| x != y)
            .map(|((name, x), (_, y))| format!("{name}: {x} vs {y}"))
    }

    /// A SHA-256 (hex) of everything [`Screen::model_difference`] compares:
    /// the active grid's size and every row (scrollback included) cell by
    /// cell, the cursor and saved cursor, modes, cursor style, title and the
    /// scanned modes. For checking that the reference (`vte` and
    /// `alacritty_terminal`, [`Screen::set_vte_only`]) still leaves the
    /// model it left on recorded streams (`tests/reference.rs`).
    #[doc(hidden)]
    pub fn model_digest(&self) -> String {
        use sha2::{Digest, Sha256};
        use std::fmt::Write as _;
        let grid = self.term.grid();
        let mut h = Sha256::new();
        h.update(
            format!(
                "{} {} {}\n",
                grid.screen_lines(),
                grid.columns(),
                grid.history_size()
            )
            .as_bytes(),
        );
        let mut row = String::new();
        for i in grid.topmost_line().0..=grid.bottommost_line().0 {
            let line = &grid[alacritty_terminal::index::Line(i)];
            row.clear();
            for c in 0..line.len() {
                let _ = writeln!(row, "{:?}", cell_key(&line[Column(c)]));
            }
            h.update(format!("line {i} {}\n", line.len()).as_bytes());
            h.update(row.as_bytes());
        }
        for (name, value) in self.state_fields() {
            h.update(format!("{name}: {value}\n").as_bytes());
        }
        h.finalize()
            .iter()
            .fold(String::with_capacity(64), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            })
    }

    /// Everything but the grid's cells that the model comparison and
    /// digest cover, named, each as text.
    fn state_fields(&self) -> [(&'static str, String); 8] {
        let g = self.term.grid();
        [
            ("cursor", format!("{:?}", g.cursor.point)),
            ("cursor pen", format!("{:?}", cell_key(&g.cursor.template))),
            (
                "cursor charsets, pending wrap",
                format!("{:?} {}", g.cursor.charsets, g.cursor.input_needs_wrap),
            ),
            (
                "saved cursor",
                format!(
                    "{:?} {:?} {:?} {}",
                    g.saved_cursor.point,
                    cell_key(&g.saved_cursor.template),
                    g.saved_cursor.charsets,
                    g.saved_cursor.input_needs_wrap
                ),
            ),
            ("mode", format!("{:?}", self.term.mode())),
            ("cursor style", format!("{:?}", self.term.cursor_style())),
            ("title", self.title()),
            ("modes", format!("{:?}", self.modes())),
        ]
    }
}

/// Everything a cell holds, but a hyperlink's generated id
/// (`alacritty_terminal` numbers links without an id from a counter shared
/// by every terminal in the process: two models fed the same bytes differ
/// there only).
fn cell_key(c: &Cell) -> impl PartialEq + std::fmt::Debug + '_ {
    let link = c.hyperlink().map(|h| {
        let id = h.id();
        let id = if id.ends_with("_alacritty") { "" } else { id };
        (id.to_owned(), h.uri().to_owned())
    });
    (
        c.c,
        c.fg,
        c.bg,
        c.flags,
        c.zerowidth().map(<[char]>::to_vec),
        c.underline_color(),
        link,
    )
}

/// Whether two cells are the same ([`cell_key`]).
fn same_cell(a: &Cell, b: &Cell) -> bool {
    cell_key(a) == cell_key(b)
}
