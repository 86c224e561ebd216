//! The built-in workloads by name: the one table `smtlab list`, plans and
//! workers look them up in.

use crate::Workload;

/// The built-in workloads.
pub fn builtin(name: &str) -> Option<Box<dyn Workload>> {
    match name {
        "jbb" => Some(Box::new(crate::jbb::Jbb)),
        "spin" => Some(Box::new(crate::spin::Spin)),
        "parfib" => Some(Box::new(crate::parfib::Parfib)),
        "sumeuler" => Some(Box::new(crate::sumeuler::SumEuler)),
        "mandel" => Some(Box::new(crate::mandel::Mandel)),
        "stream" => Some(Box::new(crate::stream::Stream)),
        "latency" => Some(Box::new(crate::latency::Latency)),
        "allocprobe" => Some(Box::new(crate::allocprobe::AllocProbe)),
        "larson" => Some(Box::new(crate::larson::Larson)),
        "xmalloc" => Some(Box::new(crate::xmalloc::Xmalloc)),
        "cache_scratch" => Some(Box::new(crate::cache_scratch::CacheScratch)),
        "cache_thrash" => Some(Box::new(crate::cache_thrash::CacheThrash)),
        "mstress" => Some(Box::new(crate::mstress::Mstress)),
        _ => None,
    }
}

/// Names of the built-in workloads, for error messages and `smtlab list`.
pub fn builtin_names() -> Vec<&'static str> {
    vec![
        "jbb",
        "spin",
        "stream",
        "latency",
        "parfib",
        "sumeuler",
        "mandel",
        "allocprobe",
        "larson",
        "xmalloc",
        "cache_scratch",
        "cache_thrash",
        "mstress",
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Params;
    use crate::testing;
    use crate::WorkloadConfig;

    /// One out-of-range value per workload parameter that has a range (or
    /// a relation to another): `parse` must refuse each at plan time.
    const OUT_OF_RANGE: &[(&str, &str, &str)] = &[
        ("jbb", "items", "0"),
        ("jbb", "customers", "0"),
        ("jbb", "initial_orders", "1000001"),
        ("jbb", "max_orders", "5"),
        ("jbb", "max_history", "10"),
        ("jbb", "corrupt", "2"),
        ("spin", "corrupt", "2"),
        ("stream", "size", "1000"),
        ("stream", "corrupt", "3"),
        ("latency", "size", "100"),
        ("latency", "size", "1000"),
        ("latency", "corrupt", "2"),
        ("parfib", "n", "91"),
        ("parfib", "threshold", "0"),
        ("parfib", "corrupt", "2"),
        ("sumeuler", "n", "100000001"),
        ("sumeuler", "chunk", "0"),
        ("sumeuler", "corrupt", "2"),
        ("mandel", "width", "0"),
        ("mandel", "height", "1048577"),
        ("mandel", "iters", "0"),
        ("mandel", "corrupt", "2"),
        ("allocprobe", "live", "0"),
        ("allocprobe", "min_size", "4"),
        ("allocprobe", "max_size", "8"),
        ("allocprobe", "migrate", "2"),
        ("allocprobe", "migrate_every", "0"),
        ("allocprobe", "corrupt", "2"),
        ("larson", "slots", "0"),
        ("larson", "min_size", "2000000"),
        ("larson", "rounds", "0"),
        ("larson", "touch", "4"),
        ("larson", "corrupt", "2"),
        ("xmalloc", "batch", "0"),
        ("xmalloc", "depth", "65537"),
        ("xmalloc", "max_size", "2000000"),
        ("xmalloc", "touch", "0"),
        ("xmalloc", "corrupt", "2"),
        ("cache_scratch", "size", "0"),
        ("cache_scratch", "writes", "0"),
        ("cache_scratch", "corrupt", "2"),
        ("cache_thrash", "size", "2000000"),
        ("cache_thrash", "writes", "0"),
        ("cache_thrash", "corrupt", "2"),
        ("mstress", "batch", "0"),
        ("mstress", "keep", "101"),
        ("mstress", "min_size", "0"),
        ("mstress", "corrupt", "2"),
    ];

    #[test]
    fn every_workload_accepts_its_defaults() {
        for name in builtin_names() {
            let w = builtin(name).unwrap();
            w.parse(&Params::new())
                .unwrap_or_else(|e| panic!("{name}: its defaults are refused: {e:#}"));
        }
    }

    #[test]
    fn out_of_range_values_are_refused_naming_the_parameter() {
        for &(name, key, value) in OUT_OF_RANGE {
            let w = builtin(name).unwrap();
            let given = Params::from([(key.to_string(), value.to_string())]);
            let err = w
                .parse(&given)
                .expect_err(&format!("{name}: --param {key}={value} accepted"));
            let msg = format!("{err:#}");
            assert!(
                msg.starts_with(&format!("--param {key}={value}:")),
                "{name}: {msg}"
            );
            assert!(!msg.contains('\n'), "{name}: not one line: {msg}");
        }
    }

    #[test]
    fn every_workload_with_parameters_has_an_out_of_range_case() {
        for name in builtin_names() {
            assert!(
                OUT_OF_RANGE.iter().any(|c| c.0 == name),
                "{name}: no out-of-range case in OUT_OF_RANGE"
            );
        }
    }

    /// What planning hands a worker is what the worker sets up from: every
    /// workload's default config goes through the worker protocol's JSON
    /// and back unchanged, and the workload sets up from the copy (a
    /// worker process never sees the `--param` text).
    #[test]
    fn every_workloads_config_round_trips_through_json_and_sets_up() {
        for name in builtin_names() {
            let w = builtin(name).unwrap();
            let config = w.parse(&Params::new()).unwrap();
            assert_eq!(config.workload(), name);
            let json = serde_json::to_string(&config).unwrap();
            let back: WorkloadConfig = serde_json::from_str(&json).unwrap();
            assert_eq!(back, config, "{name}: {json}");
            // jbb and allocprobe build tables at set-up: small ones here.
            let small: &[(&str, &str)] = match name {
                "jbb" => &[
                    ("items", "200"),
                    ("customers", "30"),
                    ("initial_orders", "30"),
                ],
                "allocprobe" => &[("live", "100")],
                "stream" => &[("size", "24K")],
                "latency" => &[("size", "4K")],
                _ => &[],
            };
            let small = testing::config(&*w, small).unwrap();
            w.setup(&small, &testing::ctx_mode(1, w.info().default_mode))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    /// A workload handed another's config refuses it with an error naming
    /// both, and does not panic.
    #[test]
    fn a_workload_given_anothers_config_refuses_it() {
        let spin = builtin("spin").unwrap().parse(&Params::new()).unwrap();
        for name in builtin_names().into_iter().filter(|&n| n != "spin") {
            let e = builtin(name)
                .unwrap()
                .setup(&spin, &testing::ctx(1))
                .err()
                .unwrap_or_else(|| panic!("{name} set up from spin's config"));
            assert_eq!(
                e.to_string(),
                format!("workload `{name}` was given the parameters of `spin`")
            );
        }
    }
}
