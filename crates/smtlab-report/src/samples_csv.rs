//! `samples.csv`: every stored sample, one row each (tidy), warm-ups and
//! failures included, one column per counter; `pandas.read_csv` reads it
//! unchanged. The raw data, so a reader can check any claim of the report.

use std::collections::BTreeSet;
use std::path::Path;

use smtlab_types::Mode;

use crate::error::ReportError;
use crate::format::{cpus_spaced, program_spec};
use crate::input::ReportInput;
use crate::writer::{Rendered, Writer};

/// The `samples.csv` writer.
pub(crate) struct SamplesCsv;

impl Writer for SamplesCsv {
    fn file(&self) -> &'static str {
        "samples.csv"
    }

    fn write(&self, r: &Rendered, path: &Path) -> Result<(), ReportError> {
        write_csv(r.input, path)
    }
}

/// The fixed columns of `samples.csv`; counters follow as `NAME_SCOPE`.
const CSV_COLUMNS: [&str; 31] = [
    "run_id",
    "point_index",
    "program",
    "program_spec",
    "alloc",
    "model",
    "spawn",
    "placement",
    "workers",
    "processes",
    "threads_per_process",
    "cpus",
    "mode",
    "seq",
    "warmup",
    "status",
    "reason",
    "started_at",
    "metric_name",
    "metric_unit",
    "metric",
    "wall_s",
    "ops",
    "user_s",
    "sys_s",
    "voluntary_cs",
    "involuntary_cs",
    "minor_faults",
    "major_faults",
    "peak_rss_kb",
    "pss_kb",
];

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// A float for the CSV: shortest round-trip form, empty when not finite
/// (pandas reads an empty cell as NaN).
fn float(v: f64) -> String {
    if v.is_finite() {
        v.to_string()
    } else {
        String::new()
    }
}

fn write_csv(input: &ReportInput, path: &Path) -> Result<(), ReportError> {
    let err = |source: csv::Error| ReportError::Csv {
        path: path.to_path_buf(),
        source,
    };
    // Every counter seen in any sample gets a column, in a stable order.
    let counters: BTreeSet<(String, &'static str)> = input
        .samples
        .iter()
        .flat_map(|(_, s)| s.iter())
        .flat_map(|s| s.counters.iter())
        .map(|c| (c.name.clone(), c.scope.as_str()))
        .collect();
    let mut w = csv::Writer::from_path(path).map_err(err)?;
    let mut header: Vec<String> = CSV_COLUMNS.iter().map(|c| c.to_string()).collect();
    header.extend(counters.iter().map(|(n, s)| format!("{n}_{s}")));
    w.write_record(&header).map_err(err)?;
    for (point, samples) in input.samples {
        let (procs, threads) = point.model.shape(point.workers);
        let mode = match point.mode {
            Mode::FixedTime { seconds } => format!("fixed_time:{seconds}s"),
            Mode::FixedWork { work } => format!("fixed_work:{work}"),
        };
        let spawn = serde_json::to_value(point.spawn)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        for s in samples {
            let u = &s.usage;
            let mut row: Vec<String> = vec![
                input.run.id.to_string(),
                point.index.to_string(),
                point.program.label(),
                program_spec(&point.program),
                point.alloc.clone(),
                point.model.to_string(),
                spawn.clone(),
                point.placement.clone(),
                point.workers.to_string(),
                procs.to_string(),
                threads.to_string(),
                cpus_spaced(point),
                mode.clone(),
                s.seq.to_string(),
                s.warmup.to_string(),
                s.status.as_str().to_string(),
                s.reason.clone().unwrap_or_default(),
                float(s.started_at),
                point.metric.name.clone(),
                point.metric.unit.clone(),
                s.metric.map(float).unwrap_or_default(),
                float(s.wall_s),
                opt(s.ops),
                u.user_s.map(float).unwrap_or_default(),
                u.sys_s.map(float).unwrap_or_default(),
                opt(u.voluntary_cs),
                opt(u.involuntary_cs),
                opt(u.minor_faults),
                opt(u.major_faults),
                opt(u.peak_rss_kb),
                opt(u.pss_kb),
            ];
            for (name, scope) in &counters {
                let v = s
                    .counters
                    .iter()
                    .find(|c| &c.name == name && c.scope.as_str() == *scope)
                    .and_then(|c| c.value)
                    .map(float)
                    .unwrap_or_default();
                row.push(v);
            }
            w.write_record(&row).map_err(err)?;
        }
    }
    w.flush().map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}
