//! The screen model's parse beside the stream (see the parent module's
//! doc): batches taken from the backlog and applied under the model lock,
//! the parser thread's step, parsing on demand (`catch_up`, a redraw's
//! catch-up) and the waits for new output or a state change.

use super::*;

/// Feed `run` (consecutive chunks of the stream) to `screen` in one call,
/// and empty it.
fn process_run(screen: &mut Screen, run: &mut Vec<&[u8]>) {
    match run.as_slice() {
        [] => {}
        [one] => screen.process(one),
        many => screen.process(&many.concat()),
    }
    run.clear();
}

impl Session {
    /// Wake the parser (the output ended).
    pub(crate) fn wake_parser(&self) {
        drop(self.lock());
        self.work.notify_all();
    }

    /// The items past what the model has applied, up to [`PARSE_BATCH`]
    /// bytes (at least one item); `None` when there are none.
    pub(super) fn take_batch(&self, g: &Inner) -> Option<Batch> {
        let applied = self.applied.load(Ordering::Acquire);
        let first = applied.max(g.backlog_front);
        let skip = usize::try_from(first - g.backlog_front).unwrap_or(usize::MAX);
        if skip >= g.backlog.len() {
            return None;
        }
        let mut bytes = 0;
        let items = g
            .backlog
            .iter()
            .skip(skip)
            .take_while(|p| {
                let first = bytes == 0;
                if let Pending::Bytes(_, c) = p {
                    bytes += c.len();
                }
                first || bytes <= PARSE_BATCH
            })
            .cloned()
            .collect();
        Some(Batch(first, items))
    }

    /// Feed `batch` to the model (the items it has not applied yet), then
    /// remove what is applied from the backlog. Model lock, then session
    /// lock: never both.
    pub(super) fn apply_batch(&self, batch: Batch) {
        self.apply_with(self.model(), batch);
    }

    /// [`Session::apply_batch`] with the model lock already taken.
    pub(super) fn apply_with(&self, mut m: MutexGuard<'_, Model>, Batch(first, items): Batch) {
        let applied = {
            // The parse's speed is its CPU time (the thread's, not the wall
            // clock's: a busy machine delays the parser, not a parse on
            // demand in a reader's thread), sampled on batches big enough
            // to time.
            let total: usize = items
                .iter()
                .map(|p| match p {
                    Pending::Bytes(_, c) => c.len(),
                    Pending::Resize(_) => 0,
                })
                .sum();
            let t0 = (total >= RATE_SAMPLE_MIN).then(thread_cpu).flatten();
            let mut bytes = 0usize;
            // Consecutive chunks are parsed as one (at most a batch and a
            // read): the model steps over the lines of a flood that scroll
            // out within it (`ccd_screen::lane`), which chunk by chunk it
            // would have to write.
            let mut run: Vec<&[u8]> = Vec::new();
            for (n, p) in (first..).zip(&items) {
                if n < m.applied {
                    continue;
                }
                match p {
                    Pending::Bytes(seq, c) => {
                        run.push(c);
                        m.parsed = seq + c.len() as u64;
                        bytes += c.len();
                    }
                    Pending::Resize(size) => {
                        process_run(&mut m.screen, &mut run);
                        m.screen.resize(size.rows, size.cols);
                    }
                }
                m.applied = n + 1;
            }
            process_run(&mut m.screen, &mut run);
            if let (true, Some(t0), Some(t1)) = (bytes > 0, t0, t0.and_then(|_| thread_cpu())) {
                let secs = t1.saturating_sub(t0).as_secs_f64();
                let keep = (-(bytes as f64) / RATE_HALF_LIFE).exp2();
                m.rate_bytes = m.rate_bytes * keep + bytes as f64;
                m.rate_secs = m.rate_secs * keep + secs;
                if m.rate_secs > 0.0 {
                    let per_goal = m.rate_bytes / m.rate_secs * CATCH_UP_GOAL.as_secs_f64();
                    let limit = (per_goal as usize).clamp(BACKLOG_MIN, BACKLOG_CAP);
                    self.backlog_limit
                        .store(limit.min(self.backlog_max), Ordering::Relaxed);
                }
            }
            self.parsed.store(m.parsed, Ordering::Release);
            self.applied.store(m.applied, Ordering::Release);
            let applied = m.applied;
            drop(m);
            applied
        };
        let mut g = self.lock();
        while g.backlog_front < applied {
            let Some(p) = g.backlog.pop_front() else {
                break;
            };
            g.backlog_front += 1;
            if let Pending::Bytes(_, c) = p {
                g.backlog_bytes -= c.len();
            }
        }
        let wake = g.reader_waits;
        drop(g);
        if wake {
            self.room.notify_one();
        }
    }

    /// The parser thread's step: parse what the backlog holds (up to
    /// [`PARSE_BATCH`]) into the model. Waits for work, and while the
    /// stream flows (a chunk within [`DEFER_QUIET`]), for it to pause: a
    /// burst up to the backlog's cap is relayed first and parsed after,
    /// the CPU going to the relay meanwhile (anyone who needs the model
    /// sooner parses on demand). A longer flood meets the cap: the reader
    /// waits for room, and the parser parses beside the stream until the
    /// backlog is down to half the cap (`paced`), then defers again.
    /// With nothing to parse it waits up to `idle_wait` for work (`None`:
    /// returns at once) and then says it is caught up. [`ParseStep::Done`]
    /// once the output ended and all of it is parsed, or the holder stops.
    pub(crate) fn parse_step(&self, mut idle_wait: Option<Duration>) -> ParseStep {
        let (batch, backlog) = {
            let mut g = self.lock();
            loop {
                let ending = g.output_eof || self.stopping();
                if let Some(b) = self.take_batch(&g) {
                    let quiet = g.last_chunk.elapsed();
                    let half = self.backlog_limit.load(Ordering::Relaxed) / 2;
                    if g.backlog_bytes < half {
                        g.paced = false;
                    }
                    let defer = !ending
                        && quiet < DEFER_QUIET
                        && !g.paced
                        && g.redraws_waiting == 0
                        && !g.reader_waits;
                    if !defer {
                        g.parser_waits = false;
                        g.parser_defers = false;
                        break (b, g.backlog_bytes);
                    }
                    g.parser_waits = true;
                    g.parser_defers = true;
                    g = self
                        .work
                        .wait_timeout(g, DEFER_QUIET - quiet)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    continue;
                }
                if ending {
                    return ParseStep::Done;
                }
                let Some(wait) = idle_wait.take() else {
                    return ParseStep::CaughtUp;
                };
                g.parser_waits = true;
                g.parser_defers = false;
                g = self
                    .work
                    .wait_timeout(g, wait)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
        };
        self.apply_batch(batch);
        ParseStep::Parsed { backlog }
    }

    /// Parse on demand, in the calling thread, until the model has taken
    /// every backlog item `done` does not accept (with the session lock).
    /// Bounded: the backlog is.
    pub(super) fn parse_until(&self, mut done: impl FnMut(&Self, &Inner) -> bool) {
        loop {
            let g = self.lock();
            if done(self, &g) {
                return;
            }
            let batch = self.take_batch(&g);
            drop(g);
            match batch {
                Some(b) => self.apply_batch(b),
                // Everything is taken by a parse in progress: wait for it.
                None => drop(self.model()),
            }
        }
    }

    /// Parse on demand until the model has everything read from the PTY
    /// (and every resize) before the call.
    pub(crate) fn catch_up(&self) {
        let target = {
            let g = self.lock();
            g.backlog_front + g.backlog.len() as u64
        };
        self.parse_until(|s, _| s.applied.load(Ordering::Acquire) >= target);
    }

    /// The session and model locks, with at most the seed cap of the
    /// stream left unparsed: parses on demand, while the reader keeps the
    /// backlog within the seed cap (so this converges however fast the
    /// output comes).
    pub(super) fn caught_up_for_redraw(&self) -> (MutexGuard<'_, Inner>, MutexGuard<'_, Model>) {
        {
            let mut g = self.lock();
            g.redraws_waiting += 1;
            // A parser deferring its work parses it now; one waiting for
            // work has none: left asleep (an idle session's redraw wakes
            // no thread).
            let untaken =
                self.applied.load(Ordering::Acquire) < g.backlog_front + g.backlog.len() as u64;
            if untaken && std::mem::take(&mut g.parser_waits) {
                self.work.notify_one();
            }
        }
        loop {
            self.parse_until(|s, g| g.seq - s.parsed.load(Ordering::Acquire) <= s.seed_cap as u64);
            let mut g = self.lock();
            let m = self.model();
            if g.seq - m.parsed <= self.seed_cap as u64 {
                g.redraws_waiting -= 1;
                if g.reader_waits {
                    self.room.notify_one();
                }
                return (g, m);
            }
        }
    }

    /// Wait (at most `timeout`) for output past stream offset `since`, the
    /// exit, or a stop.
    pub(crate) fn wait_output(&self, since: u64, timeout: Duration) {
        self.lock().output_watch = true;
        let (g, _) = self.wait_for(timeout, |g| g.exit.is_some() || g.seq != since);
        drop(g);
    }

    /// Wait until `pred` holds on the state, or `timeout`. Returns the final
    /// guard and whether `pred` held.
    pub(crate) fn wait_for<'a>(
        &'a self,
        timeout: Duration,
        mut pred: impl FnMut(&Inner) -> bool,
    ) -> (MutexGuard<'a, Inner>, bool) {
        let deadline = Instant::now() + timeout;
        let mut g = self.lock();
        loop {
            if pred(&g) {
                return (g, true);
            }
            let now = Instant::now();
            if now >= deadline || self.stopping() {
                return (g, false);
            }
            let (ng, _) = self
                .changed
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(|p| p.into_inner());
            g = ng;
        }
    }
}
