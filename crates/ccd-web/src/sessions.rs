//! The page's session list, made from the daemon's `sessions.list` rows
//! (pure: no I/O). What each field means is in the crate header's
//! contract; [`view`] decides `state`, `needs` and the prompt, and sorts
//! the sessions that need someone first.

use crate::daemon::SeenPrompt;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Machine {
    pub name: String,
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Session {
    pub machine: String,
    pub id: String,
    pub title: Option<String>,
    pub cwd: Option<String>,
    pub state: String,
    pub needs: Option<String>,
    pub context_pct: Option<f64>,
    pub mem_bytes: Option<u64>,
    pub held: bool,
    pub prompt: Option<Prompt>,
    /// What the conversation cost (`usage` of `sessions.list`), when the
    /// daemon counts it.
    pub usage: Option<Usage>,
}

/// Tokens and dollars, a session's or the list's total.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Usage {
    /// Input, output, cache writes and cache reads added.
    pub tokens: u64,
    /// US dollars.
    pub cost_usd: f64,
    /// A model the price table does not name was used: `cost_usd` is a
    /// lower bound.
    pub unpriced: bool,
}

impl Usage {
    /// The sum of the sessions' usage; `None` when none has any.
    pub fn total<'a>(of: impl IntoIterator<Item = &'a Session>) -> Option<Usage> {
        of.into_iter()
            .filter_map(|s| s.usage.as_ref())
            .fold(None, |acc: Option<Usage>, u| {
                let mut t = acc.unwrap_or(Usage {
                    tokens: 0,
                    cost_usd: 0.0,
                    unpriced: false,
                });
                t.tokens = t.tokens.saturating_add(u.tokens);
                t.cost_usd += u.cost_usd;
                t.unpriced |= u.unpriced;
                Some(t)
            })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prompt {
    pub id: String,
    pub tool: String,
    pub detail: String,
    pub options: Vec<PromptOption>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptOption {
    /// The `choice` that picks it: `yes`, `always` or `no`.
    pub key: String,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct List {
    /// `--read-only`: the page looks but does not act (it shows no action
    /// button; the server refuses actions anyway).
    pub read_only: bool,
    pub machines: Vec<Machine>,
    pub sessions: Vec<Session>,
    /// Every listed session's usage added (`null` when none has any).
    pub usage: Option<Usage>,
}

/// The page's rows of one machine's `sessions.list` rows, needs-you first
/// (the daemon's order kept otherwise).
pub fn view(machine: &str, rows: &[Value], prompts: &HashMap<String, SeenPrompt>) -> Vec<Session> {
    let mut out: Vec<Session> = rows
        .iter()
        .filter_map(|r| one(machine, r, prompts))
        .collect();
    // Stable: the daemon's order (most recently active first) within each.
    out.sort_by_key(|s| s.needs.is_none());
    out
}

fn str_of(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(String::from)
}

fn one(machine: &str, r: &Value, prompts: &HashMap<String, SeenPrompt>) -> Option<Session> {
    let id = str_of(r, "session_id")?;
    let state = str_of(r, "state").unwrap_or_else(|| "unknown".into());
    let status = str_of(r, "status");
    let ccd = r.get("ccd").filter(|c| c.is_object());
    let lifecycle = ccd.and_then(|c| str_of(c, "lifecycle"));
    let ended = lifecycle
        .as_deref()
        .is_some_and(|l| matches!(l, "exited" | "failed" | "reaped" | "discarded" | "lost"));
    let held = ccd.is_some() && !ended && state != "dead";
    let shown_state = if held {
        lifecycle.clone().unwrap_or_else(|| "live".into())
    } else if lifecycle.as_deref() == Some("lost") {
        // Held when the machine went down: `ccd restore` brings it back.
        "lost".into()
    } else if state == "dead" {
        "dead".into()
    } else {
        status.clone().unwrap_or_else(|| state.clone())
    };
    let prompt_id = ccd.and_then(|c| str_of(c, "permission_prompt"));
    let prompt = prompt_id.filter(|_| held).map(|pid| {
        match prompts.get(&id).filter(|p| p.id == pid) {
            Some(p) => Prompt {
                id: pid,
                tool: p.tool.clone(),
                detail: p.detail.clone(),
                options: options(&p.options),
            },
            // Seen before this server subscribed: what the row says.
            None => Prompt {
                id: pid,
                tool: ccd
                    .and_then(|c| str_of(c, "permission"))
                    .unwrap_or_else(|| "permission".into()),
                detail: String::new(),
                options: vec![
                    PromptOption {
                        key: "yes".into(),
                        label: "Yes".into(),
                    },
                    PromptOption {
                        key: "no".into(),
                        label: "No".into(),
                    },
                ],
            },
        }
    });
    let needs = if prompt.is_some() {
        Some("permission".to_string())
    } else if held && lifecycle.as_deref() == Some("needs-attention") {
        Some("attention".to_string())
    } else if status.as_deref() == Some("waiting") && state != "dead" {
        let w = str_of(r, "waiting_for").unwrap_or_default();
        Some(if w.contains("permission") {
            "permission".to_string()
        } else {
            "question".to_string()
        })
    } else {
        None
    };
    Some(Session {
        machine: machine.to_string(),
        title: str_of(r, "title"),
        cwd: str_of(r, "cwd"),
        state: shown_state,
        needs,
        context_pct: r.get("context_percent").and_then(Value::as_f64),
        mem_bytes: r
            .get("cost")
            .and_then(|c| c.get("memory_bytes"))
            .and_then(Value::as_u64),
        held,
        prompt,
        usage: r
            .get("usage")
            .filter(|u| u.is_object())
            .and_then(|u| {
                serde_json::from_value::<ccd_protocol::methods::session::SessionUsage>(u.clone())
                    .ok()
            })
            .map(|u| Usage {
                tokens: u.total_tokens,
                cost_usd: u.cost_usd,
                unpriced: !u.unpriced.is_empty(),
            }),
        id,
    })
}

/// The choice each label of a dialog stands for: the first is `yes`, one
/// that allows for good (`always`, `don't ask again`) is `always`, the
/// last (or one starting with "No") is `no`.
pub fn options(labels: &[String]) -> Vec<PromptOption> {
    let n = labels.len();
    labels
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let l = label.to_ascii_lowercase();
            let key = if l.starts_with("no") || (i + 1 == n && i > 0) {
                "no"
            } else if i == 0 {
                "yes"
            } else if l.contains("always") || l.contains("don't ask") || l.contains("don’t ask") {
                "always"
            } else {
                "yes"
            };
            PromptOption {
                key: key.into(),
                label: label.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn held(id: &str, lifecycle: &str, prompt: Option<&str>) -> Value {
        let mut ccd = json!({"holder":"h1","lifecycle":lifecycle,"attached":0,"pinned":false});
        if let Some(p) = prompt {
            ccd["permission_prompt"] = json!(p);
            ccd["permission"] = json!("Bash command touch x");
        }
        json!({"session_id":id,"state":"live","status":"idle","title":"t","cwd":"/w",
               "context_percent":12.5,"cost":{"memory_bytes":1000},"ccd":ccd})
    }

    #[test]
    fn needs_first_then_the_daemons_order_and_fields() {
        let rows = vec![
            held("a", "idle", None),
            json!({"session_id":"b","state":"dead","status":null,"ccd":null,"title":"old"}),
            json!({"session_id":"c","state":"live","status":"waiting","waiting_for":"permission prompt","ccd":null}),
            held("d", "waiting", Some("p1")),
            held("e", "exited", None),
        ];
        let mut seen = HashMap::new();
        seen.insert(
            "d".to_string(),
            SeenPrompt {
                id: "p1".into(),
                tool: "Bash command".into(),
                detail: "touch x".into(),
                options: vec![
                    "Yes".into(),
                    "Yes, and don't ask again for touch commands".into(),
                    "No".into(),
                ],
            },
        );
        let v = view("local", &rows, &seen);
        let ids: Vec<&str> = v.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["c", "d", "a", "b", "e"]);
        assert_eq!(v[0].needs.as_deref(), Some("permission"));
        assert!(!v[0].held);
        assert_eq!(v[0].state, "waiting");
        let d = &v[1];
        assert!(d.held);
        let p = d.prompt.as_ref().unwrap();
        assert_eq!(p.detail, "touch x");
        let keys: Vec<&str> = p.options.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, ["yes", "always", "no"]);
        assert_eq!(v[2].state, "idle");
        assert_eq!(v[2].context_pct, Some(12.5));
        assert_eq!(v[2].mem_bytes, Some(1000));
        assert_eq!(v[3].state, "dead");
        assert!(!v[4].held, "an exited holder holds nothing");
    }

    #[test]
    fn a_prompt_not_seen_in_events_still_shows_with_yes_and_no() {
        let v = view(
            "local",
            &[held("d", "waiting", Some("p2"))],
            &HashMap::new(),
        );
        let p = v[0].prompt.as_ref().unwrap();
        assert_eq!(p.id, "p2");
        assert_eq!(p.tool, "Bash command touch x");
        assert_eq!(p.options.len(), 2);
        // A remembered prompt of another id is not used.
        let mut seen = HashMap::new();
        seen.insert(
            "d".to_string(),
            SeenPrompt {
                id: "old".into(),
                tool: "x".into(),
                detail: "y".into(),
                options: vec![],
            },
        );
        let v = view("local", &[held("d", "waiting", Some("p2"))], &seen);
        assert_eq!(v[0].prompt.as_ref().unwrap().tool, "Bash command touch x");
    }

    #[test]
    fn a_lost_session_shows_as_lost_and_not_held() {
        let mut r = held("l", "lost", None);
        r["state"] = json!("dead");
        let v = view("local", &[r], &HashMap::new());
        assert!(!v[0].held);
        assert_eq!(v[0].state, "lost");
    }

    #[test]
    fn usage_shown_per_row_and_added_up() {
        let mut a = held("a", "idle", None);
        a["usage"] = json!({"input_tokens":10,"output_tokens":5,"cache_creation_tokens":100,
            "cache_read_tokens":1000,"total_tokens":1115,"cost_usd":0.25,"models":["claude-opus-5-5"]});
        let mut b = held("b", "idle", None);
        b["usage"] = json!({"input_tokens":1,"output_tokens":1,"cache_creation_tokens":0,
            "cache_read_tokens":0,"total_tokens":2,"cost_usd":0.5,"models":["x"],"unpriced":["x"]});
        let c = held("c", "idle", None);
        let v = view("local", &[a, b, c], &HashMap::new());
        let u = v[0].usage.as_ref().unwrap();
        assert_eq!((u.tokens, u.cost_usd, u.unpriced), (1115, 0.25, false));
        assert!(v[1].usage.as_ref().unwrap().unpriced);
        assert_eq!(v[2].usage, None);
        let t = Usage::total(&v).unwrap();
        assert_eq!((t.tokens, t.cost_usd, t.unpriced), (1117, 0.75, true));
        assert_eq!(Usage::total(&v[2..]), None);
    }

    #[test]
    fn rows_without_an_id_are_skipped() {
        assert!(view("local", &[json!({"state":"live"})], &HashMap::new()).is_empty());
    }
}
