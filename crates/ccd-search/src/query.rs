//! Queries: parsing, matching one message, the snippet, the score.
//!
//! **Words and phrases.** `auth "token refresh" bug`: every word and every
//! quoted phrase must occur in the same message (a phrase as written,
//! spaces included). Matching is a substring match on a normalized form
//! of both sides, so it needs no word boundaries and works for CJK text
//! written without spaces (`認証` finds `認証バグを直した`). The
//! normalization, character by character: the fullwidth ASCII forms
//! (U+FF01–U+FF5E) become ASCII, the ideographic space U+3000 a space, then
//! Unicode's full lowercase mapping (`char::to_lowercase`). No composition
//! is applied: `é` typed precomposed (as keyboards and JSON's `\u00e9`
//! give it) does not match `e` + U+0301.
//!
//! **Regex** (`--regex`): the `regex` crate's syntax, case-insensitive
//! unless the pattern says `(?-i)`, compiled with a size limit of
//! [`REGEX_SIZE_LIMIT`] bytes (a pattern beyond it is refused).
//!
//! **Ranking**: see [`score`].

use crate::extract::Role;
use regex::Regex;

/// The compiled size a `--regex` pattern may take.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// The characters of a snippet on each side of the match.
pub const SNIPPET_CONTEXT_CHARS: usize = 60;

/// The most characters of the match itself a snippet shows.
pub const SNIPPET_MATCH_CHARS: usize = 80;

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("empty query: give a word, a \"quoted phrase\" or a --regex pattern")]
    Empty,
    #[error("unbalanced quote in the query")]
    UnbalancedQuote,
    #[error("bad --regex pattern: {0}")]
    Regex(#[from] regex::Error),
}

/// A parsed query.
#[derive(Debug, Clone)]
pub enum Query {
    /// Normalized words and phrases, all of which must occur.
    Terms(Vec<String>),
    Regex(Regex),
}

/// One character's normalized form (see the module header).
fn push_normalized(c: char, out: &mut String) {
    let c = match c {
        '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
        '\u{3000}' => ' ',
        c => c,
    };
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
    } else {
        out.extend(c.to_lowercase());
    }
}

/// `s` normalized, with the byte offset in `s` of the character each byte
/// of the result comes from (and `s.len()` at the end).
pub fn normalize_mapped(s: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(s.len());
    let mut map = Vec::with_capacity(s.len() + 1);
    for (i, c) in s.char_indices() {
        let before = out.len();
        push_normalized(c, &mut out);
        map.extend(std::iter::repeat_n(i, out.len() - before));
    }
    map.push(s.len());
    (out, map)
}

/// `s` normalized.
pub fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    s.chars().for_each(|c| push_normalized(c, &mut out));
    out
}

impl Query {
    /// Parses words and `"quoted phrases"`.
    pub fn terms(q: &str) -> Result<Query, QueryError> {
        let mut terms = Vec::new();
        let mut rest = q;
        loop {
            rest = rest.trim_start();
            if rest.is_empty() {
                break;
            }
            if let Some(after) = rest.strip_prefix('"') {
                let end = after.find('"').ok_or(QueryError::UnbalancedQuote)?;
                let phrase = &after[..end];
                if !phrase.trim().is_empty() {
                    terms.push(normalize(phrase));
                }
                rest = &after[end + 1..];
            } else {
                let end = rest
                    .find(|c: char| c.is_whitespace() || c == '"')
                    .unwrap_or(rest.len());
                terms.push(normalize(&rest[..end]));
                rest = &rest[end..];
            }
        }
        if terms.is_empty() {
            return Err(QueryError::Empty);
        }
        Ok(Query::Terms(terms))
    }

    /// Compiles a `--regex` pattern (case-insensitive, bounded).
    pub fn regex(p: &str) -> Result<Query, QueryError> {
        if p.is_empty() {
            return Err(QueryError::Empty);
        }
        let re = regex::RegexBuilder::new(p)
            .case_insensitive(true)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .build()?;
        Ok(Query::Regex(re))
    }

    /// Where the query matches `text`: the byte range in `text` of the
    /// first occurrence of the earliest term (or of the regex), and how
    /// many occurrences of all terms there are; `None` unless every term
    /// occurs.
    pub fn find(&self, text: &str) -> Option<Found> {
        match self {
            Query::Regex(re) => {
                let m = re.find(text)?;
                let count = re.find_iter(text).take(100).count();
                Some(Found {
                    start: m.start(),
                    end: m.end(),
                    count,
                    whole_word: whole_word(text, m.start(), m.end()),
                })
            }
            Query::Terms(terms) => {
                // Cheap pass first: most messages do not match.
                let ascii = text.is_ascii();
                let norm_owned;
                let (norm, map): (&str, Option<Vec<usize>>) = if ascii {
                    norm_owned = text.to_ascii_lowercase();
                    (&norm_owned, None)
                } else {
                    let (n, m) = normalize_mapped(text);
                    norm_owned = n;
                    (&norm_owned, Some(m))
                };
                let mut first: Option<(usize, usize)> = None;
                let mut count = 0;
                for t in terms {
                    let f = memchr::memmem::Finder::new(t.as_bytes());
                    let at = f.find(norm.as_bytes())?;
                    count += f.find_iter(norm.as_bytes()).take(100).count();
                    if first.is_none_or(|(s, _)| at < s) {
                        first = Some((at, at + t.len()));
                    }
                }
                let (s, e) = first?;
                let (start, end) = match &map {
                    None => (s, e),
                    Some(m) => {
                        let start = m[s];
                        // The end: past the source character the match's
                        // last byte comes from.
                        let last = m[e.saturating_sub(1)];
                        let end = last + text[last..].chars().next().map_or(0, char::len_utf8);
                        (start, end)
                    }
                };
                Some(Found {
                    start,
                    end,
                    count,
                    whole_word: whole_word(text, start, end),
                })
            }
        }
    }
}

/// A match in one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// The first match, a byte range of the message's text.
    pub start: usize,
    pub end: usize,
    /// Occurrences of all terms (each counted up to 100).
    pub count: usize,
    /// The first match is not inside a longer word.
    pub whole_word: bool,
}

fn whole_word(text: &str, start: usize, end: usize) -> bool {
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    let wordy = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() && c.is_ascii());
    !wordy(before) && !wordy(after)
}

/// How much a match in a message of `role` weighs: a title or summary
/// names what the conversation was about, a prompt is what the person
/// said, assistant text and tool calls follow.
pub fn role_weight(role: Role) -> f64 {
    match role {
        Role::Title => 3.0,
        Role::Summary | Role::User => 2.0,
        Role::Assistant | Role::Tool => 1.0,
    }
}

/// A session's score from its matching messages.
///
/// Relevance: the best matching message's role weight ([`role_weight`]),
/// times 1.5 when its first match is a whole word, plus `ln(1 + n)` for
/// the session's `n` matching messages (messages, not occurrences: the
/// index bounds a session's score before reading it, and it knows its
/// messages but not how often a phrase occurs in each). Recency: that is
/// multiplied by `1 / (1 + age_days / 30)`, the age being that of the
/// session's newest matching message (so a month-old hit weighs half a
/// fresh one). Ties: the newest first.
pub fn score(best: f64, matching_messages: usize, age_days: f64) -> f64 {
    (best + (1.0 + matching_messages as f64).ln()) / (1.0 + age_days.max(0.0) / 30.0)
}

/// The relevance of one matching message (before recency).
pub fn message_weight(role: Role, found: &Found) -> f64 {
    role_weight(role) * if found.whole_word { 1.5 } else { 1.0 }
}

/// The text around a match: up to [`SNIPPET_CONTEXT_CHARS`] characters on
/// each side (cut at a line start when there is one) and the match itself
/// (up to [`SNIPPET_MATCH_CHARS`]), not yet sanitized.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Snippet {
    pub before: String,
    pub matched: String,
    pub after: String,
}

impl Snippet {
    pub fn of(text: &str, found: &Found) -> Snippet {
        let before_all = &text[..found.start];
        let mut before: Vec<char> = before_all
            .chars()
            .rev()
            .take(SNIPPET_CONTEXT_CHARS)
            .collect();
        before.reverse();
        let mut before: String = before.into_iter().collect();
        let clipped_before = before.len() < before_all.len();
        if clipped_before {
            before.insert(0, '…');
        }
        let matched_all = &text[found.start..found.end];
        let mut matched: String = matched_all.chars().take(SNIPPET_MATCH_CHARS).collect();
        if matched.len() < matched_all.len() {
            matched.push('…');
        }
        let after_all = &text[found.end..];
        let mut after: String = after_all.chars().take(SNIPPET_CONTEXT_CHARS).collect();
        if after.len() < after_all.len() {
            after.push('…');
        }
        Snippet {
            before,
            matched,
            after,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(q: &str, text: &str) -> Option<String> {
        let f = Query::terms(q).unwrap().find(text)?;
        Some(text[f.start..f.end].to_string())
    }

    #[test]
    fn words_all_must_match_case_insensitively() {
        assert_eq!(hit("AUTH bug", "Fixed the auth Bug"), Some("auth".into()));
        assert_eq!(hit("auth nothing", "Fixed the auth Bug"), None);
        assert_eq!(
            hit("\"the auth\"", "Fixed the AUTH bug"),
            Some("the AUTH".into())
        );
        assert_eq!(hit("\"auth the\"", "Fixed the auth bug"), None);
        assert!(matches!(Query::terms("  "), Err(QueryError::Empty)));
        assert!(matches!(
            Query::terms("\"open"),
            Err(QueryError::UnbalancedQuote)
        ));
    }

    #[test]
    fn unicode_cjk_fullwidth_and_offsets() {
        assert_eq!(hit("認証", "昨日は認証バグを直した"), Some("認証".into()));
        assert_eq!(hit("ÉTÉ", "un été chaud"), Some("été".into()));
        assert_eq!(hit("abc", "ＡＢＣ３"), Some("ＡＢＣ".into()));
        assert_eq!(hit("🦀 rust", "I ❤ 🦀 and Rust"), Some("🦀".into()));
        // A character whose lowercase is longer (İ → i̇): the range still
        // falls on character boundaries of the source.
        let t = "xİstanbul";
        let f = Query::terms("stan").unwrap().find(t).unwrap();
        assert_eq!(&t[f.start..f.end], "stan");
    }

    #[test]
    fn regex_is_case_insensitive_and_bounded() {
        let q = Query::regex(r"fix(ed)?\s+auth").unwrap();
        let f = q.find("We FIXED  auth today").unwrap();
        assert_eq!((f.start, f.end), (3, 14));
        assert!(matches!(
            Query::regex(r"\w{1000}{1000}"),
            Err(QueryError::Regex(_))
        ));
    }

    #[test]
    fn snippet_is_bounded_and_marks_the_match() {
        let text = format!("{}needle{}", "a".repeat(500), "b".repeat(500));
        let f = Query::terms("needle").unwrap().find(&text).unwrap();
        let s = Snippet::of(&text, &f);
        assert_eq!(s.matched, "needle");
        assert_eq!(s.before.chars().count(), SNIPPET_CONTEXT_CHARS + 1);
        assert_eq!(s.after.chars().count(), SNIPPET_CONTEXT_CHARS + 1);
    }

    #[test]
    fn ranking_weighs_roles_and_recency() {
        assert!(score(3.0, 1, 0.0) > score(1.0, 1, 0.0));
        assert!(score(2.0, 1, 0.0) > score(2.0, 1, 60.0));
        assert!((score(2.0, 0, 30.0) - 1.0).abs() < 1e-9);
    }
}
