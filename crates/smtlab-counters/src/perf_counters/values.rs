//! Counter values: a read scaled for multiplexing, a counter without a
//! value, and sums over threads. Pure functions over
//! [`CounterValue`] records.
//!
//! The kernel rotates more counters than the PMU holds and reports, per
//! counter, how long it was enabled and how long it actually ran; values are
//! scaled by `enabled / running` and the fraction is stored with every
//! value, so the analysis can tell an exact count from an estimate. Ratios
//! of two multiplexed counters are estimates from different slices of the
//! same window: fine for steady workloads, and visible (fraction < 1) when
//! not.
//!
//! Called by the per-thread counters and by execute, which sums its workers'
//! counters into a sample's.

use smtlab_types::sample::{CounterScope, CounterStatus, CounterValue};

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
        return CounterValue::failed(
            name,
            scope,
            CounterStatus::Error,
            "never enabled (the measured window did not start, or the program never \
             exec'd)"
                .to_string(),
        );
    }
    if running == 0 {
        return CounterValue::failed(
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
            CounterValue::failed(&name, scope, status, reason)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(name: &str, scope: CounterScope, value: f64) -> CounterValue {
        scaled_value(name, scope, value as u64, 100, 100)
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
            vec![CounterValue::failed(
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
}
