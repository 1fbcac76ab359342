//! The messages of one transcript file, and counting each message once
//! across all of them.
//!
//! A streamed message is written as several records repeating its message
//! id and request id; a resumed or forked conversation copies earlier
//! messages into a new file. ccusage 20.0.24 counts each (message id,
//! request id) once over *all* files, keeping the copy with the most
//! tokens (input + output + cache creation + cache read; the first seen
//! on a tie), and never deduplicates a record without a message id.
//! [`FileUsage::push`] applies that within a file as lines arrive;
//! [`dedupe`] applies it across files (in the order given).

use crate::record::Usage;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashMap;

/// Token counts of one kind each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    /// Cache creation (writes), both lifetimes.
    pub cache_creation: u64,
    /// Of those, the 1-hour writes (priced apart).
    #[serde(default)]
    pub cache_creation_1h: u64,
    pub cache_read: u64,
}

impl Tokens {
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.cache_creation)
            .saturating_add(self.cache_read)
    }

    pub fn add(&mut self, o: &Tokens) {
        self.input = self.input.saturating_add(o.input);
        self.output = self.output.saturating_add(o.output);
        self.cache_creation = self.cache_creation.saturating_add(o.cache_creation);
        self.cache_creation_1h = self.cache_creation_1h.saturating_add(o.cache_creation_1h);
        self.cache_read = self.cache_read.saturating_add(o.cache_read);
    }
}

/// No model named.
pub const NO_MODEL: u32 = u32::MAX;

/// One counted message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub key: Option<u64>,
    /// Unix seconds.
    pub at: i64,
    /// Index into [`FileUsage::models`], or [`NO_MODEL`].
    pub model: u32,
    pub tokens: Tokens,
}

/// The most distinct models one file names (a bound on a hostile file;
/// the rest count as unnamed).
pub const MAX_MODELS_PER_FILE: usize = 64;

/// What one transcript file holds, each message once.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FileUsage {
    pub models: Vec<String>,
    pub messages: Vec<Message>,
    /// The first folder a record names (the user's first prompt names it).
    pub cwd: Option<String>,
    #[serde(skip)]
    index: HashMap<u64, usize>,
    /// False after a load from the cache (the index is not stored).
    #[serde(skip)]
    indexed: bool,
}

impl FileUsage {
    /// Feeds one line (in file order); true when it carried usage.
    ///
    /// One scan of the line serves both what it is read for (the folder,
    /// until one is known, and the usage); a line that names neither (by
    /// a substring test) is not scanned.
    pub fn push_line(&mut self, line: &[u8]) -> bool {
        use crate::record::{carries_usage, cwd_of, names_cwd, usage_of};
        let want_cwd = self.cwd.is_none() && names_cwd(line);
        let want_usage = carries_usage(line);
        if !want_cwd && !want_usage {
            return false;
        }
        let Ok(r) = crate::scan::record(line) else {
            return false;
        };
        if want_cwd {
            self.cwd = cwd_of(&r).map(Cow::into_owned);
        }
        match want_usage.then(|| usage_of(&r)).flatten() {
            Some(u) => {
                self.push(u);
                true
            }
            None => false,
        }
    }

    /// Adds one record's usage, a repeat of a message already held keeping
    /// the copy with more tokens.
    pub fn push(&mut self, u: Usage<'_>) {
        if self.cwd.is_none() {
            self.cwd = u.cwd.map(|c| c.into_owned());
        }
        if !self.indexed {
            self.reindex();
        }
        let model = match u.model.as_deref() {
            None => NO_MODEL,
            Some(m) => match self.models.iter().position(|x| x == m) {
                Some(i) => i as u32,
                None if self.models.len() < MAX_MODELS_PER_FILE => {
                    self.models.push(m.to_owned());
                    (self.models.len() - 1) as u32
                }
                None => NO_MODEL,
            },
        };
        let msg = Message {
            key: u.key,
            at: u.at,
            model,
            tokens: u.tokens,
        };
        if let Some(k) = u.key {
            if let Some(&i) = self.index.get(&k) {
                if msg.tokens.total() > self.messages[i].tokens.total() {
                    self.messages[i] = msg;
                }
                return;
            }
            self.index.insert(k, self.messages.len());
        }
        self.messages.push(msg);
    }

    /// Rebuilds the key index (after a load from the cache).
    fn reindex(&mut self) {
        self.index.clear();
        for (i, m) in self.messages.iter().enumerate() {
            if let Some(k) = m.key {
                self.index.insert(k, i);
            }
        }
        self.indexed = true;
    }

    /// The model a message names.
    pub fn model(&self, m: &Message) -> Option<&str> {
        self.models.get(m.model as usize).map(String::as_str)
    }

    /// Every token of the file, each message once.
    pub fn tokens(&self) -> Tokens {
        let mut t = Tokens::default();
        for m in &self.messages {
            t.add(&m.tokens);
        }
        t
    }
}

/// Each message counted once across `files` (in their order): the
/// (file index, message) pairs to count.
pub fn dedupe<'a>(files: &[&'a FileUsage]) -> Vec<(usize, &'a Message)> {
    // Sized once for every message (no rehashing as 10,000 files' keys
    // arrive).
    let n: usize = files.iter().map(|f| f.messages.len()).sum();
    let mut out: Vec<(usize, &'a Message)> = Vec::with_capacity(n);
    let mut seen: HashMap<u64, usize> = HashMap::with_capacity(n);
    for (fi, f) in files.iter().enumerate() {
        for m in &f.messages {
            match m.key {
                None => out.push((fi, m)),
                Some(k) => match seen.get(&k) {
                    Some(&at) => {
                        if m.tokens.total() > out[at].1.tokens.total() {
                            out[at] = (fi, m);
                        }
                    }
                    None => {
                        seen.insert(k, out.len());
                        out.push((fi, m));
                    }
                },
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: Option<&str>, rid: Option<&str>, input: u64, output: u64) -> String {
        let mut m =
            serde_json::json!({"model":"m1","usage":{"input_tokens":input,"output_tokens":output}});
        if let Some(id) = id {
            m["id"] = id.into();
        }
        let mut r = serde_json::json!({"timestamp":"2026-11-29T10:00:00Z","message":m});
        if let Some(rid) = rid {
            r["requestId"] = rid.into();
        }
        r.to_string()
    }

    fn file(lines: &[String]) -> FileUsage {
        let mut f = FileUsage::default();
        for l in lines {
            f.push_line(l.as_bytes());
        }
        f
    }

    #[test]
    fn a_streamed_message_counts_once_with_its_largest_copy() {
        // As ccusage: the copy with the most tokens wins, whatever its
        // place; a tie keeps the first; another request id is another
        // message; a record without a message id is never merged.
        let f = file(&[
            rec(Some("m"), Some("r"), 10, 1),
            rec(Some("m"), Some("r"), 10, 5),
            rec(Some("m"), Some("r"), 10, 2),
            rec(Some("m"), Some("r2"), 100, 0),
            rec(Some("t"), Some("r"), 10, 1),
            rec(Some("t"), Some("r"), 1, 10),
            rec(None, Some("r"), 7, 0),
            rec(None, Some("r"), 7, 0),
            rec(Some("n"), None, 3, 0),
            rec(Some("n"), None, 3, 0),
        ]);
        let t = f.tokens();
        assert_eq!((t.input, t.output), (10 + 100 + 10 + 7 + 7 + 3, 5 + 1));
        assert_eq!(f.messages.len(), 6);
    }

    #[test]
    fn across_files_the_largest_copy_wins_and_is_counted_where_it_is() {
        let a = file(&[rec(Some("m"), Some("r"), 10, 1)]);
        let b = file(&[
            rec(Some("m"), Some("r"), 10, 9),
            rec(Some("x"), Some("r"), 1, 1),
        ]);
        let c = file(&[rec(Some("m"), Some("r"), 10, 1)]);
        let d = dedupe(&[&a, &b, &c]);
        let got: Vec<(usize, u64)> = d.iter().map(|(i, m)| (*i, m.tokens.output)).collect();
        assert_eq!(got, vec![(1, 9), (1, 1)]);
    }

    #[test]
    fn models_per_file_are_bounded() {
        let mut f = FileUsage::default();
        for i in 0..MAX_MODELS_PER_FILE + 3 {
            let l = format!(
                r#"{{"timestamp":"2026-11-29T10:00:00Z","message":{{"id":"{i}","model":"m{i}","usage":{{"input_tokens":1,"output_tokens":0}}}}}}"#
            );
            assert!(f.push_line(l.as_bytes()));
        }
        assert_eq!(f.models.len(), MAX_MODELS_PER_FILE);
        let unnamed = f.messages.iter().filter(|m| f.model(m).is_none()).count();
        assert_eq!(unnamed, 3);
        assert_eq!(f.tokens().input, MAX_MODELS_PER_FILE as u64 + 3);
    }

    #[test]
    fn the_index_survives_a_round_trip_through_the_cache() {
        let a = file(&[rec(Some("m"), Some("r"), 10, 1)]);
        let bytes = postcard::to_stdvec(&a).unwrap();
        let mut back: FileUsage = postcard::from_bytes(&bytes).unwrap();
        back.push_line(rec(Some("m"), Some("r"), 10, 4).as_bytes());
        assert_eq!(back.messages.len(), 1);
        assert_eq!(back.tokens().output, 4);
    }
}
