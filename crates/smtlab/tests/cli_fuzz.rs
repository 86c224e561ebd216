//! Fuzzing the command line from the outside: random CPU expressions,
//! synthetic machine specs, numeric flags, workload parameters and
//! `--fsroot` trees. Whatever the input, smtlab exits 0 or 2, a usage
//! error is exactly one line, nothing panics, and each call ends within a
//! time and address-space bound (run under `prlimit --as`, so a size that
//! would exhaust memory aborts and fails the test).

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;

/// Address space for one call: far above what any sane input needs (the
/// debug binary with a few threads), far below what an unbounded size
/// would take.
const ADDRESS_SPACE: &str = "--as=4294967296";
/// Wall time for one call, generous for a loaded 2-core CI machine.
const WALL: Duration = Duration::from_secs(20);

fn exe() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("smtlab")
}

/// Run smtlab with `args` under the bounds and check the contract.
fn check(args: &[String]) -> Result<(), TestCaseError> {
    let t0 = Instant::now();
    let mut child = Command::new("prlimit")
        .arg(ADDRESS_SPACE)
        .arg(exe())
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prlimit (util-linux) runs");
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > WALL {
            let _ = child.kill();
            let _ = child.wait();
            return Err(TestCaseError::fail(format!(
                "{args:?}: still running after {WALL:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    prop_assert!(!err.contains("panicked"), "{:?}: panic: {}", args, err);
    match status.code() {
        Some(0) => {}
        Some(2) => prop_assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{:?}: a usage error is one line: {}",
            args,
            err
        ),
        other => prop_assert!(false, "{:?}: exit {:?}: {}", args, other, err),
    }
    Ok(())
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Numbers users type: small, zero, negative, huge, fractional, garbage.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..300).prop_map(|n| n.to_string()),
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("18446744073709551615".to_string()),
        Just("18446744073709551616".to_string()),
        Just("4294967296".to_string()),
        Just("65536".to_string()),
        Just("1e400".to_string()),
        Just("NaN".to_string()),
        Just("".to_string()),
        "[0-9]{1,25}",
        "[-0-9a-z.%,:x ]{0,12}",
    ]
}

fn duration() -> impl Strategy<Value = String> {
    (
        number(),
        prop::sample::select(vec!["", "ns", "ms", "s", "m", "h", "d", "y", "x"]),
    )
        .prop_map(|(n, u)| format!("{n}{u}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn cpu_expressions(expr in "[0-9SCMNDE:@,x^-]{0,16}", n in number()) {
        check(&s(&["place", "--synthetic", "package:2 core:4 pu:2", "-p", &expr, "-n", &n]))?;
        check(&s(&["place", "-p", &expr, "-n", "2"]))?;
    }

    #[test]
    fn synthetic_specs(levels in prop::collection::vec(
        (prop::sample::select(vec!["package", "numa", "group", "l3", "l2", "l1", "core", "pu", "die", "x"]),
         number()),
        0..6,
    )) {
        let spec: Vec<String> = levels.iter().map(|(l, n)| format!("{l}:{n}")).collect();
        check(&s(&["topology", "--synthetic", &spec.join(" ")]))?;
    }

    #[test]
    fn numeric_flags(
        flag in prop::sample::select(vec![
            "--threads", "--warmup", "--min-samples", "--max-samples", "--precision", "--work", "--seed",
        ]),
        value in number(),
        time_flag in prop::sample::select(vec!["--duration", "--max-time", "--timeout"]),
        time in duration(),
        model in "(thread|process|hybrid:[0-9]{1,6}x[0-9]{1,6}|hybrid:[a-z0-9x]{0,5})",
    ) {
        check(&s(&["run", "-w", "spin", "--dry-run", flag, &value]))?;
        check(&s(&["run", "-w", "spin", "--dry-run", time_flag, &time]))?;
        check(&s(&["run", "-w", "spin", "--dry-run", "--model", &model]))?;
        check(&s(&["study", "--dry-run", time_flag, &time]))?;
    }

    #[test]
    fn workload_parameters(
        workload in prop::sample::select(vec!["spin", "stream", "latency", "jbb", "parfib", "mandel", "larson"]),
        key in prop::sample::select(vec!["size", "items", "customers", "seed", "min_size", "max_size", "touch", "depth", "x"]),
        value in prop_oneof![number(), "[0-9]{1,4}(K|M|G|T|KiB|MiB|GiB|TiB|k|b)?"],
    ) {
        check(&s(&["run", "-w", workload, "--param", &format!("{key}={value}"), "--dry-run"]))?;
    }

    #[test]
    fn fsroot_trees(cpus in prop::collection::vec(
        (prop::sample::select(vec!["0", "1", "2", "3", "4294967295", "-1", "x", "", "1e9"]),
         number(), number(), "[-0-9,x]{0,10}"),
        0..5,
    ), online in "[-0-9,x]{0,10}") {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let sys = root.join("sys/devices/system/cpu");
        std::fs::create_dir_all(&sys).unwrap();
        std::fs::write(sys.join("online"), &online).unwrap();
        std::fs::write(sys.join("possible"), &online).unwrap();
        for (name, core, package, siblings) in &cpus {
            let topo = sys.join(format!("cpu{name}/topology"));
            std::fs::create_dir_all(&topo).unwrap();
            write(&topo, "core_id", core);
            write(&topo, "physical_package_id", package);
            write(&topo, "thread_siblings_list", siblings);
            write(&topo, "core_siblings_list", siblings);
        }
        check(&s(&["topology", "--fsroot", root.to_str().unwrap()]))?;
        check(&s(&["place", "--fsroot", root.to_str().unwrap(), "-p", "scatter", "-n", "2"]))?;
    }
}

fn write(dir: &Path, file: &str, text: &str) {
    std::fs::write(dir.join(file), format!("{text}\n")).unwrap();
}
