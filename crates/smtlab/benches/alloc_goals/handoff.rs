//! Why smtalloc trails jemalloc and tcmalloc on xmalloc: what a freed
//! block's trip home costs each allocator, measured by a C producer/consumer
//! ring (`benches/c/handoff.c`) run twice per allocator and round: once
//! with the receiving thread freeing blocks it never read (`untouched`),
//! once reading each block's first 8 bytes before freeing it (`touched`, as
//! smtlab's xmalloc does to verify). jemalloc and tcmalloc keep a freed
//! block in the freeing thread's cache and hand it out there again, where
//! its line already is; smtalloc sends it home to the core whose arena
//! holds it, so a block the receiver read crosses back between the cores
//! before it is reused. The difference touched - untouched per allocator
//! is that cost.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use smtlab_allocators::Preload;

use crate::common;

/// Blocks each of the two threads allocates per run (~0.1 s here).
const BLOCKS: &str = "2000000";
const MODES: [&str; 2] = ["untouched", "touched"];

/// allocator -> mode -> ns per block, one per round.
pub type Handoff = BTreeMap<String, BTreeMap<&'static str, Vec<f64>>>;

/// One run of the ring under `lib`: ns per block, and stderr.
fn run(exe: &Path, lib: &Preload, mode: &str, stats: bool) -> (f64, String) {
    let mut cmd = Command::new(exe);
    cmd.args([mode, BLOCKS]).env("LD_PRELOAD", &lib.library);
    cmd.envs(lib.env.iter().map(|(k, v)| (k, v)));
    if stats {
        cmd.env("SMTALLOC_STATS", "1");
    }
    let out = cmd.output().expect("handoff runs");
    assert!(out.status.success(), "handoff {mode}: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let ns = text
        .trim()
        .strip_prefix("ns_per_block=")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("handoff printed {text}"));
    (ns, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The libraries to preload: jemalloc and tcmalloc where installed, and
/// smtalloc.
fn libraries(smtalloc: &Path) -> Vec<(String, Preload)> {
    let mut libs: Vec<(String, Preload)> = ["jemalloc", "tcmalloc"]
        .into_iter()
        .filter_map(|a| {
            let lib = smtlab_allocators::find_allocator(a).ok().flatten()?;
            Some((a.to_string(), lib))
        })
        .collect();
    let smt = Preload {
        library: smtalloc.to_path_buf(),
        env: Vec::new(),
    };
    libs.push(("smtalloc".into(), smt));
    libs
}

/// Runs the ring `rounds` times per allocator and mode, interleaved (the
/// order of allocators rotates each round). `None` with fewer than two CPUs.
pub fn measure(dir: &Path, smtalloc: &Path, rounds: usize) -> Option<(Handoff, String)> {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        println!("handoff: needs two CPUs, skipped");
        return None;
    }
    let exe = common::compile_c_with(dir, "handoff", &["-pthread"]);
    let libs = libraries(smtalloc);
    let mut m = Handoff::new();
    for round in 0..rounds {
        for mode in MODES {
            for i in 0..libs.len() {
                let (name, lib) = &libs[(i + round) % libs.len()];
                let (ns, _) = run(&exe, lib, mode, false);
                m.entry(name.clone())
                    .or_default()
                    .entry(mode)
                    .or_default()
                    .push(ns);
            }
        }
    }
    let (_, stats) = run(&exe, &libs[libs.len() - 1].1, "touched", true);
    Some((m, stats))
}

/// Blocks smtalloc's cores received from the other core, and cross-core
/// frees done directly, from its `SMTALLOC_STATS` lines.
fn sent_home(stats: &str) -> (u64, u64) {
    let number_after = |line: &str, key: &str| -> Option<u64> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.trim_start()
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    let received = stats
        .lines()
        .filter(|l| l.starts_with("smtalloc: core "))
        .filter_map(|l| number_after(l, "blocks received"))
        .sum();
    let direct = stats
        .lines()
        .find_map(|l| number_after(l, "(freed directly):"))
        .unwrap_or(0);
    (received, direct)
}

/// Prints the table, the ratios and smtalloc's own count of blocks sent
/// home; returns the JSON rows.
pub fn print(m: &Handoff, stats: &str, rounds: usize) -> serde_json::Value {
    println!();
    println!(
        "why xmalloc trails: a freed block's trip home (C handoff ring, 2 threads pinned, \
         {rounds} interleaved rounds; ns per block, medians; touched = the receiver read each \
         block before freeing it)"
    );
    println!(
        "{:<10} {:>10} {:>10} {:>22}",
        "allocator", "untouched", "touched", "touched - untouched"
    );
    let mut rows = Vec::new();
    for (a, modes) in m {
        let med = |mode: &str| common::median(modes.get(mode).cloned().unwrap_or_default());
        let diffs: Vec<f64> = modes["touched"]
            .iter()
            .zip(&modes["untouched"])
            .map(|(t, u)| t - u)
            .collect();
        let extra = common::median(diffs);
        println!(
            "{a:<10} {:>10.2} {:>10.2} {:>+22.2}",
            med("untouched"),
            med("touched"),
            extra
        );
        rows.push(
            serde_json::json!({"alloc": a, "untouched_ns": modes["untouched"],
            "touched_ns": modes["touched"], "touched_extra_ns": extra}),
        );
    }
    let ratios = ratios(m);
    for (rival, mode, r) in &ratios {
        println!("  smtalloc / {rival} ({mode}), throughput: {r:.3}");
    }
    let (received, direct) = sent_home(stats);
    let blocks: u64 = 2 * BLOCKS.parse::<u64>().unwrap();
    println!(
        "  smtalloc sent {received} blocks home in batches and freed {direct} cross-core frees \
         directly, of {blocks} blocks allocated (the rest were freed by the thread that \
         allocated them, when the other thread's inbox was full): none was reused by the core \
         that freed it"
    );
    serde_json::json!({"rows": rows, "sent_home": received, "freed_directly": direct,
        "blocks": blocks,
        "ratios": ratios.iter().map(|(a, mode, r)| serde_json::json!({"rival": a, "mode": mode, "smtalloc_over_rival": r})).collect::<Vec<_>>()})
}

/// smtalloc's throughput over each rival's per mode: the median of the
/// per-round ratios of ns per block (rival / smtalloc).
fn ratios(m: &Handoff) -> Vec<(String, &'static str, f64)> {
    let Some(smt) = m.get("smtalloc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (a, modes) in m.iter().filter(|(a, _)| *a != "smtalloc") {
        for mode in MODES {
            let per_round: Vec<f64> = modes[mode]
                .iter()
                .zip(&smt[mode])
                .map(|(r, s)| r / s)
                .collect();
            out.push((a.clone(), mode, common::median(per_round)));
        }
    }
    out
}
