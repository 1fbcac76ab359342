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

/// Smallest batch whose parse is timed for the speed estimate.
const RATE_SAMPLE_MIN: usize = 16 << 10;

/// One batch of at least [`RATE_SAMPLE_MIN`] in this many is timed: each
/// timing is two reads of the thread's CPU clock, system calls (a flood's
/// batches come every 0.1 ms; timed each, the clock took 3 % of the
/// parser's CPU in `perf`). The first such batch is timed.
const RATE_SAMPLE_EVERY: u32 = 8;

/// Bytes after which an old parse-speed sample weighs half.
const RATE_HALF_LIFE: f64 = 8.0 * 1024.0 * 1024.0;

/// The parse's speed: bytes and CPU seconds of the timed batches, each
/// sample's weight halved every [`RATE_HALF_LIFE`] bytes parsed after it
/// (timed or not).
#[derive(Debug, Clone)]
pub(super) struct ParseRate {
    bytes: f64,
    secs: f64,
    /// Batches big enough to time since the last one timed.
    untimed_batches: u32,
    /// Bytes parsed since the last batch timed.
    untimed_bytes: usize,
}

impl Default for ParseRate {
    fn default() -> Self {
        Self {
            bytes: 0.0,
            secs: 0.0,
            untimed_batches: RATE_SAMPLE_EVERY - 1,
            untimed_bytes: 0,
        }
    }
}

impl ParseRate {
    /// Whether to time the parse of a batch of `bytes` (then give its time
    /// to [`ParseRate::parsed`]).
    fn time(&mut self, bytes: usize) -> bool {
        if bytes < RATE_SAMPLE_MIN {
            return false;
        }
        self.untimed_batches += 1;
        let time = self.untimed_batches >= RATE_SAMPLE_EVERY;
        if time {
            self.untimed_batches = 0;
        }
        time
    }

    /// `bytes` parsed, in `secs` of CPU if timed: the speed now, bytes per
    /// second, once there is one.
    fn parsed(&mut self, bytes: usize, secs: Option<f64>) -> Option<f64> {
        self.untimed_bytes = self.untimed_bytes.saturating_add(bytes);
        if let Some(secs) = secs.filter(|_| bytes > 0) {
            let keep = (-(self.untimed_bytes as f64) / RATE_HALF_LIFE).exp2();
            self.bytes = self.bytes * keep + bytes as f64;
            self.secs = self.secs * keep + secs;
            self.untimed_bytes = 0;
        }
        (self.secs > 0.0).then(|| self.bytes / self.secs)
    }
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
            // demand in a reader's thread), sampled on some of the batches
            // big enough to time (`ParseRate`).
            let total: usize = items
                .iter()
                .map(|p| match p {
                    Pending::Bytes(_, c) => c.len(),
                    Pending::Resize(_) => 0,
                })
                .sum();
            let t0 = m.rate.time(total).then(thread_cpu).flatten();
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
            let secs = t0.and_then(|t0| Some(thread_cpu()?.saturating_sub(t0).as_secs_f64()));
            let speed = m.rate.parsed(bytes, secs);
            // The cap moves with each new sample.
            if let Some(speed) = speed.filter(|_| secs.is_some()) {
                let per_goal = speed * CATCH_UP_GOAL.as_secs_f64();
                let limit = (per_goal as usize).clamp(BACKLOG_MIN, BACKLOG_CAP);
                self.backlog_limit
                    .store(limit.min(self.backlog_max), Ordering::Relaxed);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_big_batch_in_eight_is_timed_the_first_included() {
        let mut rate = ParseRate::default();
        let timed: Vec<bool> = (0..17).map(|_| rate.time(32 << 10)).collect();
        assert_eq!(timed.iter().filter(|&&t| t).count(), 3);
        let mut rate = ParseRate::default();
        assert!(!rate.time(RATE_SAMPLE_MIN - 1), "too small to time");
        assert!(rate.time(RATE_SAMPLE_MIN));
        assert_eq!(
            rate.parsed(RATE_SAMPLE_MIN, Some(0.001)),
            Some(RATE_SAMPLE_MIN as f64 / 0.001)
        );
        let untimed = (0..RATE_SAMPLE_EVERY - 1).filter(|_| {
            let t = rate.time(32 << 10);
            rate.parsed(32 << 10, None);
            t
        });
        assert_eq!(untimed.count(), 0);
        assert!(rate.time(32 << 10), "the eighth after a sample");
    }

    #[test]
    fn the_speed_follows_a_change_within_its_half_life() {
        let mut rate = ParseRate::default();
        let batch = 32usize << 10;
        let mut speed = None;
        // 100 MB/s for 64 MiB, then 10 MB/s.
        for (mb_per_s, mib) in [(100.0, 64), (10.0, 0), (10.0, 24)] {
            for _ in 0..(mib << 20) / batch {
                let secs = rate.time(batch).then_some(batch as f64 / (mb_per_s * 1e6));
                speed = rate.parsed(batch, secs);
            }
        }
        let speed = speed.expect("timed") / 1e6;
        // Three half-lives of the new speed: within 1/8 of it, in weight.
        assert!((10.0..16.0).contains(&speed), "{speed} MB/s");
        // Untimed batches alone give no speed.
        assert_eq!(ParseRate::default().parsed(batch, None), None);
    }
}
