//! `--db` paths (and report directories, `-o`) with placeholders, for one
//! task per host of a fleet (`srun --ntasks-per-node=1 smtlab study --db
//! /shared/{host}.db -o /shared/reports/{host}`):
//!
//! * `{host}`: this host's name (`smtlab_store::host_name`: the kernel's,
//!   or `SMTLAB_HOSTNAME`; one that holds a control or invisible
//!   formatting character is refused there), as one path component
//!   ([`host_in_path`]): letters and digits of any script, `.`, `_` and
//!   `-` as they are, every other character percent-encoded (`a/b c` is
//!   `a%2Fb%20c`); a name `.` or `..` is refused;
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
    host: impl FnOnce() -> Result<Option<String>, String>,
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
                    let read = host
                        .take()
                        .map_or(Ok(None), |f| f())
                        .map_err(|e| at_fault(format!("{{host}}: {e}")))?;
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

/// A host name as one path component, by one rule that keeps every name
/// apart and every file inside its directory: letters and digits of any
/// script (`char::is_alphanumeric`), `.`, `_` and `-` are kept, so `nœud-1`
/// and `東京` read as themselves; every other character is written as `%`
/// and two hex digits per byte of its UTF-8 (`%` itself as `%25`). This is
/// percent-encoding, which can be undone, so two host names never share a
/// file (replacing characters with `_` made `a b`, `a/b` and `a_b` one
/// file); `/` and NUL never reach the path, nor a space, a quote or a
/// glob character a shell would act on. Names `.` and `..` are refused:
/// they would name a directory. Left alone: file systems that fold case
/// (a host `Alpha` and a host `alpha` are one file there, as they are one
/// host to DNS).
fn host_in_path(name: Option<String>) -> Result<String, String> {
    let name = name.ok_or_else(|| {
        "{host}: this host's name could not be read (/proc/sys/kernel/hostname); set \
         SMTLAB_HOSTNAME"
            .to_string()
    })?;
    if name == "." || name == ".." {
        return Err(format!(
            "{{host}}: the host name `{name}` cannot name a file"
        ));
    }
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_alphanumeric() || matches!(c, '.' | '_' | '-') {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &'static str) -> impl FnOnce() -> Result<Option<String>, String> {
        move || Ok(Some(name.to_string()))
    }

    fn no_host() -> impl FnOnce() -> Result<Option<String>, String> {
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
        assert_eq!(p, PathBuf::from("d/a%2Fb%20c.db"));
        let p = expand("--db", "d/{host}.db", host("node-1.example_x"), no_rank()).unwrap();
        assert_eq!(p, PathBuf::from("d/node-1.example_x.db"));
        let e = expand("--db", "d/{host}/x.db", host(".."), no_rank()).unwrap_err();
        assert_eq!(
            e,
            "--db d/{host}/x.db: {host}: the host name `..` cannot name a file"
        );
        let e = expand("--db", "{host}.db", || Ok(None), no_rank()).unwrap_err();
        assert!(e.contains("set SMTLAB_HOSTNAME"), "{e}");
        // A name the store refuses is refused here, naming where it came from.
        let e = expand(
            "--db",
            "{host}.db",
            || Err("SMTLAB_HOSTNAME \"a\\u{000A}b\": ...".into()),
            no_rank(),
        )
        .unwrap_err();
        assert_eq!(
            e,
            "--db {host}.db: {host}: SMTLAB_HOSTNAME \"a\\u{000A}b\": ..."
        );
    }

    #[test]
    fn host_names_keep_their_letters_and_never_share_a_file() {
        let file = |name: &'static str| {
            expand("--db", "{host}.db", host(name), no_rank())
                .unwrap()
                .display()
                .to_string()
        };
        assert_eq!(file("nœud-東京"), "nœud-東京.db");
        assert_eq!(file("Ωmega_2"), "Ωmega_2.db");
        assert_eq!(file("100%"), "100%25.db");
        assert_eq!(file("é"), "é.db");
        // The names `_` made one file: each its own now.
        let names = [
            "a b", "a/b", "a_b", "a%20b", "a%2Fb", "a:b", "a*b", "a\\b", "a~b", "a'b", "a\"b",
        ];
        let files: std::collections::BTreeSet<String> = names.iter().map(|n| file(n)).collect();
        assert_eq!(files.len(), names.len(), "{files:?}");
        for f in &files {
            assert!(!f.contains('/') && !f.contains(' '), "{f}");
        }
    }
}
