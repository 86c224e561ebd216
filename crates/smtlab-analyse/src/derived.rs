//! Ratios derived from a sample's counters: cycles per instruction,
//! instructions per cycle, and misses per 1000 instructions (MPKI) of each
//! miss counter. Computed when samples are summarised, never stored: the
//! raw counts are the record, the ratios a reading of it.

use serde::{Deserialize, Serialize};
use smtlab_types::{CounterScope, CounterStatus, CounterValue};

/// The counters [`derived`] reports misses per 1000 instructions for.
pub const MISS_EVENTS: [&str; 7] = [
    "cache-misses",
    "branch-misses",
    "L1-dcache-load-misses",
    "L1-icache-load-misses",
    "LLC-load-misses",
    "dTLB-load-misses",
    "iTLB-load-misses",
];

/// Misses of one counter per 1000 instructions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mpki {
    pub counter: String,
    pub value: Option<f64>,
}

/// Ratios computed from the counters of a sample or a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    /// What the ratios cover: `all` (user + kernel counts added) when both
    /// were counted, else `user`; `None` when instructions were not counted.
    pub scope: Option<CounterScope>,
    /// Cycles per instruction.
    pub cpi: Option<f64>,
    /// Instructions per cycle.
    pub ipc: Option<f64>,
    /// One per [`MISS_EVENTS`] counter, in that order.
    pub mpki: Vec<Mpki>,
}

impl Derived {
    pub fn mpki_of(&self, counter: &str) -> Option<f64> {
        self.mpki
            .iter()
            .find(|m| m.counter == counter)
            .and_then(|m| m.value)
    }
}

/// The value of `name` in `scope`, where `All` may also be the sum of the
/// user and kernel counters. Only `Ok` counters count.
fn value_in(counters: &[CounterValue], name: &str, scope: CounterScope) -> Option<f64> {
    let get = |s: CounterScope| {
        counters
            .iter()
            .find(|c| c.name == name && c.scope == s && c.status == CounterStatus::Ok)
            .and_then(|c| c.value)
    };
    match scope {
        CounterScope::All => get(CounterScope::All)
            .or_else(|| Some(get(CounterScope::User)? + get(CounterScope::Kernel)?)),
        s => get(s),
    }
}

/// CPI, IPC and misses per 1000 instructions, over user + kernel mode when
/// both were counted, else user mode; `None` wherever an input is missing
/// or not `Ok`, or a divisor is zero.
pub fn derived(counters: &[CounterValue]) -> Derived {
    let scope = [CounterScope::All, CounterScope::User]
        .into_iter()
        .find(|&s| value_in(counters, "instructions", s).is_some());
    let Some(scope) = scope else {
        return Derived {
            scope: None,
            cpi: None,
            ipc: None,
            mpki: MISS_EVENTS
                .iter()
                .map(|m| Mpki {
                    counter: m.to_string(),
                    value: None,
                })
                .collect(),
        };
    };
    derived_in(counters, scope)
}

/// [`derived`] in a given scope (`All`: user + kernel).
pub fn derived_in(counters: &[CounterValue], scope: CounterScope) -> Derived {
    let ratio = |num: Option<f64>, den: Option<f64>| match (num, den) {
        (Some(n), Some(d)) if d > 0.0 => Some(n / d),
        _ => None,
    };
    let instructions = value_in(counters, "instructions", scope);
    let cycles = value_in(counters, "cycles", scope);
    Derived {
        scope: instructions.map(|_| scope),
        cpi: ratio(cycles, instructions),
        ipc: ratio(instructions, cycles),
        mpki: MISS_EVENTS
            .iter()
            .map(|&m| Mpki {
                counter: m.to_string(),
                value: ratio(value_in(counters, m, scope), instructions).map(|r| r * 1000.0),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(name: &str, scope: CounterScope, value: f64) -> CounterValue {
        CounterValue {
            name: name.to_string(),
            scope,
            status: CounterStatus::Ok,
            raw: Some(value as u64),
            value: Some(value),
            fraction_running: Some(1.0),
            reason: None,
        }
    }

    #[test]
    fn measure_derived_user_and_kernel() {
        let c = vec![
            ok("cycles", CounterScope::User, 3000.0),
            ok("cycles", CounterScope::Kernel, 1000.0),
            ok("instructions", CounterScope::User, 1500.0),
            ok("instructions", CounterScope::Kernel, 500.0),
            ok("dTLB-load-misses", CounterScope::User, 8.0),
            ok("dTLB-load-misses", CounterScope::Kernel, 2.0),
            ok("cache-misses", CounterScope::User, 4.0),
            CounterValue::failed(
                "cache-misses",
                CounterScope::Kernel,
                CounterStatus::Error,
                "x".into(),
            ),
        ];
        let d = derived(&c);
        assert_eq!(d.scope, Some(CounterScope::All));
        assert_eq!(d.cpi, Some(2.0));
        assert_eq!(d.ipc, Some(0.5));
        assert_eq!(d.mpki_of("dTLB-load-misses"), Some(5.0));
        // Kernel part missing: no total, so no MPKI in scope all.
        assert_eq!(d.mpki_of("cache-misses"), None);
        assert_eq!(d.mpki_of("LLC-load-misses"), None);
        assert_eq!(d.mpki.len(), MISS_EVENTS.len());
        let u = derived_in(&c, CounterScope::User);
        assert_eq!(u.cpi, Some(2.0));
        assert!((u.mpki_of("cache-misses").unwrap() - 4000.0 / 1500.0).abs() < 1e-9);
    }

    #[test]
    fn measure_derived_user_only_and_missing() {
        let c = vec![
            ok("cycles", CounterScope::User, 200.0),
            ok("instructions", CounterScope::User, 100.0),
            CounterValue::failed(
                "instructions",
                CounterScope::Kernel,
                CounterStatus::NotPermitted,
                "p".into(),
            ),
        ];
        let d = derived(&c);
        assert_eq!(d.scope, Some(CounterScope::User));
        assert_eq!(d.cpi, Some(2.0));
        let none = derived(&[CounterValue::failed(
            "instructions",
            CounterScope::User,
            CounterStatus::Unsupported,
            "no PMU".into(),
        )]);
        assert_eq!(none.scope, None);
        assert_eq!(none.cpi, None);
        assert!(none.mpki.iter().all(|m| m.value.is_none()));
        // Zero instructions: no ratio rather than infinity.
        let z = derived(&[
            ok("cycles", CounterScope::User, 5.0),
            ok("instructions", CounterScope::User, 0.0),
        ]);
        assert_eq!(z.cpi, None);
        assert_eq!(z.ipc, Some(0.0));
    }
}
