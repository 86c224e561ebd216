//! perf_event counters: which events smtlab counts, how they are opened for a
//! worker thread or a user command, how their values are scaled for
//! multiplexing, summed over threads, and turned into CPI/IPC/MPKI.
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
//! So each counter is opened on its own, as `perf stat` does by default. The
//! kernel rotates them over the PMU and reports, per counter, how long it was
//! enabled and how long it actually ran; values are scaled by
//! `enabled / running` and the fraction is stored with every value, so the
//! analysis can tell an exact count from an estimate. Ratios of two
//! multiplexed counters are estimates from different slices of the same
//! window: fine for steady workloads, and visible (fraction < 1) when not.
//!
//! **Kernel counting.** perf-event2's builder excludes kernel mode by
//! default, and `perf_event_paranoid >= 2` refuses kernel mode to
//! unprivileged users. [`CounterPlan::probe`] finds out once which applies.
//! Context switches and CPU migrations happen only in kernel mode: counted
//! user-only they read 0, which would be a false zero, so without kernel
//! counting they are recorded as not permitted (rusage still counts context
//! switches). Page faults are raised by user-mode accesses and stay
//! meaningful user-only.
//!
//! **File descriptors.** Every open counter is an fd: up to
//! [`CounterPlan::fds_per_thread`] (21 with kernel counting) per worker
//! thread. Running out (`EMFILE`) marks the remaining counters as errors with
//! the reason; [`raise_fd_limit`] lifts the soft limit to the hard one first.

use std::io;

use nix::errno::Errno;
use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Hardware, Software};
use perf_event::{Builder, Counter};
use serde::{Deserialize, Serialize};

use smtlab_types::sample::{CounterScope, CounterStatus, CounterValue};

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
enum Event {
    Hw(Hardware),
    Cache(CacheId, CacheOp, CacheResult),
    Sw(Software),
}

impl Event {
    fn kind(self) -> EventKind {
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
const EVENTS: [(&str, Event); 12] = [
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
    ("context-switches", Event::Sw(Software::CONTEXT_SWITCHES)),
    ("cpu-migrations", Event::Sw(Software::CPU_MIGRATIONS)),
    ("page-faults", Event::Sw(Software::PAGE_FAULTS)),
];

/// Names of the hardware and hardware-cache events, in storage order.
pub const HARDWARE_EVENTS: [&str; 9] = [
    "cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "branch-misses",
    "L1-dcache-load-misses",
    "LLC-load-misses",
    "dTLB-load-misses",
    "iTLB-load-misses",
];

/// Names of the software events, in storage order.
pub const SOFTWARE_EVENTS: [&str; 3] = ["context-switches", "cpu-migrations", "page-faults"];

/// Software events that only ever happen in kernel mode: user-only they
/// would read a false 0.
const KERNEL_ONLY_EVENTS: [&str; 2] = ["context-switches", "cpu-migrations"];

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
    fn builder(&self) -> Builder<'static> {
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

/// A counter of the plan: open it, or record why it is not opened.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedCounter {
    pub spec: CounterSpec,
    /// `Some((status, reason))`: known in advance not to work here, so it is
    /// not opened and reads back with this status.
    pub skip: Option<(CounterStatus, String)>,
}

/// The result of trying to open one counter, kept as data so a plan can be
/// built from facts ([`CounterPlan::from_probe`]) and tested without the
/// machine.
pub type OpenResult = Result<(), (CounterStatus, String)>;

/// What the probe found, before it is turned into a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeFacts {
    /// `/proc/sys/kernel/perf_event_paranoid`, if readable.
    pub paranoid: Option<i32>,
    /// Opening a user-mode software event: fails only where perf is refused
    /// or absent altogether.
    pub user: OpenResult,
    /// Opening a kernel-mode software event.
    pub kernel: OpenResult,
    /// Opening each hardware event user-mode, in [`HARDWARE_EVENTS`] order.
    pub hardware: Vec<(&'static str, OpenResult)>,
}

/// Which counters to open on every worker thread, and in which scopes;
/// decided once per run by [`CounterPlan::probe`].
#[derive(Debug, Clone, PartialEq)]
pub struct CounterPlan {
    pub counters: Vec<PlannedCounter>,
    /// Kernel mode is counted (hardware events twice: user and kernel).
    pub kernel_counting: bool,
    /// At least one hardware event opened: this machine has a usable PMU.
    pub pmu: bool,
    pub paranoid: Option<i32>,
    /// Fallbacks taken, in plain words, to store with the run.
    pub notes: Vec<String>,
}

impl CounterPlan {
    /// Find out, by opening a few counters on the calling thread, what this
    /// machine and user may count, and plan every counter accordingly.
    pub fn probe() -> CounterPlan {
        let paranoid = read_paranoid();
        let sw = |ev, scope| CounterSpec {
            name: "probe",
            scope,
            kind: EventKind::Software,
            event: Event::Sw(ev),
        };
        let user = try_open(&sw(Software::PAGE_FAULTS, CounterScope::User), paranoid);
        let kernel = try_open(
            &sw(Software::CONTEXT_SWITCHES, CounterScope::Kernel),
            paranoid,
        );
        let hardware = EVENTS
            .iter()
            .filter(|(_, ev)| ev.kind().needs_pmu())
            .map(|&(name, event)| {
                let spec = CounterSpec {
                    name,
                    scope: CounterScope::User,
                    kind: event.kind(),
                    event,
                };
                (name, try_open(&spec, paranoid))
            })
            .collect();
        CounterPlan::from_probe(ProbeFacts {
            paranoid,
            user,
            kernel,
            hardware,
        })
    }

    /// Build the plan from what a probe found (pure; see [`Self::probe`]).
    pub fn from_probe(facts: ProbeFacts) -> CounterPlan {
        let mut notes = Vec::new();
        let paranoid_text = facts
            .paranoid
            .map_or("unknown".to_string(), |p| p.to_string());
        // Refused or absent altogether: every counter carries that reason.
        let all_refused = facts.user.clone().err();
        let kernel_counting = all_refused.is_none() && facts.kernel.is_ok();
        let kernel_refusal = match (&all_refused, &facts.kernel) {
            (Some(e), _) => Some(e.clone()),
            (None, Err(e)) => Some(e.clone()),
            (None, Ok(())) => None,
        };
        let hw_result = |name: &str| -> OpenResult {
            facts
                .hardware
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, r)| r.clone())
                .unwrap_or_else(|| Err((CounterStatus::Error, "not probed".to_string())))
        };
        let pmu = all_refused.is_none() && facts.hardware.iter().any(|(_, r)| r.is_ok());
        // Once the probe has seen every hardware event, "no PMU" versus "this
        // PMU lacks the event" is known: say which, rather than the errno's
        // either-or.
        let no_pmu_reason = |r: &(CounterStatus, String)| -> (CounterStatus, String) {
            match (r.0, pmu) {
                (CounterStatus::Unsupported, false) => (
                    CounterStatus::Unsupported,
                    format!(
                        "no hardware PMU here (a VM without a virtual PMU?): {}",
                        r.1
                    ),
                ),
                (CounterStatus::Unsupported, true) => (
                    CounterStatus::Unsupported,
                    format!("this CPU's PMU has no such event: {}", r.1),
                ),
                _ => r.clone(),
            }
        };

        let mut counters = Vec::new();
        for &(name, event) in &EVENTS {
            let kind = event.kind();
            let spec = |scope| CounterSpec {
                name,
                scope,
                kind,
                event,
            };
            if kind.needs_pmu() {
                let user_skip = match &all_refused {
                    Some(e) => Some(e.clone()),
                    None => hw_result(name).err().map(|e| no_pmu_reason(&e)),
                };
                let kernel_skip = match (&user_skip, &kernel_refusal) {
                    // An event the PMU lacks is unsupported in every scope.
                    (Some(u), _) => Some(u.clone()),
                    (None, Some(k)) => Some(k.clone()),
                    (None, None) => None,
                };
                counters.push(PlannedCounter {
                    spec: spec(CounterScope::User),
                    skip: user_skip,
                });
                counters.push(PlannedCounter {
                    spec: spec(CounterScope::Kernel),
                    skip: kernel_skip,
                });
            } else if let Some(e) = &all_refused {
                counters.push(PlannedCounter {
                    spec: spec(CounterScope::All),
                    skip: Some(e.clone()),
                });
            } else if kernel_counting {
                counters.push(PlannedCounter {
                    spec: spec(CounterScope::All),
                    skip: None,
                });
            } else if KERNEL_ONLY_EVENTS.contains(&name) {
                let (status, reason) = kernel_refusal.clone().unwrap_or((
                    CounterStatus::NotPermitted,
                    "kernel-mode counting refused".to_string(),
                ));
                counters.push(PlannedCounter {
                    spec: spec(CounterScope::All),
                    skip: Some((
                        status,
                        format!(
                            "{name} happen only in kernel mode (user-only it would read 0): \
                             {reason}"
                        ),
                    )),
                });
            } else {
                counters.push(PlannedCounter {
                    spec: spec(CounterScope::User),
                    skip: None,
                });
            }
        }

        if let Some((_, reason)) = &all_refused {
            notes.push(format!("no perf counters at all: {reason}"));
        } else {
            if let Some((_, reason)) = &kernel_refusal {
                notes.push(format!(
                    "kernel mode not counted (perf_event_paranoid={paranoid_text}): hardware \
                     counters are user-mode only, page-faults user-mode only, \
                     context-switches and cpu-migrations not counted: {reason}"
                ));
            }
            if !pmu {
                notes.push(
                    "no hardware PMU: hardware counters unsupported, software counters only"
                        .to_string(),
                );
            } else {
                let missing: Vec<&str> = facts
                    .hardware
                    .iter()
                    .filter(|(_, r)| r.is_err())
                    .map(|(n, _)| *n)
                    .collect();
                if !missing.is_empty() {
                    notes.push(format!("not supported by this PMU: {}", missing.join(", ")));
                }
            }
        }
        CounterPlan {
            counters,
            kernel_counting,
            pmu,
            paranoid: facts.paranoid,
            notes,
        }
    }

    /// How many fds [`ThreadCounters`] opens per thread with this plan.
    pub fn fds_per_thread(&self) -> usize {
        self.counters.iter().filter(|c| c.skip.is_none()).count()
    }

    /// The planned status of a counter: `None` if it will be opened.
    pub fn skipped(&self, name: &str, scope: CounterScope) -> Option<&(CounterStatus, String)> {
        self.counters
            .iter()
            .find(|c| c.spec.name == name && c.spec.scope == scope)
            .and_then(|c| c.skip.as_ref())
    }
}

/// `/proc/sys/kernel/perf_event_paranoid`.
pub fn read_paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn try_open(spec: &CounterSpec, paranoid: Option<i32>) -> OpenResult {
    match spec.builder().build() {
        Ok(_counter) => Ok(()),
        Err(e) => Err(classify_open_error(&e, spec.scope, paranoid)),
    }
}

/// Turn a failed `perf_event_open` into a status and a reason a user can act
/// on. `scope` says whether kernel mode was asked for; `paranoid` is
/// `perf_event_paranoid`.
pub fn classify_open_error(
    err: &io::Error,
    scope: CounterScope,
    paranoid: Option<i32>,
) -> (CounterStatus, String) {
    let errno = err.raw_os_error();
    let name = errno.map_or_else(|| "?".to_string(), |e| format!("{:?}", Errno::from_raw(e)));
    let p = paranoid.map_or("?".to_string(), |p| p.to_string());
    match errno {
        Some(libc::ENOENT | libc::EOPNOTSUPP | libc::EINVAL | libc::ENODEV) => (
            CounterStatus::Unsupported,
            format!("no PMU or event not supported here ({name} from perf_event_open)"),
        ),
        Some(libc::ENOSYS) => (
            CounterStatus::Unsupported,
            "kernel built without perf events (ENOSYS)".to_string(),
        ),
        Some(libc::EACCES | libc::EPERM) => {
            let wants_kernel = scope != CounterScope::User;
            let reason = match paranoid {
                Some(v) if v >= 3 => format!(
                    "perf_event_paranoid={v} refuses all perf events to unprivileged users \
                     ({name}); run as root (or with CAP_PERFMON) or \
                     `sysctl kernel.perf_event_paranoid=1`"
                ),
                Some(v) if v >= 2 && wants_kernel => format!(
                    "perf_event_paranoid={v} refuses kernel-mode counting to unprivileged \
                     users ({name}); run as root (or with CAP_PERFMON) or \
                     `sysctl kernel.perf_event_paranoid=1`"
                ),
                None => format!(
                    "perf_event_open refused ({name}); perf_event_paranoid unreadable; run as \
                     root or `sysctl kernel.perf_event_paranoid=1`"
                ),
                _ => format!(
                    "perf_event_open refused ({name}) although perf_event_paranoid={p} allows \
                     it: a seccomp filter (a container?) or no ptrace access to the target"
                ),
            };
            (CounterStatus::NotPermitted, reason)
        }
        Some(libc::EMFILE | libc::ENFILE) => {
            let limit = nofile_limit().map_or("?".to_string(), |(soft, _)| soft.to_string());
            (
                CounterStatus::Error,
                format!(
                    "out of file descriptors ({name}; ulimit -n is {limit}): every counter of \
                     every thread is an fd; raise `ulimit -n` or count fewer threads"
                ),
            )
        }
        Some(libc::EBUSY) => (
            CounterStatus::Error,
            "PMU busy: another tool holds the counters exclusively (EBUSY)".to_string(),
        ),
        Some(libc::ESRCH) => (
            CounterStatus::Error,
            "the process to count has already exited (ESRCH)".to_string(),
        ),
        // perf-event2 maps E2BIG (attr newer than the kernel) to this kind.
        None if err.kind() == io::ErrorKind::Unsupported => (
            CounterStatus::Unsupported,
            format!("kernel too old for this counter's options: {err}"),
        ),
        _ => (
            CounterStatus::Error,
            format!("perf_event_open failed: {err}"),
        ),
    }
}

/// Soft and hard `RLIMIT_NOFILE`.
pub fn nofile_limit() -> Option<(u64, u64)> {
    nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).ok()
}

/// Raise the soft fd limit to the hard limit, so counters on many threads
/// fit; returns the new soft limit. Children inherit it, which is harmless
/// unless they use `select()` with more than 1024 fds.
pub fn raise_fd_limit() -> io::Result<u64> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    }
    Ok(hard.max(soft))
}

enum Slot {
    Open(CounterSpec, Counter),
    Failed(CounterSpec, CounterStatus, String),
}

/// The counters of one thread (or of one user command and the threads and
/// processes it creates). Reads never fail: a counter that could not be
/// opened or read comes back with its status and reason.
pub struct ThreadCounters {
    slots: Vec<Slot>,
}

enum Target {
    CurrentThread,
    Process(i32),
}

impl ThreadCounters {
    /// Open the plan's counters on the calling thread (pid 0, any CPU, no
    /// inherit), disabled: call [`enable`](Self::enable) to start the
    /// window. The counters follow this thread only, whichever thread
    /// enables or reads them.
    pub fn open_for_current_thread(plan: &CounterPlan) -> ThreadCounters {
        Self::open(plan, Target::CurrentThread)
    }

    /// Open the plan's counters on process `pid` with `inherit`, so every
    /// thread and child it creates afterwards is counted too, and with
    /// `enable_on_exec`: the counters start when `pid` calls `execve`. Start
    /// the child blocked before its exec, open, then let it exec; counts of
    /// exited threads and children are folded into the totals by the kernel.
    pub fn open_for_process(pid: i32, plan: &CounterPlan) -> ThreadCounters {
        Self::open(plan, Target::Process(pid))
    }

    fn open(plan: &CounterPlan, target: Target) -> ThreadCounters {
        let slots = plan
            .counters
            .iter()
            .map(|pc| {
                let spec = pc.spec;
                if let Some((status, reason)) = &pc.skip {
                    return Slot::Failed(spec, *status, reason.clone());
                }
                let mut b = spec.builder();
                match target {
                    Target::CurrentThread => {
                        b.observe_self();
                    }
                    Target::Process(pid) => {
                        b.observe_pid(pid).inherit(true).enable_on_exec(true);
                    }
                }
                match b.build() {
                    Ok(c) => Slot::Open(spec, c),
                    Err(e) => {
                        let (status, reason) = classify_open_error(&e, spec.scope, plan.paranoid);
                        Slot::Failed(spec, status, reason)
                    }
                }
            })
            .collect();
        ThreadCounters { slots }
    }

    /// Number of counters actually open (fds held).
    pub fn open_count(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s, Slot::Open(..)))
            .count()
    }

    /// Start counting (one ioctl per counter, so the first and last start a
    /// few microseconds apart).
    pub fn enable(&mut self) {
        self.each_open(|c| c.enable(), "enable");
    }

    /// Stop counting; the values stay readable.
    pub fn disable(&mut self) {
        self.each_open(|c| c.disable(), "disable");
    }

    /// Reset every count to zero (before a new window on the same fds).
    pub fn reset(&mut self) {
        self.each_open(|c| c.reset(), "reset");
    }

    fn each_open(&mut self, mut f: impl FnMut(&mut Counter) -> io::Result<()>, what: &str) {
        for slot in &mut self.slots {
            if let Slot::Open(spec, c) = slot {
                if let Err(e) = f(c) {
                    *slot =
                        Slot::Failed(*spec, CounterStatus::Error, format!("{what} failed: {e}"));
                }
            }
        }
    }

    /// Every counter of the plan, in plan order, scaled for multiplexing.
    pub fn read(&mut self) -> Vec<CounterValue> {
        self.slots
            .iter_mut()
            .map(|slot| match slot {
                Slot::Open(spec, c) => match c.read_count_and_time() {
                    Ok(ct) => scaled_value(
                        spec.name,
                        spec.scope,
                        ct.count,
                        ct.time_enabled,
                        ct.time_running,
                    ),
                    Err(e) => failed_value(
                        spec.name,
                        spec.scope,
                        CounterStatus::Error,
                        format!("read failed: {e}"),
                    ),
                },
                Slot::Failed(spec, status, reason) => {
                    failed_value(spec.name, spec.scope, *status, reason.clone())
                }
            })
            .collect()
    }
}

/// A counter without a value.
pub fn failed_value(
    name: &str,
    scope: CounterScope,
    status: CounterStatus,
    reason: String,
) -> CounterValue {
    CounterValue {
        name: name.to_string(),
        scope,
        status,
        raw: None,
        value: None,
        fraction_running: None,
        reason: Some(reason),
    }
}

/// A counter read as `raw` after being enabled for `enabled` ns and on the
/// PMU for `running` ns: value = raw × enabled / running (perf stat's
/// estimate of what it would have counted had it run all the time),
/// fraction_running = running / enabled.
pub fn scaled_value(
    name: &str,
    scope: CounterScope,
    raw: u64,
    enabled: u64,
    running: u64,
) -> CounterValue {
    if enabled == 0 {
        return failed_value(
            name,
            scope,
            CounterStatus::Error,
            "never enabled (the measured window did not start, or the program never \
             exec'd)"
                .to_string(),
        );
    }
    if running == 0 {
        return failed_value(
            name,
            scope,
            CounterStatus::Error,
            "never scheduled (multiplexed out): too many counters for the PMU".to_string(),
        );
    }
    // The kernel's two clocks can disagree by a tick; a counter cannot run
    // longer than it was enabled.
    let running = running.min(enabled);
    let value = (raw as u128 * enabled as u128) as f64 / running as f64;
    CounterValue {
        name: name.to_string(),
        scope,
        status: CounterStatus::Ok,
        raw: Some(raw),
        value: Some(value),
        fraction_running: Some(running as f64 / enabled as f64),
        reason: None,
    }
}

/// Sum counters over threads, per (name, scope), in first-seen order. A sum
/// is `Ok` only if the counter is `Ok` in every thread: a partial sum would
/// be a wrong number, so otherwise it has no value and the reason says how
/// many threads lacked it. `fraction_running` is the smallest of the
/// threads' (the least certain estimate bounds the sum's).
pub fn sum_counters(per_thread: &[Vec<CounterValue>]) -> Vec<CounterValue> {
    let n = per_thread.len();
    let mut keys: Vec<(String, CounterScope)> = Vec::new();
    for thread in per_thread {
        for c in thread {
            if !keys.iter().any(|(k, s)| *k == c.name && *s == c.scope) {
                keys.push((c.name.clone(), c.scope));
            }
        }
    }
    keys.into_iter()
        .map(|(name, scope)| {
            let found: Vec<&CounterValue> = per_thread
                .iter()
                .filter_map(|t| t.iter().find(|c| c.name == name && c.scope == scope))
                .collect();
            let ok = found
                .iter()
                .filter(|c| c.status == CounterStatus::Ok)
                .count();
            if ok == n {
                return CounterValue {
                    name,
                    scope,
                    status: CounterStatus::Ok,
                    raw: Some(
                        found
                            .iter()
                            .fold(0u64, |a, c| a.saturating_add(c.raw.unwrap_or(0))),
                    ),
                    value: Some(found.iter().map(|c| c.value.unwrap_or(0.0)).sum()),
                    fraction_running: found
                        .iter()
                        .filter_map(|c| c.fraction_running)
                        .reduce(f64::min),
                    reason: None,
                };
            }
            let bad: Vec<&&CounterValue> = found
                .iter()
                .filter(|c| c.status != CounterStatus::Ok)
                .collect();
            let status = bad.first().map_or(CounterStatus::Error, |c| c.status);
            let mut reasons: Vec<String> = Vec::new();
            for c in &bad {
                let r = c.reason.clone().unwrap_or_else(|| "no value".to_string());
                if !reasons.contains(&r) {
                    reasons.push(r);
                }
            }
            let missing = n - found.len();
            if missing > 0 {
                reasons.push(format!("not read in {missing} thread(s)"));
            }
            let mut reason = reasons.join("; ");
            if ok > 0 || missing > 0 {
                reason = format!("{} of {n} threads without a value: {reason}", n - ok);
            }
            failed_value(&name, scope, status, reason)
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;

    fn skip(reason: &str) {
        let t = std::thread::current();
        let _ = std::io::stderr()
            .write_all(format!("skipped: {}: {reason}\n", t.name().unwrap_or("?")).as_bytes());
    }

    pub(crate) fn thp_always() -> bool {
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .is_ok_and(|s| s.contains("[always]"))
    }

    fn errno(e: i32) -> io::Error {
        io::Error::from_raw_os_error(e)
    }

    fn ok(name: &str, scope: CounterScope, value: f64) -> CounterValue {
        scaled_value(name, scope, value as u64, 100, 100)
    }

    // ---- errno classification ------------------------------------------

    #[test]
    fn measure_classify_unsupported() {
        for e in [libc::ENOENT, libc::EOPNOTSUPP, libc::EINVAL] {
            let (s, r) = classify_open_error(&errno(e), CounterScope::User, Some(2));
            assert_eq!(s, CounterStatus::Unsupported, "{r}");
            assert!(r.contains("no PMU or event not supported here"), "{r}");
        }
        let (_, r) = classify_open_error(&errno(libc::ENOENT), CounterScope::User, Some(2));
        assert!(r.contains("ENOENT"), "{r}");
    }

    #[test]
    fn measure_classify_not_permitted_kernel_at_paranoid_2() {
        for e in [libc::EACCES, libc::EPERM] {
            let (s, r) = classify_open_error(&errno(e), CounterScope::Kernel, Some(2));
            assert_eq!(s, CounterStatus::NotPermitted);
            assert!(
                r.contains("perf_event_paranoid=2 refuses kernel-mode"),
                "{r}"
            );
            assert!(r.contains("sysctl kernel.perf_event_paranoid=1"), "{r}");
            assert!(r.contains("run as root"), "{r}");
        }
        let (s, r) = classify_open_error(&errno(libc::EACCES), CounterScope::All, Some(2));
        assert_eq!(s, CounterStatus::NotPermitted);
        assert!(r.contains("kernel-mode"), "{r}");
    }

    #[test]
    fn measure_classify_not_permitted_other_causes() {
        let (s, r) = classify_open_error(&errno(libc::EACCES), CounterScope::User, Some(3));
        assert_eq!(s, CounterStatus::NotPermitted);
        assert!(r.contains("perf_event_paranoid=3 refuses all"), "{r}");
        // User mode refused although paranoid allows it: not paranoid's fault.
        let (s, r) = classify_open_error(&errno(libc::EPERM), CounterScope::User, Some(2));
        assert_eq!(s, CounterStatus::NotPermitted);
        assert!(r.contains("seccomp"), "{r}");
    }

    #[test]
    fn measure_classify_errors() {
        let (s, r) = classify_open_error(&errno(libc::EMFILE), CounterScope::User, Some(2));
        assert_eq!(s, CounterStatus::Error);
        assert!(
            r.contains("out of file descriptors") && r.contains("ulimit -n"),
            "{r}"
        );
        let (s, _) = classify_open_error(&errno(libc::EBUSY), CounterScope::User, Some(2));
        assert_eq!(s, CounterStatus::Error);
        let (s, r) = classify_open_error(&errno(libc::EIO), CounterScope::User, Some(2));
        assert_eq!(s, CounterStatus::Error);
        assert!(r.starts_with("perf_event_open failed"), "{r}");
    }

    // ---- scaling -----------------------------------------------------------

    #[test]
    fn measure_scaling_not_multiplexed() {
        let v = scaled_value("cycles", CounterScope::User, 1000, 500, 500);
        assert_eq!(v.status, CounterStatus::Ok);
        assert_eq!(v.raw, Some(1000));
        assert_eq!(v.value, Some(1000.0));
        assert_eq!(v.fraction_running, Some(1.0));
        assert_eq!(v.reason, None);
    }

    #[test]
    fn measure_scaling_multiplexed() {
        // Ran a quarter of the time: estimate four times the raw count.
        let v = scaled_value("cycles", CounterScope::Kernel, 1000, 400, 100);
        assert_eq!(v.status, CounterStatus::Ok);
        assert_eq!(v.raw, Some(1000));
        assert_eq!(v.value, Some(4000.0));
        assert_eq!(v.fraction_running, Some(0.25));
        // No overflow with large counts and times.
        let v = scaled_value("cycles", CounterScope::User, u64::MAX / 2, u64::MAX / 2, 3);
        assert!(v.value.unwrap() > 1e30);
    }

    #[test]
    fn measure_scaling_never_running() {
        let v = scaled_value("instructions", CounterScope::User, 0, 1_000_000, 0);
        assert_eq!(v.status, CounterStatus::Error);
        assert_eq!(v.value, None);
        assert_eq!(v.raw, None);
        assert!(v
            .reason
            .unwrap()
            .contains("never scheduled (multiplexed out)"));
        let v = scaled_value("instructions", CounterScope::User, 0, 0, 0);
        assert_eq!(v.status, CounterStatus::Error);
        assert!(v.reason.unwrap().contains("never enabled"));
    }

    #[test]
    fn measure_scaling_running_above_enabled_is_clamped() {
        let v = scaled_value("cycles", CounterScope::User, 10, 100, 101);
        assert_eq!(v.value, Some(10.0));
        assert_eq!(v.fraction_running, Some(1.0));
    }

    // ---- summing -----------------------------------------------------------

    #[test]
    fn measure_sum_all_ok() {
        let a = vec![
            scaled_value("cycles", CounterScope::User, 100, 10, 10),
            scaled_value("cycles", CounterScope::Kernel, 7, 10, 5),
        ];
        let b = vec![
            scaled_value("cycles", CounterScope::User, 50, 10, 5),
            scaled_value("cycles", CounterScope::Kernel, 3, 10, 10),
        ];
        let s = sum_counters(&[a, b]);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, "cycles");
        assert_eq!(s[0].scope, CounterScope::User);
        assert_eq!(s[0].raw, Some(150));
        assert_eq!(s[0].value, Some(200.0));
        assert_eq!(s[0].fraction_running, Some(0.5));
        assert_eq!(s[1].value, Some(17.0));
        assert_eq!(s[1].fraction_running, Some(0.5));
    }

    #[test]
    fn measure_sum_partial_has_no_value() {
        let a = vec![ok("cycles", CounterScope::User, 100.0)];
        let b = vec![scaled_value("cycles", CounterScope::User, 0, 10, 0)];
        let s = sum_counters(&[a, b]);
        assert_eq!(s[0].status, CounterStatus::Error);
        assert_eq!(s[0].value, None);
        let r = s[0].reason.as_deref().unwrap();
        assert!(
            r.contains("1 of 2 threads") && r.contains("multiplexed out"),
            "{r}"
        );
    }

    #[test]
    fn measure_sum_keeps_reason_of_unsupported() {
        let u = |_| {
            vec![failed_value(
                "cycles",
                CounterScope::User,
                CounterStatus::Unsupported,
                "no PMU".to_string(),
            )]
        };
        let s = sum_counters(&(0..3).map(u).collect::<Vec<_>>());
        assert_eq!(s[0].status, CounterStatus::Unsupported);
        assert_eq!(s[0].reason.as_deref(), Some("no PMU"));
        // A counter some thread never read is not summed either.
        let s = sum_counters(&[vec![ok("page-faults", CounterScope::All, 5.0)], vec![]]);
        assert_eq!(s[0].status, CounterStatus::Error);
        assert!(s[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("not read in 1 thread"));
        assert!(sum_counters(&[]).is_empty());
    }

    // ---- plans from synthetic probe facts ------------------------------

    fn facts(user: OpenResult, kernel: OpenResult, hw: OpenResult) -> ProbeFacts {
        ProbeFacts {
            paranoid: Some(2),
            user,
            kernel,
            hardware: HARDWARE_EVENTS.iter().map(|&n| (n, hw.clone())).collect(),
        }
    }

    fn refused(scope: CounterScope, e: i32, paranoid: i32) -> OpenResult {
        Err(classify_open_error(&errno(e), scope, Some(paranoid)))
    }

    #[test]
    fn measure_plan_kernel_permitted_with_pmu() {
        let p = CounterPlan::from_probe(facts(Ok(()), Ok(()), Ok(())));
        assert!(p.kernel_counting && p.pmu);
        assert_eq!(p.counters.len(), 9 * 2 + 3);
        assert_eq!(p.fds_per_thread(), 21);
        assert!(p.counters.iter().all(|c| c.skip.is_none()));
        for sw in SOFTWARE_EVENTS {
            assert!(p
                .counters
                .iter()
                .any(|c| c.spec.name == sw && c.spec.scope == CounterScope::All));
        }
        assert!(p.notes.is_empty(), "{:?}", p.notes);
    }

    #[test]
    fn measure_plan_user_only_when_kernel_refused() {
        let k = refused(CounterScope::Kernel, libc::EACCES, 2);
        let p = CounterPlan::from_probe(facts(Ok(()), k, Ok(())));
        assert!(!p.kernel_counting && p.pmu);
        let (s, r) = p.skipped("cycles", CounterScope::Kernel).unwrap();
        assert_eq!(*s, CounterStatus::NotPermitted);
        assert!(r.contains("perf_event_paranoid=2"), "{r}");
        assert!(p.skipped("cycles", CounterScope::User).is_none());
        // Context switches only happen in kernel mode: not a false zero.
        let (s, r) = p.skipped("context-switches", CounterScope::All).unwrap();
        assert_eq!(*s, CounterStatus::NotPermitted);
        assert!(r.contains("only in kernel mode"), "{r}");
        assert!(p.skipped("cpu-migrations", CounterScope::All).is_some());
        // Page faults are counted user-mode.
        assert!(p.counters.iter().any(|c| c.spec.name == "page-faults"
            && c.spec.scope == CounterScope::User
            && c.skip.is_none()));
        assert_eq!(p.fds_per_thread(), 9 + 1);
        assert!(p
            .notes
            .iter()
            .any(|n| n.contains("kernel mode not counted")));
    }

    #[test]
    fn measure_plan_no_pmu() {
        let hw = refused(CounterScope::User, libc::ENOENT, 2);
        let p = CounterPlan::from_probe(facts(Ok(()), Ok(()), hw));
        assert!(!p.pmu && p.kernel_counting);
        for name in HARDWARE_EVENTS {
            for scope in [CounterScope::User, CounterScope::Kernel] {
                let (s, r) = p.skipped(name, scope).unwrap();
                assert_eq!(*s, CounterStatus::Unsupported);
                assert!(r.contains("no hardware PMU"), "{r}");
            }
        }
        assert_eq!(p.fds_per_thread(), 3);
    }

    #[test]
    fn measure_plan_one_event_missing_from_pmu() {
        let mut f = facts(Ok(()), Ok(()), Ok(()));
        f.hardware[6].1 = refused(CounterScope::User, libc::ENOENT, 2);
        let p = CounterPlan::from_probe(f);
        assert!(p.pmu);
        let (s, r) = p.skipped("LLC-load-misses", CounterScope::Kernel).unwrap();
        assert_eq!(*s, CounterStatus::Unsupported);
        assert!(r.contains("this CPU's PMU has no such event"), "{r}");
        assert!(p.notes.iter().any(|n| n.contains("LLC-load-misses")));
    }

    #[test]
    fn measure_plan_everything_refused() {
        let u = refused(CounterScope::User, libc::EACCES, 3);
        let k = refused(CounterScope::Kernel, libc::EACCES, 3);
        let p = CounterPlan::from_probe(facts(u, k, refused(CounterScope::User, libc::EACCES, 3)));
        assert!(!p.pmu && !p.kernel_counting);
        assert_eq!(p.fds_per_thread(), 0);
        assert!(p
            .counters
            .iter()
            .all(|c| c.skip.as_ref().unwrap().0 == CounterStatus::NotPermitted));
    }

    // ---- this machine ------------------------------------------------------

    fn find<'a>(v: &'a [CounterValue], name: &str) -> Vec<&'a CounterValue> {
        v.iter().filter(|c| c.name == name).collect()
    }

    #[test]
    fn measure_live_every_counter_has_value_or_reason() {
        let plan = CounterPlan::probe();
        let mut tc = ThreadCounters::open_for_current_thread(&plan);
        assert_eq!(tc.open_count(), plan.fds_per_thread());
        tc.enable();
        std::hint::black_box((0..100_000u64).sum::<u64>());
        tc.disable();
        let v = tc.read();
        assert_eq!(v.len(), plan.counters.len());
        for c in &v {
            match c.status {
                CounterStatus::Ok => {
                    assert!(
                        c.value.is_some() && c.raw.is_some() && c.reason.is_none(),
                        "{c:?}"
                    )
                }
                _ => assert!(
                    c.value.is_none() && c.raw.is_none() && c.reason.is_some(),
                    "{c:?}"
                ),
            }
        }
    }

    #[test]
    fn measure_live_software_counters_count() {
        let plan = CounterPlan::probe();
        if !plan.kernel_counting {
            skip(&format!(
                "kernel-mode counting refused here ({:?}); context switches cannot be counted",
                plan.notes
            ));
            return;
        }
        let mut tc = ThreadCounters::open_for_current_thread(&plan);
        tc.enable();
        for _ in 0..5 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        // Touch 10 MB of fresh memory: about 2500 page faults.
        let mut buf = vec![0u8; 10 << 20];
        for i in (0..buf.len()).step_by(4096) {
            buf[i] = 1;
        }
        std::hint::black_box(&buf);
        tc.disable();
        let v = tc.read();
        let cs = find(&v, "context-switches");
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].status, CounterStatus::Ok, "{:?}", cs[0]);
        assert_eq!(cs[0].scope, CounterScope::All);
        assert!(cs[0].raw.unwrap() >= 5, "{:?}", cs[0]);
        let pf = find(&v, "page-faults");
        assert_eq!(pf[0].status, CounterStatus::Ok);
        // With THP "always" the 10 MB may fault in as a few huge pages.
        let want = if thp_always() { 1 } else { 1000 };
        assert!(pf[0].raw.unwrap() >= want, "{:?}", pf[0]);
        assert!(find(&v, "cpu-migrations")[0].status == CounterStatus::Ok);
    }

    #[test]
    fn measure_live_hardware_counters_match_probe() {
        let plan = CounterPlan::probe();
        let mut tc = ThreadCounters::open_for_current_thread(&plan);
        tc.enable();
        std::hint::black_box((0..1_000_000u64).fold(0u64, |a, x| a ^ x.wrapping_mul(31)));
        tc.disable();
        let v = tc.read();
        if plan.pmu {
            let c = find(&v, "instructions");
            let user = c.iter().find(|c| c.scope == CounterScope::User).unwrap();
            assert_eq!(user.status, CounterStatus::Ok, "{user:?}");
            assert!(user.value.unwrap() > 1_000_000.0, "{user:?}");
            skip("this machine has a PMU: the no-PMU (Unsupported) path is not exercised");
        } else {
            for name in HARDWARE_EVENTS {
                for c in find(&v, name) {
                    assert_eq!(c.status, CounterStatus::Unsupported, "{c:?}");
                    assert!(c.reason.as_deref().unwrap().contains("no hardware PMU"));
                }
            }
            skip("no hardware PMU here: counting instructions (the PMU path) is not exercised");
        }
    }

    #[test]
    fn measure_live_process_counters_inherit() {
        let plan = CounterPlan::probe();
        // Counting starts at the child's next exec (enable_on_exec): the
        // child waits on stdin until the counters are open, then execs a
        // shell whose own children (the sleeps) are counted by inherit.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "read x; exec sh -c 'sleep 0.05; sleep 0.05; true'"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut tc = ThreadCounters::open_for_process(child.id() as i32, &plan);
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
        child.wait().unwrap();
        let v = tc.read();
        let pf = find(&v, "page-faults");
        assert_eq!(pf[0].status, CounterStatus::Ok, "{:?}", pf[0]);
        // Three execs (sh, sleep, sleep) fault in hundreds of pages.
        assert!(pf[0].raw.unwrap() > 100, "{:?}", pf[0]);
        if plan.kernel_counting {
            let cs = find(&v, "context-switches");
            assert!(cs[0].raw.unwrap() >= 2, "{:?}", cs[0]);
        }
    }

    #[test]
    fn measure_thread_counters_are_send() {
        fn is_send<T: Send>() {}
        is_send::<ThreadCounters>();
        is_send::<CounterPlan>();
    }
}
