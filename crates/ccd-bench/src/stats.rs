//! Percentiles of measured samples, one rule for every figure the
//! benchmarks print.

/// The `f` quantile (0 < f ≤ 1) of `sorted` (ascending, not empty) by
/// nearest rank: the smallest sample with at least a fraction `f` of all
/// at or below it. Of 100 samples p99 is the 99th, not the slowest; of 10,
/// p90 is the 9th.
pub fn nearest_rank<T: Copy>(sorted: &[T], f: f64) -> T {
    let rank = (sorted.len() as f64 * f).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::nearest_rank;

    #[test]
    fn quantiles_are_nearest_rank() {
        let hundred: Vec<u32> = (1..=100).collect();
        let q = |f| nearest_rank(&hundred, f);
        assert_eq!((q(0.5), q(0.9), q(0.99), q(1.0)), (50, 90, 99, 100));
        let ten: Vec<u32> = (1..=10).collect();
        let q = |f| nearest_rank(&ten, f);
        assert_eq!((q(0.5), q(0.9), q(0.99)), (5, 9, 10));
        assert_eq!(nearest_rank(&[7], 0.5), 7);
        assert_eq!(nearest_rank(&[7], 0.99), 7);
    }
}
