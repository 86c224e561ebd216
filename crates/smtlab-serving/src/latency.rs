//! Latency percentiles, shared by both load generators' reports.

use serde::Serialize;

/// Latency percentiles, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Latency {
    /// The percentiles of a histogram of µs (all zero when it is empty).
    pub fn from_histogram(h: &hdrhistogram::Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let q = |q: f64| h.value_at_quantile(q) as f64;
        Latency {
            mean: h.mean(),
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p999: q(0.999),
            max: h.max() as f64,
        }
    }
}
