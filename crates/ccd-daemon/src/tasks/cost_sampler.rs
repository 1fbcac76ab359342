//! The cost sampler: refreshes the cost board ([`crate::cost::CostBoard`])
//! while any session on the machine is live, at the pace the board's
//! module doc describes (`cost_interval` while the memory budget is on or a
//! client asked lately, else [`SLOW_INTERVAL`]; with nothing live, on the
//! next event). Started by the server, handed the board, a roots function,
//! the event receiver and the shutdown flag.

use crate::cost::{CostBoard, SLOW_INTERVAL};
use ccd_protocol::methods::events::Event;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, watch};

/// With no live session, the sampler looks again after this even if no
/// event woke it.
const IDLE_RECHECK: Duration = Duration::from_secs(60);

/// The sampler: runs until `stop` turns true. `roots` names every live
/// session's process now; `always_fast`: the memory budget is on (it needs
/// fresh figures whoever looks).
pub async fn run(
    board: Arc<CostBoard>,
    interval: Duration,
    always_fast: bool,
    roots: impl Fn() -> Vec<u32> + Send + 'static,
    mut wake: broadcast::Receiver<Event>,
    mut stop: watch::Receiver<bool>,
) {
    tracing::debug!(interval_ms = interval.as_millis() as u64, "cost sampler on");
    loop {
        let now = roots();
        let now_empty = now.is_empty();
        let pause = if now_empty {
            IDLE_RECHECK
        } else {
            let b = board.clone();
            let started = Instant::now();
            let roots_n = now.len();
            if tokio::task::spawn_blocking(move || b.sample_blocking(&now, true))
                .await
                .is_err()
            {
                tracing::warn!("a cost sample failed");
            }
            tracing::trace!(
                roots = roots_n,
                took_us = started.elapsed().as_micros() as u64,
                "cost sample"
            );
            board.ticked();
            if always_fast || board.watched() {
                interval
            } else {
                SLOW_INTERVAL.max(interval)
            }
        };
        let idle = now_empty;
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            // A client asked after a quiet spell: sample now.
            _ = board.asked_again(), if pause > interval => {}
            // With nothing live, any event (a session appeared) is worth a
            // look; while sessions are live the period rules.
            r = wake.recv(), if idle => {
                if matches!(r, Err(broadcast::error::RecvError::Closed)) {
                    return;
                }
            }
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ticks seen on `ticks` within `d`.
    async fn ticks_within(ticks: &mut watch::Receiver<u64>, d: Duration) -> u32 {
        let mut n = 0;
        let deadline = tokio::time::Instant::now() + d;
        while tokio::time::timeout_at(deadline, ticks.changed())
            .await
            .is_ok()
        {
            n += 1;
        }
        n
    }

    #[tokio::test]
    async fn the_sampler_is_slow_until_a_client_asks_and_fast_with_a_budget() {
        let board = Arc::new(CostBoard::default());
        let mut ticks = board.ticks();
        let (stop_tx, stop) = watch::channel(false);
        let hub = broadcast::channel::<Event>(4).0;
        let me = std::process::id();
        let task = tokio::spawn(run(
            board.clone(),
            Duration::from_millis(50),
            false,
            move || vec![me],
            hub.subscribe(),
            stop,
        ));
        // The first tick, then the slow period (a minute).
        let n = ticks_within(&mut ticks, Duration::from_millis(600)).await;
        assert!(n <= 1, "{n} ticks before anyone asked");
        // A client asks: sampled at once, then every 50 ms.
        board.asked();
        let n = ticks_within(&mut ticks, Duration::from_millis(1500)).await;
        assert!(n >= 5, "{n} ticks after an ask");
        assert!(!board.get([me]).is_empty());
        stop_tx.send(true).unwrap();
        task.await.unwrap();

        // With the budget on, fast from the start.
        let board = Arc::new(CostBoard::default());
        let mut ticks = board.ticks();
        let (stop_tx, stop) = watch::channel(false);
        let task = tokio::spawn(run(
            board.clone(),
            Duration::from_millis(50),
            true,
            move || vec![me],
            hub.subscribe(),
            stop,
        ));
        let n = ticks_within(&mut ticks, Duration::from_millis(1500)).await;
        assert!(n >= 5, "{n} ticks with a budget");
        stop_tx.send(true).unwrap();
        task.await.unwrap();
    }
}
