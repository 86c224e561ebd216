//! Which CPU and which physical core the caller runs on: the CPU from
//! glibc's rseq area (one load; `sched_getcpu` without rseq), the core from
//! the CPU -> core map read from sysfs at init. The first step of every
//! `malloc` and cross-core `free`.
//!
//! Set by `init`; read on the fast paths by `heap` and `free`, and by
//! `remote`, `fork`, `stats` and the crate root (`core_of_cpu`). The
//! lookups are `#[inline(always)]`: they are on every `malloc` and `free`.

use core::sync::atomic::{
    AtomicIsize, AtomicU16, AtomicUsize,
    Ordering::{Relaxed, Release},
};

use super::os;

/// Most CPUs (Linux CPU numbers) smtalloc distinguishes; higher numbers
/// share the heap of `cpu % MAX_CPUS`.
pub const MAX_CPUS: usize = 1024;

/// Most physical cores with their own arena.
pub const MAX_CORES: usize = MAX_CPUS;

/// `rseq` offset value meaning "no rseq: use sched_getcpu".
pub(crate) const NO_RSEQ: isize = isize::MIN;

static RSEQ_OFF: AtomicIsize = AtomicIsize::new(NO_RSEQ);
/// CPU number -> dense physical-core index (read once from sysfs at init).
static CPU_CORE: [AtomicU16; MAX_CPUS] = [const { AtomicU16::new(0) }; MAX_CPUS];

static NCPUS: AtomicUsize = AtomicUsize::new(1);
static NCORES: AtomicUsize = AtomicUsize::new(1);

/// The CPU the caller runs on, from glibc's rseq area, and that CPU's core
/// index; `None` without rseq (or for a CPU number past [`MAX_CPUS`]).
#[inline(always)]
pub(crate) fn rseq_cpu_core() -> Option<(usize, usize)> {
    let off = RSEQ_OFF.load(Relaxed);
    if off == NO_RSEQ {
        return None;
    }
    let cpu = os::rseq_cpu(off) as usize;
    let core = CPU_CORE.get(cpu)?.load(Relaxed) as usize;
    Some((cpu, core))
}

/// The core index of the CPU the caller runs on (`sched_getcpu` without
/// rseq).
#[inline(always)]
pub(crate) fn current_core() -> usize {
    if let Some((_, core)) = rseq_cpu_core() {
        return core;
    }
    let cpu = os::sched_getcpu().unwrap_or(0) % MAX_CPUS;
    CPU_CORE[cpu].load(Relaxed) as usize
}

/// Records the CPU -> core map (`map[cpu]` for `cpus` CPUs, `cores`
/// cores) and the rseq offset, if glibc registered an rseq area.
pub(crate) fn set_map(map: &[u16; MAX_CPUS], cpus: usize, cores: usize) {
    for (slot, &core) in CPU_CORE.iter().zip(map.iter()) {
        slot.store(core, Relaxed);
    }
    NCPUS.store(cpus, Relaxed);
    NCORES.store(cores, Relaxed);
    if os::RSEQ_SUPPORTED {
        if let Some(off) = os::rseq_offset() {
            RSEQ_OFF.store(off, Release);
        }
    }
}

/// Number of CPUs and of physical cores seen at init.
pub fn topology_counts() -> (usize, usize) {
    (NCPUS.load(Relaxed), NCORES.load(Relaxed))
}

/// The core index of a CPU (as mapped at init).
pub fn core_of_cpu(cpu: usize) -> Option<usize> {
    (cpu < MAX_CPUS && cpu < NCPUS.load(Relaxed)).then(|| CPU_CORE[cpu].load(Relaxed) as usize)
}

/// Whether the CPU comes from rseq (else sched_getcpu).
pub fn uses_rseq() -> bool {
    RSEQ_OFF.load(Relaxed) != NO_RSEQ
}
