//! Small helpers shared by the other modules: random ids, clocks and atomic file writes.

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// Fills `buf` from `/dev/urandom`; falls back to a clock/pid mix if that fails.
pub fn random_fill(buf: &mut [u8]) {
    let ok = fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .is_ok();
    if !ok {
        let mut x = (now_nanos() as u64) ^ (u64::from(std::process::id()) << 32) | 1;
        for b in buf.iter_mut() {
            // xorshift64
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
    }
}

/// Lowercase hex of `n` random bytes.
pub fn random_hex(n: usize) -> String {
    let mut buf = vec![0u8; n];
    random_fill(&mut buf);
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// A random (version 4) UUID in its canonical lowercase form.
pub fn uuid_v4() -> String {
    let mut b = [0u8; 16];
    random_fill(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// True for a canonical 8-4-4-4-12 hex UUID.
pub fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    parts.len() == 5
        && parts
            .iter()
            .zip(lens)
            .all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Unix time in milliseconds.
pub fn now_ms() -> u64 {
    (now_nanos() / 1_000_000) as u64
}

/// Current UTC time as RFC 3339 with milliseconds and a `Z`, like the CLI's timestamps.
pub fn rfc3339_now() -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    now.format(&fmt)
        .unwrap_or_else(|_| "1970-01-01T00:00:00.000Z".to_string())
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, then a rename.
/// `mode` sets the permission bits of the new file.
pub fn atomic_write(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", random_hex(6)));
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_shape() {
        let u = uuid_v4();
        assert!(is_uuid(&u), "{u}");
        assert_eq!(&u[14..15], "4");
        assert!(!is_uuid("not-a-uuid"));
    }

    #[test]
    fn timestamp_shape() {
        let t = rfc3339_now();
        assert_eq!(t.len(), 24, "{t}");
        assert!(t.ends_with('Z'));
    }
}
