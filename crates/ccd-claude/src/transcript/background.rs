//! Is a session still running background work (a background shell, a
//! subagent) that a stop would cut short?
//!
//! Read from the transcript's tail only (bounded). The rule is
//! conservative — when in doubt, work is pending — because a wrong "no"
//! would let idle reaping stop a session mid-task:
//! - a `tool_use` with `input.run_in_background: true` is pending until a
//!   later record mentions its tool-use id or the background id its result
//!   announced together with a final word (`completed`, `exited`,
//!   `killed`, `failed`), or a later `KillShell`/`KillBash` names it;
//! - a subagent (`Task`/`Agent` tool use) is pending until a `tool_result`
//!   for its id arrives.
//!
//! The exact records Claude Code writes when background work settles vary
//! between versions; this was written against the documented shapes, not
//! verified on every CLI version.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// How much of the tail is read.
pub const TAIL: u64 = 2 * 1024 * 1024;

/// Background work still running, by tool-use id.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pending {
    pub shells: Vec<String>,
    pub subagents: Vec<String>,
}

impl Pending {
    pub fn any(&self) -> bool {
        !self.shells.is_empty() || !self.subagents.is_empty()
    }
}

/// Pending background work in the transcript at `path` (an unreadable
/// file counts as no evidence of work).
pub fn pending(path: &Path) -> std::io::Result<Pending> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let start = len.saturating_sub(TAIL);
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity((len - start) as usize);
    f.take(TAIL).read_to_end(&mut buf)?;
    let body = if start > 0 {
        match memchr::memchr(b'\n', &buf) {
            Some(i) => &buf[i + 1..],
            None => &[][..],
        }
    } else {
        &buf[..]
    };
    Ok(scan(body))
}

struct Shell {
    id: String,
    /// The id the result announced ("running in background with ID: x").
    background_id: Option<String>,
    done: bool,
}

/// The rule over a chunk of complete transcript lines.
pub fn scan(body: &[u8]) -> Pending {
    let mut shells: Vec<Shell> = Vec::new();
    let mut agents: Vec<(String, bool)> = Vec::new();
    for line in body.split(|&b| b == b'\n') {
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        let text = String::from_utf8_lossy(line).to_lowercase();
        // Settlement words anywhere on a later line that names the work.
        let final_word = ["completed", "exited", "killed", "failed"]
            .iter()
            .any(|w| text.contains(w));
        for s in shells.iter_mut().filter(|s| !s.done) {
            let named = text.contains(&s.id.to_lowercase())
                || s.background_id
                    .as_ref()
                    .is_some_and(|b| text.contains(&b.to_lowercase()));
            if named && final_word {
                s.done = true;
            }
        }
        let Some(content) = v.pointer("/message/content").and_then(|c| c.as_array()) else {
            continue;
        };
        for block in content {
            match block.get("type").and_then(|t| t.as_str()) {
                Some("tool_use") => {
                    let id = block
                        .get("id")
                        .and_then(|i| i.as_str())
                        .unwrap_or("")
                        .to_string();
                    let name = block.get("name").and_then(|n| n.as_str()).unwrap_or("");
                    let input = block.get("input");
                    let background = input
                        .and_then(|i| i.get("run_in_background"))
                        .and_then(|b| b.as_bool())
                        == Some(true);
                    if matches!(name, "KillShell" | "KillBash") {
                        let target = input
                            .and_then(|i| i.get("shell_id").or_else(|| i.get("bash_id")))
                            .and_then(|s| s.as_str())
                            .unwrap_or("");
                        for s in shells.iter_mut() {
                            if s.background_id.as_deref() == Some(target) || s.id == target {
                                s.done = true;
                            }
                        }
                    } else if matches!(name, "Task" | "Agent") && !id.is_empty() {
                        agents.push((id, false));
                    } else if background && !id.is_empty() {
                        shells.push(Shell {
                            id,
                            background_id: None,
                            done: false,
                        });
                    }
                }
                Some("tool_result") => {
                    let id = block
                        .get("tool_use_id")
                        .and_then(|i| i.as_str())
                        .unwrap_or("");
                    for a in agents.iter_mut().filter(|a| a.0 == id) {
                        a.1 = true;
                    }
                    for s in shells.iter_mut().filter(|s| s.id == id) {
                        s.background_id = announced_id(block);
                    }
                }
                _ => {}
            }
        }
    }
    Pending {
        shells: shells
            .into_iter()
            .filter(|s| !s.done)
            .map(|s| s.id)
            .collect(),
        subagents: agents.into_iter().filter(|a| !a.1).map(|a| a.0).collect(),
    }
}

/// "… with ID: abc123" in a tool result's text.
fn announced_id(block: &serde_json::Value) -> Option<String> {
    let text = match block.get("content") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
            .collect::<Vec<_>>()
            .join(" "),
        _ => return None,
    };
    let i = text.find("ID: ")?;
    let id: String = text[i + 4..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    (!id.is_empty()).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(ls: &[serde_json::Value]) -> Vec<u8> {
        let mut out = Vec::new();
        for l in ls {
            out.extend_from_slice(l.to_string().as_bytes());
            out.push(b'\n');
        }
        out
    }

    fn tool_use(id: &str, name: &str, input: serde_json::Value) -> serde_json::Value {
        serde_json::json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":id,"name":name,"input":input}]}})
    }

    fn tool_result(id: &str, text: &str) -> serde_json::Value {
        serde_json::json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":id,"content":text}]}})
    }

    #[test]
    fn nothing_in_the_background() {
        let b = lines(&[
            tool_use("t1", "Bash", serde_json::json!({"command":"ls"})),
            tool_result("t1", "a b"),
        ]);
        assert!(!scan(&b).any());
        assert!(!scan(b"garbage\n{\"half").any());
    }

    #[test]
    fn background_shell_until_it_settles() {
        let mut ls = vec![
            tool_use(
                "t1",
                "Bash",
                serde_json::json!({"command":"sleep 100","run_in_background":true}),
            ),
            tool_result("t1", "Command running in background with ID: bash_7"),
        ];
        assert_eq!(scan(&lines(&ls)).shells, ["t1"]);
        ls.push(serde_json::json!({"type":"user","message":{"content":"<task-notification>bash_7 completed (exit 0)</task-notification>"}}));
        assert!(!scan(&lines(&ls)).any());
    }

    #[test]
    fn killed_shell_is_done() {
        let ls = vec![
            tool_use(
                "t1",
                "Bash",
                serde_json::json!({"command":"tail -f x","run_in_background":true}),
            ),
            tool_result("t1", "Command running in background with ID: bash_9"),
            tool_use("t2", "KillShell", serde_json::json!({"shell_id":"bash_9"})),
        ];
        assert!(!scan(&lines(&ls)).any());
    }

    #[test]
    fn subagent_until_its_result() {
        let mut ls = vec![tool_use(
            "a1",
            "Task",
            serde_json::json!({"prompt":"explore"}),
        )];
        assert_eq!(scan(&lines(&ls)).subagents, ["a1"]);
        ls.push(tool_result("a1", "done exploring"));
        assert!(!scan(&lines(&ls)).any());
    }
}
