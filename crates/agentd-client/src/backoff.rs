//! Exponential backoff with jitter, the one retry schedule of the tree:
//! model requests, push and bridge deliveries.

use std::ops::RangeInclusive;
use std::time::Duration;

/// `base · 2^retry`, capped at `max`, then multiplied by a random factor
/// from `jitter` so that clients failing together do not retry together.
#[derive(Clone, Debug, PartialEq)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
    /// The range of the random factor; `1.0..=1.0` for none.
    pub jitter: RangeInclusive<f64>,
}

impl Backoff {
    /// Jittered to between half and all of the capped delay: never above
    /// `max` (the "equal jitter" of the AWS architecture blog).
    pub fn equal_jitter(base: Duration, max: Duration) -> Self {
        Self { base, max, jitter: 0.5..=1.0 }
    }

    /// Jittered by ±`spread` (a fraction) around the capped delay.
    pub fn spread(base: Duration, max: Duration, spread: f64) -> Self {
        Self { base, max, jitter: (1.0 - spread).max(0.0)..=1.0 + spread }
    }

    /// The wait before retry number `retry` (the first retry is 0).
    pub fn delay(&self, retry: u32) -> Duration {
        let full = self.base.saturating_mul(2u32.saturating_pow(retry.min(31))).min(self.max);
        let (lo, hi) = (*self.jitter.start(), *self.jitter.end());
        let factor = lo + (hi - lo) * fastrand::f64();
        Duration::try_from_secs_f64(full.as_secs_f64() * factor).unwrap_or(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_jitter_grows_is_capped_and_stays_within_half_and_all() {
        let (base, max) = (Duration::from_millis(100), Duration::from_secs(1));
        let b = Backoff::equal_jitter(base, max);
        for retry in 0..40 {
            let full = (base * 2u32.pow(retry.min(10))).min(max);
            let d = b.delay(retry);
            assert!(d >= full / 2 && d <= full, "{retry}: {d:?}");
        }
        assert!(b.delay(u32::MAX) <= max);
    }

    #[test]
    fn spread_doubles_caps_and_jitters_both_ways() {
        let b = Backoff::spread(Duration::from_millis(1000), Duration::from_secs(300), 0.2);
        let (mut below, mut above) = (false, false);
        for _ in 0..200 {
            let first = b.delay(0).as_millis();
            assert!((800..=1200).contains(&first), "{first}");
            below |= first < 1000;
            above |= first > 1000;
            let third = b.delay(2).as_millis();
            assert!((3200..=4800).contains(&third), "{third}");
            let late = b.delay(39).as_millis();
            assert!((240_000..=360_000).contains(&late), "{late}");
            let huge = b.delay(u32::MAX).as_millis();
            assert!((240_000..=360_000).contains(&huge), "{huge}");
        }
        assert!(below && above, "the delays are spread, not constant");
    }

    #[test]
    fn no_jitter_is_exact() {
        let b = Backoff { base: Duration::from_millis(10), max: Duration::from_secs(1), jitter: 1.0..=1.0 };
        assert_eq!(b.delay(3), Duration::from_millis(80));
    }
}
