//! Keeps docs/protocol.md and the crate in step: every line of every
//! ```json block must be a valid JSON-RPC 2.0 message; requests, results and
//! notifications of known methods must decode into this crate's types
//! without losing a field; every method, notification and error code must be
//! documented. And docs/architecture.md's test table names every test file
//! of the workspace once; its "Unsafe code" section every file with
//! `unsafe` code, how many sites each has, and their total (at most 25),
//! each site with its SAFETY comment; and no product file is over 800
//! lines unless its header says why it must be one piece ("Files").

use std::collections::HashMap;
use std::path::PathBuf;

use ccd_protocol::methods::{
    session, Method, MethodId, MethodVisitor, NotificationKind, ALL_METHODS, ALL_NOTIFICATIONS,
};
use ccd_protocol::stream::{SessionExited, SessionOutput, SessionResync};
use ccd_protocol::{parse_incoming, ErrorCode, Id, Incoming};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

fn protocol_md() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/protocol.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// (line number, line) of every non-empty line inside ```json fences.
fn json_example_lines(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_json = false;
    for (i, line) in md.lines().enumerate() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("```") {
            in_json = !in_json && rest.trim() == "json";
            continue;
        }
        if in_json && !t.is_empty() {
            out.push((i + 1, t.to_owned()));
        }
    }
    out
}

type Check = fn(Value) -> Result<Value, String>;

/// Decode `v` as `T` and encode it again.
fn roundtrip<T: Serialize + DeserializeOwned>(v: Value) -> Result<Value, String> {
    let t: T = serde_json::from_value(v).map_err(|e| e.to_string())?;
    serde_json::to_value(&t).map_err(|e| e.to_string())
}

fn method<M: Method>() -> (&'static str, Check, Check) {
    (M::NAME, roundtrip::<M::Params>, roundtrip::<M::Result>)
}

fn notification<N: NotificationKind>() -> (&'static str, Check) {
    (N::NAME, roundtrip::<N::Params>)
}

/// Every key of `doc` must exist in `typed` with an equal value (the typed
/// side may add defaults). Catches misspelt or unknown fields in examples,
/// which serde would otherwise silently ignore.
fn assert_subset(doc: &Value, typed: &Value, at: &str) {
    match (doc, typed) {
        (Value::Object(d), Value::Object(t)) => {
            for (k, dv) in d {
                match t.get(k) {
                    Some(tv) => assert_subset(dv, tv, &format!("{at}.{k}")),
                    None => panic!("{at}.{k}: field unknown to the crate's types"),
                }
            }
        }
        (Value::Array(d), Value::Array(t)) => {
            assert_eq!(d.len(), t.len(), "{at}: array length");
            for (i, (dv, tv)) in d.iter().zip(t).enumerate() {
                assert_subset(dv, tv, &format!("{at}[{i}]"));
            }
        }
        _ => assert_eq!(doc, typed, "{at}: value changed by a typed roundtrip"),
    }
}

#[test]
fn every_json_example_is_valid_and_typed() {
    let md = protocol_md();
    let lines = json_example_lines(&md);
    assert!(
        lines.len() >= 30,
        "only {} example lines found",
        lines.len()
    );

    struct Collect(HashMap<&'static str, (Check, Check)>);
    impl MethodVisitor for Collect {
        fn visit<M: Method>(&mut self) {
            let (n, p, r) = method::<M>();
            self.0.insert(n, (p, r));
        }
    }
    let mut collect = Collect(HashMap::new());
    MethodId::visit_all(&mut collect);
    let methods = collect.0;
    assert_eq!(methods.len(), ALL_METHODS.len(), "table covers ALL_METHODS");
    let notifications: HashMap<&str, Check> = [
        notification::<SessionOutput>(),
        notification::<SessionResync>(),
        notification::<SessionExited>(),
        notification::<session::SessionProgress>(),
        notification::<ccd_protocol::stream::SessionTranscript>(),
        notification::<ccd_protocol::methods::events::EventNotification>(),
    ]
    .into_iter()
    .collect();
    assert_eq!(notifications.len(), ALL_NOTIFICATIONS.len());

    let mut pending: HashMap<Id, &str> = HashMap::new();
    let mut requested: Vec<&str> = Vec::new();
    let mut answered: Vec<&str> = Vec::new();
    let mut notified: Vec<String> = Vec::new();

    for (n, line) in &lines {
        let msg = parse_incoming(line)
            .unwrap_or_else(|e| panic!("protocol.md:{n}: not valid JSON-RPC 2.0: {e}\n{line}"));
        match msg {
            Incoming::Request(req) => {
                let (name, (params_check, _)) = methods
                    .get_key_value(req.method.as_str())
                    .unwrap_or_else(|| panic!("protocol.md:{n}: unknown method {}", req.method));
                let params = req
                    .params
                    .clone()
                    .unwrap_or(Value::Object(Default::default()));
                let typed = params_check(params.clone())
                    .unwrap_or_else(|e| panic!("protocol.md:{n}: params of {name}: {e}"));
                assert_subset(&params, &typed, &format!("protocol.md:{n}: params"));
                let id = req.id.clone().expect("requests have ids");
                pending.insert(id, name);
                requested.push(name);
            }
            Incoming::Notification(note) => {
                let check = notifications.get(note.method.as_str()).unwrap_or_else(|| {
                    panic!("protocol.md:{n}: unknown notification {}", note.method)
                });
                let params = note.params.clone().unwrap_or(Value::Null);
                let typed = check(params.clone())
                    .unwrap_or_else(|e| panic!("protocol.md:{n}: params of {}: {e}", note.method));
                assert_subset(&params, &typed, &format!("protocol.md:{n}: params"));
                notified.push(note.method);
            }
            Incoming::Response(resp) => {
                let method = resp.id.as_ref().and_then(|id| pending.get(id).copied());
                match (&resp.outcome, method) {
                    (Ok(result), Some(name)) => {
                        let (_, result_check) = methods[name];
                        let typed = result_check(result.clone())
                            .unwrap_or_else(|e| panic!("protocol.md:{n}: result of {name}: {e}"));
                        assert_subset(result, &typed, &format!("protocol.md:{n}: result"));
                        answered.push(name);
                    }
                    (Ok(_), None) => {
                        panic!("protocol.md:{n}: result without a preceding request of that id")
                    }
                    (Err(e), _) => {
                        assert!(
                            e.error_code().is_some(),
                            "protocol.md:{n}: undocumented error code {}",
                            e.code
                        );
                    }
                }
            }
        }
    }

    for m in ALL_METHODS {
        assert!(requested.contains(m), "no request example for {m}");
        assert!(
            answered.contains(m),
            "no successful response example for {m}"
        );
        assert!(
            md.contains(&format!("### `{m}`")) || *m == "hello",
            "no section for {m}"
        );
    }
    for n in ALL_NOTIFICATIONS {
        assert!(notified.iter().any(|x| x == n), "no example for {n}");
    }
}

#[test]
fn every_error_code_is_in_the_table() {
    let md = protocol_md();
    for code in ErrorCode::ALL {
        let row = format!("| {} | `{}` |", code.code(), code.name());
        assert!(md.contains(&row), "error table lacks the row: {row}");
    }
    // And the table has no code the crate does not know.
    for line in md.lines() {
        if let Some(rest) = line.strip_prefix("| -32") {
            let num: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let code: i64 = format!("-32{num}").parse().expect("number");
            assert!(
                ErrorCode::from_code(code).is_some(),
                "documented code {code} unknown to ErrorCode"
            );
        }
    }
}

#[test]
fn documented_limits_match_constants() {
    let md = protocol_md();
    assert_eq!(ccd_protocol::MAX_LINE_BYTES, 1_048_576);
    assert!(md.contains("1 048 576 bytes"));
    assert_eq!(ccd_protocol::MAX_OUTPUT_CHUNK, 64 * 1024);
    assert!(md.contains("64 KiB"));
    assert!(md.contains(&format!(
        "This document is version **{}**",
        ccd_protocol::PROTOCOL_VERSION
    )));
}

/// The text of the `### \`name\`` section of a method (up to the next
/// heading).
fn method_section<'a>(md: &'a str, name: &str) -> Option<&'a str> {
    let heading = format!("### `{name}`");
    let start = md.find(&heading)? + heading.len();
    let rest = &md[start..];
    let end = rest.find("\n#").unwrap_or(rest.len());
    Some(&rest[..end])
}

#[test]
fn every_method_documents_the_errors_it_declares() {
    use ccd_protocol::methods::MethodId;
    let md = protocol_md();
    for m in MethodId::ALL {
        if m.errors().is_empty() {
            continue;
        }
        let name = m.name();
        // `hello`'s section is the handshake's.
        let section = if name == "hello" {
            md.find("## Handshake").map(|i| &md[i..])
        } else {
            method_section(&md, name)
        };
        let section =
            section.unwrap_or_else(|| panic!("docs/protocol.md has no section for {name}"));
        for code in m.errors() {
            let n = code.code().to_string();
            assert!(
                section.contains(&format!("`{n}`")) || section.contains(&format!("\"code\":{n}")),
                "docs/protocol.md's section of {name} does not name {n} ({code:?}), which it declares"
            );
        }
    }
}

/// docs/architecture.md's "Tests" table names every `crates/*/tests/*.rs`
/// once, and no file that is not there.
#[test]
fn the_architecture_doc_lists_every_test_file_once() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).expect("architecture.md");
    let table = doc
        .split("\n## Tests\n")
        .nth(1)
        .expect("a Tests section")
        .split("\n## ")
        .next()
        .unwrap_or("");
    let listed: Vec<String> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(String::from)
        .collect();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).expect("crates/") {
        let krate = krate.expect("an entry").path();
        let Ok(tests) = std::fs::read_dir(krate.join("tests")) else {
            continue;
        };
        for t in tests {
            let t = t.expect("an entry").path();
            if t.extension().is_some_and(|e| e == "rs") {
                let name = krate.file_name().unwrap_or_default().to_string_lossy();
                let file = t.file_name().unwrap_or_default().to_string_lossy();
                files.push(format!("{name}/tests/{file}"));
            }
        }
    }
    files.sort();
    let mut sorted = listed.clone();
    sorted.sort();
    let twice: Vec<&String> = sorted
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| &w[0])
        .collect();
    assert!(twice.is_empty(), "listed more than once: {twice:?}");
    let missing: Vec<&String> = files.iter().filter(|f| !listed.contains(f)).collect();
    let stale: Vec<&String> = listed.iter().filter(|f| !files.contains(f)).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/architecture.md's test table: missing {missing:?}, not a test file {stale:?}"
    );
}

/// The most lines a product file may have before its first `#[cfg(test)]`
/// (issue 35), unless its `//!` header has a line starting with
/// [`ONE_PIECE`] that says why it must be one piece (docs/architecture.md,
/// "Files").
const MAX_PRODUCT_LINES: usize = 800;
/// The header line that lets a file stay over [`MAX_PRODUCT_LINES`].
const ONE_PIECE: &str = "One piece:";

/// Files over the bound for now, relative to `crates/`.
const OVER_FOR_NOW: &[&str] = &[
    // issue 35: being split
];

/// The most `unsafe` sites the workspace may hold (issue 35).
const MAX_UNSAFE_SITES: usize = 25;

/// One `unsafe` site: its file (from the repository's root), its line
/// (1-based), and whether it is an `unsafe fn` (documented by a
/// `# Safety` section) rather than a block or an impl (a `SAFETY:`
/// comment).
struct UnsafeSite {
    file: String,
    line: usize,
    is_fn: bool,
}

/// `text` with its comments and string and character literals blanked
/// (newlines kept, so lines still count): what is left is code.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == 'r'
            && matches!(next, Some('#' | '"'))
            && (!ident(i.checked_sub(1).map(|p| b[p]))
                || (i >= 1 && b[i - 1] == 'b' && !ident(i.checked_sub(2).map(|p| b[p]))))
        {
            // A raw string, r#"…"# (or br"…"): blank to its closing quote
            // and as many hashes.
            let mut j = i + 1;
            while b.get(j) == Some(&'#') {
                j += 1;
            }
            let hashes = j - i - 1;
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let mut k = j + 1;
            while k < b.len() && !(b[k] == '"' && (1..=hashes).all(|h| b.get(k + h) == Some(&'#')))
            {
                k += 1;
            }
            let end = (k + 1 + hashes).min(b.len());
            for &ch in &b[i..end] {
                blank(&mut out, ch);
            }
            i = end;
        } else if c == '"' {
            blank(&mut out, c);
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            if i < b.len() {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if c == '\'' && (next == Some('\\') || b.get(i + 2) == Some(&'\'')) {
            // A character literal ('x', '\n', '\u{..}'); a lifetime has no
            // closing quote.
            let mut j = i + 2;
            while j < b.len() && b[j] != '\'' {
                j += 1;
            }
            let end = (j + 1).min(b.len());
            for &ch in &b[i..end] {
                blank(&mut out, ch);
            }
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The `unsafe {`, `unsafe fn` and `unsafe impl` (and `unsafe extern`,
/// `unsafe trait`) sites of one file's text.
fn unsafe_sites_of(file: &str, text: &str) -> Vec<UnsafeSite> {
    let code = code_only(text);
    let mut sites = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("unsafe") {
        let at = from + found;
        from = at + "unsafe".len();
        let before = code[..at].chars().next_back();
        let after = code[from..].chars().next();
        let is_ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        if is_ident(before) || is_ident(after) {
            continue; // part of a longer name (`unsafe_code`, `is_unsafe`)
        }
        let rest = code[from..].trim_start();
        let next_word: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let is_fn = next_word == "fn";
        if rest.starts_with('{') || matches!(next_word.as_str(), "fn" | "impl" | "extern" | "trait")
        {
            sites.push(UnsafeSite {
                file: file.to_string(),
                line: code[..at].matches('\n').count() + 1,
                is_fn,
            });
        }
    }
    sites
}

/// Every `.rs` file under `dir`, but build output.
fn rust_files(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.expect("an entry").path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Whether the comment lines directly above line `line` (1-based) of
/// `text`, attributes skipped, hold `needle`.
fn documented_above(text: &str, line: usize, needle: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    let mut i = line - 1;
    let mut comment = String::new();
    while i > 0 {
        i -= 1;
        let l = lines[i].trim_start();
        if l.starts_with("#[") {
            continue;
        }
        if !l.starts_with("//") {
            break;
        }
        comment.push_str(l);
        comment.push('\n');
    }
    comment.contains(needle)
}

#[test]
fn the_unsafe_code_scanner_sees_sites_and_nothing_else() {
    let text = "// unsafe { in a comment }\n\
                let s = \"unsafe { in a string }\";\n\
                let r = r#\"unsafe fn in a raw string\"#;\n\
                let c = '\"'; let l: &'static str = \"\";\n\
                #![forbid(unsafe_code)]\n\
                fn is_unsafe() {}\n\
                /* unsafe impl /* nested */ still a comment */\n\
                // SAFETY: a reason.\n\
                let x = unsafe { f() };\n\
                /// # Safety\n\
                unsafe fn g() {}\n\
                unsafe impl Send for X {}\n";
    let sites = unsafe_sites_of("t.rs", text);
    let lines: Vec<(usize, bool)> = sites.iter().map(|s| (s.line, s.is_fn)).collect();
    assert_eq!(lines, [(9, false), (11, true), (12, false)]);
    assert!(documented_above(text, 9, "SAFETY:"));
    assert!(documented_above(text, 11, "# Safety"));
    assert!(!documented_above(text, 12, "SAFETY:"));
}

/// docs/architecture.md's "Unsafe code" section lists every file with
/// `unsafe` code and its number of sites, and their total (at most
/// [`MAX_UNSAFE_SITES`]); every site has its SAFETY comment (a block, an
/// impl) or `# Safety` doc (a fn) directly above it.
#[test]
fn the_unsafe_sites_are_the_ones_listed_and_documented() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).expect("architecture.md");
    let section = doc
        .split("\n## Unsafe code\n")
        .nth(1)
        .expect("an Unsafe code section")
        .split("\n## ")
        .next()
        .unwrap_or("");
    let stated: usize = section
        .lines()
        .find_map(|l| l.strip_prefix("Unsafe sites: "))
        .and_then(|l| l.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .expect("an `Unsafe sites: N` line");
    let mut listed: HashMap<String, usize> = HashMap::new();
    for l in section.lines() {
        let Some(rest) = l.strip_prefix("| `") else {
            continue;
        };
        let mut cells = rest.split('|');
        let file = cells.next().unwrap_or("").trim().trim_end_matches('`');
        let n: usize = cells
            .next()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("a count of sites in {l:?}"));
        assert!(
            listed.insert(file.to_string(), n).is_none(),
            "{file} listed twice"
        );
    }
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    rust_files(&root.join("fuzz"), &mut files);
    let mut found: HashMap<String, usize> = HashMap::new();
    let mut undocumented = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("a source file");
        let name = f
            .strip_prefix(&root)
            .unwrap_or(&f)
            .to_string_lossy()
            .into_owned();
        for site in unsafe_sites_of(&name, &text) {
            *found.entry(site.file.clone()).or_default() += 1;
            let needle = if site.is_fn { "# Safety" } else { "SAFETY:" };
            if !documented_above(&text, site.line, needle) {
                undocumented.push(format!("{}:{} (no {needle} above)", site.file, site.line));
            }
        }
    }
    let total: usize = found.values().sum();
    assert!(
        undocumented.is_empty(),
        "unsafe sites without their reason: {undocumented:?}"
    );
    let mut differ: Vec<String> = found
        .iter()
        .filter(|(f, n)| listed.get(*f) != Some(n))
        .map(|(f, n)| format!("{f}: {n} in the tree, {:?} listed", listed.get(f)))
        .chain(
            listed
                .iter()
                .filter(|(f, _)| !found.contains_key(*f))
                .map(|(f, n)| format!("{f}: {n} listed, none in the tree")),
        )
        .collect();
    differ.sort();
    assert!(
        differ.is_empty(),
        "docs/architecture.md's unsafe sites differ from the tree: {differ:?}"
    );
    assert_eq!(stated, total, "`Unsafe sites: N` in docs/architecture.md");
    assert!(
        total <= MAX_UNSAFE_SITES,
        "{total} unsafe sites: at most {MAX_UNSAFE_SITES} (docs/architecture.md, \"Unsafe code\")"
    );
}

/// The files a `#[cfg(test)] mod name;` in `file` brings in (compiled for
/// tests only): `name.rs` and everything under `name/`, beside `file` when
/// it is a `mod.rs`, `lib.rs` or `main.rs`, else in the folder named after
/// it.
fn test_only_modules(file: &std::path::Path, text: &str) -> Vec<PathBuf> {
    let parent = file.parent().expect("a folder");
    let stem = file.file_stem().unwrap_or_default().to_string_lossy();
    let dir = if matches!(stem.as_ref(), "mod" | "lib" | "main") {
        parent.to_path_buf()
    } else {
        parent.join(stem.as_ref())
    };
    let mut out = Vec::new();
    let mut after_cfg_test = false;
    for line in text.lines().map(str::trim) {
        if line == "#[cfg(test)]" {
            after_cfg_test = true;
            continue;
        }
        if after_cfg_test && line.starts_with("#[") {
            continue;
        }
        if after_cfg_test {
            let name = line
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ")
                .strip_prefix("mod ")
                .and_then(|r| r.strip_suffix(';'));
            if let Some(name) = name {
                out.push(dir.join(format!("{name}.rs")));
                out.push(dir.join(name));
            }
        }
        after_cfg_test = false;
    }
    out
}

/// No product file (`crates/*/src/**/*.rs`) has more than
/// [`MAX_PRODUCT_LINES`] lines before its first `#[cfg(test)]` unless its
/// `//!` header has a line starting with [`ONE_PIECE`] (a newcomer reads
/// one concern a file); files compiled for tests only do not count.
#[test]
fn no_product_file_is_over_800_lines_unless_its_header_says_why() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let crates = root.join("crates");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates).expect("crates/") {
        rust_files(&krate.expect("an entry").path().join("src"), &mut files);
    }
    files.sort();
    let texts: Vec<(PathBuf, String)> = files
        .into_iter()
        .map(|f| {
            let t = std::fs::read_to_string(&f).expect("a source file");
            (f, t)
        })
        .collect();
    let test_only: Vec<PathBuf> = texts
        .iter()
        .flat_map(|(f, t)| test_only_modules(f, t))
        .collect();
    let mut over = Vec::new();
    let mut still_over = Vec::new();
    for (f, text) in &texts {
        if test_only.iter().any(|t| f.starts_with(t)) {
            continue;
        }
        let n = text
            .lines()
            .take_while(|l| !l.contains("#[cfg(test)]"))
            .count();
        if n <= MAX_PRODUCT_LINES {
            continue;
        }
        let name = f
            .strip_prefix(&crates)
            .unwrap_or(f)
            .to_string_lossy()
            .into_owned();
        let one_piece = text
            .lines()
            .take_while(|l| l.starts_with("//!") || l.starts_with("#!["))
            .filter_map(|l| l.strip_prefix("//!"))
            .any(|l| l.trim_start().starts_with(ONE_PIECE));
        if OVER_FOR_NOW.contains(&name.as_str()) {
            still_over.push(name);
        } else if !one_piece {
            over.push(format!("{name} ({n} lines)"));
        }
    }
    assert!(
        over.is_empty(),
        "over {MAX_PRODUCT_LINES} lines before #[cfg(test)], and no `//! {ONE_PIECE}` line in \
         the header saying why: {over:?}; split them along their concerns (docs/architecture.md, \
         \"Files\")"
    );
    let done: Vec<&&str> = OVER_FOR_NOW
        .iter()
        .filter(|f| !still_over.iter().any(|s| s == *f))
        .collect();
    assert!(
        done.is_empty(),
        "no longer over {MAX_PRODUCT_LINES} lines (or gone): remove {done:?} from OVER_FOR_NOW"
    );
}
