//! Outlier flags by modified z-score (flagged, never removed). Uses
//! `descriptive`.

use crate::descriptive::mean_of;

/// Modified z-score above which a sample is flagged (Iglewicz & Hoaglin
/// 1993, "How to Detect and Handle Outliers").
pub const OUTLIER_Z: f64 = 3.5;

/// Positions in `sorted` of the outliers (see [`summarize`]).
pub(crate) fn outlier_flags(sorted: &[f64], median: f64, mad: f64) -> Vec<usize> {
    // Scale such that score = (x - median) / scale.
    let scale = if mad > 0.0 {
        mad / 0.6745
    } else {
        let mean_ad = mean_of(
            &sorted
                .iter()
                .map(|v| (v - median).abs())
                .collect::<Vec<_>>(),
        );
        if mean_ad == 0.0 {
            return Vec::new(); // all values equal
        }
        1.253314 * mean_ad
    };
    sorted
        .iter()
        .enumerate()
        .filter(|(_, &v)| ((v - median) / scale).abs() > OUTLIER_Z)
        .map(|(i, _)| i)
        .collect()
}
