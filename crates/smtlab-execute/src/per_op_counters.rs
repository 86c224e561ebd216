//! A server sample's hardware counters per operation (a web request, a
//! chat message): CPI and the paper's misses, user and kernel apart, as the
//! sample's extras. Apart because the web and the chat samples both write
//! them, each per its own unit.

use std::collections::BTreeMap;

use smtlab_types::extras;
use smtlab_types::{CounterStatus, CounterValue};

/// CPI and the paper's counters per operation (`unit`: `req`, `msg`), user
/// and kernel apart, from counters that were counted (`Ok`): the web and
/// chat samples' `cpi.SCOPE`, `instructions_per_UNIT.SCOPE` and
/// `EVENT_per_UNIT.SCOPE` extras.
pub(crate) fn counter_extras(
    counters: &[CounterValue],
    per: impl Fn(f64) -> f64,
    unit: &str,
    x: &mut BTreeMap<String, f64>,
) {
    let counted = |name: &str, scope: &str| {
        counters
            .iter()
            .find(|c| c.name == name && c.scope.as_str() == scope && c.status == CounterStatus::Ok)
            .and_then(|c| c.value)
    };
    for scope in ["user", "kernel"] {
        if let (Some(cy), Some(ins)) = (counted("cycles", scope), counted("instructions", scope)) {
            if ins > 0.0 {
                x.insert(extras::server::cpi_key(scope), cy / ins);
            }
            x.insert(
                extras::server::per_op_key("instructions", unit, scope),
                per(ins),
            );
        }
        for ev in [
            "L1-icache-load-misses",
            "L1-dcache-load-misses",
            "iTLB-load-misses",
            "branch-misses",
        ] {
            if let Some(v) = counted(ev, scope) {
                x.insert(extras::server::per_op_key(ev, unit, scope), per(v));
            }
        }
    }
}
