//! The counters of one worker thread, or of one user command and everything
//! it starts: opened from a [`CounterPlan`], enabled and disabled around the
//! measured window, read back scaled.
//!
//! Called by execute's workers (on their own threads, inside the window)
//! and by its user-command runner (on the child's pid, before its exec).

use std::io;

use perf_event::Counter;

use smtlab_types::sample::{CounterStatus, CounterValue};

use super::events::CounterSpec;
use super::open_error::classify_open_error;
use super::probe::CounterPlan;
use super::values::scaled_value;

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
                if let Some(why) = &pc.skip {
                    return Slot::Failed(spec, why.status(), why.to_string());
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
                        let why = classify_open_error(&e, spec.scope, plan.paranoid);
                        Slot::Failed(spec, why.status(), why.to_string())
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
                    Err(e) => CounterValue::failed(
                        spec.name,
                        spec.scope,
                        CounterStatus::Error,
                        format!("read failed: {e}"),
                    ),
                },
                Slot::Failed(spec, status, reason) => {
                    CounterValue::failed(spec.name, spec.scope, *status, reason.clone())
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use smtlab_types::sample::CounterScope;

    use super::super::HARDWARE_EVENTS;
    use super::*;
    use crate::test_support::{skip, thp_always};

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
