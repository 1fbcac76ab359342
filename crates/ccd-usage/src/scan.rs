//! A one-pass JSON scan of a transcript record that keeps only the fields
//! usage needs, skipping the rest at memchr speed (sans-IO).
//!
//! An assistant record is mostly its `message.content` (a reply, a tool
//! call's input: tens of KB); usage needs six short fields around it. A
//! full `serde_json` parse of the line spent most of a cold run walking
//! that content. This scan walks the record's structure itself: strings
//! are skipped by jumping from quote to backslash ([`memchr::memchr2`]),
//! then checked in one auto-vectorized pass (no raw control character;
//! valid UTF-8 when any byte is not ASCII), and every other value is
//! checked for the JSON grammar without being built. The fields kept are
//! handed back as byte spans; their values are decoded by the caller
//! (with `serde_json` where an escape or a nested object needs it).
//!
//! What it accepts is what `serde_json::from_slice` accepts for the same
//! structs ([`crate::record`]'s tests compare both over mutated records),
//! with two differences, both towards ccusage 20.0.24 (measured): a
//! string with invalid UTF-8 anywhere in the record rejects the record
//! (serde_json does not look inside a string it ignores; ccusage skips
//! the line), and a record or message written as a JSON array is not one
//! (serde would read a struct from an array by position).
//!
//! Bounds: no recursion (nesting is tracked in a bit stack that grows
//! only past 64 levels) and no allocation for records nested at most 64
//! deep.

use std::borrow::Cow;

/// The record is not JSON, or not an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bad;

/// A field of an object: not there, there once (its value's bytes), or
/// there more than once (serde's derive refuses a duplicate field).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Slot<'a> {
    #[default]
    Absent,
    Once(&'a [u8]),
    Twice,
}

impl<'a> Slot<'a> {
    fn set(&mut self, v: &'a [u8]) {
        *self = match self {
            Slot::Absent => Slot::Once(v),
            _ => Slot::Twice,
        };
    }
}

/// The `message` object's fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Message<'a> {
    pub id: Slot<'a>,
    pub model: Slot<'a>,
    pub usage: Slot<'a>,
}

/// What `message` held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MessageSlot<'a> {
    #[default]
    Absent,
    /// An object, its fields.
    Object(Message<'a>),
    /// Another value (`null`, or a type error), its bytes.
    Other(&'a [u8]),
    Twice,
}

/// The top-level fields usage reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Record<'a> {
    pub timestamp: Slot<'a>,
    pub request_id: Slot<'a>,
    pub cwd: Slot<'a>,
    pub message: MessageSlot<'a>,
}

/// Scans one record (a line, without its newline).
pub fn record(line: &[u8]) -> Result<Record<'_>, Bad> {
    let mut c = Cur { b: line, i: 0 };
    let mut r = Record::default();
    c.ws();
    c.eat(b'{')?;
    c.ws();
    if c.peek() == Some(b'}') {
        c.i += 1;
    } else {
        loop {
            let key = c.key()?;
            let start = c.i;
            match &*key {
                b"timestamp" => {
                    c.value()?;
                    r.timestamp.set(&line[start..c.i]);
                }
                b"requestId" => {
                    c.value()?;
                    r.request_id.set(&line[start..c.i]);
                }
                b"cwd" => {
                    c.value()?;
                    r.cwd.set(&line[start..c.i]);
                }
                b"message" => {
                    let m = if c.peek() == Some(b'{') {
                        MessageSlot::Object(c.message()?)
                    } else {
                        c.value()?;
                        MessageSlot::Other(&line[start..c.i])
                    };
                    r.message = match r.message {
                        MessageSlot::Absent => m,
                        _ => MessageSlot::Twice,
                    };
                }
                _ => c.value()?,
            }
            if c.next_member(b'}')? {
                break;
            }
        }
    }
    c.ws();
    if c.i == line.len() {
        Ok(r)
    } else {
        Err(Bad)
    }
}

/// A string value's text (`null` is `None`); `Err` for another type or a
/// string serde_json refuses to decode.
pub fn str_or_null(v: &[u8]) -> Result<Option<Cow<'_, str>>, Bad> {
    if v == b"null" {
        return Ok(None);
    }
    let inner = v
        .strip_prefix(b"\"")
        .and_then(|s| s.strip_suffix(b"\""))
        .ok_or(Bad)?;
    if memchr::memchr(b'\\', inner).is_none() {
        return std::str::from_utf8(inner)
            .map(|s| Some(Cow::Borrowed(s)))
            .map_err(|_| Bad);
    }
    serde_json::from_slice::<String>(v)
        .map(|s| Some(Cow::Owned(s)))
        .map_err(|_| Bad)
}

struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

/// Nesting, one bit a level (1: an object): 64 levels in place, more in
/// a vector.
struct Stack {
    bits: u64,
    len: usize,
    more: Vec<u64>,
}

impl Stack {
    fn new() -> Self {
        Self {
            bits: 0,
            len: 0,
            more: Vec::new(),
        }
    }

    fn push(&mut self, object: bool) {
        if self.len > 0 && self.len.is_multiple_of(64) {
            self.more.push(self.bits);
            self.bits = 0;
        }
        self.bits = (self.bits << 1) | u64::from(object);
        self.len += 1;
    }

    /// The innermost level: `Some(true)` for an object.
    fn top(&self) -> Option<bool> {
        (self.len > 0).then_some(self.bits & 1 == 1)
    }

    fn pop(&mut self) {
        self.len -= 1;
        self.bits >>= 1;
        if self.len > 0 && self.len.is_multiple_of(64) {
            self.bits = self.more.pop().unwrap_or(0);
        }
    }
}

impl<'a> Cur<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Result<(), Bad> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(Bad)
        }
    }

    /// JSON's whitespace, as serde_json skips it.
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// At a string's opening quote: skips it; the bytes between the
    /// quotes and whether they hold an escape.
    fn string(&mut self) -> Result<(&'a [u8], bool), Bad> {
        self.eat(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            let rest = self.b.get(self.i..).ok_or(Bad)?;
            let j = memchr::memchr2(b'"', b'\\', rest).ok_or(Bad)?;
            self.i += j;
            if self.b[self.i] == b'"' {
                break;
            }
            escaped = true;
            match self.b.get(self.i + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 2,
                Some(b'u') => {
                    let hex = self.b.get(self.i + 2..self.i + 6).ok_or(Bad)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return Err(Bad);
                    }
                    self.i += 6;
                }
                _ => return Err(Bad),
            }
        }
        let text = &self.b[start..self.i];
        self.i += 1;
        check_text(text)?;
        Ok((text, escaped))
    }

    /// A member's key and its colon; the key decoded when it holds an
    /// escape (`"\u0075sage"` is `usage` to serde).
    fn key(&mut self) -> Result<Cow<'a, [u8]>, Bad> {
        self.ws();
        let at = self.i;
        let (text, escaped) = self.string()?;
        let key = if escaped {
            let s: String = serde_json::from_slice(&self.b[at..self.i]).map_err(|_| Bad)?;
            Cow::Owned(s.into_bytes())
        } else {
            Cow::Borrowed(text)
        };
        self.ws();
        self.eat(b':')?;
        self.ws();
        Ok(key)
    }

    /// After a member or element: true at the container's `close`, false
    /// past a comma.
    fn next_member(&mut self, close: u8) -> Result<bool, Bad> {
        self.ws();
        match self.peek() {
            Some(b',') => {
                self.i += 1;
                Ok(false)
            }
            Some(c) if c == close => {
                self.i += 1;
                Ok(true)
            }
            _ => Err(Bad),
        }
    }

    /// At `message`'s `{`: its fields, the rest skipped.
    fn message(&mut self) -> Result<Message<'a>, Bad> {
        let mut m = Message::default();
        self.eat(b'{')?;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(m);
        }
        loop {
            let key = self.key()?;
            let start = self.i;
            self.value()?;
            let v = &self.b[start..self.i];
            match &*key {
                b"id" => m.id.set(v),
                b"model" => m.model.set(v),
                b"usage" => m.usage.set(v),
                _ => {}
            }
            if self.next_member(b'}')? {
                return Ok(m);
            }
        }
    }

    /// Skips one value (at its first byte), checking its grammar.
    fn value(&mut self) -> Result<(), Bad> {
        let mut stack = Stack::new();
        loop {
            self.ws();
            match self.peek().ok_or(Bad)? {
                b'"' => {
                    self.string()?;
                }
                b'{' => {
                    self.i += 1;
                    self.ws();
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                    } else {
                        stack.push(true);
                        self.key()?;
                        continue;
                    }
                }
                b'[' => {
                    self.i += 1;
                    self.ws();
                    if self.peek() == Some(b']') {
                        self.i += 1;
                    } else {
                        stack.push(false);
                        continue;
                    }
                }
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                b'-' | b'0'..=b'9' => self.number()?,
                _ => return Err(Bad),
            }
            // A value ended: close what it ends, or go on past a comma.
            loop {
                let Some(object) = stack.top() else {
                    return Ok(());
                };
                if self.next_member(if object { b'}' } else { b']' })? {
                    stack.pop();
                } else {
                    if object {
                        self.key()?;
                    }
                    break;
                }
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), Bad> {
        if self.b.get(self.i..self.i + word.len()) == Some(word) {
            self.i += word.len();
            Ok(())
        } else {
            Err(Bad)
        }
    }

    /// JSON's number grammar (a leading zero stands alone; a fraction and
    /// an exponent need a digit each).
    fn number(&mut self) -> Result<(), Bad> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(Bad),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            self.some_digits()?;
        }
        Ok(())
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
    }

    fn some_digits(&mut self) -> Result<(), Bad> {
        let at = self.i;
        self.digits();
        if self.i == at {
            Err(Bad)
        } else {
            Ok(())
        }
    }
}

/// A string's raw bytes: no control character (JSON escapes them), and
/// UTF-8. One pass without early exit, which the compiler vectorizes;
/// the UTF-8 check runs only when a byte is not ASCII.
fn check_text(s: &[u8]) -> Result<(), Bad> {
    // The smallest and largest byte: a min and a max a lane.
    let (mut lo, mut hi) = (u8::MAX, 0u8);
    for &b in s {
        lo = lo.min(b);
        hi = hi.max(b);
    }
    if lo < 0x20 || (hi >= 0x80 && std::str::from_utf8(s).is_err()) {
        Err(Bad)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_their_spans() {
        let l = br#" {"a":[1,{"b":"x\"y"}],"timestamp":"t","message":{"id":"m","content":[{"t":"\u00e9"}],"usage":{"input_tokens":1}},"cwd":null} "#;
        let r = record(l).unwrap();
        assert_eq!(r.timestamp, Slot::Once(br#""t""#));
        assert_eq!(r.cwd, Slot::Once(b"null"));
        assert_eq!(r.request_id, Slot::Absent);
        let MessageSlot::Object(m) = r.message else {
            panic!("{:?}", r.message)
        };
        assert_eq!(m.id, Slot::Once(br#""m""#));
        assert_eq!(m.usage, Slot::Once(br#"{"input_tokens":1}"#));
        assert_eq!(m.model, Slot::Absent);
    }

    #[test]
    fn deep_nesting_past_the_stack_in_place() {
        for depth in [1, 63, 64, 65, 128, 200] {
            let v = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let l = format!(r#"{{"x":{v},"cwd":"c"}}"#);
            assert_eq!(record(l.as_bytes()).unwrap().cwd, Slot::Once(br#""c""#));
            let bad = format!(r#"{{"x":{v}],"cwd":"c"}}"#);
            assert_eq!(record(bad.as_bytes()), Err(Bad), "{depth}");
        }
        let mixed = format!("{}1{}", r#"{"a":["#.repeat(70), "]}".repeat(70));
        let l = format!(r#"{{"x":{mixed}}}"#);
        assert!(record(l.as_bytes()).is_ok());
        let swapped = format!("{}1{}", r#"{"a":["#.repeat(70), "}]".repeat(70));
        let l = format!(r#"{{"x":{swapped}}}"#);
        assert_eq!(record(l.as_bytes()), Err(Bad));
    }
}
