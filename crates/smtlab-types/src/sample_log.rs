//! Where the measurement loop commits samples: a contract between the
//! engine (`smtlab-measure`), which calls it, and the store
//! (`smtlab-store`), which implements it. Here, below both, so that neither
//! depends on the other: the store (and everything that reads it) does not
//! compile the engine, nor the engine the store.

use crate::sample::Sample;

/// Where samples are committed as they are measured, and found again when
/// a run is resumed.
pub trait SampleLog {
    type Error;

    /// Every sample of a point committed so far, by sequence number.
    fn samples(&self, point_id: i64) -> Result<Vec<Sample>, Self::Error>;

    /// Commit one sample; when this returns, a crash cannot lose it.
    fn add_sample(&self, point_id: i64, sample: &Sample) -> Result<(), Self::Error>;

    /// Flag the outliers among a point's measured samples by seq.
    fn set_outliers(&self, point_id: i64, seqs: &[usize]) -> Result<(), Self::Error>;
}
