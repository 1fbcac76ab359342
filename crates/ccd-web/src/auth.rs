//! Who is logged in: the session cookies issued for a valid token, and the
//! rate limit on failed token attempts.
//!
//! [`Cookies`] maps a random 256-bit cookie value to the token-file
//! generation it was issued under; at most [`crate::limits::COOKIES`] are
//! kept (the oldest evicted). A cookie is honoured only while its
//! generation is the file's current one (`--revoke` bumps it).
//! [`Failures`] counts failed logins per client IP in a sliding minute.
//!
//! Both are plain data behind a `std::sync::Mutex` held for a map lookup
//! only (never across an await or I/O); owned by the server's shared state.

use crate::limits;
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The cookie's name.
pub const COOKIE: &str = "ccd_web";

#[derive(Debug, Default)]
pub struct Cookies {
    inner: Mutex<CookieMap>,
}

#[derive(Debug, Default)]
struct CookieMap {
    /// value → (generation, issue order)
    by_value: HashMap<String, (u64, u64)>,
    /// Issue order, oldest first (values).
    order: VecDeque<String>,
    issued: u64,
}

impl Cookies {
    /// A new cookie value for `generation`; the oldest is evicted past the
    /// bound.
    pub fn issue(&self, generation: u64) -> String {
        let value = crate::token::new_secret();
        let mut m = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        m.issued += 1;
        let n = m.issued;
        m.by_value.insert(value.clone(), (generation, n));
        m.order.push_back(value.clone());
        while m.by_value.len() > limits::COOKIES {
            let Some(old) = m.order.pop_front() else {
                break;
            };
            m.by_value.remove(&old);
        }
        value
    }

    /// Whether `value` is a cookie issued under `generation`. One of an
    /// older generation is forgotten.
    pub fn valid(&self, value: &str, generation: u64) -> bool {
        let mut m = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        match m.by_value.get(value) {
            Some((g, _)) if *g == generation => true,
            Some(_) => {
                m.by_value.remove(value);
                m.order.retain(|v| v != value);
                false
            }
            None => false,
        }
    }

    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_value
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Failed token attempts per client IP within the last minute.
#[derive(Debug, Default)]
pub struct Failures {
    inner: Mutex<HashMap<IpAddr, VecDeque<Instant>>>,
}

impl Failures {
    /// Whether `ip` has used up its failed attempts for now.
    pub fn blocked(&self, ip: IpAddr, now: Instant) -> bool {
        let mut m = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        match m.get_mut(&ip) {
            Some(q) => {
                prune(q, now);
                q.len() >= limits::FAILED_LOGINS_PER_MINUTE
            }
            None => false,
        }
    }

    /// Counts a failed attempt of `ip`.
    pub fn record(&self, ip: IpAddr, now: Instant) {
        let mut m = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() >= limits::FAILURE_IPS && !m.contains_key(&ip) {
            // Bounded: forget the addresses whose window has passed; if
            // every one is recent, the map is full of attackers and the
            // newest is counted in place of one of them.
            m.retain(|_, q| {
                prune(q, now);
                !q.is_empty()
            });
            if m.len() >= limits::FAILURE_IPS {
                if let Some(k) = m.keys().next().copied() {
                    m.remove(&k);
                }
            }
        }
        let q = m.entry(ip).or_default();
        prune(q, now);
        q.push_back(now);
        while q.len() > limits::FAILED_LOGINS_PER_MINUTE {
            q.pop_front();
        }
    }
}

fn prune(q: &mut VecDeque<Instant>, now: Instant) {
    while q
        .front()
        .is_some_and(|t| now.saturating_duration_since(*t) >= Duration::from_secs(60))
    {
        q.pop_front();
    }
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie_value<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k.trim() == name).then(|| v.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_hold_their_generation_and_the_oldest_go_past_the_bound() {
        let c = Cookies::default();
        let first = c.issue(0);
        assert!(c.valid(&first, 0));
        assert!(!c.valid(&first, 1), "a revoke voids it");
        assert!(!c.valid(&first, 0), "and it is forgotten");
        let second = c.issue(0);
        for _ in 0..limits::COOKIES {
            c.issue(0);
        }
        assert_eq!(c.len(), limits::COOKIES);
        assert!(!c.valid(&second, 0), "the oldest was evicted");
        assert!(!c.valid("nonsense", 0));
    }

    #[test]
    fn failed_logins_block_an_address_for_a_minute() {
        let f = Failures::default();
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let other: IpAddr = "127.0.0.2".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..limits::FAILED_LOGINS_PER_MINUTE {
            assert!(!f.blocked(ip, t0));
            f.record(ip, t0);
        }
        assert!(f.blocked(ip, t0));
        assert!(!f.blocked(other, t0));
        assert!(!f.blocked(ip, t0 + Duration::from_secs(61)));
    }

    #[test]
    fn the_failure_map_is_bounded() {
        let f = Failures::default();
        let t0 = Instant::now();
        for i in 0..(limits::FAILURE_IPS as u32 + 10) {
            f.record(IpAddr::from(i.to_be_bytes()), t0);
        }
        assert!(f.inner.lock().unwrap().len() <= limits::FAILURE_IPS);
    }

    #[test]
    fn cookie_header_values() {
        assert_eq!(cookie_value("a=1; ccd_web=xyz; b=2", COOKIE), Some("xyz"));
        assert_eq!(cookie_value("ccd_webx=1", COOKIE), None);
        assert_eq!(cookie_value("", COOKIE), None);
    }
}
