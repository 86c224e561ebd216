//! The machine's topology: packages, dies, cores, PUs, caches, NUMA nodes,
//! which PUs are online and which this process may use.
//!
//! Two sources produce the same [`Topology`]: a Linux filesystem root
//! ([`sysfs`], the live machine or an extracted dump) and hwloc-style
//! synthetic descriptions ([`synthetic`]), so plans can be made for machines
//! we do not have. Both first describe the machine as flat per-PU facts
//! ([`RawTopology`]) and then share one [`assemble`](assemble::assemble)
//! step, which groups PUs into objects and numbers them the way hwloc does
//! (logical indexes in depth-first order of the containment tree, children
//! ordered by their first PU), so `L#` numbers agree with `lstopo`.
//!
//! On top of the machine, what the user writes to choose PUs:
//!
//! * [`cpu_expr`]: physical lists and likwid-style domain expressions;
//! * [`placement`]: (topology, policy, N) → an ordered list of CPUs.
//!
//! Files, bottom-up: `raw.rs` (what a source knows), `machine.rs` (the
//! objects and the questions asked of them), `assemble.rs`, then the
//! sources, `render.rs`, `cpu_expr.rs` and `placement.rs`; beside them
//! `emulation.rs` (whether the CPUs are emulated, QEMU TCG). This root only
//! declares them and re-exports their names.
//!
//! The first stage of the pipeline (`topology → plan → execute → measure →
//! store → analyse → report`): it calls nothing else in smtlab but the
//! record types (`smtlab-types`, for [`CpuSet`](smtlab_types::cpuset::CpuSet) and placement policies) and,
//! for the live machine's affinity mask, `smtlab-sys`.

mod assemble;
pub mod cpu_expr;
mod emulation;
mod machine;
pub mod placement;
mod raw;
mod render;
pub mod synthetic;
pub mod sysfs;

pub use assemble::assemble;
pub use emulation::{emulated_cpu, emulation_evidence};
pub use machine::{Cache, Core, CpuKind, Die, NumaNode, Package, Pu, Topology};
pub use raw::{CacheType, RawCache, RawKind, RawNode, RawPu, RawTopology, Source};
pub use render::{human_bytes, render_tree, summary_line};
