//! Which sessions an attached person is looking at: the clients'
//! `session.focus` (their terminals' focus reports) folded into one fact a
//! session, published on the hub as `session.focus` events when it
//! changes — the notification rules (`tasks::notify`, and `ccd notify`
//! subscribed to this machine) hold a notification back while it is true.
//!
//! [`FocusCounts`] (the hub's, under its lock): how many connections say a
//! session is focused; a session is focused while at least one does, and
//! only a change of that is published. [`ConnFocus`] (each connection's):
//! the one session this connection says it has the focus of, taken back
//! when it says otherwise, names another session, or ends (its drop: a
//! client that detaches or goes away counts as not focused).
//!
//! Bounds: a connection names at most one session at a time, so the
//! counts hold at most one entry per connection; a connection's changes
//! are rate bound ([`FOCUS_CHANGES_PER_SEC`] a second, a burst of as
//! many): one past it is refused (`invalid_params`, and the state stays
//! as last accepted), so a client flipping its focus in a loop publishes
//! at most that many events a second. Saying the same again is not a
//! change and costs nothing.

use super::EventHub;
use ccd_protocol::methods::attach::FOCUS_CHANGES_PER_SEC;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How many connections say each session is focused.
#[derive(Debug, Default)]
pub struct FocusCounts {
    counts: HashMap<String, usize>,
}

impl FocusCounts {
    /// One more connection says `session` is focused: true when it became
    /// focused.
    pub fn add(&mut self, session: &str) -> bool {
        let n = self.counts.entry(session.to_string()).or_insert(0);
        *n += 1;
        *n == 1
    }

    /// One connection no longer says so: true when it is no longer
    /// focused.
    pub fn remove(&mut self, session: &str) -> bool {
        match self.counts.get_mut(session) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            Some(_) => {
                self.counts.remove(session);
                true
            }
            None => false,
        }
    }

    /// Whether `session` is focused now.
    pub fn is_focused(&self, session: &str) -> bool {
        self.counts.contains_key(session)
    }
}

/// Why a change was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FocusError {
    #[error("more than {FOCUS_CHANGES_PER_SEC} focus changes a second from this connection; this one is refused")]
    TooFast,
}

/// One connection's focus (see the module doc).
#[derive(Debug)]
pub struct ConnFocus {
    hub: EventHub,
    /// The session this connection says it has the focus of.
    session: Option<String>,
    /// The rate bound's tokens (up to [`FOCUS_CHANGES_PER_SEC`]) and when
    /// they were last counted.
    tokens: f64,
    counted_at: Instant,
}

impl ConnFocus {
    /// A connection that has said nothing yet (not focused).
    pub fn new(hub: EventHub) -> Self {
        Self {
            hub,
            session: None,
            tokens: f64::from(FOCUS_CHANGES_PER_SEC),
            counted_at: Instant::now(),
        }
    }

    /// The connection says `session`'s terminal is `focused` (at `now`).
    pub fn set(&mut self, session: &str, focused: bool, now: Instant) -> Result<(), FocusError> {
        let names_it = self.session.as_deref() == Some(session);
        // Saying it again, or unfocusing a session it does not name: no
        // change.
        if focused == names_it {
            return Ok(());
        }
        self.take_token(now)?;
        if let Some(old) = self.session.take() {
            self.hub.focus_change(&old, false);
        }
        if focused {
            self.hub.focus_change(session, true);
            self.session = Some(session.to_string());
        }
        Ok(())
    }

    fn take_token(&mut self, now: Instant) -> Result<(), FocusError> {
        let rate = f64::from(FOCUS_CHANGES_PER_SEC);
        let elapsed = now.saturating_duration_since(self.counted_at);
        self.tokens = (self.tokens + elapsed.as_secs_f64() * rate).min(rate);
        self.counted_at = now;
        if self.tokens < 1.0 {
            return Err(FocusError::TooFast);
        }
        self.tokens -= 1.0;
        Ok(())
    }
}

impl Drop for ConnFocus {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            self.hub.focus_change(&s, false);
        }
    }
}

/// The time one token takes to come back.
pub fn token_period() -> Duration {
    Duration::from_secs(1) / FOCUS_CHANGES_PER_SEC
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccd_protocol::methods::events::{Event, EventKind};
    use tokio::sync::broadcast::error::TryRecvError;

    fn drain(rx: &mut tokio::sync::broadcast::Receiver<Event>) -> Vec<(String, bool)> {
        let mut v = Vec::new();
        loop {
            match rx.try_recv() {
                Ok(e) if e.kind == EventKind::Focus => {
                    v.push((e.session.unwrap_or_default(), e.focused.unwrap_or(false)))
                }
                Ok(_) => {}
                Err(TryRecvError::Lagged(_)) => {}
                Err(_) => return v,
            }
        }
    }

    #[test]
    fn a_session_is_focused_while_one_connection_says_so() {
        let hub = EventHub::default();
        let mut rx = hub.subscribe();
        let now = Instant::now();
        let mut a = ConnFocus::new(hub.clone());
        let mut b = ConnFocus::new(hub.clone());
        a.set("s1", true, now).unwrap();
        b.set("s1", true, now).unwrap();
        assert_eq!(drain(&mut rx), vec![("s1".into(), true)]);
        a.set("s1", false, now).unwrap();
        assert!(drain(&mut rx).is_empty(), "b still has it");
        assert!(hub.is_focused("s1"));
        // A connection that ends counts as not focused.
        drop(b);
        assert_eq!(drain(&mut rx), vec![("s1".into(), false)]);
        assert!(!hub.is_focused("s1"));
        // Naming another session takes the first back.
        a.set("s1", true, now).unwrap();
        a.set("s2", true, now).unwrap();
        assert_eq!(
            drain(&mut rx),
            vec![
                ("s1".into(), true),
                ("s1".into(), false),
                ("s2".into(), true)
            ]
        );
        // Unfocusing a session it does not name, or saying the same again,
        // changes nothing.
        a.set("s1", false, now).unwrap();
        a.set("s2", true, now).unwrap();
        assert!(drain(&mut rx).is_empty());
    }

    #[test]
    fn a_connection_past_the_rate_bound_is_refused_and_publishes_no_more() {
        let hub = EventHub::default();
        let mut rx = hub.subscribe();
        let now = Instant::now();
        let mut a = ConnFocus::new(hub.clone());
        let mut refused = 0;
        for i in 0..(FOCUS_CHANGES_PER_SEC * 3) {
            if a.set("s1", i % 2 == 0, now).is_err() {
                refused += 1;
            }
        }
        // The first N changes are published; every change after is
        // refused (the state stays as last accepted: not focused).
        assert_eq!(drain(&mut rx).len(), FOCUS_CHANGES_PER_SEC as usize);
        assert!(refused >= FOCUS_CHANGES_PER_SEC, "{refused}");
        assert!(!hub.is_focused("s1"));
        // Tokens come back with time.
        assert_eq!(a.set("s1", true, now), Err(FocusError::TooFast));
        assert_eq!(a.set("s1", true, now + token_period()), Ok(()));
        assert_eq!(drain(&mut rx), vec![("s1".into(), true)]);
    }
}
