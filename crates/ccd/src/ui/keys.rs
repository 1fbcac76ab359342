//! The dashboard's keys in the list, in one table: the key handling
//! ([`action_of`]), the help screen ([`help_lines`]) and the README's key
//! list (checked against README.md by a test) are all made
//! from [`KEYS`], so they cannot disagree.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key does in the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Up,
    Down,
    PageUp,
    PageDown,
    First,
    Last,
    Attach,
    Observe,
    Fork,
    New,
    Kill,
    Approve,
    Deny,
    SortByMemory,
    Search,
    Filter,
    ClearFilter,
    Reload,
    Help,
    Quit,
}

/// A key: a code, with Ctrl or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
}

const fn plain(code: KeyCode) -> Key {
    Key { code, ctrl: false }
}

const fn ch(c: char) -> Key {
    plain(KeyCode::Char(c))
}

/// One line of the help: the keys as written, what they do, and each key
/// with its action.
pub struct Binding {
    pub keys: &'static str,
    pub does: &'static str,
    pub map: &'static [(Key, Action)],
}

/// Every key of the list, in the help's order.
pub const KEYS: &[Binding] = &[
    Binding {
        keys: "↑/↓ K/j/J",
        does: "move",
        map: &[
            (plain(KeyCode::Up), Action::Up),
            (ch('K'), Action::Up),
            (plain(KeyCode::Down), Action::Down),
            (ch('j'), Action::Down),
            (ch('J'), Action::Down),
        ],
    },
    Binding {
        keys: "PgUp/PgDn",
        does: "move by half a screen",
        map: &[
            (plain(KeyCode::PageUp), Action::PageUp),
            (plain(KeyCode::PageDown), Action::PageDown),
        ],
    },
    Binding {
        keys: "Home/End g/G",
        does: "first / last",
        map: &[
            (plain(KeyCode::Home), Action::First),
            (ch('g'), Action::First),
            (plain(KeyCode::End), Action::Last),
            (ch('G'), Action::Last),
        ],
    },
    Binding {
        keys: "Enter",
        does: "attach (detach with the detach key to come back here)",
        map: &[(plain(KeyCode::Enter), Action::Attach)],
    },
    Binding {
        keys: "o",
        does: "observe (read-only)",
        map: &[(ch('o'), Action::Observe)],
    },
    Binding {
        keys: "f",
        does: "fork the session and attach to the fork",
        map: &[(ch('f'), Action::Fork)],
    },
    Binding {
        keys: "n",
        does: "new session (asks machine, then directory; Tab completes)",
        map: &[(ch('n'), Action::New)],
    },
    Binding {
        keys: "k",
        does: "kill a session ccd holds (asks first)",
        map: &[(ch('k'), Action::Kill)],
    },
    Binding {
        keys: "a / d",
        does: "approve / deny its permission prompt",
        map: &[(ch('a'), Action::Approve), (ch('d'), Action::Deny)],
    },
    Binding {
        keys: "m",
        does: "sort by memory, largest first (again: by what needs you)",
        map: &[(ch('m'), Action::SortByMemory)],
    },
    Binding {
        keys: "/",
        does: "search what was said (Enter on a hit goes in as on its row)",
        map: &[(ch('/'), Action::Search)],
    },
    Binding {
        keys: "\\ Esc",
        does: "filter by id, name, title, folder (Enter keeps, Esc clears)",
        map: &[
            (ch('\\'), Action::Filter),
            (plain(KeyCode::Esc), Action::ClearFilter),
        ],
    },
    Binding {
        keys: "r",
        does: "reload the list",
        map: &[(ch('r'), Action::Reload)],
    },
    Binding {
        keys: "?",
        does: "this help (any key closes it)",
        map: &[(ch('?'), Action::Help)],
    },
    Binding {
        keys: "q Ctrl-C",
        does: "quit",
        map: &[
            (ch('q'), Action::Quit),
            (
                Key {
                    code: KeyCode::Char('c'),
                    ctrl: true,
                },
                Action::Quit,
            ),
        ],
    },
];

/// What `k` does in the list, if anything.
pub fn action_of(k: &KeyEvent) -> Option<Action> {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    KEYS.iter()
        .flat_map(|b| b.map.iter())
        .find(|(key, _)| key.code == k.code && key.ctrl == ctrl)
        .map(|&(_, a)| a)
}

/// The help screen's lines, one binding a line.
pub fn help_lines(detach_key: &str) -> Vec<String> {
    let width = KEYS
        .iter()
        .map(|b| b.keys.chars().count())
        .max()
        .unwrap_or(0);
    let mut out: Vec<String> = KEYS
        .iter()
        .map(|b| {
            let does = b.does.replace("the detach key", detach_key);
            format!("{:<width$}  {does}", b.keys)
        })
        .collect();
    out.push(String::new());
    out.push("Order: waiting · busy · held idle · elsewhere · dead.".into());
    out.push("! marks a session that waits for you.".into());
    out
}

/// The README's sentence listing the keys (between its `<!-- keys -->`
/// markers), made from the table (the test checks the README against it).
#[cfg(test)]
fn readme_keys() -> String {
    let parts: Vec<String> = KEYS
        .iter()
        .map(|b| {
            let keys: Vec<String> = b
                .keys
                .split(' ')
                .enumerate()
                // `a / d`: the `/` between two keys is not a key.
                .filter(|&(n, k)| k != "/" || n == 0)
                .map(|(_, k)| format!("`{k}`"))
                .collect();
            format!("{} {}", keys.join(" "), b.does)
        })
        .collect();
    format!("Keys: {}.", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::KeyEventKind;

    fn key(code: KeyCode, ctrl: bool) -> KeyEvent {
        let mut k = KeyEvent::new(
            code,
            if ctrl {
                KeyModifiers::CONTROL
            } else {
                KeyModifiers::NONE
            },
        );
        k.kind = KeyEventKind::Press;
        k
    }

    #[test]
    fn every_key_does_one_thing() {
        let all: Vec<&(Key, Action)> = KEYS.iter().flat_map(|b| b.map.iter()).collect();
        for (i, (k, _)) in all.iter().enumerate() {
            assert!(
                all[i + 1..].iter().all(|(o, _)| o != k),
                "{k:?} is bound twice"
            );
        }
        assert_eq!(
            action_of(&key(KeyCode::Char('k'), false)),
            Some(Action::Kill)
        );
        assert_eq!(action_of(&key(KeyCode::Char('K'), false)), Some(Action::Up));
        assert_eq!(
            action_of(&key(KeyCode::Char('c'), true)),
            Some(Action::Quit)
        );
        assert_eq!(action_of(&key(KeyCode::Char('c'), false)), None);
        assert_eq!(
            action_of(&key(KeyCode::Char('m'), false)),
            Some(Action::SortByMemory)
        );
        // `/` searches what was said (issue 55); `\` filters the list.
        assert_eq!(
            action_of(&key(KeyCode::Char('/'), false)),
            Some(Action::Search)
        );
        assert_eq!(
            action_of(&key(KeyCode::Char('\\'), false)),
            Some(Action::Filter)
        );
    }

    #[test]
    fn the_help_names_every_key_of_the_table() {
        let help = help_lines("ctrl-\\").join("\n");
        for b in KEYS {
            assert!(help.contains(b.keys), "{} missing from the help", b.keys);
        }
        assert!(help.contains("detach with ctrl-\\ to come back"), "{help}");
    }

    #[test]
    fn the_readme_lists_the_keys_of_the_table() {
        let readme = include_str!("../../../../README.md");
        let want = readme_keys();
        let got: String = readme
            .split("<!-- keys -->")
            .nth(1)
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            got, want,
            "README.md's key list (between <!-- keys --> markers) differs from ui::keys::KEYS; write:\n{want}"
        );
    }
}
