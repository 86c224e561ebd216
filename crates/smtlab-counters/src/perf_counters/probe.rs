//! The capability probe: which counters this machine and user may count,
//! decided once per run by opening a few on the calling thread, and the
//! [`CounterPlan`] every worker thread then follows.
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
//! Probing (on the machine) is kept apart from planning
//! ([`CounterPlan::from_probe`], pure) so that every machine we do not have
//! is tested from synthetic [`ProbeFacts`]. Called by execute (once per
//! run) and by the doctor.

use perf_event::events::Software;

use smtlab_types::sample::{CounterScope, CounterStatus};

use super::events::{CounterSpec, Event, EVENTS, KERNEL_ONLY_EVENTS};
use super::open_error::{classify_open_error, OpenError};

/// A counter of the plan: open it, or record why it is not opened.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedCounter {
    pub spec: CounterSpec,
    /// `Some(why)`: known in advance not to work here, so it is not opened
    /// and reads back with `why`'s status and message.
    pub skip: Option<OpenError>,
}

/// The result of trying to open one counter, kept as data so a plan can be
/// built from facts ([`CounterPlan::from_probe`]) and tested without the
/// machine.
pub type OpenResult = Result<(), OpenError>;

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
    /// Opening each hardware event user-mode, in
    /// [`HARDWARE_EVENTS`](super::HARDWARE_EVENTS) order.
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
        let sw = |ev, scope| CounterSpec::new("probe", scope, Event::Sw(ev));
        let user = try_open(&sw(Software::PAGE_FAULTS, CounterScope::User), paranoid);
        let kernel = try_open(
            &sw(Software::CONTEXT_SWITCHES, CounterScope::Kernel),
            paranoid,
        );
        let hardware = EVENTS
            .iter()
            .filter(|(_, ev)| ev.kind().needs_pmu())
            .map(|&(name, event)| {
                let spec = CounterSpec::new(name, CounterScope::User, event);
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
                .unwrap_or(Err(OpenError::NotProbed))
        };
        let pmu = all_refused.is_none() && facts.hardware.iter().any(|(_, r)| r.is_ok());
        // Once the probe has seen every hardware event, "no PMU" versus "this
        // PMU lacks the event" is known: say which, rather than the errno's
        // either-or.
        let no_pmu_reason = |e: OpenError| -> OpenError {
            match (e.status(), pmu) {
                (CounterStatus::Unsupported, false) => OpenError::NoPmu(Box::new(e)),
                (CounterStatus::Unsupported, true) => OpenError::NotInThisPmu(Box::new(e)),
                _ => e,
            }
        };

        let mut counters = Vec::new();
        for &(name, event) in &EVENTS {
            let spec = |scope| CounterSpec::new(name, scope, event);
            if event.kind().needs_pmu() {
                let user_skip = match &all_refused {
                    Some(e) => Some(e.clone()),
                    None => hw_result(name).err().map(no_pmu_reason),
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
                let cause = kernel_refusal.clone().unwrap_or(OpenError::KernelRefused);
                counters.push(PlannedCounter {
                    spec: spec(CounterScope::All),
                    skip: Some(OpenError::KernelOnly {
                        event: name,
                        cause: Box::new(cause),
                    }),
                });
            } else {
                counters.push(PlannedCounter {
                    spec: spec(CounterScope::User),
                    skip: None,
                });
            }
        }

        if let Some(reason) = &all_refused {
            notes.push(format!("no perf counters at all: {reason}"));
        } else {
            if let Some(reason) = &kernel_refusal {
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

    /// How many fds [`ThreadCounters`](super::ThreadCounters) opens per
    /// thread with this plan.
    pub fn fds_per_thread(&self) -> usize {
        self.counters.iter().filter(|c| c.skip.is_none()).count()
    }

    /// Why a counter will not be opened: `None` if it will be.
    pub fn skipped(&self, name: &str, scope: CounterScope) -> Option<&OpenError> {
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

#[cfg(test)]
mod tests {
    use super::super::open_error::tests::errno;
    use super::super::{HARDWARE_EVENTS, SOFTWARE_EVENTS};
    use super::*;

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

    /// The status and the message a skipped counter reads back with.
    fn skipped(
        p: &CounterPlan,
        name: &str,
        scope: CounterScope,
    ) -> Option<(CounterStatus, String)> {
        p.skipped(name, scope).map(|e| (e.status(), e.to_string()))
    }

    #[test]
    fn measure_plan_kernel_permitted_with_pmu() {
        let p = CounterPlan::from_probe(facts(Ok(()), Ok(()), Ok(())));
        assert!(p.kernel_counting && p.pmu);
        assert_eq!(p.counters.len(), 10 * 2 + 3);
        assert_eq!(p.fds_per_thread(), 23);
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
        let (s, r) = skipped(&p, "cycles", CounterScope::Kernel).unwrap();
        assert_eq!(s, CounterStatus::NotPermitted);
        assert!(r.contains("perf_event_paranoid=2"), "{r}");
        assert!(p.skipped("cycles", CounterScope::User).is_none());
        // Context switches only happen in kernel mode: not a false zero.
        let (s, r) = skipped(&p, "context-switches", CounterScope::All).unwrap();
        assert_eq!(s, CounterStatus::NotPermitted);
        assert!(r.contains("only in kernel mode"), "{r}");
        assert!(p.skipped("cpu-migrations", CounterScope::All).is_some());
        // Page faults are counted user-mode.
        assert!(p.counters.iter().any(|c| c.spec.name == "page-faults"
            && c.spec.scope == CounterScope::User
            && c.skip.is_none()));
        assert_eq!(p.fds_per_thread(), 10 + 1);
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
                let (s, r) = skipped(&p, name, scope).unwrap();
                assert_eq!(s, CounterStatus::Unsupported);
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
        let (s, r) = skipped(&p, "LLC-load-misses", CounterScope::Kernel).unwrap();
        assert_eq!(s, CounterStatus::Unsupported);
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
            .all(|c| c.skip.as_ref().unwrap().status() == CounterStatus::NotPermitted));
    }
}
