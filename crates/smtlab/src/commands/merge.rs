//! `smtlab merge A.db B.db ... -o fleet.db`: the runs of many stores (one
//! per host of a fleet) in one, each keeping its host and where it came
//! from; merging again adds only what is new.

use std::fmt::Write;
use std::path::PathBuf;

use clap::Args;
use smtlab_store::{MergeSummary, Store};

use crate::exit::usage;
use crate::flags;
use crate::output::{self, plural};

#[derive(Args, Debug)]
#[command(
    after_help = "Runs are matched by their identity, not their id: merging a store again adds \
only what it measured since (a run merged while it was still running gets its new samples), and \
a run reaches the output once however many merged stores bring it. Every input is checked \
before anything is written: a missing file, the output itself, a file that is not an smtlab \
store (an empty file), one of a newer schema or with damaged pages is refused (exit 2) and \
nothing is written. The inputs are only read: each file and its directory stay as they were. A \
new output appears only whole. Safe while a run writes to the output: it waits for the merge as \
for another run's sample."
)]
pub struct MergeArgs {
    /// The stores to merge (made by `run`, `study` or `merge`); {host} and
    /// {rank} in them are this host's name and the launcher's rank, as in
    /// --db
    #[arg(value_name = "STORE", required = true, value_parser = flags::store_path("STORE"))]
    pub inputs: Vec<PathBuf>,
    /// The store to merge into; created if missing. {host} and {rank} as in
    /// --db (`srun smtlab merge /tmp/{host}.db -o /shared/{host}.db`: each
    /// host's store from its local disk to a shared directory)
    #[arg(short = 'o', long = "output", value_name = "PATH", required = true,
          value_parser = flags::store_path("-o"))]
    pub output: PathBuf,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: MergeArgs) -> anyhow::Result<i32> {
    let summaries = Store::merge(&a.inputs, &a.output).map_err(|e| {
        if e.is_refusal() {
            usage(e)
        } else {
            e.into()
        }
    })?;
    // Read-write, as the merge had it: the last connection to close takes
    // the WAL back into the file.
    let store = Store::open_existing(&a.output)?;
    let runs = store.runs()?;
    let mut hosts: Vec<String> = runs.iter().filter_map(|r| r.hostname.clone()).collect();
    hosts.sort();
    hosts.dedup();
    if a.json {
        let doc = serde_json::json!({
            "schema": "smtlab.merge/1",
            "output": a.output,
            "store_id": store.store_id()?,
            "inputs": summaries,
            "runs": runs.len(),
            "hosts": hosts,
        });
        return output::print(&(serde_json::to_string_pretty(&doc)? + "\n")).map(|_| 0);
    }
    let mut s = String::new();
    for m in &summaries {
        writeln!(s, "{}", summary_line(m))?;
    }
    writeln!(
        s,
        "{}: {} run{} from {} host{}{}",
        a.output.display(),
        runs.len(),
        plural(runs.len() as u64),
        hosts.len(),
        plural(hosts.len() as u64),
        if hosts.is_empty() {
            String::new()
        } else {
            format!(" ({})", hosts.join(", "))
        }
    )?;
    output::print(&s).map(|_| 0)
}

/// `a.db (host alpha): 2 runs added, 1 already present (1 brought up to
/// date); 6 points, 120 samples`
fn summary_line(m: &MergeSummary) -> String {
    let hosts = match m.hosts.len() {
        0 => String::new(),
        1 => format!(" (host {})", m.hosts[0]),
        _ => format!(" (hosts {})", m.hosts.join(", ")),
    };
    let updated = if m.runs_updated > 0 {
        format!(" ({} brought up to date)", m.runs_updated)
    } else {
        String::new()
    };
    format!(
        "{}{hosts}: {} run{} added, {} already present{updated}; {} point{}, {} sample{} copied",
        m.path.display(),
        m.runs_added,
        plural(m.runs_added),
        m.runs_present,
        m.points,
        plural(m.points),
        m.samples,
        plural(m.samples),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_lines() {
        let mut m = MergeSummary {
            path: "a.db".into(),
            store_id: "x".into(),
            hosts: vec!["alpha".into()],
            runs_added: 1,
            runs_present: 0,
            runs_updated: 0,
            points: 2,
            samples: 1,
        };
        assert_eq!(
            summary_line(&m),
            "a.db (host alpha): 1 run added, 0 already present; 2 points, 1 sample copied"
        );
        m.hosts.push("beta".into());
        m.runs_present = 3;
        m.runs_updated = 1;
        assert_eq!(
            summary_line(&m),
            "a.db (hosts alpha, beta): 1 run added, 3 already present (1 brought up to date); \
             2 points, 1 sample copied"
        );
    }
}
