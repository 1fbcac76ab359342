//! Whether clients are asking: what paces the daemon's background readers
//! (the usage reader, the cost sampler) between a fast period while a
//! client asked within a window and a slow one otherwise.
//!
//! **Who owns what.** A board (`UsageBoard`, `CostBoard`) owns one
//! [`Demand`]; request handlers call [`Demand::asked`] (never blocks: a
//! short mutex and a `Notify`), the board's task reads
//! [`Demand::watched`] and waits on [`Demand::asked_again`].

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long one ask keeps a reader fast (a dashboard asks every few
/// seconds; an editor's single call should not keep it fast for long).
pub const WATCHED: Duration = Duration::from_secs(120);

/// When a client last asked, within a window.
pub struct Demand {
    /// How long one ask keeps the reader fast.
    window: Duration,
    /// When a client last asked.
    at: Mutex<Option<Instant>>,
    /// Wakes a reader in its slow period when a client asks.
    again: tokio::sync::Notify,
}

impl Default for Demand {
    /// The window is [`WATCHED`].
    fn default() -> Self {
        Demand::new(WATCHED)
    }
}

impl Demand {
    /// No client asked yet; one ask keeps the reader fast for `window`.
    pub const fn new(window: Duration) -> Self {
        Demand {
            window,
            at: Mutex::new(None),
            again: tokio::sync::Notify::const_new(),
        }
    }

    /// A client asks: the window starts again, and a reader in its slow
    /// period (nobody asked within the window before) is woken.
    pub fn asked(&self) {
        let now = Instant::now();
        let before = self
            .at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(now);
        if before.is_none_or(|b| now.duration_since(b) >= self.window) {
            self.again.notify_one();
        }
    }

    /// Whether a client asked within the window.
    pub fn watched(&self) -> bool {
        self.at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|t| t.elapsed() < self.window)
    }

    /// Resolves when a client asks after a quiet spell (a wake-up sent
    /// while nobody waited is kept for the next wait).
    pub async fn asked_again(&self) {
        self.again.notified().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_ask_keeps_it_watched_for_the_window_only() {
        let d = Demand::new(Duration::from_millis(50));
        assert!(!d.watched());
        d.asked();
        assert!(d.watched());
        std::thread::sleep(Duration::from_millis(60));
        assert!(!d.watched());
    }

    #[tokio::test]
    async fn an_ask_after_a_quiet_spell_wakes_the_reader_once() {
        let d = Demand::new(Duration::from_secs(60));
        d.asked();
        // The first ask was after a quiet spell: its wake-up is kept.
        tokio::time::timeout(Duration::from_secs(1), d.asked_again())
            .await
            .expect("woken by the first ask");
        // A second ask within the window wakes nothing.
        d.asked();
        assert!(
            tokio::time::timeout(Duration::from_millis(50), d.asked_again())
                .await
                .is_err()
        );
    }
}
