//! The index's top k with early stop (issue 55 §4): candidate sessions
//! verified best score bound first, the verification stopped once no
//! unread session can enter the top `limit` (see the [`super`] header).
//! The bound comes from what each record keeps besides its place: its
//! messages' best role weight, their count and their time. The same for
//! transcripts in place and for archived conversations (whose candidates
//! are verified decompressed: [`super::archives`]).

use super::{Candidates, Index, IndexSearchStats, NO_TIME};
use crate::query::{self, Query};
use crate::scan::{self, search_file, Filters, Hit, ScanStats, Source};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use time::OffsetDateTime;

impl Index {
    /// [`Index::search_with`] over the transcripts `keep` accepts (by
    /// session id and path) among a listing of `listed` transcripts that
    /// the index was last updated against in full, each trusted
    /// ([`Freshness::Trusted`](super::Freshness::Trusted)): when the
    /// index covers as many files as were listed, only the candidates'
    /// files are asked of `keep` and verified ([`Index::search_candidates`]),
    /// no searched transcript is looked up — the same hits as searching
    /// the accepted ones one by one. `None` when the index does not cover
    /// the listing or the query has no candidates to look up (the caller
    /// searches the transcripts one by one).
    pub fn search_covered(
        &self,
        listed: usize,
        keep: impl Fn(&str, &str) -> bool,
        query: &Query,
        filters: &Filters,
        now: OffsetDateTime,
        limit: usize,
    ) -> Option<(Vec<Hit>, ScanStats, IndexSearchStats)> {
        if self.covered() != listed {
            return None;
        }
        let Candidates::Records(cands) = self.candidates(query) else {
            return None;
        };
        let mut per_file: HashMap<u32, Vec<u32>> = HashMap::new();
        // Each file's verdict, asked once.
        let mut kept: HashMap<u32, bool> = HashMap::new();
        for r in cands {
            let file = self.records[r as usize].file;
            let f = &self.files[file as usize];
            // Archives are searched apart (`search_archives`).
            if f.archive.is_some() {
                continue;
            }
            if *kept
                .entry(file)
                .or_insert_with(|| keep(&f.session_id, &f.path))
            {
                per_file.entry(file).or_default().push(r);
            }
        }
        Some(self.search_candidates(&per_file, query, filters, now, limit))
    }

    /// The candidates' files verified, no other file visited (every
    /// source covered and trusted: [`Freshness::TrustedAll`]), best bound
    /// first, stopping early (see [`Index::bound`]): once `limit` sessions
    /// are verified, a session whose bound is below the `limit`-th score
    /// cannot enter the top `limit`, nor can any after it.
    pub(super) fn search_candidates(
        &self,
        per_file: &HashMap<u32, Vec<u32>>,
        query: &Query,
        filters: &Filters,
        now: OffsetDateTime,
        limit: usize,
    ) -> (Vec<Hit>, ScanStats, IndexSearchStats) {
        let mut hits = Vec::new();
        let mut stats = ScanStats::default();
        let mut istats = IndexSearchStats::default();
        let mut buf = Vec::new();
        let mut order: Vec<(RankKey, u32, &[u32])> = per_file
            .iter()
            .map(|(&id, recs)| {
                let sid = &self.files[id as usize].session_id;
                (self.bound(recs, sid, now), id, recs.as_slice())
            })
            .collect();
        order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        // The best `limit` hits' keys so far, the worst on top.
        let mut best: BinaryHeap<Reverse<RankKey>> = BinaryHeap::new();
        for (i, (bound, id, recs)) in order.iter().enumerate() {
            if limit == 0 {
                istats.unverified = order.len();
                break;
            }
            if best.len() >= limit && best.peek().is_some_and(|kth| *bound < kth.0) {
                istats.unverified = order.len() - i;
                break;
            }
            if filters.expired() {
                stats.timed_out += 1;
                continue;
            }
            let f = &self.files[*id as usize];
            istats.verified += recs.len();
            let hit = match &f.archive {
                // An archived conversation: read decompressed.
                Some(a) => {
                    let src = Source {
                        session_id: f.session_id.clone(),
                        path: a.origin.clone().into(),
                    };
                    match self
                        .verify_archived(&src, a, f.len, recs, query, filters, now, &mut stats)
                    {
                        Ok(hit) => hit,
                        Err(()) => {
                            istats.scanned += 1;
                            super::archives::scan_archived(
                                &src, a, f.len, query, filters, now, &mut stats,
                            )
                        }
                    }
                }
                None => {
                    let src = Source {
                        session_id: f.session_id.clone(),
                        path: f.path.clone().into(),
                    };
                    match self.verify(&src, recs, query, filters, now, &mut stats) {
                        Ok(hit) => hit,
                        Err(()) => {
                            istats.scanned += 1;
                            search_file(&src, query, filters, now, &mut buf, &mut stats)
                        }
                    }
                }
            };
            if let Some(h) = hit {
                best.push(Reverse(RankKey::of(h.score, h.newest, &h.session_id)));
                if best.len() > limit {
                    best.pop();
                }
                hits.push(h);
            }
        }
        scan::rank(&mut hits);
        hits.truncate(limit);
        (hits, stats, istats)
    }

    /// The best place in the ranking a session whose candidate records
    /// are `recs` can take, from the index alone: its score's bound (the
    /// best role weight among them times 1.5, a whole-word match; all
    /// their messages matching; the newest of their times, no older than
    /// [`query::score`]'s year for a session without one when any of
    /// them has no time), then that newest time (rounded up to the
    /// second), then its id. The filters only take messages away, so the
    /// bound holds under them too.
    fn bound(&self, recs: &[u32], session_id: &str, now: OffsetDateTime) -> RankKey {
        let mut weight = 0u8;
        let mut messages = 0usize;
        let mut newest = NO_TIME;
        let mut untimed = false;
        for &r in recs {
            let rec = &self.records[r as usize];
            weight = weight.max(rec.rank_weight);
            messages += usize::from(rec.messages);
            newest = newest.max(rec.time);
            untimed |= rec.time == NO_TIME;
        }
        // A time out of range (rounded past year 9999) is as new as can be.
        let newest = (newest != NO_TIME).then(|| {
            OffsetDateTime::from_unix_timestamp(newest)
                .unwrap_or(time::PrimitiveDateTime::MAX.assume_utc())
        });
        let mut age_days = newest.map_or(365.0, |t| (now - t).as_seconds_f64() / 86_400.0);
        if untimed {
            age_days = f64::min(age_days, 365.0);
        }
        let score = query::score(f64::from(weight) * 1.5, messages, age_days);
        RankKey::of(score, newest, session_id)
    }
}

/// A hit's place in [`scan::rank`]'s order, greater is better: the
/// score (never negative: its bits order as it does), then the newest
/// matching message's time, then the session id (the smaller first).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct RankKey {
    score: u64,
    newest: Option<OffsetDateTime>,
    session_id: Reverse<String>,
}

impl RankKey {
    fn of(score: f64, newest: Option<OffsetDateTime>, session_id: &str) -> Self {
        Self {
            score: score.max(0.0).to_bits(),
            newest,
            session_id: Reverse(session_id.to_string()),
        }
    }
}
