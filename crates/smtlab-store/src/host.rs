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
//!
//! # Which names
//!
//! A host name is shown in every table that lists runs (`runs`, `compare`,
//! the reports) and groups a fleet's runs, so it must print as one piece
//! of one line: a name holding a control character (a line break, a tab,
//! an escape sequence), a line or paragraph separator, or an invisible
//! format character (a bidirectional override reorders the rest of the
//! line, a zero-width space hides a difference) is refused where it is
//! read, exit 2 naming where it came from, rather than stored as it is.
//! Any other Unicode character is kept, in the stored name and (encoded)
//! in `{host}` (the CLI's `db_path`). A name stored before this rule is
//! shown with such characters escaped ([`printable`]).

use std::fs;
use std::path::Path;

use smtlab_types::HostFacts;

/// The environment variable that replaces this host's name (for tests,
/// and for hosts whose names collide).
pub const HOSTNAME_VAR: &str = "SMTLAB_HOSTNAME";

/// Collect the facts of this machine (its name as [`host_name`] says).
/// Refused, as [`host_name`] is, when the name cannot be shown.
pub fn collect_host_facts(
    topology_json: serde_json::Value,
    smt_active: bool,
    cpu_model: Option<String>,
) -> Result<HostFacts, HostNameError> {
    let mut facts = collect_host_facts_from(Path::new("/"), topology_json, smt_active, cpu_model);
    facts.hostname = host_name()?;
    Ok(facts)
}

/// A host name smtlab cannot record (see the module's documentation):
/// where it came from, the name as it can be shown, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin} {shown}: {why}")]
pub struct HostNameError {
    /// `SMTLAB_HOSTNAME`, or the kernel's host name and its file.
    pub origin: String,
    /// The name quoted, its unprintable characters escaped.
    pub shown: String,
    pub why: String,
}

/// This host's name as smtlab records and uses it: [`HOSTNAME_VAR`] when
/// it is set and not empty, else the kernel's
/// (`/proc/sys/kernel/hostname`); `None` when neither says. Refused when
/// it holds a character that cannot be shown in a line of a table.
pub fn host_name() -> Result<Option<String>, HostNameError> {
    host_name_from(Path::new("/"), |k| std::env::var_os(k))
}

/// [`host_name`] under a filesystem root and with an environment given
/// (tests).
pub fn host_name_from(
    root: &Path,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<Option<String>, HostNameError> {
    if let Some(value) = env(HOSTNAME_VAR) {
        let origin = HOSTNAME_VAR.to_string();
        let Some(text) = value.to_str() else {
            return Err(HostNameError {
                origin,
                shown: format!("{value:?}"),
                why: "not valid UTF-8; give a name of printable characters".into(),
            });
        };
        let name = text.trim();
        if !name.is_empty() {
            return checked(name, origin, "give a name of printable characters").map(Some);
        }
    }
    let file = root.join("proc/sys/kernel/hostname");
    match read_trimmed(&file) {
        None => Ok(None),
        Some(name) => checked(
            &name,
            format!("the kernel's host name ({})", file.display()),
            &format!("set {HOSTNAME_VAR} to a name of printable characters"),
        )
        .map(Some),
    }
}

/// `name` if every character can be shown in a line of a table.
fn checked(name: &str, origin: String, remedy: &str) -> Result<String, HostNameError> {
    match name.chars().find(|c| unprintable(*c)) {
        None => Ok(name.to_string()),
        Some(c) => Err(HostNameError {
            origin,
            shown: format!("\"{}\"", printable(name)),
            why: format!(
                "a host name is shown in tables and stored with every run, so it cannot hold \
                 {} (U+{:04X}); {remedy}",
                match c {
                    '\n' | '\r' | '\u{2028}' | '\u{2029}' => "a line break",
                    '\t' => "a tab",
                    c if c.is_control() => "a control character",
                    _ => "an invisible formatting character",
                },
                c as u32
            ),
        }),
    }
}

/// A character that would break the line or the table it is shown in: a
/// control character (C0, DEL, C1: line breaks, tabs, escape sequences),
/// the line and paragraph separators, or one of Unicode's invisible format
/// characters (category Cf: the soft hyphen, the bidirectional marks,
/// embeddings, overrides and isolates, which reorder the rest of a line,
/// zero-width spaces and joiners, word joiners and invisible operators,
/// the byte order mark, interlinear annotations, tags).
pub fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{0600}'..='\u{0605}'
                | '\u{061C}'
                | '\u{06DD}'
                | '\u{070F}'
                | '\u{08E2}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206F}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{110BD}'
                | '\u{110CD}'
                | '\u{13430}'..='\u{1343F}'
                | '\u{1BCA0}'..='\u{1BCA3}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0001}'
                | '\u{E0020}'..='\u{E007F}'
        )
}

/// A stored host name as it can be shown: itself, or (a name stored
/// before names were checked, or one with a `\`) with each
/// [`unprintable`] character as `\u{XXXX}` and each `\` doubled, so that it
/// stays one piece of one line and two names stay two (a name shown as it
/// is has no `\`; an escaped one has).
pub fn printable(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.chars().any(|c| c == '\\' || unprintable(c)) {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = String::new();
    for c in name.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if unprintable(c) => out.push_str(&format!("\\u{{{:04X}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
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
        let name = |r: Result<Option<String>, HostNameError>| r.unwrap();
        assert_eq!(
            name(host_name_from(dir.path(), env("alpha"))).as_deref(),
            Some("alpha")
        );
        // Set but empty: as if unset.
        assert_eq!(
            name(host_name_from(dir.path(), env(" "))).as_deref(),
            Some("node7")
        );
        assert_eq!(
            name(host_name_from(dir.path(), |_| None)).as_deref(),
            Some("node7")
        );
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(name(host_name_from(empty.path(), |_| None)), None);
        // Letters of any script are a name's own.
        assert_eq!(
            name(host_name_from(dir.path(), env("nœud-東京 1"))).as_deref(),
            Some("nœud-東京 1")
        );
    }

    #[test]
    fn a_host_name_that_would_break_a_table_is_refused_naming_where_it_came_from() {
        let dir = tempfile::tempdir().unwrap();
        let env = |value: &'static str| move |k: &str| (k == HOSTNAME_VAR).then(|| value.into());
        for (value, what) in [
            ("a\nb", "a line break (U+000A)"),
            ("a\tb", "a tab (U+0009)"),
            ("a\u{1b}[31mb", "a control character (U+001B)"),
            ("a\u{85}b", "a control character (U+0085)"),
            ("a\u{2028}b", "a line break (U+2028)"),
            ("ab\u{202E}cd", "an invisible formatting character (U+202E)"),
            ("a\u{200B}b", "an invisible formatting character (U+200B)"),
        ] {
            let e = host_name_from(dir.path(), env(value)).unwrap_err();
            let text = e.to_string();
            assert!(text.starts_with("SMTLAB_HOSTNAME \"a"), "{text}");
            assert!(text.contains(what), "{value:?}: {text}");
            assert_eq!(text.lines().count(), 1, "{text}");
            assert!(!text.contains(value), "shown escaped: {text}");
        }
        use std::os::unix::ffi::OsStringExt;
        let e = host_name_from(dir.path(), |_| {
            Some(std::ffi::OsString::from_vec(vec![b'a', 0xff]))
        })
        .unwrap_err();
        assert!(e.to_string().contains("not valid UTF-8"), "{e}");

        // The kernel's name under the same rule, with the way out.
        write(dir.path(), "proc/sys/kernel/hostname", "bad\u{7}name\n");
        let e = host_name_from(dir.path(), |_| None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("the kernel's host name ("), "{e}");
        assert!(
            e.ends_with("set SMTLAB_HOSTNAME to a name of printable characters"),
            "{e}"
        );
    }

    #[test]
    fn a_stored_name_is_shown_on_one_line_and_two_names_stay_two() {
        assert_eq!(printable("alpha"), "alpha");
        assert_eq!(printable("a b.c-d_é"), "a b.c-d_é");
        assert_eq!(printable("a\\b"), "a\\\\b");
        assert_eq!(printable("a\nb"), "a\\u{000A}b");
        assert_eq!(printable("a\\\nb"), "a\\\\\\u{000A}b");
        assert_ne!(printable("a\\u{000A}b"), printable("a\nb"));
        assert!(!unprintable('é') && !unprintable(' ') && !unprintable('東'));
    }

    #[test]
    fn live_machine_does_not_fail() {
        // Whatever this machine exposes; the kernel release always exists on
        // Linux.
        let facts = collect_host_facts(serde_json::Value::Null, false, None).unwrap();
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
