//! Built-in workloads, one file each, behind [`crate::workload::Workload`].

pub mod jbb;
pub mod latency;
pub mod mandel;
pub mod parfib;
mod pool;
pub mod spin;
pub mod stream;
pub mod sumeuler;
