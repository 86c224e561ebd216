//! Benchmark: smtlab's `stream` triad bandwidth against references run side
//! by side (`cargo bench -p smtlab --bench stream_vs_reference`). Not a
//! test: it prints the bandwidths, the ratio (target >= 0.90) and the
//! machine, then 1 vs 2 workers in the thread and process models, and
//! writes everything to `target/bench-results/stream_vs_reference.json`.
//!
//! References, both single-threaded on CPU 0 (where smtlab's `compact`
//! placement puts one worker) with the same array size as smtlab's default:
//! * `likwid-bench -t stream_avx` (Debian `likwid`), the same kernel
//!   `a = b + s*c` (likwid's `triad` is the four-array `a = b*c + d`), if it
//!   runs here; likwid-bench counts bytes as STREAM does, as smtlab does.
//! * `benches/c/triad.c`, compiled with `cc -O3 -march=native`, always (so
//!   a missing or broken likwid still leaves a reference).
//!
//! The ratio is taken against the faster reference. Tools alternate (L C S
//! L C S ...) so slow drift of the machine affects all alike.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

const ROUNDS: usize = 3;
/// smtlab's default `size` for stream, in bytes.
const SIZE: u64 = 384 << 20;

/// likwid-bench's bandwidth in GB/s, or why it could not run.
fn likwid() -> Result<f64, String> {
    let out = Command::new("likwid-bench")
        .args(["-t", "stream_avx", "-w", &format!("S0:{SIZE}B:1")])
        .output()
        .map_err(|e| format!("likwid-bench not runnable: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mbs = text
        .lines()
        .find_map(|l| l.strip_prefix("MByte/s:"))
        .and_then(|v| v.trim().parse::<f64>().ok());
    match (out.status.success(), mbs) {
        (true, Some(v)) => Ok(v / 1e3),
        _ => Err(format!(
            "likwid-bench failed: {}{}",
            String::from_utf8_lossy(&out.stderr).trim(),
            text.lines().last().unwrap_or("")
        )),
    }
}

fn c_triad(bin: &Path) -> f64 {
    let out = Command::new("taskset")
        .args(["-c", "0"])
        .arg(bin)
        .args([&SIZE.to_string(), "1"])
        .output()
        .expect("the C triad runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().next().unwrap().parse().unwrap()
}

/// smtlab's points: (model, threads, median GB/s).
fn smtlab(db: &Path, models: &str, threads: &str, samples: usize) -> Vec<(String, u64, f64)> {
    let _ = std::fs::remove_file(db);
    let (n, db) = (samples.to_string(), db.display().to_string());
    let doc = common::smtlab_json([
        "run",
        "-w",
        "stream",
        "--model",
        models,
        "--threads",
        threads,
        "--placement",
        "compact",
        "--warmup",
        "1",
        "--no-counters",
        "--min-samples",
        &n,
        "--max-samples",
        &n,
        "--json",
        "--db",
        &db,
    ]);
    doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            assert_eq!(p["failed"], 0, "{p}");
            (
                p["model"].as_str().unwrap().to_string(),
                p["threads"].as_u64().unwrap(),
                p["median"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/c/triad.c");
    let bin = dir.path().join("triad");
    let cc = Command::new("cc")
        .args(["-O3", "-march=native"])
        .arg(&src)
        .arg("-o")
        .arg(&bin)
        .status();
    if !matches!(cc, Ok(s) if s.success()) {
        println!("skipped: cannot compile {} with cc", src.display());
        return;
    }
    let machine = common::machine();
    println!("machine: {machine}");
    println!(
        "arrays: {} MiB per worker (3 x {} MiB)",
        SIZE >> 20,
        (SIZE / 3) >> 20
    );
    let db = dir.path().join("s.db");

    let mut likwid_note = None;
    let (mut l, mut c, mut s) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        if likwid_note.is_none() {
            match likwid() {
                Ok(v) => l.push(v),
                Err(e) => likwid_note = Some(e),
            }
        }
        c.push(c_triad(&bin));
        s.push(smtlab(&db, "thread", "1", 5)[0].2);
    }
    if let Some(e) = &likwid_note {
        println!("likwid-bench: {e}; comparing with the C triad only");
    }
    let lm = (!l.is_empty()).then(|| common::median(l.clone()));
    let (cm, sm) = (common::median(c.clone()), common::median(s.clone()));
    let reference = lm.map_or(cm, |lm| lm.max(cm));
    let ratio = sm / reference;
    println!("{:<34} {:>10}   rounds", "triad, 1 worker", "median");
    if let Some(lm) = lm {
        println!(
            "{:<34} {lm:>5.2} GB/s   {l:.2?}",
            "likwid-bench -t stream_avx"
        );
    }
    println!(
        "{:<34} {cm:>5.2} GB/s   {c:.2?}",
        "C triad (cc -O3 -march=native)"
    );
    println!("{:<34} {sm:>5.2} GB/s   {s:.2?}", "smtlab -w stream");
    println!(
        "ratio smtlab / best reference: {ratio:.3}{}",
        if ratio >= 0.90 { "" } else { "  (below 0.90)" }
    );

    let scaling = smtlab(&db, "thread,process", "1,2", 5);
    println!("smtlab stream, 1 vs 2 workers:");
    for (model, n, v) in &scaling {
        println!("  {model:<8} {n} worker(s) {v:>6.2} GB/s");
    }

    common::write_results(
        "stream_vs_reference",
        &serde_json::json!({
            "machine": machine,
            "size_bytes": SIZE,
            "likwid_bench_gbs": l,
            "likwid_bench_note": likwid_note,
            "c_triad_gbs": c,
            "smtlab_gbs": s,
            "likwid_bench_median_gbs": lm,
            "c_triad_median_gbs": cm,
            "smtlab_median_gbs": sm,
            "ratio_to_best_reference": ratio,
            "scaling": scaling.iter().map(|(m, n, v)| serde_json::json!({
                "model": m, "workers": n, "gbs": v
            })).collect::<Vec<_>>(),
        }),
    );
}
