//! What a submitted prompt does: a turn (with its permission dialog and memory held on
//! purpose), `/clear`, `/resume` (the picker and `/resume <id>`), `/model <name>`, `flood N`;
//! and the parsing of those prompts.

use super::{App, Flow, Phase, Turn, EXIT_OK};

use std::time::Instant;

use crate::registry::Status;
use crate::transcript::{self, History, Said, Transcript};
use crate::tui::dialogs::Menu;
use crate::tui::prompt::Entry;
use crate::util::uuid_v4;

impl App {
    pub(super) fn submit(&mut self) -> Flow {
        let text = self.input.trim().to_string();
        if text.is_empty() || self.turn.is_some() {
            return None;
        }
        self.input.clear();
        match text.as_str() {
            "/exit" | "/quit" => return Some(EXIT_OK),
            "/clear" => {
                self.clear_conversation();
                return None;
            }
            "/resume" => {
                self.open_resume_picker();
                return None;
            }
            _ => {}
        }
        if let Some(name) = text.strip_prefix("/model ").map(str::trim) {
            if !name.is_empty() {
                self.switch_model(name);
                return None;
            }
        }
        if let Some(sid) = text.strip_prefix("/resume ").map(str::trim) {
            if !sid.is_empty() {
                self.resume_in_tui(&text, sid);
                return None;
            }
        }
        if let Some(t) = &mut self.transcript {
            let _ = t.record_user(&text);
        }
        self.entries.push(Entry::User(text.clone()));
        if let Some(n) = flood_size(&text) {
            self.flood(n);
        }
        if let Some(mib) = hold_size(&text) {
            self.ballast.push(touched_mib(mib));
        }
        let now = Instant::now();
        self.turn = Some(Turn {
            permission: text.starts_with("perm"),
            text,
            submitted: now,
            busy_at: now + self.s.busy_after,
            done_at: now + self.s.turn,
            busy: false,
            waiting_told: false,
            asked: false,
        });
        self.redraw();
        None
    }

    /// `/clear`, as the real CLI (2.1.173 and 2.1.332): a new session id, published in the
    /// registry at once; the new transcript is created right away with the `/clear` command's
    /// records, and later turns go to it. Nothing more is written to the old transcript. The
    /// screen is redrawn as a fresh session, with `/clear` shown above the empty prompt.
    fn clear_conversation(&mut self) {
        let id = uuid_v4();
        let mut t = Transcript::fresh(&self.s.config_dir, &id, self.meta());
        let _ = t.record_local_command("clear", "");
        self.transcript = Some(t);
        if let Some(reg) = &mut self.registry {
            let _ = reg.set_session_id(&id);
        }
        self.entries = vec![Entry::User("/clear".to_string())];
        self.redraw();
    }

    /// `/model <name>`, as the real CLI (2.1.173 and 2.1.332) in what ccd reads: the
    /// transcript records the command (`<command-args>name</command-args>`) and its output
    /// "Set model to … and saved as your default for new sessions", the screen shows that
    /// line, and later replies carry the new model. (The real CLI asks "Switch model?" first
    /// when the conversation has history; the fake switches at once.)
    fn switch_model(&mut self, name: &str) {
        self.s.model = name.to_string();
        let said = format!(
            "Set model to {} and saved as your default for new sessions",
            self.s.model_display_name()
        );
        if let Some(t) = &mut self.transcript {
            t.set_model(name);
            let _ = t.record_local_command_said("model", name, &said);
        }
        self.entries.push(Entry::User(format!("/model {name}")));
        self.entries.push(Entry::Note(said));
        self.redraw();
    }

    /// `/resume` alone: a picker of the project's other conversations, newest first, `❯` on
    /// the newest. Up/Down move, Enter resumes (as `/resume <id>`), Esc closes it.
    fn open_resume_picker(&mut self) {
        let current = self
            .transcript
            .as_ref()
            .map(|t| t.session_id().to_string())
            .unwrap_or_default();
        let found = transcript::list_project(&self.s.config_dir, &self.view.cwd, &current);
        if found.is_empty() {
            self.entries.push(Entry::User("/resume".to_string()));
            self.entries
                .push(Entry::Note("No conversations found to resume".to_string()));
            self.redraw();
            return;
        }
        let (ids, labels): (Vec<String>, Vec<String>) = found.into_iter().unzip();
        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        self.phase = Phase::ResumePicker {
            menu: Menu::new(&labels, 0, false),
            ids,
        };
        self.redraw();
    }

    /// `/resume <id>` typed at the prompt: switches this process to that conversation, found as
    /// `<config>/projects/*/<id>.jsonl`. The registry entry takes the id at once (same pid), the
    /// screen shows that conversation, and later turns append to its file. An unknown id shows
    /// `Session <id> was not found.` under the command and changes nothing.
    pub(super) fn resume_in_tui(&mut self, command: &str, sid: &str) {
        let found = transcript::find(&self.s.config_dir, sid)
            .and_then(|path| History::read(&path).ok().map(|h| (path, h)));
        let Some((path, history)) = found else {
            self.entries.push(Entry::User(command.to_string()));
            self.entries
                .push(Entry::Note(format!("Session {sid} was not found.")));
            self.redraw();
            return;
        };
        self.entries = conversation_entries(&history);
        self.transcript = Some(Transcript::resumed(path, sid, &history, self.meta()));
        if let Some(reg) = &mut self.registry {
            let _ = reg.set_session_id(sid);
        }
        self.redraw();
    }

    pub(super) fn finish_turn(&mut self, reply: Option<String>, note: Option<&str>) {
        let Some(turn) = self.turn.take() else {
            return;
        };
        if let Some(reply) = reply {
            if let Some(t) = &mut self.transcript {
                let ms = turn.submitted.elapsed().as_millis() as u64;
                let _ = t.record_assistant(&reply, ms);
            }
            self.entries.push(Entry::Reply(reply));
        }
        if let Some(note) = note {
            self.entries.push(Entry::Note(note.to_string()));
        }
        self.phase = Phase::Prompt;
        self.set_status(Status::Idle);
        self.redraw();
    }

    /// Prints `n` bytes of coloured lines as fast as the terminal takes them.
    fn flood(&mut self, n: usize) {
        let mut buf = String::with_capacity(n.min(1 << 20) + 128);
        buf.push_str(&format!("\x1b[{};1H", self.rows));
        let mut i = 0usize;
        let mut written = 0usize;
        while written < n {
            let line = format!(
                "\x1b[38;5;{}mflood line {:07} {}\x1b[39m\r\n",
                16 + i % 216,
                i,
                "x".repeat(80)
            );
            let take = line.len().min(n - written);
            if take == line.len() {
                buf.push_str(&line);
            } else {
                buf.push_str(&"x".repeat(take));
            }
            written += take;
            i += 1;
            if buf.len() >= 1 << 16 {
                self.out(&buf);
                buf.clear();
                if self.term_gone {
                    return;
                }
            }
        }
        // A marker a reader can wait for.
        buf.push_str("\r\nflood done\r\n");
        self.out(&buf);
    }
}

/// The entries that redraw a past conversation.
pub(super) fn conversation_entries(history: &History) -> Vec<Entry> {
    history
        .conversation
        .iter()
        .map(|said| match said {
            Said::User(t) => Entry::User(t.clone()),
            Said::Assistant(t) => Entry::Reply(t.clone()),
        })
        .collect()
}

/// The command of a "perm <command>" prompt.
pub(super) fn command_of(text: &str) -> &str {
    text.strip_prefix("perm")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .unwrap_or("ls")
}

/// `flood N` → Some(N).
fn flood_size(text: &str) -> Option<usize> {
    let rest = text.strip_prefix("flood")?;
    rest.trim().parse().ok()
}

/// `hold N` → Some(N): the turn grows the process by N MiB.
fn hold_size(text: &str) -> Option<usize> {
    let rest = text.strip_prefix("hold")?;
    rest.trim().parse().ok()
}

/// `mib` MiB allocated with every page written, so each counts in the
/// process's resident (and proportional) size.
fn touched_mib(mib: usize) -> Vec<u8> {
    let mut v = vec![0u8; mib.saturating_mul(1 << 20)];
    for page in v.chunks_mut(4096) {
        page[0] = 1;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_parsing() {
        assert_eq!(flood_size("flood 1000"), Some(1000));
        assert_eq!(flood_size("flood"), None);
        assert_eq!(command_of("perm rm -rf x"), "rm -rf x");
    }
}
