//! [`Screen::model_difference`]: two models compared field by field, for
//! testing ccd's lane in front of `vte` against `vte` alone
//! ([`Screen::set_vte_only`]).

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
        let fields = [
            (
                "cursor",
                format!("{:?}", a.cursor.point),
                format!("{:?}", b.cursor.point),
            ),
            (
                "cursor pen",
                format!("{:?}", cell_key(&a.cursor.template)),
                format!("{:?}", cell_key(&b.cursor.template)),
            ),
            (
                "cursor charsets, pending wrap",
                format!("{:?} {}", a.cursor.charsets, a.cursor.input_needs_wrap),
                format!("{:?} {}", b.cursor.charsets, b.cursor.input_needs_wrap),
            ),
            (
                "saved cursor",
                format!(
                    "{:?} {:?} {:?} {}",
                    a.saved_cursor.point,
                    cell_key(&a.saved_cursor.template),
                    a.saved_cursor.charsets,
                    a.saved_cursor.input_needs_wrap
                ),
                format!(
                    "{:?} {:?} {:?} {}",
                    b.saved_cursor.point,
                    cell_key(&b.saved_cursor.template),
                    b.saved_cursor.charsets,
                    b.saved_cursor.input_needs_wrap
                ),
            ),
            (
                "mode",
                format!("{:?}", self.term.mode()),
                format!("{:?}", other.term.mode()),
            ),
            (
                "cursor style",
                format!("{:?}", self.term.cursor_style()),
                format!("{:?}", other.term.cursor_style()),
            ),
            ("title", self.title(), other.title()),
            (
                "modes",
                format!("{:?}", self.modes()),
                format!("{:?}", other.modes()),
            ),
        ];
        fields
            .into_iter()
            .find(|(_, x, y)| x != y)
            .map(|(name, x, y)| format!("{name}: {x} vs {y}"))
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
