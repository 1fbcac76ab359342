//! The project-folder name Claude Code derives from a cwd.
//!
//! Every UTF-16 code unit outside `[A-Za-z0-9]` becomes `-`, so distinct
//! paths collide (`a.b`, `a_b`, `a b`): a slug is never reversed, only
//! computed forward and confirmed by a transcript's `cwd` field. Slugs over
//! [`MAX_SLUG_LEN`] characters are cut and suffixed with `-` and a base-36
//! hash; that hash changed between CLI versions, so long names are matched by
//! their cut prefix ([`long_slug_prefix`]).

/// Longest slug kept whole.
pub const MAX_SLUG_LEN: usize = 200;

/// The slug of `cwd` as CLI 2.1.332 computes it.
pub fn slug(cwd: &str) -> String {
    let mut out = String::with_capacity(cwd.len());
    for unit in cwd.encode_utf16() {
        match u8::try_from(unit) {
            Ok(b) if b.is_ascii_alphanumeric() => out.push(char::from(b)),
            _ => out.push('-'),
        }
    }
    if out.len() <= MAX_SLUG_LEN {
        return out;
    }
    out.truncate(MAX_SLUG_LEN);
    out.push('-');
    out.push_str(&base36(java_string_hash(cwd).unsigned_abs()));
    out
}

/// For a slug that was cut, the part every CLI version agrees on (the first
/// 200 characters and the `-`); `None` when the slug is kept whole.
pub fn long_slug_prefix(cwd: &str) -> Option<String> {
    let s = slug(cwd);
    (s.len() > MAX_SLUG_LEN).then(|| s[..=MAX_SLUG_LEN].to_string())
}

/// Java's `String.hashCode` over UTF-16 code units (`h = 31*h + unit`, wrapping).
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".into();
    }
    let mut buf = Vec::new();
    while n > 0 {
        buf.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    buf.reverse();
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punctuation_collides() {
        assert_eq!(slug("/home/dev/proj1"), "-home-dev-proj1");
        assert_eq!(slug("/a.b"), slug("/a_b"));
        assert_eq!(slug("/a b"), "-a-b");
    }

    #[test]
    fn non_ascii_is_one_dash_per_utf16_unit() {
        assert_eq!(slug("/café"), "-caf-");
        // U+1F600 is two UTF-16 units.
        assert_eq!(slug("/x😀y"), "-x--y");
    }

    #[test]
    fn java_hash_matches_known_values() {
        // "hello".hashCode() == 99162322 in Java.
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(base36(35), "z");
        assert_eq!(base36(36), "10");
    }

    #[test]
    fn long_paths_are_cut_and_hashed() {
        let cwd = format!("/{}", "d".repeat(300));
        let s = slug(&cwd);
        let prefix = long_slug_prefix(&cwd).unwrap();
        assert!(s.starts_with(&prefix));
        assert_eq!(prefix.len(), MAX_SLUG_LEN + 1);
        assert_eq!(
            &s[MAX_SLUG_LEN + 1..],
            base36(java_string_hash(&cwd).unsigned_abs())
        );
        assert_eq!(long_slug_prefix("/short"), None);
    }
}
