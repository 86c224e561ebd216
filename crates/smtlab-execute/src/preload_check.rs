//! Whether an allocator's library really loads: a file that is not a
//! shared object (or one built for another machine, or missing a
//! dependency) is ignored by the dynamic loader with a warning, and the
//! program runs on glibc's malloc, so a run would measure glibc under the
//! library's name. Checked once, when the command line is parsed, in a
//! child: `smtlab __loaded LIB` started with `LD_PRELOAD=LIB` looks for
//! LIB among its own mappings. A child, because loading runs the library's
//! constructors, and a broken allocator may crash.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use smtlab_allocators::Preload;

/// The exit code of `smtlab __loaded` when the library is not mapped.
const NOT_LOADED: i32 = 3;

/// Why an allocator's library cannot be preloaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PreloadError {
    #[error("{library}: not loadable with LD_PRELOAD ({reason}); give a shared object (.so) built for this machine")]
    NotLoadable { library: PathBuf, reason: String },
    #[error("{library}: a program preloading it {how}")]
    Broken { library: PathBuf, how: String },
    #[error("checking {library}: cannot start {exe}: {reason}")]
    Spawn {
        library: PathBuf,
        exe: PathBuf,
        reason: String,
    },
}

/// Start `exe __loaded LIB` with LIB preloaded (and its environment) and
/// say whether LIB was loaded.
pub fn check_loadable(exe: &Path, preload: &Preload) -> Result<(), PreloadError> {
    let library = preload.library.clone();
    let out = Command::new(exe)
        .arg("__loaded")
        .arg(&preload.library)
        .env("LD_PRELOAD", &preload.library)
        .envs(preload.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| PreloadError::Spawn {
            library: library.clone(),
            exe: exe.to_path_buf(),
            reason: e.to_string(),
        })?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => Ok(()),
        Some(NOT_LOADED) => Err(PreloadError::NotLoadable {
            library,
            reason: loader_reason(&stderr),
        }),
        Some(code) => Err(PreloadError::Broken {
            library,
            how: format!("exited with code {code}{}", first_line(&stderr)),
        }),
        None => {
            use std::os::unix::process::ExitStatusExt;
            let sig = out.status.signal().unwrap_or(0);
            let name = smtlab_sys::signal_name(sig);
            Err(PreloadError::Broken {
                library,
                how: format!("was killed by {name}{}", first_line(&stderr)),
            })
        }
    }
}

/// The child's side: 0 if `library` is mapped into this process,
/// 3 (`NOT_LOADED`) if not.
pub fn loaded_main(library: &Path) -> i32 {
    let want = library
        .canonicalize()
        .unwrap_or_else(|_| library.to_path_buf());
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mapped = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .any(|p| Path::new(p) == want);
    if mapped {
        0
    } else {
        NOT_LOADED
    }
}

/// The loader's reason, from its `ERROR: ld.so: object '...' from
/// LD_PRELOAD cannot be preloaded (REASON): ignored.` line.
fn loader_reason(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| l.contains("cannot be preloaded"))
        .and_then(|l| {
            let open = l.rfind('(')?;
            let close = l[open..].find(')')? + open;
            Some(l[open + 1..close].to_string())
        })
        .unwrap_or_else(|| "the dynamic loader ignored it".to_string())
}

fn first_line(stderr: &str) -> String {
    match stderr.lines().map(str::trim).find(|l| !l.is_empty()) {
        Some(l) => format!(": {l}"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loader_reason_is_read_from_its_message() {
        let msg = "ERROR: ld.so: object '/tmp/x.so' from LD_PRELOAD cannot be preloaded \
                   (invalid ELF header): ignored.\n";
        assert_eq!(loader_reason(msg), "invalid ELF header");
        assert_eq!(loader_reason(""), "the dynamic loader ignored it");
    }
}
