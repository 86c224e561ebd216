//! `smtlab show RUN`: one stored run: how it was made, on what machine, and
//! its results.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use smtlab_analyse::summary::point_summaries;
use smtlab_store::Store;

use super::results;
use super::runs::utc;
use crate::exit::usage;
use crate::flags::{self, RunRef};
use crate::output;

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Run id (see `smtlab runs`), or `latest`
    #[arg(value_name = "RUN", default_value = "latest", value_parser = flags::run_ref("RUN"))]
    pub run: RunRef,
    /// SQLite store; {host} and {rank} in it are this host's name
    /// (SMTLAB_HOSTNAME replaces it) and the launcher's rank
    /// (`--db /shared/{host}.db`)
    #[arg(long, value_name = "PATH", default_value = "smtlab.db", value_parser = flags::db)]
    pub db: PathBuf,
    /// Print JSON (the same document as `run --json`, plus the run record)
    #[arg(long)]
    pub json: bool,
}

/// The id of the run `run` names in `store` (whose file is `db`); a run
/// that is not there is a usage error naming `what` (`RUN`, `RUN_A`, ...).
pub fn resolve_run(store: &Store, run: RunRef, db: &Path, what: &str) -> anyhow::Result<i64> {
    match run {
        RunRef::Latest => store
            .latest_run_id()?
            .ok_or_else(|| usage(format!("{what} latest: {} holds no runs", db.display()))),
        RunRef::Id(id) => {
            store.run(id).map_err(usage)?;
            Ok(id)
        }
    }
}

pub fn run(a: ShowArgs) -> anyhow::Result<i32> {
    let store = Store::open_read_only(&a.db).map_err(usage)?;
    let id = resolve_run(&store, a.run, &a.db, "RUN")?;
    let rec = store.run(id).map_err(usage)?;
    let reports = point_summaries(&store, id, rec.seed)?;
    if a.json {
        let mut doc = results::run_json(id, rec.status, &reports);
        doc["run"] = serde_json::to_value(&rec)?;
        // Where a merged run was measured (`smtlab merge`); null if here.
        doc["origin"] = serde_json::to_value(store.run_origin(id)?)?;
        return output::print(&(serde_json::to_string_pretty(&doc)? + "\n")).map(|_| 0);
    }
    let mut s = String::new();
    writeln!(s, "run {id}: {}", rec.command_line.join(" "))?;
    writeln!(
        s,
        "  started {} UTC{}, smtlab {} ({}), seed {}",
        utc(rec.started_at),
        rec.finished_at
            .map(|f| format!(", took {:.1} s", f - rec.started_at))
            .unwrap_or_default(),
        rec.version,
        rec.git_commit.as_deref().unwrap_or("unknown commit"),
        rec.seed
    )?;
    let h = serde_json::to_value(&rec.host)?;
    let field = |k: &str| match &h[k] {
        serde_json::Value::Null => "?".to_string(),
        // On this one line whatever was stored (a host name from before
        // names were checked may hold a line break).
        serde_json::Value::String(v) => smtlab_store::printable(v).into_owned(),
        v => v.to_string(),
    };
    writeln!(
        s,
        "  host {}: {}, kernel {}, SMT {}, governor {}, THP {}, perf_event_paranoid {}",
        field("hostname"),
        field("cpu_model"),
        field("kernel"),
        // Stored as whether any core had more than one PU online.
        if rec.host.smt_active { "on" } else { "off" },
        // No cpufreq (as in most VMs): no governor to report.
        match &rec.host.governor {
            Some(g) => g.as_str(),
            None => "none",
        },
        field("thp"),
        field("perf_event_paranoid")
    )?;
    if let Some(sh) = &rec.host.shared_host {
        writeln!(
            s,
            "  shared its host: {} ran {} tasks of the job on it (--shared-host)",
            sh.launcher, sh.tasks
        )?;
    }
    if let Some(o) = store.run_origin(id)? {
        writeln!(s, "  merged: run {} of store {}", o.run_id, o.store_id)?;
    }
    s.push_str(&results::render_table(id, rec.status, &reports));
    output::print(&s).map(|_| 0)
}
