//! Prompt links (issue 53, item 3): a notification's `link` that opens one
//! permission prompt on `ccd web` and can answer it once, and nothing
//! else.
//!
//! - The **token** (sans IO: [`Key::mint`], [`Key::verify`]) is
//!   `<claims>.<mac>`: `claims` the JSON [`Claims`] (the machine as
//!   `ccd web` names it, the session id, the prompt id, the expiry in unix
//!   ms, a 128-bit random nonce) in unpadded base64url, `mac` the
//!   HMAC-SHA256 of a domain string and those exact bytes, base64url too.
//!   `ccd web` needs no shared database to check it: only the key.
//! - The **key** ([`KeyFile`]): 256 random bits in `<state dir>/web-link-key`
//!   (64 hex digits, created with `O_EXCL` and mode 0600 by whoever needs
//!   it first: the daemon or `ccd notify` minting, or `ccd web` checking;
//!   a file group or others may read, or another user owns, is refused:
//!   [`crate::secret_file`], shared with `ccd web`'s login token).
//!   `ccd web --revoke` writes a new one ([`KeyFile::rotate`]), so every
//!   link made before is refused. The file is re-read on every mint and
//!   every check (~70 bytes; links are rare), so a rotation takes effect
//!   at once in a running daemon and `ccd web`.
//! - The **link** ([`Minter`]): `<web_public_url>/p#<token>`. The token
//!   rides in the fragment, which a browser never sends, so it stays out
//!   of proxy and server logs; the page posts it. Everything the token
//!   binds is inside it (one thing to check, no path parts that could
//!   disagree with it, and machine names like `me@box:2222` need no
//!   escaping).
//! - **Single use** and what the token grants are `ccd web`'s to enforce
//!   (ccd-web's `link.rs`): it remembers used nonces until their expiry.
//!
//! Bounds: a link lives `web_link_secs` (default [`DEFAULT_TTL_SECS`]),
//! at most [`MAX_TTL_SECS`] (a longer setting is cut to it, and `ccd web`
//! refuses a token whose expiry is further away than that); a token is at
//! most [`MAX_TOKEN_BYTES`].

use crate::notification::Notification;
use crate::secret_file::{fill_random, hex, SecretFile, SecretFileError};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::path::Path;

/// The key file's name in the state directory.
pub const KEY_FILE: &str = "web-link-key";
/// A link's life: `web_link_secs`'s default and bound, kept with the
/// setting.
pub use crate::config::{DEFAULT_TTL_SECS, MAX_TTL_SECS};
/// The longest token `ccd web` reads (a real one is ~250 bytes).
pub const MAX_TOKEN_BYTES: usize = 2048;
/// What the MAC covers before the claims: a token of another use of the
/// same key (there is none today) can never pass for a prompt link.
const DOMAIN: &[u8] = b"ccd web prompt link v1\0";

type HmacSha256 = Hmac<Sha256>;

/// What a token binds, all of it checked by `ccd web`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// The format (1).
    pub v: u32,
    /// The machine, as `ccd web` names it (`local`, or a `--host` name).
    pub m: String,
    /// The session id.
    pub s: String,
    /// The prompt id (`session.respond`'s `prompt`).
    pub p: String,
    /// When the link stops answering (unix ms).
    pub exp: i64,
    /// 128 random bits, hex: what `ccd web` remembers as used.
    pub n: String,
}

/// Why a token is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    #[error("this is not a ccd prompt link")]
    Malformed,
    /// The MAC does not match: altered, forged, or made before a `ccd web
    /// --revoke`.
    #[error("this link is not valid (altered, or made before ccd web --revoke)")]
    Forged,
    #[error("this link has expired")]
    Expired,
}

/// The key of the MAC (256 bits).
#[derive(Clone, PartialEq, Eq)]
pub struct Key([u8; 32]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    /// A fresh key from the OS's generator.
    pub fn random() -> Self {
        let mut k = [0u8; 32];
        fill_random(&mut k);
        Self(k)
    }

    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC takes a key of any length: this cannot fail.
        let mut m = <HmacSha256 as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
        m.update(DOMAIN);
        m
    }

    /// The token for `claims`.
    pub fn mint(&self, claims: &Claims) -> String {
        let body = serde_json::to_vec(claims).unwrap_or_default();
        let mut m = self.mac();
        m.update(&body);
        let tag = m.finalize().into_bytes();
        format!("{}.{}", B64.encode(&body), B64.encode(tag))
    }

    /// The claims of `token` if this key made it and it is valid at `now`
    /// (unix ms): not expired, and expiring within [`MAX_TTL_SECS`]. The
    /// MAC is checked (in constant time) before the claims are parsed.
    pub fn verify(&self, token: &str, now: i64) -> Result<Claims, LinkError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(LinkError::Malformed);
        }
        let (body, tag) = token.split_once('.').ok_or(LinkError::Malformed)?;
        let body = B64.decode(body).map_err(|_| LinkError::Malformed)?;
        let tag = B64.decode(tag).map_err(|_| LinkError::Malformed)?;
        let mut m = self.mac();
        m.update(&body);
        m.verify_slice(&tag).map_err(|_| LinkError::Forged)?;
        let c: Claims = serde_json::from_slice(&body).map_err(|_| LinkError::Malformed)?;
        if c.v != 1 {
            return Err(LinkError::Malformed);
        }
        if c.exp <= now {
            return Err(LinkError::Expired);
        }
        // Made by a minter with a longer life than allowed (or a clock far
        // off): refused, so the used-nonce memory never needs to be longer.
        if c.exp > now.saturating_add(MAX_TTL_SECS as i64 * 1000) {
            return Err(LinkError::Malformed);
        }
        Ok(c)
    }
}

/// A fresh nonce (128 random bits, hex).
pub fn nonce() -> String {
    let mut n = [0u8; 16];
    fill_random(&mut n);
    hex(&n)
}

/// What can be wrong with the key file (one secret file's errors).
pub type KeyError = SecretFileError;

/// The link key of one state directory (see the module header).
#[derive(Debug, Clone)]
pub struct KeyFile {
    file: SecretFile,
}

impl KeyFile {
    pub fn in_dir(state_dir: &Path) -> Self {
        Self {
            file: SecretFile::new(
                state_dir.join(KEY_FILE),
                "ccd web link key",
                "run ccd web --revoke to make a new one",
            ),
        }
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The key, made (and its directory, 0700) when there is none.
    pub fn load_or_create(&self) -> Result<Key, KeyError> {
        if self.file.create_new(&render(&Key::random()))? {
            tracing::info!(path = %self.path().display(), "created the ccd web link key");
        }
        self.read()
    }

    /// The key as the file says now (checked private).
    pub fn read(&self) -> Result<Key, KeyError> {
        let meta = self.file.check()?;
        let text = self.file.read_text(&meta)?;
        let line = text.lines().next().unwrap_or_default().trim();
        if line.len() != 64 || !line.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.file.malformed("not 64 hex digits"));
        }
        let mut k = [0u8; 32];
        for (i, byte) in k.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&line[2 * i..2 * i + 2], 16)
                .map_err(|_| self.file.malformed("not 64 hex digits"))?;
        }
        Ok(Key(k))
    }

    /// A new key, written beside the file and renamed over it (0600):
    /// every link made with the old one is refused from now on.
    pub fn rotate(&self) -> Result<(), KeyError> {
        self.file.replace(&render(&Key::random()))
    }
}

/// The key file's text: 64 hex digits and a newline.
fn render(key: &Key) -> String {
    format!("{}\n", hex(&key.0))
}

/// Puts a prompt link on the notifications that name a prompt (the
/// daemon's sinks, `ccd notify`'s desktop). Made from `[notify]`'s
/// `web_public_url` and `web_link_secs`.
#[derive(Debug, Clone)]
pub struct Minter {
    base: String,
    ttl_ms: i64,
    keys: KeyFile,
}

impl Minter {
    /// A minter when `web_public_url` is set (`None` otherwise), its key
    /// in `state_dir`.
    pub fn new(cfg: &crate::NotifyConfig, state_dir: &Path) -> Option<Self> {
        let base = cfg.web_public_url.as_deref()?.trim_end_matches('/');
        let secs = cfg.web_link_secs.clamp(1, MAX_TTL_SECS);
        Some(Self {
            base: base.to_string(),
            ttl_ms: secs as i64 * 1000,
            keys: KeyFile::in_dir(state_dir),
        })
    }

    /// The link of `n` (a notification naming a prompt id; `machine` is
    /// the session's machine as `ccd web` names it) made at `now` (unix
    /// ms): `<web_public_url>/p#<token>`. `n.link` is left as the rules
    /// made it (the session's page) when `n` names no prompt, or when the
    /// key cannot be read (said in the log).
    pub fn apply(&self, n: &mut Notification, machine: &str, now: i64) {
        let Some(prompt) = n.prompt_id.clone() else {
            return;
        };
        let key = match self.keys.load_or_create() {
            Ok(k) => k,
            Err(e) => {
                tracing::warn!(error = %e, "no prompt link: the link key cannot be read");
                return;
            }
        };
        let claims = Claims {
            v: 1,
            m: machine.to_string(),
            s: n.session.clone(),
            p: prompt,
            exp: now.saturating_add(self.ttl_ms),
            n: nonce(),
        };
        n.link = Some(format!("{}/p#{}", self.base, key.mint(&claims)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notification::sample_prompt;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn claims(exp: i64) -> Claims {
        Claims {
            v: 1,
            m: "local".into(),
            s: "9b1d".into(),
            p: "5f1c".into(),
            exp,
            n: nonce(),
        }
    }

    #[test]
    fn a_token_verifies_with_its_key_only_and_until_it_expires() {
        let k = Key::random();
        let c = claims(10_000);
        let t = k.mint(&c);
        assert_eq!(k.verify(&t, 9_999), Ok(c.clone()));
        assert_eq!(k.verify(&t, 10_000), Err(LinkError::Expired));
        assert_eq!(Key::random().verify(&t, 0), Err(LinkError::Forged));
        // Too far in the future: refused.
        let far = k.mint(&claims(MAX_TTL_SECS as i64 * 1000 + 1));
        assert_eq!(k.verify(&far, 0), Err(LinkError::Malformed));
    }

    #[test]
    fn an_altered_token_is_refused() {
        let k = Key::random();
        let t = k.mint(&claims(10_000));
        let (body, tag) = t.split_once('.').unwrap();
        // Another prompt id in the claims, the MAC kept.
        let mut other = claims(10_000);
        other.p = "6666".into();
        let forged = format!("{}.{tag}", B64.encode(serde_json::to_vec(&other).unwrap()));
        assert_eq!(k.verify(&forged, 0), Err(LinkError::Forged));
        // A flipped MAC character, a missing part, junk, a huge token.
        let mut flipped = tag.to_string().into_bytes();
        flipped[0] = if flipped[0] == b'A' { b'B' } else { b'A' };
        let flipped = format!("{body}.{}", String::from_utf8(flipped).unwrap());
        assert_eq!(k.verify(&flipped, 0), Err(LinkError::Forged));
        assert_eq!(k.verify(body, 0), Err(LinkError::Malformed));
        assert_eq!(k.verify("a.b!", 0), Err(LinkError::Malformed));
        assert_eq!(
            k.verify(&"a".repeat(MAX_TOKEN_BYTES + 1), 0),
            Err(LinkError::Malformed)
        );
    }

    #[test]
    fn the_key_file_is_private_made_once_and_rotated() {
        let dir = tempfile::tempdir().unwrap();
        let f = KeyFile::in_dir(&dir.path().join("state"));
        let a = f.load_or_create().unwrap();
        assert_eq!(f.load_or_create().unwrap(), a, "made once");
        let mode = fs::metadata(f.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        f.rotate().unwrap();
        let b = f.read().unwrap();
        assert_ne!(a, b);
        let mode = fs::metadata(f.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        fs::set_permissions(f.path(), fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(f.read(), Err(KeyError::NotPrivate { .. })));
        fs::set_permissions(f.path(), fs::Permissions::from_mode(0o600)).unwrap();
        fs::write(f.path(), "nope\n").unwrap();
        assert!(matches!(f.read(), Err(KeyError::Malformed { .. })));
    }

    #[test]
    fn a_prompt_notification_carries_a_link_when_the_web_is_public_and_none_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let off = crate::NotifyConfig::default();
        assert!(Minter::new(&off, dir.path()).is_none());
        let on = crate::NotifyConfig {
            web_public_url: Some("https://ccd.example/".into()),
            web_link_secs: 600,
            ..crate::NotifyConfig::default()
        };
        let m = Minter::new(&on, dir.path()).unwrap();
        let mut n = sample_prompt();
        m.apply(&mut n, "local", 1_000);
        let link = n.link.clone().unwrap();
        let token = link
            .strip_prefix("https://ccd.example/p#")
            .unwrap_or_else(|| panic!("{link}"));
        let key = KeyFile::in_dir(dir.path()).read().unwrap();
        let c = key.verify(token, 1_000).unwrap();
        assert_eq!(
            (c.m.as_str(), c.s.as_str(), c.p.as_str(), c.exp),
            ("local", "9b1d4c2e-7a3f", "5f1c", 601_000)
        );
        // The nonce differs each time.
        let mut again = sample_prompt();
        m.apply(&mut again, "local", 1_000);
        assert_ne!(again.link, n.link);
        // No prompt id: the link is left as it was.
        let mut done = sample_prompt();
        done.prompt_id = None;
        done.link = Some("https://ccd.example/#/s/9b1d4c2e-7a3f".into());
        m.apply(&mut done, "local", 1_000);
        assert_eq!(
            done.link.as_deref(),
            Some("https://ccd.example/#/s/9b1d4c2e-7a3f")
        );
        // A longer life than allowed is cut to the bound.
        let long = crate::NotifyConfig {
            web_link_secs: MAX_TTL_SECS * 10,
            ..on
        };
        let mut n = sample_prompt();
        Minter::new(&long, dir.path())
            .unwrap()
            .apply(&mut n, "local", 0);
        let token = n.link.unwrap().split_once('#').unwrap().1.to_string();
        assert_eq!(
            key.verify(&token, 0).unwrap().exp,
            MAX_TTL_SECS as i64 * 1000
        );
    }
}
