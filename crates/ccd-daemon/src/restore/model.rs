//! The model a held session switched to inside the TUI (`/model <name>`),
//! read from what the CLI writes to its transcript, so a restore resumes
//! it with that model rather than the one it was started with.
//!
//! Both pinned CLIs record a switch as a `user` record whose content is
//! `<command-name>/model</command-name>…<command-args>NAME</command-args>`
//! followed by one whose content starts `<local-command-stdout>Set model
//! to` (even for a name the CLI does not know); the replies after it carry
//! the model's id in `message.model` (docs/claude-cli-compat.md, "The
//! model"). [`Switches`] is the sans-IO reading of those lines: the model
//! is the last switch's name, or, once a switch was seen, the last reply's
//! id (a switch from the picker, which names no argument, is known at the
//! next reply). Replies alone (no switch seen) say nothing: then the start
//! arguments stand. [`Follow`] reads a holder's transcript incrementally
//! from where it was when first seen (a switch in an older part of a
//! resumed conversation is not this process's), bounded per pass and per
//! line.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// The most bytes of a transcript one pass reads (the rest waits for the
/// next pass).
pub const MAX_READ: u64 = 1024 * 1024;

/// The longest transcript line kept for reading: longer ones (a big tool
/// output) are skipped, as no record that names a model is that long.
pub const MAX_LINE: usize = 256 * 1024;

/// The sans-IO reader of transcript lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Switches {
    /// The model switched to, once a switch was seen.
    pub model: Option<String>,
    /// A `/model` command's argument awaiting its "Set model to" output.
    pending: Option<String>,
    /// A switch was seen (later replies name the model in effect).
    switched: bool,
}

/// The text of a record's `message.content` (a string, or the first text
/// block).
fn content_text(v: &serde_json::Value) -> Option<&str> {
    let c = &v["message"]["content"];
    c.as_str().or_else(|| {
        c.as_array()?
            .iter()
            .find_map(|b| (b["type"] == "text").then(|| b["text"].as_str()).flatten())
    })
}

impl Switches {
    /// Reads one transcript line (without its newline).
    pub fn feed(&mut self, line: &str) {
        // Cheap filter first: most lines name no model.
        if !(line.contains("\"assistant\"")
            || line.contains("<command-name>/model</command-name>")
            || line.contains("<local-command-stdout>"))
        {
            return;
        }
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            return;
        };
        match v["type"].as_str() {
            Some("assistant") => {
                let model = v["message"]["model"].as_str().unwrap_or("");
                // `<synthetic>`: a reply the CLI wrote itself (an API error).
                if self.switched && !model.is_empty() && !model.starts_with('<') {
                    self.model = Some(model.to_string());
                }
            }
            Some("user") | Some("system") => {
                let text = content_text(&v).or_else(|| v["content"].as_str());
                let Some(text) = text else { return };
                if text.contains("<command-name>/model</command-name>") {
                    self.pending = text
                        .split_once("<command-args>")
                        .and_then(|(_, rest)| rest.split_once("</command-args>"))
                        .map(|(a, _)| a.trim().to_string());
                } else if let Some(out) = text.strip_prefix("<local-command-stdout>") {
                    let pending = self.pending.take();
                    if out.starts_with("Set model to") {
                        self.switched = true;
                        if let Some(name) = pending.filter(|a| valid_name(a)) {
                            self.model = Some(name);
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// A name fit to pass as `--model`: non-empty, short, one word of plain
/// characters (a picker switch names none; anything odd waits for the
/// next reply's id).
pub fn valid_name(a: &str) -> bool {
    !a.is_empty()
        && a.len() <= 128
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '[' | ']'))
}

/// One holder's transcript, followed.
#[derive(Debug, Default)]
pub struct Follow {
    /// The conversation followed (a `/clear` starts another file; the
    /// model carries over, as the process keeps it).
    session: String,
    path: Option<PathBuf>,
    offset: u64,
    carry: Vec<u8>,
    /// Inside a line longer than [`MAX_LINE`]: skipped to its end.
    skipping: bool,
    pub switches: Switches,
}

impl Follow {
    /// Reads what the holder's current conversation `session` (running in
    /// `cwd`) wrote since the last pass. `fresh`: the holder is seen for
    /// the first time, so an existing transcript is read from its end.
    pub fn pass(&mut self, projects: &Path, session: &str, cwd: &str, fresh: bool) {
        if self.session != session {
            // What the old conversation wrote last (a switch just before
            // a `/clear`) is read first, found now if it was not yet.
            let old = self.path.take().or_else(|| {
                (!self.session.is_empty())
                    .then(|| {
                        ccd_claude::transcript::locate::find_by_session_id_in_cwd(
                            projects,
                            &self.session,
                            cwd,
                        )
                    })
                    .flatten()
            });
            if let Some(old) = old {
                let _ = self.read(&old);
            }
            self.session = session.to_string();
            self.path = None;
            self.offset = 0;
            self.carry.clear();
            self.skipping = false;
            self.switches.pending = None;
        }
        if self.path.is_none() {
            self.path =
                ccd_claude::transcript::locate::find_by_session_id_in_cwd(projects, session, cwd);
            if let (Some(p), true) = (&self.path, fresh) {
                self.offset = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
            }
        }
        let Some(path) = self.path.clone() else {
            return;
        };
        if let Err(error) = self.read(&path) {
            tracing::debug!(%error, path = %path.display(), "reading the transcript for a model switch failed");
        }
    }

    fn read(&mut self, path: &Path) -> std::io::Result<()> {
        // A stat first: most passes find the file as it was.
        let len = std::fs::metadata(path)?.len();
        if len == self.offset {
            return Ok(());
        }
        let mut f = std::fs::File::open(path)?;
        if len < self.offset {
            // Rewritten shorter (a trim): start over.
            self.offset = 0;
            self.carry.clear();
            self.skipping = false;
        }
        if len == self.offset {
            return Ok(());
        }
        f.seek(SeekFrom::Start(self.offset))?;
        let mut buf = Vec::new();
        f.take(MAX_READ).read_to_end(&mut buf)?;
        self.offset += buf.len() as u64;
        let newlines = buf.iter().filter(|b| **b == b'\n').count();
        for (i, part) in buf.split(|b| *b == b'\n').enumerate() {
            let complete = i < newlines;
            if self.skipping {
                if complete {
                    self.skipping = false;
                }
                continue;
            }
            self.carry.extend_from_slice(part);
            if self.carry.len() > MAX_LINE {
                self.carry.clear();
                self.skipping = !complete;
                continue;
            }
            if complete {
                let line = std::mem::take(&mut self.carry);
                self.switches.feed(&String::from_utf8_lossy(&line));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assistant(model: &str) -> String {
        serde_json::json!({"type": "assistant", "message": {"role": "assistant", "model": model,
            "content": [{"type": "text", "text": "ACK"}]}})
        .to_string()
    }

    fn user(text: &str) -> String {
        serde_json::json!({"type": "user", "message": {"role": "user", "content": text}})
            .to_string()
    }

    fn command(args: &str) -> String {
        user(&format!("<command-name>/model</command-name>\n            <command-message>model</command-message>\n            <command-args>{args}</command-args>"))
    }

    #[test]
    fn replies_alone_say_nothing_a_switch_names_the_model_and_later_replies_follow() {
        let mut s = Switches::default();
        s.feed(&assistant("claude-opus-4-8"));
        assert_eq!(s.model, None, "no switch: the start arguments stand");
        s.feed(&command("sonnet"));
        assert_eq!(s.model, None, "not before the CLI said it did it");
        s.feed(&user("<local-command-stdout>Set model to \u{1b}[1mSonnet 4.6\u{1b}[22m and saved as your default for new sessions</local-command-stdout>"));
        assert_eq!(s.model.as_deref(), Some("sonnet"));
        s.feed(&assistant("<synthetic>"));
        assert_eq!(s.model.as_deref(), Some("sonnet"));
        s.feed(&assistant("claude-sonnet-4-6"));
        assert_eq!(s.model.as_deref(), Some("claude-sonnet-4-6"));
    }

    #[test]
    fn a_refused_or_odd_switch_is_not_taken() {
        let mut s = Switches::default();
        s.feed(&command("nope"));
        s.feed(&user(
            "<local-command-stdout>Model 'nope' not found</local-command-stdout>",
        ));
        assert_eq!(s.model, None);
        // The picker: no argument; the next reply names it.
        s.feed(&command(""));
        s.feed(&user(
            "<local-command-stdout>Set model to Haiku 4.5</local-command-stdout>",
        ));
        assert_eq!(s.model, None);
        s.feed(&assistant("claude-haiku-4-5"));
        assert_eq!(s.model.as_deref(), Some("claude-haiku-4-5"));
        s.feed(&command("a b; rm -rf"));
        s.feed(&user(
            "<local-command-stdout>Set model to x</local-command-stdout>",
        ));
        assert_eq!(s.model.as_deref(), Some("claude-haiku-4-5"));
    }

    #[test]
    fn the_follower_reads_new_lines_only_skips_overlong_ones_and_is_bounded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cwd = "/w/p";
        let proj = dir.path().join(ccd_claude::slug::slug(cwd));
        std::fs::create_dir_all(&proj).expect("mkdir");
        let file = proj.join("s1.jsonl");
        let old = format!(
            "{}\n{}\n",
            command("haiku"),
            user("<local-command-stdout>Set model to Haiku</local-command-stdout>")
        );
        std::fs::write(&file, &old).expect("write");
        let mut f = Follow::default();
        f.pass(dir.path(), "s1", cwd, true);
        assert_eq!(
            f.switches.model, None,
            "what was there when first seen is not read"
        );
        let long = user(&"x".repeat(MAX_LINE + 10));
        let mut more = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .expect("open");
        use std::io::Write;
        write!(more, "{long}\n{}\n", command("sonnet")).expect("append");
        // Half a line: waits for the rest.
        write!(
            more,
            "{{\"type\":\"user\",\"message\":{{\"content\":\"<local-command-stdout>Set model"
        )
        .expect("append");
        f.pass(dir.path(), "s1", cwd, false);
        assert_eq!(f.switches.model, None);
        writeln!(more, " to Sonnet\"}}}}").expect("append");
        f.pass(dir.path(), "s1", cwd, false);
        assert_eq!(f.switches.model.as_deref(), Some("sonnet"));
        // More than MAX_READ at once: read over several passes.
        let filler = user(&"y".repeat(1000));
        let mut big = String::new();
        while (big.len() as u64) < MAX_READ + 5000 {
            big.push_str(&filler);
            big.push('\n');
        }
        big.push_str(&command("opus"));
        big.push('\n');
        big.push_str(&user(
            "<local-command-stdout>Set model to Opus</local-command-stdout>",
        ));
        big.push('\n');
        write!(more, "{big}").expect("append");
        f.pass(dir.path(), "s1", cwd, false);
        assert_eq!(
            f.switches.model.as_deref(),
            Some("sonnet"),
            "bounded: one pass reads at most MAX_READ"
        );
        f.pass(dir.path(), "s1", cwd, false);
        assert_eq!(f.switches.model.as_deref(), Some("opus"));
        // A new conversation (/clear): the model carries over.
        f.pass(dir.path(), "s2", cwd, false);
        assert_eq!(f.switches.model.as_deref(), Some("opus"));
        // A switch written to a file not found yet, then a /clear before
        // the next pass: read on the way to the new conversation.
        std::fs::write(
            proj.join("s2.jsonl"),
            format!(
                "{}\n{}\n",
                command("haiku"),
                user("<local-command-stdout>Set model to Haiku</local-command-stdout>")
            ),
        )
        .expect("write");
        f.pass(dir.path(), "s3", cwd, false);
        assert_eq!(f.switches.model.as_deref(), Some("haiku"));
    }
}
