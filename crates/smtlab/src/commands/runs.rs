//! `smtlab runs`: the runs in a store, newest last.

use std::fmt::Write;
use std::path::PathBuf;

use clap::Args;
use smtlab_store::Store;

use crate::exit::usage;
use crate::flags;
use crate::output;

#[derive(Args, Debug)]
pub struct RunsArgs {
    /// SQLite store; {host} and {rank} in it are this host's name
    /// (SMTLAB_HOSTNAME replaces it) and the launcher's rank
    /// (`--db /shared/{host}.db`)
    #[arg(long, value_name = "PATH", default_value = "smtlab.db", value_parser = flags::db)]
    pub db: PathBuf,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

/// Unix seconds as `YYYY-MM-DD HH:MM:SS` UTC.
pub fn utc(t: f64) -> String {
    let secs = t as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

pub fn run(a: RunsArgs) -> anyhow::Result<i32> {
    let store = Store::open_read_only(&a.db).map_err(usage)?;
    let runs = store.runs()?;
    if a.json {
        return output::print(&(serde_json::to_string_pretty(&runs)? + "\n")).map(|_| 0);
    }
    let mut s = String::new();
    // A merged store holds the runs of many hosts: each run's host, as
    // wide as the longest name, on its row (a name stored before names
    // were checked may hold a line break: escaped).
    let host = |r: &smtlab_store::RunSummary| match &r.hostname {
        Some(h) => smtlab_store::printable(h).into_owned(),
        None => "?".into(),
    };
    let width = runs
        .iter()
        .map(|r| host(r).chars().count())
        .fold(4, usize::max);
    writeln!(
        s,
        "{:>4}  {:<19}  {:<11} {:>6} {:>8} {:>7}  {:<width$}  command",
        "run", "started (UTC)", "status", "points", "samples", "failed", "host"
    )?;
    for r in runs {
        writeln!(
            s,
            "{:>4}  {:<19}  {:<11} {:>6} {:>8} {:>7}  {:<width$}  {}",
            r.id,
            utc(r.started_at),
            r.status.as_str(),
            r.points,
            r.samples,
            r.failed_samples,
            host(&r),
            r.command_line.join(" ")
        )?;
    }
    output::print(&s).map(|_| 0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0.0), "1970-01-01 00:00:00");
        assert_eq!(super::utc(1_795_305_600.0), "2026-11-22 00:00:00");
    }
}
