//! Built-in workloads, one file each, behind [`crate::workload::Workload`].

pub mod spin;
