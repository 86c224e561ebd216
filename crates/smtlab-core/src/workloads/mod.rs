//! Built-in workloads, one file each, behind [`crate::workload::Workload`].

mod alloc_common;
pub mod allocprobe;
pub mod cache_scratch;
pub mod cache_thrash;
pub mod jbb;
pub mod larson;
pub mod latency;
pub mod mandel;
pub mod mstress;
pub mod parfib;
mod pool;
pub mod spin;
pub mod stream;
pub mod sumeuler;
pub mod xmalloc;
