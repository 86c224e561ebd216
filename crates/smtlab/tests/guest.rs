//! smtlab on machines with real SMT siblings and NUMA nodes: emulated
//! guests (QEMU TCG through virtme-ng, booting this machine's own
//! filesystem; `scripts/guest`) in which the release build runs every
//! study, each step asserting what it must say on that shape.
//!
//! The first test (shape b: topology, placements, a short run compact vs
//! scatter, a short `study smt` and `study cores` with a USL fit) runs in
//! CI; the others are `#[ignore]`d for time (about an hour under TCG) and
//! run with `cargo test -p smtlab --test guest -- --include-ignored`.
//! Skipped, with the reason, where a guest cannot run (no qemu, no
//! virtme-ng: `bash scripts/setup.sh` installs them).
//!
//! The emulated siblings share nothing physical and the virtual CPUs take
//! turns on one host thread: these tests check what smtlab does and says
//! on a topology, never how fast anything is.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use support::guest::{Guest, Scenario, Shape};

#[path = "../../smtlab-report/tests/support/chromium.rs"]
mod chromium;

/// Short measurement settings: the studies must still state intervals, so
/// three samples a point.
const SHORT: &str = "--duration 0.3s --min-samples 3 --max-samples 3 --warmup 0";

/// The hwloc view of the machine inside the guest, one line per object:
/// `core 1: 2,3` (OS indexes of its PUs), from `hwloc-calc`, for packages,
/// cores and NUMA nodes.
const HWLOC_SETS: &str = r#"for t in package core numa; do
  n=$(hwloc-calc -N "$t" all)
  for ((i = 0; i < n; i++)); do echo "$t $i: $(hwloc-calc --po -I pu "$t:$i")"; done
done"#;

/// Topology, hwloc's view, and the placements (4 workers; `core` one per
/// usable core, `cores` of them), as steps.
fn topology_steps(s: &mut Scenario, cores: u32) {
    s.step("topology", 120, "smtlab topology --json");
    s.step("topology_text", 120, "smtlab topology");
    s.step("hwloc", 120, HWLOC_SETS);
    for (name, n, policy) in [
        ("place_compact", 4, "compact"),
        ("place_scatter", 4, "scatter"),
        ("place_core", cores, "core"),
        ("place_smt1", 2, "smt:1"),
    ] {
        s.step(
            name,
            120,
            &format!("smtlab place -n {n} -p {policy} --json"),
        );
    }
}

fn json(g: &Guest, step: &str) -> Value {
    let out = g.ok(step);
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{step}: not JSON ({e}):\n{out}"))
}

/// A JSON array of CPU numbers.
fn cpus_of(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a CPU list: {v}"))
        .iter()
        .map(|c| c.as_u64().unwrap() as u32)
        .collect()
}

/// `kind index -> PUs` from the `hwloc` step.
fn hwloc_sets(g: &Guest) -> BTreeMap<(String, usize), Vec<u32>> {
    g.ok("hwloc")
        .lines()
        .filter_map(|l| {
            let (head, list) = l.split_once(": ")?;
            let (kind, i) = head.split_once(' ')?;
            let pus = list
                .trim()
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|p| p.parse().unwrap())
                .collect();
            Some(((kind.to_string(), i.parse().unwrap()), pus))
        })
        .collect()
}

/// smtlab's topology inside the guest is hwloc's: the same packages, SMT
/// sibling groups and NUMA nodes (PUs this process may use), and the
/// summary line the shape implies.
fn assert_topology_is_hwlocs(g: &Guest, summary: &str) {
    let topo = json(g, "topology");
    let allowed: BTreeSet<u32> = topo["pus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["allowed"] == true)
        .map(|p| p["os_index"].as_u64().unwrap() as u32)
        .collect();
    let ours = |key: &str| -> BTreeSet<Vec<u32>> {
        topo[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                cpus_of(&o["cpus"])
                    .into_iter()
                    .filter(|c| allowed.contains(c))
                    .collect::<Vec<u32>>()
            })
            .filter(|v| !v.is_empty())
            .collect()
    };
    let hw = hwloc_sets(g);
    let theirs = |kind: &str| -> BTreeSet<Vec<u32>> {
        hw.iter()
            .filter(|((k, _), pus)| k == kind && !pus.is_empty())
            .map(|(_, pus)| pus.clone())
            .collect()
    };
    assert_eq!(ours("packages"), theirs("package"), "packages");
    assert_eq!(ours("cores"), theirs("core"), "cores (SMT sibling groups)");
    assert_eq!(ours("numa_nodes"), theirs("numa"), "NUMA nodes");
    assert_eq!(
        g.ok("topology_text").lines().last().unwrap_or(""),
        summary,
        "summary line"
    );
}

/// The ordered CPUs of a `place --json` step.
fn placed(g: &Guest, step: &str) -> Vec<u32> {
    cpus_of(&json(g, step)["cpus"])
}

/// Every report (a directory under the guest's output) renders in
/// headless Chromium with every chart laid out, among them its `must`
/// figure ids.
fn assert_reports_render(g: &Guest, reports: &[(&str, &[&str])]) {
    let Some(browser) = chromium::chromium() else {
        support::skip("chromium not installed: the reports were not rendered");
        return;
    };
    for (dir, must) in reports {
        let dir = g.path(dir);
        let figures = chromium::figures_in(&dir);
        for fig in *must {
            assert!(
                figures.iter().any(|f| f == fig),
                "{}: no figure {fig} among {figures:?}",
                dir.display()
            );
        }
        let scratch = tempfile::tempdir().unwrap();
        let page = chromium::render(&browser, &dir.join("report.html"), scratch.path());
        page.assert_figures_drawn(&figures);
    }
}

/// The study's JSON document from a `study --json` step.
fn study(g: &Guest, step: &str) -> Value {
    json(g, step)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|s| s.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Shape b, as CI runs it: 2 packages x 2 cores x 2 threads, 2 NUMA
/// nodes. Topology = hwloc inside; compact fills a core's siblings, scatter
/// goes to the other package (and node) first; a short run measures both
/// and its workers ran where they were pinned; `study smt` gives each
/// sibling's yield with its interval; `study cores` fits the USL over 4 N;
/// both reports render with their SMT and placement charts.
#[test]
fn shape_b_topology_placements_run_smt_and_cores() {
    let mut s = Scenario::new(Shape::B);
    topology_steps(&mut s, 4);
    s.step(
        "run",
        600,
        &format!("smtlab run -w spin -n 2 --placement compact,scatter {SHORT} --json --db run.db"),
    );
    s.step(
        "run_workers",
        60,
        "sqlite3 run.db 'select cpu, last_cpu from worker_samples'",
    );
    s.step(
        "smt",
        900,
        &format!("smtlab study smt -w spin {SHORT} --json --db study.db -o \"$GUEST_OUT/rep-smt\""),
    );
    s.step(
        "cores",
        900,
        &format!(
            "smtlab study cores -w spin {SHORT} --json --db study.db -o \"$GUEST_OUT/rep-cores\""
        ),
    );
    let Some(g) = s.run("shape b (CI)") else {
        return;
    };

    assert_topology_is_hwlocs(
        &g,
        "2 packages, 4 cores, 8 PUs, SMT on (2 PUs per core), 2 NUMA nodes",
    );
    // compact: both siblings of core 0, then core 1 (same package, node 0).
    assert_eq!(placed(&g, "place_compact"), [0, 1, 2, 3]);
    // scatter: one PU per core, packages (and nodes) alternating.
    assert_eq!(placed(&g, "place_scatter"), [0, 4, 2, 6]);
    // core: the first PU of each core.
    assert_eq!(placed(&g, "place_core"), [0, 2, 4, 6]);
    // smt:1: the siblings of logical core 1.
    assert_eq!(placed(&g, "place_smt1"), [2, 3]);

    // The run measured compact (siblings) and scatter (two nodes) apart.
    let run = json(&g, "run");
    let points = run["points"].as_array().unwrap();
    let by_placement: BTreeMap<&str, &Value> = points
        .iter()
        .map(|p| (p["placement"].as_str().unwrap(), p))
        .collect();
    assert_eq!(cpus_of(&by_placement["compact"]["cpus"]), [0, 1]);
    assert_eq!(cpus_of(&by_placement["scatter"]["cpus"]), [0, 4]);
    for p in points {
        assert_eq!(p["samples"], 3, "{p}");
        assert!(p["ci95"].is_array(), "an interval: {p}");
    }
    // Every worker last ran on the CPU it was pinned to.
    let workers = g.ok("run_workers");
    assert!(workers.lines().count() >= 12, "{workers}");
    for l in workers.lines() {
        let (cpu, last) = l.split_once('|').unwrap();
        assert_eq!(cpu, last, "a worker ran off its CPU: {workers}");
    }

    // study smt: each sibling's yield with its interval, and the machine
    // said to be emulated.
    let smt = study(&g, "smt");
    let verdicts = strings(&smt["verdicts"]);
    for model in ["thread", "process"] {
        assert!(
            verdicts.iter().any(
                |v| v.contains(&format!("({model} model): sibling 2 of core 0"))
                    && v.contains("95% CI")
            ),
            "{verdicts:#?}"
        );
    }
    let limits = strings(&smt["limits"]);
    assert!(
        limits
            .iter()
            .any(|l| l.starts_with("This machine's CPUs are emulated (QEMU TCG")),
        "{limits:#?}"
    );
    for r in strings(&smt["recommendations"]) {
        assert!(r.contains("Whether SMT pays:"), "{r}");
        assert!(!r.contains("unknown — this machine has no SMT"), "{r}");
    }

    // study cores: one PU per core, N = 1..4, and a USL fit over 4 N.
    let cores = study(&g, "cores");
    let ns: BTreeSet<u64> = cores["analysis"]["series"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["points"].as_array().unwrap().iter())
        .map(|p| p["workers"].as_u64().unwrap())
        .collect();
    assert_eq!(ns, BTreeSet::from([1, 2, 3, 4]));
    // A fit per model over the 4 N; the emulated cores barely scale, so it
    // may well say that the USL does not describe them (and then predicts
    // nothing).
    let verdicts = strings(&cores["verdicts"]);
    for model in ["thread", "process"] {
        assert!(
            verdicts
                .iter()
                .any(|v| v.starts_with(&format!("spin ({model} model): "))
                    && (v.contains("USL fit over 4 points (R² = ")
                        || v.contains("the USL does not describe these data (R² = ")
                            && v.contains(" over 4 points")
                            && v.ends_with("no prediction."))),
            "{verdicts:#?}"
        );
    }

    assert_reports_render(
        &g,
        &[
            ("rep-smt", &["fig-smt-spin", "fig-placement-map"]),
            ("rep-cores", &["fig-speedup-spin", "fig-placement-map"]),
        ],
    );
}

/// Processes whose command line mentions `needle` (a guest's directory).
fn processes_mentioning(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != std::process::id())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(needle))
                .unwrap_or(false)
        })
        .collect()
}

/// A guest that does not boot in time is stopped with a clear message and
/// exit 125, and leaves no qemu and no directory of its own behind.
#[test]
fn a_guest_that_does_not_boot_in_time_is_stopped_and_cleaned_up() {
    if let Err(why) = support::guest::available() {
        support::skip(&format!("no emulated guest here: {why}"));
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let res = std::process::Command::new(support::guest::repo().join("scripts/guest"))
        .args(["--boot-timeout", "2", "--out"])
        .arg(out.path())
        .args(["--", "true"])
        .env("TMPDIR", tmp.path())
        .env("SMTLAB_GUEST_ACCEL", "tcg")
        // Not behind other guests: this one is over in seconds.
        .env("SMTLAB_GUEST_SLOTS", "64")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(125), "{err}");
    assert!(err.contains("did not boot within 2s"), "{err}");
    let needle = out.path().display().to_string();
    assert!(
        processes_mentioning(&needle).is_empty(),
        "a qemu of it is left"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
    assert!(
        !out.path().join(".guest/bin").exists(),
        "the copy of the release build is left"
    );
}

/// SIGKILL of the runner while its guest boots: the watchdog stops the
/// guest and removes the runner's directories.
#[test]
fn a_killed_runner_leaves_no_guest_and_no_directory() {
    if let Err(why) = support::guest::available() {
        support::skip(&format!("no emulated guest here: {why}"));
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let needle = out.path().display().to_string();
    let mut runner = std::process::Command::new(support::guest::repo().join("scripts/guest"))
        .arg("--out")
        .arg(out.path())
        .args(["--", "sleep", "600"])
        .env("TMPDIR", tmp.path())
        .env("SMTLAB_GUEST_ACCEL", "tcg")
        .env("SMTLAB_GUEST_SLOTS", "64")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Until its qemu runs.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !processes_mentioning(&needle).iter().any(|p| {
        std::fs::read_link(format!("/proc/{p}/exe"))
            .is_ok_and(|e| e.to_string_lossy().contains("qemu"))
    }) {
        assert!(std::time::Instant::now() < until, "no qemu started");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    runner.kill().unwrap();
    runner.wait().unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let left = processes_mentioning(&needle);
        let files: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
        // The copy of the release build the guest ran goes too.
        let bin = out.path().join(".guest/bin");
        if left.is_empty() && files.is_empty() && !bin.exists() {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "left after the runner's SIGKILL: processes {left:?}, files {files:?}, {} \
             exists: {}",
            bin.display(),
            bin.exists()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// `smtlab study NAME ARGS --json` into a report under the guest's output.
fn study_step(s: &mut Scenario, name: &str, limit_s: u32, args: &str) {
    s.step(
        name,
        limit_s,
        &format!("smtlab study {name} {args} --json --db study.db -o \"$GUEST_OUT/rep-{name}\""),
    );
}

/// The table of a study's JSON titled `title` (its rows).
fn table<'a>(doc: &'a Value, title: &str) -> &'a Vec<Value> {
    doc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"].as_str().is_some_and(|t| t.starts_with(title)))
        .unwrap_or_else(|| panic!("no table '{title}' in {}", doc["tables"]))["rows"]
        .as_array()
        .unwrap()
}

/// Threads pinned one per PU of `cpus` each allocating 4 KiB blocks
/// (malloc, not Python's small-object arena), run under libsmtalloc.so
/// with its statistics printed at exit.
fn smtalloc_threads(cpus: &str) -> String {
    format!(
        "SMTALLOC_STATS=1 LD_PRELOAD=\"$(dirname \"$(command -v smtlab)\")/libsmtalloc.so\" \
         python3 -c '
import os, threading
def work(cpu):
    os.sched_setaffinity(0, {{cpu}})
    keep = [bytearray(4096) for _ in range(3000)]
ts = [threading.Thread(target=work, args=(c,)) for c in [{cpus}]]
[t.start() for t in ts]
[t.join() for t in ts]
'"
    )
}

/// The producer/consumer ring of `benches/c/handoff.c` (compiled in the
/// guest), its two threads on `cpus` (two PUs: a core's siblings, or two
/// cores), under smtalloc with its statistics, then under jemalloc and
/// tcmalloc where installed: each run's `ns_per_block` and smtalloc's
/// lines, each run introduced by `== ALLOC CPUS`.
fn handoff_runs(placements: &[&str]) -> String {
    let src = support::guest::repo().join("crates/smtlab/benches/c/handoff.c");
    let mut cmd = format!(
        "cc -O2 -pthread -o /dev/shm/handoff {} || exit 1\n\
         smt=\"$(dirname \"$(command -v smtlab)\")/libsmtalloc.so\"\n",
        support::guest::shell_quote(&src.display().to_string())
    );
    for cpus in placements {
        cmd.push_str(&format!(
            "echo '== smtalloc {cpus}'; SMTALLOC_STATS=1 LD_PRELOAD=\"$smt\" taskset -c {cpus} \
             /dev/shm/handoff touched 100000 2>&1 || exit 1\n\
             for lib in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 \
             /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4; do [ -e \"$lib\" ] || continue; \
             echo \"== $(basename \"$lib\") {cpus}\"; LD_PRELOAD=\"$lib\" taskset -c {cpus} \
             /dev/shm/handoff touched 100000 || exit 1; done\n"
        ));
    }
    cmd
}

/// The section of [`handoff_runs`]'s output for `alloc` on `cpus`.
fn handoff_section<'a>(out: &'a str, alloc: &str, cpus: &str) -> &'a str {
    let head = format!("== {alloc} {cpus}\n");
    let start = out
        .find(&head)
        .map(|i| i + head.len())
        .unwrap_or_else(|| panic!("no {head:?} in {out}"));
    let rest = &out[start..];
    &rest[..rest.find("\n== ").map_or(rest.len(), |i| i + 1)]
}

/// smtalloc's per-core lines (`smtalloc: core K cpus A,B: arena ...`): the
/// CPUs of each core that allocated, and its calls.
fn smtalloc_cores(stderr: &str) -> BTreeMap<usize, (String, u64)> {
    stderr
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("smtalloc: core ")?;
            let (core, rest) = rest.split_once(" cpus ")?;
            let (cpus, rest) = rest.split_once(':')?;
            let calls = rest
                .split(" in ")
                .nth(2)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            Some((core.parse().ok()?, (cpus.to_string(), calls)))
        })
        .collect()
}

/// Shape a: 1 package x 2 cores x 2 threads. Topology and placements;
/// `pin` puts a program's threads on a core's two siblings; `study smt`
/// with intervals; `study pairs` pairs programs on a core's siblings
/// ("SMT"); smtalloc gives each core one arena that both its siblings
/// use (a producer/consumer between siblings sends no block anywhere,
/// between cores every one home), and `study alloc` finds no object
/// foreign to its core.
#[test]
#[ignore = "an emulated guest, minutes under TCG: cargo test -p smtlab --test guest -- --include-ignored"]
#[allow(clippy::too_many_lines)] // one guest boot: its steps, then their checks in order
fn shape_a_one_package_two_cores_two_threads() {
    let mut s = Scenario::new(Shape::A);
    topology_steps(&mut s, 2);
    s.step(
        "pin",
        120,
        "smtlab pin -c 0,1 -- python3 -c 'import threading; t = threading.Thread(target=lambda: sum(range(10**6))); t.start(); t.join()'",
    );
    study_step(&mut s, "smt", 900, &format!("-w spin {SHORT}"));
    study_step(
        &mut s,
        "pairs",
        900,
        "-w spin,stream --window 0.3s --at-once 1 --trials 10000 --min-samples 3 --max-samples 3 --warmup 0 --max-time 60s",
    );
    s.step("smtalloc", 300, &smtalloc_threads("0, 1, 2, 3"));
    // Producer/consumer between a core's two siblings (one arena: frees are
    // local) and between the two cores (every block sent home).
    s.step("handoff", 600, &handoff_runs(&["0,1", "0,2"]));
    // Threads that move to the next CPU every 1000 allocations: whatever
    // core a block was allocated on, smtalloc's comes from that core's
    // arena; glibc's per-thread arenas follow the thread.
    study_step(
        &mut s,
        "alloc",
        1200,
        &format!("-w allocprobe --param migrate=1 --alloc glibc,smtalloc {SHORT}"),
    );
    let Some(g) = s.run("shape a") else {
        return;
    };

    assert_topology_is_hwlocs(&g, "1 package, 2 cores, 4 PUs, SMT on (2 PUs per core)");
    assert_eq!(placed(&g, "place_compact"), [0, 1, 2, 3]);
    assert_eq!(placed(&g, "place_scatter"), [0, 2, 1, 3]);
    assert_eq!(placed(&g, "place_core"), [0, 2]);
    assert_eq!(placed(&g, "place_smt1"), [2, 3]);

    // pin: the main thread on CPU 0, the thread it created on CPU 1, its
    // sibling; both last ran there.
    let pin = &g.step("pin").err;
    assert_eq!(g.step("pin").status, 0, "{pin}");
    let rows: Vec<Vec<&str>> = pin
        .lines()
        .filter(|l| l.contains("python3"))
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 2, "{pin}");
    for (row, cpu) in rows.iter().zip(["0", "1"]) {
        let n = row.len();
        assert_eq!((row[n - 2], row[n - 1]), (cpu, cpu), "{pin}");
    }

    let smt = study(&g, "smt");
    let verdicts = strings(&smt["verdicts"]);
    assert!(
        verdicts
            .iter()
            .any(|v| v.contains("sibling 2 of core 0") && v.contains("95% CI")),
        "{verdicts:#?}"
    );

    // pairs on a core's two siblings.
    let pairs = study(&g, "pairs");
    let notes = strings(&pairs["notes"]);
    assert!(
        notes
            .iter()
            .any(|n| n == "Pairs run on the two SMT siblings of a core."),
        "{notes:#?}"
    );
    let mut paired = 0;
    for p in report_points(&g, "pairs") {
        // Part k runs on cpus[k]; the two parts of a slot (a co-run) sit
        // on the two siblings of one core (here cores are {2c, 2c+1}).
        let cpus = cpus_of(&p["cpus"]);
        let mut slots: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
        for (k, part) in p["program"]["parts"].as_array().unwrap().iter().enumerate() {
            slots
                .entry(part["slot"].as_u64().unwrap())
                .or_default()
                .push(cpus[k]);
        }
        for pus in slots.values().filter(|v| v.len() == 2) {
            assert!(pus[0] != pus[1] && pus[0] / 2 == pus[1] / 2, "{p}");
            paired += 1;
        }
    }
    // spin+spin, spin+stream, stream+stream.
    assert_eq!(paired, 3);
    assert!(
        pairs["pairs"]["best"]["pairs"].is_array(),
        "{}",
        pairs["pairs"]
    );

    // smtalloc: one arena per core, both siblings allocating from it.
    let err = &g.step("smtalloc").err;
    assert_eq!(g.step("smtalloc").status, 0, "{err}");
    let cores = smtalloc_cores(err);
    assert_eq!(
        cores
            .iter()
            .map(|(k, (cpus, _))| (*k, cpus.as_str()))
            .collect::<Vec<_>>(),
        [(0, "0,1"), (1, "2,3")],
        "{err}"
    );
    assert!(cores.values().all(|(_, calls)| *calls >= 6000), "{err}");
    assert!(err.contains("smtalloc: shared frames: 0 "), "{err}");

    // The handoff ring: between siblings no block goes anywhere (they share
    // the core's arena), between cores every block another core freed is
    // received back by its own core, batched.
    let out = &g.step("handoff").out;
    assert_eq!(
        g.step("handoff").status,
        0,
        "{out}\n{}",
        g.step("handoff").err
    );
    let received = |section: &str| -> Vec<u64> {
        section
            .lines()
            .filter(|l| l.starts_with("smtalloc: core "))
            .map(|l| {
                let rest = &l[l.find("blocks received ").expect("received count") + 16..];
                rest.split_whitespace().next().unwrap().parse().unwrap()
            })
            .collect()
    };
    let siblings = handoff_section(out, "smtalloc", "0,1");
    let cores = handoff_section(out, "smtalloc", "0,2");
    let near = received(siblings);
    assert!(
        !near.is_empty() && near.iter().all(|&n| n == 0),
        "{siblings}"
    );
    assert!(siblings.contains("(freed directly): 0,"), "{siblings}");
    // Between the cores, each core gets blocks back from the other (how
    // many depends on how TCG interleaves the two vCPUs: a producer whose
    // consumer lags frees its own refused batches, and a free whose owner
    // is descheduled is freed directly).
    let apart = received(cores);
    assert!(
        apart.len() == 2 && apart.iter().all(|&n| n > 0),
        "each core should get blocks back from the other: {cores}"
    );
    for section in [siblings, cores] {
        assert!(section.contains("ns_per_block="), "{section}");
        assert!(section.contains("smtalloc: shared frames: 0 "), "{section}");
    }
    eprintln!("handoff in the guest (TCG, timing not the hardware's):\n{out}");

    // study alloc: smtalloc's objects are never foreign to their core,
    // glibc's are once threads migrate.
    let alloc = study(&g, "alloc");
    let rows = table(&alloc, "Allocators");
    let foreign = |alloc: &str| -> Vec<f64> {
        rows.iter()
            .filter(|r| r[2] == alloc)
            .map(|r| {
                r[7].as_str()
                    .unwrap()
                    .trim_end_matches('%')
                    .parse()
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(foreign("smtalloc"), [0.0, 0.0], "{rows:?}");
    assert!(foreign("glibc").iter().any(|f| *f > 10.0), "{rows:?}");

    assert_reports_render(
        &g,
        &[
            ("rep-smt", &["fig-smt-spin", "fig-placement-map"]),
            ("rep-pairs", &["fig-placement-map"]),
            ("rep-alloc", &["fig-placement-map"]),
        ],
    );
}

/// The points of the report a study step wrote (`rep-NAME/results.json`:
/// each with its `point`).
fn report_points(g: &Guest, step: &str) -> Vec<Value> {
    let file = g.path(&format!("rep-{step}/results.json"));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["point"].clone())
        .collect()
}

/// Shape b, every study: 2 packages x 2 cores x 2 threads, 2 NUMA nodes.
/// `models` measures compact (a core's siblings) and scatter (both
/// packages) apart; `pinning` compares a core's siblings with two cores;
/// `oversub`; `web` puts the load generator on CPUs of its own and weighs
/// a sibling against a second core, nginx answering like smtlab's server;
/// `chat`; `comm` puts a node's two ranks on a core's siblings; `doctor`
/// sees SMT, two nodes and emulated CPUs; every report renders.
#[test]
#[ignore = "an emulated guest, about a quarter of an hour under TCG: cargo test -p smtlab --test guest -- --include-ignored"]
// A script read top to bottom: the guest's steps, then each step's checks.
#[allow(clippy::too_many_lines)]
fn shape_b_every_study() {
    let mut s = Scenario::new(Shape::B);
    s.step("doctor", 300, "smtlab doctor --json");
    study_step(&mut s, "models", 900, &format!("-w spin -n 1,2,4 {SHORT}"));
    study_step(&mut s, "pinning", 900, &format!("-w spin {SHORT}"));
    study_step(
        &mut s,
        "oversub",
        900,
        &format!("-w spin -n 1,8,16 {SHORT}"),
    );
    study_step(&mut s, "web", 1800, &format!("-n 1,2 {SHORT}"));
    study_step(
        &mut s,
        "chat",
        1800,
        "--connections 20,40 --param messages=200 --min-samples 3 --max-samples 3 --warmup 0",
    );
    study_step(
        &mut s,
        "comm",
        1800,
        "-w sor --comm sigio,thr2 -n 2,4 --param n=64 --param iterations=4 --min-samples 3 --max-samples 3 --warmup 0",
    );
    let Some(g) = s.run("shape b, every study") else {
        return;
    };

    let doctor = json(&g, "doctor");
    let check = |name: &str| -> (String, String) {
        let c = doctor["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name}: {doctor}"));
        (
            c["status"].as_str().unwrap().to_string(),
            c["finding"].as_str().unwrap().to_string(),
        )
    };
    let (status, finding) = check("smt");
    assert_eq!(status, "ok", "{finding}");
    assert!(finding.starts_with("SMT on: 2 PUs per core"), "{finding}");
    let (status, finding) = check("emulation");
    assert_eq!(status, "warn", "{finding}");
    assert!(finding.contains("QEMU TCG"), "{finding}");

    // models: compact and scatter are different CPUs, both measured.
    let models = report_points(&g, "models");
    let cpus_at = |placement: &str, n: u64| -> Vec<Vec<u32>> {
        models
            .iter()
            .filter(|p| p["placement"] == placement && p["workers"] == n)
            .map(|p| cpus_of(&p["cpus"]))
            .collect()
    };
    assert!(cpus_at("compact", 2).iter().all(|c| c == &[0, 1]));
    assert!(cpus_at("scatter", 2).iter().all(|c| c == &[0, 4]));
    assert_eq!(cpus_at("compact", 2).len(), 2, "thread and process model");
    let doc = study(&g, "models");
    let verdicts = strings(&doc["verdicts"]);
    for placement in ["compact", "scatter"] {
        assert!(
            verdicts
                .iter()
                .any(|v| v.contains(&format!("at 2 threads ({placement})")) && v.contains("95% CI")),
            "{verdicts:#?}"
        );
    }

    // pinning: two threads on one core's siblings against two cores.
    let pinning = study(&g, "pinning");
    let rows = table(
        &pinning,
        "Pinning: 2 threads on one core's PUs vs on the first PU of 2 cores",
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(
        rows[0][3].as_str().unwrap().contains('['),
        "an interval: {rows:?}"
    );

    // oversub: 1, 8 and 16 software threads on 8 PUs.
    let oversub = study(&g, "oversub");
    let rows = table(&oversub, "Oversubscription: software threads on 8 PUs");
    let per_pu: Vec<&str> = rows.iter().map(|r| r[2].as_str().unwrap()).collect();
    assert_eq!(per_pu, ["0.12", "1.00", "2.00"], "{rows:?}");

    // web: the load generator on the last core, servers on the others;
    // every architecture and nginx measured at every N.
    let web = study(&g, "web");
    let notes = strings(&web["notes"]);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("The load generator runs on CPUs 6-7")),
        "{notes:#?}"
    );
    for p in report_points(&g, "web") {
        for cpu in cpus_of(&p["cpus"]) {
            assert!(cpu < 6, "a server on the load generator's CPUs: {p}");
        }
    }
    let rows = table(&web, "Web servers");
    for r in rows {
        assert!(r[4] != "failed", "a server answered nothing: {r}");
    }
    let verdicts = strings(&web["verdicts"]);
    assert!(
        verdicts
            .iter()
            .any(|v| v.contains("two SMT siblings of one core") && v.contains("two cores")),
        "{verdicts:#?}"
    );

    // chat: every model and ngircd at 20 and 40 connections.
    let chat = study(&g, "chat");
    let rows = table(&chat, "Chat servers");
    assert_eq!(rows.len(), 8, "{rows:?}");
    for r in rows {
        assert!(r[2] != "failed", "{r}");
    }

    // comm: a node's two ranks on one core's siblings.
    let mut per_node_2 = 0;
    for p in report_points(&g, "comm") {
        if p["program"]["params"]["per_node"] == "2" {
            let cpus = cpus_of(&p["cpus"]);
            for node in cpus.chunks(2) {
                assert!(node[0] / 2 == node[1] / 2 && node[0] != node[1], "{p}");
            }
            per_node_2 += 1;
        }
    }
    assert!(per_node_2 >= 2, "no two-ranks-per-node point");
    let comm = study(&g, "comm");
    let verdicts = strings(&comm["verdicts"]);
    assert!(
        verdicts
            .iter()
            .any(|v| v.starts_with("Every result verified")),
        "{verdicts:#?}"
    );

    assert_reports_render(
        &g,
        &[
            ("rep-models", &["fig-placement-map", "fig-speedup-spin"]),
            ("rep-pinning", &["fig-placement-map"]),
            // Unpinned (placement none): no map, a note says so.
            ("rep-oversub", &["fig-runtime-spin"]),
            ("rep-web", &["fig-placement-map"]),
            ("rep-chat", &["fig-placement-map"]),
            ("rep-comm", &["fig-placement-map"]),
        ],
    );
}

/// Shape c: 1 package x 2 cores x 4 threads (SMT4, as on POWER). Compact
/// fills a core's four siblings; `study smt` gives the yield of siblings
/// 2, 3 and 4, each with its interval; `pinning` says that 4 threads
/// cannot each get a core on 2 cores.
#[test]
#[ignore = "an emulated guest, minutes under TCG: cargo test -p smtlab --test guest -- --include-ignored"]
fn shape_c_smt4() {
    let mut s = Scenario::new(Shape::C);
    topology_steps(&mut s, 2);
    s.step("place_scatter4", 120, "smtlab place -n 4 -p scatter --json");
    s.step("place_smt1_4", 120, "smtlab place -n 4 -p smt:1 --json");
    study_step(&mut s, "smt", 1200, &format!("-w spin {SHORT}"));
    study_step(&mut s, "pinning", 900, &format!("-w spin {SHORT}"));
    let Some(g) = s.run("shape c") else {
        return;
    };
    assert_topology_is_hwlocs(&g, "1 package, 2 cores, 8 PUs, SMT on (4 PUs per core)");
    assert_eq!(placed(&g, "place_compact"), [0, 1, 2, 3]);
    assert_eq!(placed(&g, "place_scatter"), [0, 4, 1, 5]);
    assert_eq!(placed(&g, "place_core"), [0, 4]);
    assert_eq!(placed(&g, "place_smt1"), [4, 5]);
    assert_eq!(placed(&g, "place_smt1_4"), [4, 5, 6, 7]);

    let smt = study(&g, "smt");
    let verdicts = strings(&smt["verdicts"]);
    for k in 2..=4 {
        assert!(
            verdicts
                .iter()
                .any(|v| v.contains(&format!("sibling {k} of core 0")) && v.contains("95% CI")),
            "sibling {k}: {verdicts:#?}"
        );
    }
    let pinning = study(&g, "pinning");
    let limits = strings(&pinning["limits"]);
    assert!(
        limits.iter().any(|l| l.contains(
            "This machine has 2 usable cores but 4 PUs per core, so 4 threads cannot each get a core of their own"
        )),
        "{limits:#?}"
    );
    assert_reports_render(&g, &[("rep-smt", &["fig-smt-spin", "fig-placement-map"])]);
}

/// Shape d: shape b with SMT switched off at run time (`doctor`'s advice)
/// and CPU 6 taken offline: 0, 2, 4 remain. The topology lists the
/// offline PUs, placements never choose them, `doctor` sees SMT off, and
/// `study smt` says it cannot measure SMT here.
#[test]
#[ignore = "an emulated guest, minutes under TCG: cargo test -p smtlab --test guest -- --include-ignored"]
fn shape_d_smt_off_at_run_time_and_a_cpu_offline() {
    let mut s = Scenario::new(Shape::B);
    s.line("guest_smt_off");
    s.line("guest_offline 6");
    topology_steps(&mut s, 3);
    s.step("place_compact3", 120, "smtlab place -n 3 -p compact --json");
    s.step("doctor", 300, "smtlab doctor --json");
    s.step(
        "run",
        600,
        &format!("smtlab run -w spin -n 3 --placement compact {SHORT} --json --db run.db"),
    );
    study_step(&mut s, "smt", 900, &format!("-w spin {SHORT}"));
    let Some(g) = s.run("shape d") else {
        return;
    };
    let topo = json(&g, "topology");
    let offline: Vec<u64> = topo["pus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["online"] == false)
        .map(|p| p["os_index"].as_u64().unwrap())
        .collect();
    assert_eq!(offline, [1, 3, 5, 6, 7]);
    assert_eq!(topo["smt_active"], false);
    assert_topology_is_hwlocs(
        &g,
        "2 packages, 3 cores, 3 PUs, SMT switched off, 2 NUMA nodes; 5 PUs offline",
    );
    assert_eq!(placed(&g, "place_compact3"), [0, 2, 4]);
    assert_eq!(placed(&g, "place_scatter"), [0, 4, 2, 0]);
    let doctor = json(&g, "doctor");
    let smt = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "smt")
        .unwrap();
    assert!(
        smt["finding"].as_str().unwrap().contains("\"off\""),
        "{smt}"
    );
    let run = json(&g, "run");
    assert_eq!(cpus_of(&run["points"][0]["cpus"]), [0, 2, 4]);
    let study_smt = study(&g, "smt");
    let limits = strings(&study_smt["limits"]);
    assert!(
        limits
            .iter()
            .any(|l| l.starts_with("SMT is switched off on this machine")),
        "{limits:#?}"
    );
    for r in strings(&study_smt["recommendations"]) {
        assert!(
            r.contains("Whether SMT pays: unknown — SMT is switched off on this machine"),
            "{r}"
        );
    }
    // Nothing in it says the machine has no SMT: it has, switched off.
    let notes = strings(&study_smt["notes"]);
    assert!(
        !notes.iter().any(|n| n.contains("has no SMT")),
        "{notes:#?}"
    );
}

/// Shape e: shape b inside a cgroup v2 cpuset of CPUs 0-2 and 5. The
/// topology marks the rest not allowed, placements and runs use only the
/// allowed PUs, `doctor` names the cpuset.
#[test]
#[ignore = "an emulated guest, minutes under TCG: cargo test -p smtlab --test guest -- --include-ignored"]
fn shape_e_inside_a_cgroup_cpuset() {
    let mut s = Scenario::new(Shape::B);
    s.line("guest_cpuset 0-2,5");
    topology_steps(&mut s, 3);
    s.step("doctor", 300, "smtlab doctor --json");
    s.step(
        "run",
        600,
        &format!("smtlab run -w spin -n 4 --placement compact,scatter {SHORT} --json --db run.db"),
    );
    study_step(&mut s, "smt", 900, &format!("-w spin {SHORT}"));
    let Some(g) = s.run("shape e") else {
        return;
    };
    let topo = json(&g, "topology");
    let allowed: Vec<u64> = topo["pus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["allowed"] == true)
        .map(|p| p["os_index"].as_u64().unwrap())
        .collect();
    assert_eq!(allowed, [0, 1, 2, 5]);
    assert!(
        topo["cpuset_source"]
            .as_str()
            .unwrap_or("")
            .contains("smtlab-guest"),
        "{}",
        topo["cpuset_source"]
    );
    assert_topology_is_hwlocs(
        &g,
        "2 packages, 4 cores, 8 PUs, SMT on (2 PUs per core), 2 NUMA nodes; 4 of 8 online PUs \
         allowed (by /sys/fs/cgroup/smtlab-guest/cpuset.cpus.effective)",
    );
    assert_eq!(placed(&g, "place_compact"), [0, 1, 2, 5]);
    assert_eq!(placed(&g, "place_core"), [0, 2, 5]);
    let doctor = json(&g, "doctor");
    let cpuset = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "cpuset")
        .unwrap();
    assert!(
        cpuset["finding"].as_str().unwrap().contains("0-2,5"),
        "{cpuset}"
    );
    let run = json(&g, "run");
    for p in run["points"].as_array().unwrap() {
        for cpu in cpus_of(&p["cpus"]) {
            assert!([0, 1, 2, 5].contains(&cpu), "{p}");
        }
        assert_eq!(p["samples"], 3, "{p}");
    }
    let smt = study(&g, "smt");
    assert!(
        strings(&smt["verdicts"])
            .iter()
            .any(|v| v.contains("sibling 2 of core 0")),
        "{smt}"
    );
}

/// A fleet of two guests of different shapes (a: 1 package x 2 cores x 2
/// threads; 2 packages x 2 cores without SMT, 2 NUMA nodes), each storing
/// its run as `{host}.db` (the guest's host name): merged, compared by
/// host (SMT and the topology named as facts that differ), and reported
/// as a fleet.
#[test]
#[ignore = "two emulated guests, minutes under TCG: cargo test -p smtlab --test guest -- --include-ignored"]
fn a_fleet_of_two_guests() {
    let out = tempfile::tempdir().unwrap();
    let mut stores = Vec::new();
    for (host, shape) in [("guest-a", Shape::A), ("guest-n", Shape::new(2, 2, 1, 2))] {
        let mut s = Scenario::new(shape).host(host);
        // WAL needs the guest's tmpfs; the store is copied out after.
        s.step(
            "run",
            900,
            &format!(
                "smtlab run -w spin -n 1,2 --placement compact {SHORT} --db '/dev/shm/{{host}}.db' \
                 && cp /dev/shm/{host}.db \"$GUEST_OUT/\""
            ),
        );
        let Some(g) = s.run(&format!("fleet: {host}")) else {
            return;
        };
        g.ok("run");
        let db = out.path().join(format!("{host}.db"));
        std::fs::copy(g.path(&format!("{host}.db")), &db).unwrap();
        stores.push(db);
    }
    let fleet = out.path().join("fleet.db");
    let merged = support::smtlab()
        .arg("merge")
        .arg("-o")
        .arg(&fleet)
        .args(&stores)
        .output()
        .unwrap();
    support::assert_success(&merged, "merge");
    let cmp = support::smtlab()
        .args(["compare", "--by", "host", "--json", "--db"])
        .arg(&fleet)
        .output()
        .unwrap();
    support::assert_success(&cmp, "compare --by host");
    let cmp: Value = serde_json::from_slice(&cmp.stdout).unwrap();
    let facts = &cmp["comparison"]["facts"];
    assert_eq!(
        facts["hosts"],
        serde_json::json!(["guest-a", "guest-n"]),
        "{cmp}"
    );
    let differ: Vec<&str> = facts["differences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["fact"].as_str().unwrap())
        .collect();
    assert_eq!(differ, ["SMT", "topology"], "{cmp}");
    let sentence = facts["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("SMT (guest-a on, guest-n off)"),
        "{sentence}"
    );
    let rep = out.path().join("fleet-report");
    let report = support::smtlab()
        .args(["report", "--fleet", "--db"])
        .arg(&fleet)
        .arg("-o")
        .arg(&rep)
        .output()
        .unwrap();
    support::assert_success(&report, "report --fleet");
    if let Some(browser) = chromium::chromium() {
        let scratch = tempfile::tempdir().unwrap();
        let page = chromium::render(&browser, &rep.join("report.html"), scratch.path());
        page.assert_figures_drawn(&chromium::figures_in(&rep));
        assert!(page.dom.contains("guest-a") && page.dom.contains("guest-n"));
    }
}
