//! Host facts: what the machine looked like when a run started (kernel, CPU
//! model, topology, SMT, frequency governor, transparent huge pages,
//! perf_event_paranoid, load average, host name), stored with the run so a
//! result can be judged later ("was the governor `powersave`?", "was the
//! machine busy?").
//!
//! Everything comes from `/proc` and `/sys` relative to a root, so tests
//! read a fake tree. A fact the machine does not expose is `None`, never an
//! error: containers hide `cpufreq`, old kernels have no THP, and a missing
//! fact must not stop a measurement.
//!
//! The host name is the one fact a user may replace: [`HOSTNAME_VAR`]
//! (`SMTLAB_HOSTNAME`) stands for the kernel's name wherever smtlab records
//! or uses it ([`host_name`]: the stored facts, `{host}` in `--db`), so a
//! test can make the stores of two hosts on one machine, and hosts whose
//! names collide (every container called `localhost`) can be told apart
//! in a fleet. Only the live facts read it; a fake tree is read as it is.

use std::fs;
use std::path::Path;

use smtlab_types::HostFacts;

/// The environment variable that replaces this host's name (for tests,
/// and for hosts whose names collide).
pub const HOSTNAME_VAR: &str = "SMTLAB_HOSTNAME";

/// Collect the facts of this machine (its name as [`host_name`] says).
pub fn collect_host_facts(
    topology_json: serde_json::Value,
    smt_active: bool,
    cpu_model: Option<String>,
) -> HostFacts {
    let mut facts = collect_host_facts_from(Path::new("/"), topology_json, smt_active, cpu_model);
    facts.hostname = host_name();
    facts
}

/// This host's name as smtlab records and uses it: [`HOSTNAME_VAR`] when
/// it is set and not empty, else the kernel's
/// (`/proc/sys/kernel/hostname`); `None` when neither says.
pub fn host_name() -> Option<String> {
    host_name_from(Path::new("/"), |k| std::env::var(k).ok())
}

/// [`host_name`] under a filesystem root and with an environment given
/// (tests).
pub fn host_name_from(root: &Path, env: impl Fn(&str) -> Option<String>) -> Option<String> {
    env(HOSTNAME_VAR)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .or_else(|| read_trimmed(&root.join("proc/sys/kernel/hostname")))
}

/// Collect the facts under a filesystem root (`/` for this machine; a fake
/// tree in tests).
pub fn collect_host_facts_from(
    root: &Path,
    topology_json: serde_json::Value,
    smt_active: bool,
    cpu_model: Option<String>,
) -> HostFacts {
    let read = |rel: &str| read_trimmed(&root.join(rel));
    HostFacts {
        hostname: read("proc/sys/kernel/hostname"),
        kernel: read("proc/sys/kernel/osrelease"),
        cpu_model: cpu_model.filter(|m| !m.trim().is_empty()).or_else(|| {
            fs::read_to_string(root.join("proc/cpuinfo"))
                .ok()
                .and_then(|t| cpuinfo_model(&t))
        }),
        topology: topology_json,
        smt_active,
        governor: governor(root),
        thp: read("sys/kernel/mm/transparent_hugepage/enabled").and_then(|t| bracketed(&t)),
        perf_event_paranoid: read("proc/sys/kernel/perf_event_paranoid")
            .and_then(|t| t.parse().ok()),
        load_avg: read("proc/loadavg").and_then(|t| load_avg(&t)),
        // Known to the caller (a launcher's job), not to the machine.
        shared_host: None,
        // Judged from the machine by smtlab_topology::emulated_cpu, which
        // the caller (the CLI) fills in.
        emulated: None,
    }
}

/// A file's content without surrounding whitespace; `None` if it cannot be
/// read or is empty.
fn read_trimmed(path: &Path) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// `always [madvise] never` → `madvise`.
fn bracketed(text: &str) -> Option<String> {
    let start = text.find('[')? + 1;
    let len = text[start..].find(']')?;
    let value = text[start..start + len].trim();
    (!value.is_empty()).then(|| value.to_string())
}

/// `0.38 1.14 1.12 1/84 4526` → `[0.38, 1.14, 1.12]`.
fn load_avg(text: &str) -> Option<[f64; 3]> {
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}

/// The first `model name` (x86) or `cpu model` / `Model name` line of
/// `/proc/cpuinfo`.
fn cpuinfo_model(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        let key = key.trim().to_ascii_lowercase();
        let value = value.trim();
        (matches!(key.as_str(), "model name" | "cpu model") && !value.is_empty())
            .then(|| value.to_string())
    })
}

/// The governors of `sys/devices/system/cpu/cpuN/cpufreq/scaling_governor`.
/// Offline CPUs keep their cpufreq directory on some kernels, but the
/// governor applies all the same, so every CPU that has the file counts.
fn governor(root: &Path) -> Option<String> {
    let dir = fs::read_dir(root.join("sys/devices/system/cpu")).ok()?;
    let mut names: Vec<String> = dir
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.strip_prefix("cpu")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| read_trimmed(&e.path().join("cpufreq/scaling_governor")))
        .collect();
    names.sort();
    names.dedup();
    (!names.is_empty()).then(|| names.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn facts_from_a_fake_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "proc/sys/kernel/hostname", "box\n");
        write(root, "proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
        write(root, "proc/sys/kernel/perf_event_paranoid", "2\n");
        write(root, "proc/loadavg", "0.38 1.14 1.12 1/84 4526\n");
        write(
            root,
            "proc/cpuinfo",
            "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n",
        );
        write(
            root,
            "sys/kernel/mm/transparent_hugepage/enabled",
            "always [madvise] never\n",
        );
        write(
            root,
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            "performance\n",
        );
        write(
            root,
            "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
            "performance\n",
        );
        // Not a CPU directory: must be ignored.
        write(
            root,
            "sys/devices/system/cpu/cpufreq/policy0/scaling_governor",
            "powersave\n",
        );
        let topo = serde_json::json!({"pus": 2});
        let facts = collect_host_facts_from(root, topo.clone(), false, None);
        assert_eq!(
            facts,
            HostFacts {
                hostname: Some("box".into()),
                kernel: Some("6.1.0-18-amd64".into()),
                cpu_model: Some("AMD EPYC 7B13".into()),
                topology: topo,
                smt_active: false,
                governor: Some("performance".into()),
                thp: Some("madvise".into()),
                perf_event_paranoid: Some(2),
                load_avg: Some([0.38, 1.14, 1.12]),
                shared_host: None,
                emulated: None,
            }
        );

        // A model given by the topology reader wins over /proc/cpuinfo;
        // governors that differ are all listed.
        write(
            root,
            "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
            "powersave\n",
        );
        let facts =
            collect_host_facts_from(root, serde_json::Value::Null, true, Some("Xeon".into()));
        assert_eq!(facts.cpu_model.as_deref(), Some("Xeon"));
        assert_eq!(facts.governor.as_deref(), Some("performance,powersave"));
        assert!(facts.smt_active);
    }

    #[test]
    fn missing_or_garbled_files_are_none() {
        let dir = tempfile::tempdir().unwrap();
        let facts = collect_host_facts_from(dir.path(), serde_json::Value::Null, false, None);
        assert_eq!(facts, HostFacts::default());

        write(dir.path(), "proc/loadavg", "garbage\n");
        write(dir.path(), "proc/sys/kernel/perf_event_paranoid", "x\n");
        write(
            dir.path(),
            "sys/kernel/mm/transparent_hugepage/enabled",
            "always\n",
        );
        let facts = collect_host_facts_from(dir.path(), serde_json::Value::Null, false, None);
        assert_eq!(facts, HostFacts::default());
    }

    #[test]
    fn the_host_name_variable_replaces_the_kernels_name() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "proc/sys/kernel/hostname", "node7\n");
        let env = |value: &'static str| move |k: &str| (k == HOSTNAME_VAR).then(|| value.into());
        assert_eq!(
            host_name_from(dir.path(), env("alpha")).as_deref(),
            Some("alpha")
        );
        // Set but empty: as if unset.
        assert_eq!(
            host_name_from(dir.path(), env(" ")).as_deref(),
            Some("node7")
        );
        assert_eq!(
            host_name_from(dir.path(), |_| None).as_deref(),
            Some("node7")
        );
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(host_name_from(empty.path(), |_| None), None);
    }

    #[test]
    fn live_machine_does_not_fail() {
        // Whatever this machine exposes; the kernel release always exists on
        // Linux.
        let facts = collect_host_facts(serde_json::Value::Null, false, None);
        assert!(facts.kernel.is_some(), "{facts:?}");
    }

    #[test]
    fn parsers() {
        assert_eq!(
            bracketed("[always] madvise never").as_deref(),
            Some("always")
        );
        assert_eq!(
            bracketed("always madvise [never]").as_deref(),
            Some("never")
        );
        assert_eq!(bracketed("[]"), None);
        assert_eq!(load_avg("1 2 3"), Some([1.0, 2.0, 3.0]));
        assert_eq!(load_avg("1 2"), None);
        assert_eq!(
            cpuinfo_model("processor : 0\ncpu model : MIPS 24Kc\n").as_deref(),
            Some("MIPS 24Kc")
        );
        assert_eq!(cpuinfo_model("processor : 0\n"), None);
    }
}
