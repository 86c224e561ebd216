//! `--db` paths (and report directories, `-o`) with placeholders, for one
//! task per host of a fleet (`srun --ntasks-per-node=1 smtlab study --db
//! /shared/{host}.db -o /shared/reports/{host}`):
//!
//! * `{host}`: this host's name (`smtlab_store::host_name`: the kernel's,
//!   or `SMTLAB_HOSTNAME`), with every character other than an ASCII
//!   letter, digit, `.`, `_` or `-` replaced by `_`, so a name can never
//!   reach another directory (`/`) or hold a byte a shell would mangle; a
//!   name that is then `.` or `..` is refused;
//! * `{rank}`: the rank a launcher gave this process (Open MPI, Slurm,
//!   PMI: `smtlab_dsm::launcher_from_env`); refused without a launcher.
//!
//! A `{word}` of letters, digits and `_` is a placeholder, and one not
//! listed is refused by name (a typo must not become a file name); other
//! braces (`{`, `{}`, `{a b}`) are kept as written. Expanded once, when
//! the command line is parsed (`flags::db`, `flags::report_dir`); nothing
//! downstream sees a placeholder. The values are asked for only when the path uses them.

use std::path::PathBuf;

/// The placeholders a path knows, as the error lists them.
const KNOWN: &str = "{host}, {rank}";

/// Fill the placeholders of `template` (the text of `flag`, e.g. `--db`):
/// `host` and `rank` are called only when it uses them. The error is the
/// whole one-line message.
pub fn expand(
    flag: &str,
    template: &str,
    host: impl FnOnce() -> Option<String>,
    rank: impl FnOnce() -> Result<Option<usize>, String>,
) -> Result<PathBuf, String> {
    let at_fault = |why: String| format!("{flag} {template}: {why}");
    let mut host = Some(host);
    let mut rank = Some(rank);
    let mut host_value: Option<String> = None;
    let mut rank_value: Option<String> = None;
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let word_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if word_len == 0 || !after[word_len..].starts_with('}') {
            // Not a placeholder: the brace is part of the name.
            out.push('{');
            rest = after;
            continue;
        }
        let word = &after[..word_len];
        let value = match word {
            "host" => {
                if host_value.is_none() {
                    let read = host.take().and_then(|f| f());
                    host_value = Some(host_in_path(read).map_err(at_fault)?);
                }
                host_value.clone().unwrap_or_default()
            }
            "rank" => {
                if rank_value.is_none() {
                    let read = rank.take().map_or(Ok(None), |f| f());
                    rank_value = Some(match read {
                        Ok(Some(r)) => r.to_string(),
                        Ok(None) => {
                            return Err(at_fault(
                                "{rank} needs a launcher's rank, and no launcher started this \
                                 process (none of OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK \
                                 is set); use {host}, or start it with mpirun or srun"
                                    .into(),
                            ))
                        }
                        Err(e) => return Err(at_fault(format!("{{rank}}: {e}"))),
                    });
                }
                rank_value.clone().unwrap_or_default()
            }
            other => {
                return Err(at_fault(format!(
                    "unknown placeholder {{{other}}}; {flag} knows {KNOWN}"
                )))
            }
        };
        out.push_str(&value);
        rest = &after[word_len + 1..];
    }
    out.push_str(rest);
    if out.is_empty() {
        return Err(at_fault("an empty path".into()));
    }
    Ok(PathBuf::from(out))
}

/// A host name as one path component (see the module's documentation).
fn host_in_path(name: Option<String>) -> Result<String, String> {
    let name = name.ok_or_else(|| {
        "{host}: this host's name could not be read (/proc/sys/kernel/hostname); set \
         SMTLAB_HOSTNAME"
            .to_string()
    })?;
    let safe = smtlab_dsm::path_component(&name);
    if safe == "." || safe == ".." {
        return Err(format!(
            "{{host}}: the host name `{name}` cannot name a file"
        ));
    }
    Ok(safe)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &'static str) -> impl FnOnce() -> Option<String> {
        move || Some(name.to_string())
    }

    fn no_host() -> impl FnOnce() -> Option<String> {
        || panic!("the host name is read only for {{host}}")
    }

    fn rank(r: usize) -> impl FnOnce() -> Result<Option<usize>, String> {
        move || Ok(Some(r))
    }

    fn no_rank() -> impl FnOnce() -> Result<Option<usize>, String> {
        || panic!("the launcher is read only for {{rank}}")
    }

    #[test]
    fn placeholders_are_filled() {
        let p = expand("--db", "/shared/{host}.db", host("alpha"), no_rank()).unwrap();
        assert_eq!(p, PathBuf::from("/shared/alpha.db"));
        let p = expand("--db", "runs/{host}-{rank}.db", host("n1"), rank(3)).unwrap();
        assert_eq!(p, PathBuf::from("runs/n1-3.db"));
        // Used twice, read once (the closures are FnOnce).
        let p = expand("--db", "{rank}/{rank}.db", no_host(), rank(0)).unwrap();
        assert_eq!(p, PathBuf::from("0/0.db"));
        let p = expand("--db", "smtlab.db", no_host(), no_rank()).unwrap();
        assert_eq!(p, PathBuf::from("smtlab.db"));
    }

    #[test]
    fn other_braces_are_kept() {
        for text in ["a{.db", "a{}.db", "{a b}.db", "x}{", "{-}.db", "{"] {
            assert_eq!(
                expand("-o", text, no_host(), no_rank()).unwrap(),
                PathBuf::from(text)
            );
        }
        assert_eq!(
            expand("--db", "{{host}}.db", host("h"), no_rank()).unwrap(),
            PathBuf::from("{h}.db")
        );
    }

    #[test]
    fn unknown_placeholders_are_named() {
        let e = expand("--db", "/x/{hostname}.db", no_host(), no_rank()).unwrap_err();
        assert_eq!(
            e,
            "--db /x/{hostname}.db: unknown placeholder {hostname}; --db knows {host}, {rank}"
        );
        let e = expand("-o", "r/{Host}", no_host(), no_rank()).unwrap_err();
        assert_eq!(
            e,
            "-o r/{Host}: unknown placeholder {Host}; -o knows {host}, {rank}"
        );
    }

    #[test]
    fn rank_without_a_launcher_is_refused() {
        let e = expand("--db", "{rank}.db", no_host(), || Ok(None)).unwrap_err();
        assert!(
            e.starts_with("--db {rank}.db: {rank} needs a launcher's rank"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        let e = expand("--db", "{rank}.db", no_host(), || {
            Err("OMPI_COMM_WORLD_RANK=x: expected a number from 0".into())
        })
        .unwrap_err();
        assert_eq!(
            e,
            "--db {rank}.db: {rank}: OMPI_COMM_WORLD_RANK=x: expected a number from 0"
        );
    }

    #[test]
    fn host_names_stay_one_path_component() {
        let p = expand("--db", "d/{host}.db", host("a/b c"), no_rank()).unwrap();
        assert_eq!(p, PathBuf::from("d/a_b_c.db"));
        let p = expand("--db", "d/{host}.db", host("node-1.example_x"), no_rank()).unwrap();
        assert_eq!(p, PathBuf::from("d/node-1.example_x.db"));
        let e = expand("--db", "d/{host}/x.db", host(".."), no_rank()).unwrap_err();
        assert_eq!(
            e,
            "--db d/{host}/x.db: {host}: the host name `..` cannot name a file"
        );
        let e = expand("--db", "{host}.db", || None, no_rank()).unwrap_err();
        assert!(e.contains("set SMTLAB_HOSTNAME"), "{e}");
    }
}
