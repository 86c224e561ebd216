//! The events smtlab counts: perf's names, what kind of event each is, and
//! how one event in one scope (a [`CounterSpec`]) becomes a perf-event2
//! builder.
//!
//! This table is the only place that knows perf's event encodings; the probe
//! and the per-thread counters take their events from it. Public callers
//! (the doctor, the CLI) only need the names.

use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Hardware, Software};
use perf_event::Builder;
use serde::{Deserialize, Serialize};

use smtlab_types::sample::CounterScope;

/// What kind of perf event a counter is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Generic hardware event (`PERF_TYPE_HARDWARE`): needs a PMU.
    Hardware,
    /// Generic hardware cache event (`PERF_TYPE_HW_CACHE`): needs a PMU.
    HwCache,
    /// Kernel software event: always available where perf is.
    Software,
}

impl EventKind {
    pub fn needs_pmu(self) -> bool {
        !matches!(self, EventKind::Software)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    Hw(Hardware),
    Cache(CacheId, CacheOp, CacheResult),
    Sw(Software),
}

impl Event {
    pub(crate) fn kind(self) -> EventKind {
        match self {
            Event::Hw(_) => EventKind::Hardware,
            Event::Cache(..) => EventKind::HwCache,
            Event::Sw(_) => EventKind::Software,
        }
    }

    fn builder(self) -> Builder<'static> {
        match self {
            Event::Hw(e) => Builder::new(e),
            Event::Cache(which, operation, result) => Builder::new(Cache {
                which,
                operation,
                result,
            }),
            Event::Sw(e) => Builder::new(e),
        }
    }
}

/// The events smtlab counts, by perf's names, in the order they are stored.
pub(crate) const EVENTS: [(&str, Event); 13] = [
    ("cycles", Event::Hw(Hardware::CPU_CYCLES)),
    ("instructions", Event::Hw(Hardware::INSTRUCTIONS)),
    ("cache-references", Event::Hw(Hardware::CACHE_REFERENCES)),
    ("cache-misses", Event::Hw(Hardware::CACHE_MISSES)),
    ("branch-misses", Event::Hw(Hardware::BRANCH_MISSES)),
    (
        "L1-dcache-load-misses",
        Event::Cache(CacheId::L1D, CacheOp::READ, CacheResult::MISS),
    ),
    (
        "LLC-load-misses",
        Event::Cache(CacheId::LL, CacheOp::READ, CacheResult::MISS),
    ),
    (
        "dTLB-load-misses",
        Event::Cache(CacheId::DTLB, CacheOp::READ, CacheResult::MISS),
    ),
    (
        "iTLB-load-misses",
        Event::Cache(CacheId::ITLB, CacheOp::READ, CacheResult::MISS),
    ),
    // Last, so the earlier events keep their places. Instruction-cache
    // misses: the server studies' L1-I (a server's code
    // path per request is long; threads running the same code share it).
    (
        "L1-icache-load-misses",
        Event::Cache(CacheId::L1I, CacheOp::READ, CacheResult::MISS),
    ),
    ("context-switches", Event::Sw(Software::CONTEXT_SWITCHES)),
    ("cpu-migrations", Event::Sw(Software::CPU_MIGRATIONS)),
    ("page-faults", Event::Sw(Software::PAGE_FAULTS)),
];

/// Names of the hardware and hardware-cache events, in storage order.
pub const HARDWARE_EVENTS: [&str; 10] = [
    "cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "branch-misses",
    "L1-dcache-load-misses",
    "LLC-load-misses",
    "dTLB-load-misses",
    "iTLB-load-misses",
    "L1-icache-load-misses",
];

/// Names of the software events, in storage order.
pub const SOFTWARE_EVENTS: [&str; 3] = ["context-switches", "cpu-migrations", "page-faults"];

/// Software events that only ever happen in kernel mode: user-only they
/// would read a false 0.
pub(crate) const KERNEL_ONLY_EVENTS: [&str; 2] = ["context-switches", "cpu-migrations"];

/// One counter to open: an event in one scope.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CounterSpec {
    /// perf's name (`cycles`, `dTLB-load-misses`, `context-switches`).
    pub name: &'static str,
    pub scope: CounterScope,
    pub kind: EventKind,
    event: Event,
}

impl std::fmt::Debug for CounterSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.name, self.scope.as_str())
    }
}

impl CounterSpec {
    pub(crate) fn new(name: &'static str, scope: CounterScope, event: Event) -> CounterSpec {
        CounterSpec {
            name,
            scope,
            kind: event.kind(),
            event,
        }
    }

    pub(crate) fn builder(&self) -> Builder<'static> {
        let mut b = self.event.builder();
        // Hypervisor mode is never wanted, and counting it needs privileges.
        b.exclude_hv(true);
        match self.scope {
            CounterScope::User => b.exclude_user(false).exclude_kernel(true),
            CounterScope::Kernel => b.exclude_user(true).exclude_kernel(false),
            CounterScope::All => b.exclude_user(false).exclude_kernel(false),
        };
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The public name lists are written out (so they can be `const` arrays
    // of names) apart from the table: they must not drift from it.
    #[test]
    fn measure_event_name_lists_match_the_table() {
        let names = |pmu: bool| -> Vec<&str> {
            EVENTS
                .iter()
                .filter(|(_, e)| e.kind().needs_pmu() == pmu)
                .map(|(n, _)| *n)
                .collect()
        };
        assert_eq!(names(true), HARDWARE_EVENTS);
        assert_eq!(names(false), SOFTWARE_EVENTS);
        for k in KERNEL_ONLY_EVENTS {
            assert!(SOFTWARE_EVENTS.contains(&k), "{k}");
        }
    }
}
