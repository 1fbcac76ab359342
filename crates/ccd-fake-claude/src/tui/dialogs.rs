//! Blocking dialogs: folder trust (two recorded variants), the custom API key question and
//! the tool permission prompt. Each is a menu plus the lines around it.

use super::paint::{color, rule, wrap, Line, Span};
use crate::input::Key;
use crate::settings::Variant;

/// A vertical list of choices with a `❯` on the selected one.
#[derive(Debug, Clone)]
pub struct Menu {
    pub options: Vec<String>,
    pub selected: usize,
    /// "1. Yes" style; digits then pick an option directly.
    pub numbered: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MenuAction {
    None,
    Moved,
    Chosen(usize),
    Cancel,
}

impl Menu {
    pub fn new(options: &[&str], selected: usize, numbered: bool) -> Menu {
        Menu {
            options: options.iter().map(|s| s.to_string()).collect(),
            selected,
            numbered,
        }
    }

    pub fn handle(&mut self, key: &Key) -> MenuAction {
        match key {
            Key::Up if self.selected > 0 => {
                self.selected -= 1;
                MenuAction::Moved
            }
            Key::Down if self.selected + 1 < self.options.len() => {
                self.selected += 1;
                MenuAction::Moved
            }
            Key::Enter => MenuAction::Chosen(self.selected),
            Key::Esc => MenuAction::Cancel,
            Key::Char(c) if self.numbered => match c.to_digit(10) {
                Some(d) if d >= 1 && (d as usize) <= self.options.len() => {
                    self.selected = d as usize - 1;
                    MenuAction::Chosen(self.selected)
                }
                _ => MenuAction::None,
            },
            _ => MenuAction::None,
        }
    }

    pub fn lines(&self) -> Vec<Line> {
        self.options
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let sel = i == self.selected;
                let mut line = Vec::new();
                if sel {
                    line.push(Span::new(2, "❯").fg(color::SELECT));
                }
                if self.numbered {
                    line.push(Span::new(4, format!("{}.", i + 1)).fg(color::GREY));
                    let t = Span::new(7, text.clone());
                    line.push(if sel { t.fg(color::SELECT) } else { t });
                } else {
                    let t = Span::new(4, text.clone());
                    line.push(if sel { t.fg(color::SELECT) } else { t });
                }
                line
            })
            .collect()
    }
}

pub const TRUST_YES: &str = "Yes, I trust this folder";
pub const TRUST_NO: &str = "No, exit";

/// The trust menu of a variant: 2.1.173 numbers its options and defaults to Yes; 2.1.332
/// lists "No, exit" first and defaults to it.
pub fn trust_menu(v: Variant) -> Menu {
    match v {
        Variant::V2_1_173 => Menu::new(&[TRUST_YES, TRUST_NO], 0, true),
        Variant::V2_1_332 => Menu::new(&[TRUST_NO, TRUST_YES], 0, false),
    }
}

fn confirm_hint() -> Line {
    vec![Span::new(2, "Enter to confirm · Esc to cancel").fg(color::GREY)]
}

/// The "Accessing workspace" dialog, from row 1 (the first row is left blank).
pub fn trust_lines(cwd: &str, cols: u16, menu: &Menu) -> Vec<Line> {
    let mut lines: Vec<Line> = vec![
        vec![],
        rule(cols, color::YELLOW),
        vec![Span::new(2, "Accessing workspace:")
            .fg(color::YELLOW)
            .bold()],
        vec![],
        vec![Span::new(2, cwd).bold()],
        vec![],
    ];
    let text =
        "Quick safety check: Is this a project you created or one you trust? (Like your own \
                code, a well-known open source project, or work from your team). If not, take a \
                moment to review what's in this folder first.";
    for l in wrap(text, cols.saturating_sub(2) as usize) {
        lines.push(vec![Span::new(2, l)]);
    }
    lines.push(vec![]);
    lines.push(vec![Span::new(
        2,
        "Claude Code'll be able to read, edit, and execute files here.",
    )]);
    lines.push(vec![]);
    lines.push(vec![Span::new(2, "Security guide").fg(color::GREY)]);
    lines.push(vec![]);
    lines.extend(menu.lines());
    lines.push(vec![]);
    lines.push(confirm_hint());
    lines
}

/// "Detected a custom API key in your environment", default "No (recommended)".
pub fn api_key_menu() -> Menu {
    Menu::new(&["Yes", "No (recommended)"], 1, true)
}

pub fn api_key_lines(cols: u16, key_tail: &str, menu: &Menu) -> Vec<Line> {
    let mut lines: Vec<Line> = vec![
        vec![],
        rule(cols, color::YELLOW),
        vec![
            Span::new(2, "Detected a custom API key in your environment")
                .fg(color::YELLOW)
                .bold(),
        ],
        vec![],
        vec![
            Span::new(2, "ANTHROPIC_API_KEY").bold(),
            Span::new(21, format!("sk-ant-...{key_tail}")),
        ],
        vec![],
        vec![Span::new(2, "Do you want to use this API key?")],
        vec![],
    ];
    lines.extend(menu.lines());
    lines.push(vec![]);
    lines.push(confirm_hint());
    lines
}

/// The tool permission prompt for a shell command.
pub fn permission_menu(command: &str, cwd: &str) -> Menu {
    let first = command.split_whitespace().next().unwrap_or("this");
    let again = format!("Yes, and don't ask again for {first} commands in {cwd}");
    Menu::new(
        &[
            "Yes",
            &again,
            "No, and tell Claude what to do differently (esc)",
        ],
        0,
        true,
    )
}

pub fn permission_lines(cols: u16, command: &str, menu: &Menu) -> Vec<Line> {
    let mut lines: Vec<Line> = vec![
        rule(cols, color::ORANGE),
        vec![Span::new(2, "Bash command").fg(color::ORANGE).bold()],
        vec![],
    ];
    for l in wrap(command, cols.saturating_sub(6) as usize) {
        lines.push(vec![Span::new(4, l)]);
    }
    lines.push(vec![Span::new(4, "Run shell command").fg(color::GREY)]);
    lines.push(vec![]);
    lines.push(vec![Span::new(2, "Do you want to proceed?")]);
    lines.extend(menu.lines());
    lines.push(vec![]);
    lines.push(vec![Span::new(2, "Esc to cancel").fg(color::GREY)]);
    lines
}

/// The `/resume` picker: the project's other conversations by first prompt.
pub fn resume_picker_lines(cols: u16, menu: &Menu) -> Vec<Line> {
    let mut lines: Vec<Line> = vec![
        rule(cols, color::ORANGE),
        vec![Span::new(2, "Resume session").fg(color::ORANGE).bold()],
        vec![Span::new(2, "⌕ Search…").fg(color::GREY)],
        vec![],
    ];
    let max = cols.saturating_sub(6) as usize;
    let mut shown = menu.clone();
    for o in &mut shown.options {
        if o.chars().count() > max {
            *o = o.chars().take(max.saturating_sub(1)).chain(['…']).collect();
        }
    }
    lines.extend(shown.lines());
    lines.push(vec![]);
    lines.push(vec![Span::new(
        2,
        "Type to search · Enter to resume · Esc to close",
    )
    .fg(color::GREY)]);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_menus() {
        let mut m = trust_menu(Variant::V2_1_332);
        assert_eq!(m.options[m.selected], TRUST_NO);
        assert_eq!(m.handle(&Key::Down), MenuAction::Moved);
        assert_eq!(m.handle(&Key::Down), MenuAction::None);
        assert_eq!(m.handle(&Key::Enter), MenuAction::Chosen(1));
        let mut m = trust_menu(Variant::V2_1_173);
        assert_eq!(m.options[m.selected], TRUST_YES);
        assert_eq!(m.handle(&Key::Char('2')), MenuAction::Chosen(1));
    }
}
