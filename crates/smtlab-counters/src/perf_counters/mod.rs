//! perf_event counters, one file per concept: the events smtlab counts
//! (`events.rs`), what this machine and user may count (`probe.rs`, with
//! the reasons and advice of `open_error.rs`), the counters of one thread or
//! command (`thread_counters.rs`), their values scaled for multiplexing and
//! summed over threads (`values.rs`), and the open-file limit they strain
//! (`fd_limit.rs`). The ratios derived from them (CPI, MPKI) are the
//! analysis' business: `smtlab_analyse::derived`.
//!
//! The machine decides what can be counted, so nothing here fails: a counter
//! that cannot be opened is kept with a status ([`CounterStatus`]) and a
//! reason, and is read back as such — never as a zero.
//!
//! **One fd per counter, no groups.** perf can schedule counters as a group
//! (all on the PMU at once, so ratios such as CPI come from the same time
//! slices), but that does not fit what smtlab must survive:
//! * a group fails as a whole if one member is unsupported, and real PMUs
//!   lack some generic events (AMD has no `LLC-load-misses`; a VM without a
//!   virtual PMU has none at all);
//! * a group larger than the PMU's counters is never scheduled: 9 hardware
//!   events in user and kernel scope are 18 events against 4–8 general
//!   purpose counters, so one group would read nothing, and splitting into
//!   small groups only moves the problem to choosing the pairs;
//! * the kernel refuses `inherit` with group reads on the kernels we target,
//!   and user commands need `inherit` so their threads are counted.
//!
//! So each counter is opened on its own, as `perf stat` does by default, and
//! scaled by how long it actually ran ([`scaled_value`]).
//!
//! Every public name is re-exported here and at the crate root; the files
//! are private so that callers do not depend on how they are split.
//!
//! [`CounterStatus`]: smtlab_types::CounterStatus

mod events;
mod fd_limit;
mod open_error;
mod probe;
mod thread_counters;
mod values;

pub use events::{CounterSpec, EventKind, HARDWARE_EVENTS, SOFTWARE_EVENTS};
pub use fd_limit::{nofile_limit, raise_fd_limit};
pub use open_error::{classify_open_error, OpenError};
pub use probe::{read_paranoid, CounterPlan, OpenResult, PlannedCounter, ProbeFacts};
pub use thread_counters::ThreadCounters;
pub use values::{scaled_value, sum_counters};
