//! The store as the measurement loop's [`SampleLog`]: where every sample is
//! committed as it is measured, and found again when a run is resumed.

use smtlab_types::{Sample, SampleLog};

use crate::error::StoreError;
use crate::store::Store;

/// The engine commits every sample here as it is measured, and a resumed
/// run finds the samples already committed.
impl SampleLog for Store {
    type Error = StoreError;

    fn samples(&self, point_id: i64) -> Result<Vec<Sample>, StoreError> {
        Store::samples(self, point_id)
    }

    fn add_sample(&self, point_id: i64, sample: &Sample) -> Result<(), StoreError> {
        Store::add_sample(self, point_id, sample).map(|_| ())
    }

    fn set_outliers(&self, point_id: i64, seqs: &[usize]) -> Result<(), StoreError> {
        Store::set_outliers(self, point_id, seqs)
    }
}
