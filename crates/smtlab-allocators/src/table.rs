//! The memory allocators a run can compare (`--alloc`), each loaded into
//! the workers with `LD_PRELOAD`, and where their libraries are found.
//!
//! Planning resolves a run's allocators once ([`find_allocator`]), so a
//! missing one is refused before anything runs; execution preloads what was
//! found ([`Preload`]); `doctor` lists what is installed. Searches the file
//! system, nothing else.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// A memory allocator smtlab can compare, loaded with `LD_PRELOAD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AllocatorInfo {
    /// The name `--alloc` takes.
    pub name: &'static str,
    /// The shared object to preload; `None`: the C library's own malloc.
    pub file: Option<&'static str>,
    /// The Debian package that installs it.
    pub package: &'static str,
    pub about: &'static str,
    /// Environment the workers get with it (allocator options).
    pub env: &'static [(&'static str, &'static str)],
}

/// The allocators `--alloc` knows by name.
pub const ALLOCATORS: [AllocatorInfo; 6] = [
    AllocatorInfo {
        name: "glibc",
        file: None,
        package: "libc6",
        about: "the C library's malloc (the default; per-thread arenas)",
        env: &[],
    },
    AllocatorInfo {
        name: "jemalloc",
        file: Some("libjemalloc.so.2"),
        package: "libjemalloc2",
        about: "jemalloc 5 (per-thread caches, arenas per CPU count)",
        env: &[],
    },
    AllocatorInfo {
        name: "mimalloc",
        file: Some("libmimalloc.so.2"),
        package: "libmimalloc2.0",
        about: "mimalloc v2 (per-thread heaps, free lists per page)",
        env: &[],
    },
    AllocatorInfo {
        name: "tcmalloc",
        file: Some("libtcmalloc_minimal.so.4"),
        package: "libtcmalloc-minimal4",
        about: "gperftools tcmalloc (per-thread caches, not Google's per-CPU tcmalloc)",
        env: &[],
    },
    AllocatorInfo {
        name: "jemalloc-percpu",
        file: Some("libjemalloc.so.2"),
        package: "libjemalloc2",
        about: "jemalloc 5 with one arena per CPU and transparent huge pages \
                (MALLOC_CONF=percpu_arena:percpu,thp:always)",
        env: &[("MALLOC_CONF", "percpu_arena:percpu,thp:always")],
    },
    AllocatorInfo {
        name: "smtalloc",
        file: Some(SMTALLOC_FILE),
        package: "smtalloc-preload",
        about: "smtlab's core-aware allocator: every 2 MiB huge page private to one physical core",
        env: &[],
    },
];

/// smtalloc's preload library: built next to the smtlab binary, installed
/// in `lib/smtlab/` beside its `bin/` ([`own_dirs`]).
pub const SMTALLOC_FILE: &str = "libsmtalloc.so";

/// Where an installed smtlab keeps its own libraries, under its prefix
/// (`PREFIX/bin/smtlab`, `PREFIX/lib/smtlab/libsmtalloc.so`): what
/// `scripts/install.sh` writes and [`own_dirs`] reads.
pub const INSTALLED_LIB_DIR: &str = "lib/smtlab";

/// What to preload for an allocator: the library and its environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Preload {
    pub library: PathBuf,
    pub env: Vec<(String, String)>,
}

/// Why [`find_allocator`] found nothing to preload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllocatorError {
    #[error("unknown allocator {name:?}: expected one of {known} or a path to a shared object")]
    Unknown { name: String, known: String },
    #[error(
        "allocator {name}: {file} not found in {searched}; install the Debian package {package} \
         (apt install {package})"
    )]
    NotInstalled {
        name: String,
        file: String,
        package: String,
        searched: String,
    },
    #[error("allocator {0}: no such file")]
    NoSuchFile(PathBuf),
    #[error("allocator {}: {what}, not a shared object (.so) file", path.display())]
    NotAFile { path: PathBuf, what: &'static str },
    #[error(
        "allocator smtalloc: {SMTALLOC_FILE} not found next to smtlab nor in its \
         ../{INSTALLED_LIB_DIR} ({searched}); build it with cargo build --release -p \
         smtalloc-preload (or without --release for a debug smtlab), or install both with \
         scripts/install.sh PREFIX"
    )]
    NotBuilt { searched: String },
}

/// Directories the dynamic loader searches by default, multiarch first.
pub fn library_dirs() -> Vec<PathBuf> {
    let triple = format!("{}-linux-gnu", std::env::consts::ARCH);
    [
        format!("/usr/lib/{triple}"),
        format!("/lib/{triple}"),
        "/usr/lib64".to_string(),
        "/lib64".to_string(),
        "/usr/lib".to_string(),
        "/usr/local/lib".to_string(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

/// Where `file` is in `dirs`, if anywhere.
pub fn locate_library(file: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter().map(|d| d.join(file)).find(|p| p.is_file())
}

/// What to `LD_PRELOAD` for `--alloc NAME`: `Ok(None)` for glibc (nothing
/// to preload), `Ok(Some(preload))` for an installed allocator or an
/// existing path (anything containing `/`, made absolute so it works from
/// any working directory).
pub fn find_allocator(name: &str) -> Result<Option<Preload>, AllocatorError> {
    find_allocator_in(name, &allocator_dirs())
}

/// An allocator of a run, found: its name as given (`--alloc`) and what to
/// preload for it (`None`: glibc's own malloc, nothing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Allocator {
    pub name: String,
    pub preload: Option<Preload>,
}

impl Allocator {
    /// Look `name` up ([`find_allocator`]).
    pub fn find(name: &str) -> Result<Allocator, AllocatorError> {
        Ok(Allocator {
            name: name.to_string(),
            preload: find_allocator(name)?,
        })
    }
}

/// Every allocator of [`ALLOCATORS`] that is installed here, in table
/// order, and each missing one with why.
pub fn installed() -> (Vec<Allocator>, Vec<(AllocatorInfo, AllocatorError)>) {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for info in ALLOCATORS {
        match Allocator::find(info.name) {
            Ok(a) => found.push(a),
            Err(e) => missing.push((info, e)),
        }
    }
    (found, missing)
}

/// What to preload for each allocator of a run, by name: found once, when
/// the run is planned (or resumed), and looked up for every sample.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preloads(BTreeMap<String, Option<Preload>>);

impl Preloads {
    /// The preloads of allocators already found.
    pub fn of(allocators: &[Allocator]) -> Preloads {
        Preloads(
            allocators
                .iter()
                .map(|a| (a.name.clone(), a.preload.clone()))
                .collect(),
        )
    }

    /// Find every allocator named (a stored run being resumed).
    pub fn find(names: &[String]) -> Result<Preloads, AllocatorError> {
        let found = names
            .iter()
            .map(|n| Allocator::find(n))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Preloads::of(&found))
    }

    /// What to preload for allocator `name` (`None`: nothing).
    ///
    /// # Panics
    ///
    /// If `name` is not one of the run's allocators: every point's
    /// allocator comes from the same specification as these preloads, so
    /// a miss is a bug, not a user mistake.
    pub fn get(&self, name: &str) -> Option<&Preload> {
        self.0
            .get(name)
            .unwrap_or_else(|| {
                panic!("allocator {name:?} of a point is not among the run's allocators")
            })
            .as_ref()
    }
}

/// Where allocators are looked for: smtlab's own directories
/// ([`own_dirs`]), then the loader's default directories.
pub fn allocator_dirs() -> Vec<PathBuf> {
    let mut dirs = own_dirs();
    dirs.extend(library_dirs());
    dirs
}

/// smtlab's own directories for the running executable ([`own_dirs_of`]);
/// none if it cannot be found.
pub fn own_dirs() -> Vec<PathBuf> {
    std::env::current_exe()
        .map(|exe| own_dirs_of(&exe))
        .unwrap_or_default()
}

/// Where the smtlab executable `exe` finds the libraries that come with
/// it (`libsmtalloc.so`), in this order:
/// 1. its own directory: `target/<profile>/`, where cargo builds
///    `libsmtalloc.so` beside `smtlab`;
/// 2. the parent of that directory when it is `deps/` (test binaries in
///    `target/<profile>/deps/`);
/// 3. `<exe dir>/../lib/smtlab/`: an installed smtlab
///    (`PREFIX/bin/smtlab` and `PREFIX/lib/smtlab/libsmtalloc.so`, as
///    `scripts/install.sh` puts them).
///
/// Relative to the executable, not to where it was built, so an installed
/// tree still works when moved; `exe` is the real file
/// (`std::env::current_exe` resolves symbolic links on Linux), so a link
/// to `PREFIX/bin/smtlab` from elsewhere finds `PREFIX/lib/smtlab/` too.
pub fn own_dirs_of(exe: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = exe.parent() {
        dirs.push(d.to_path_buf());
        if d.ends_with("deps") {
            if let Some(up) = d.parent() {
                dirs.push(up.to_path_buf());
            }
        }
        if let Some(prefix) = d.parent() {
            dirs.push(prefix.join(INSTALLED_LIB_DIR));
        }
    }
    dirs
}

/// [`find_allocator`] searching `dirs`.
pub fn find_allocator_in(name: &str, dirs: &[PathBuf]) -> Result<Option<Preload>, AllocatorError> {
    if name.contains('/') {
        let p = Path::new(name);
        return match p.canonicalize() {
            Ok(abs) if abs.is_file() => Ok(Some(Preload {
                library: abs,
                env: Vec::new(),
            })),
            Ok(abs) => Err(AllocatorError::NotAFile {
                path: p.to_path_buf(),
                what: if abs.is_dir() {
                    "a directory"
                } else {
                    "a special file"
                },
            }),
            Err(_) => Err(AllocatorError::NoSuchFile(p.to_path_buf())),
        };
    }
    let info =
        ALLOCATORS
            .iter()
            .find(|a| a.name == name)
            .ok_or_else(|| AllocatorError::Unknown {
                name: name.to_string(),
                known: ALLOCATORS.map(|a| a.name).join(", "),
            })?;
    let Some(file) = info.file else {
        return Ok(None);
    };
    match locate_library(file, dirs) {
        None if file == SMTALLOC_FILE => Err(AllocatorError::NotBuilt {
            searched: own_dirs_in(dirs)
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }),
        Some(p) => Ok(Some(Preload {
            library: p,
            env: info
                .env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        })),
        None => Err(AllocatorError::NotInstalled {
            name: info.name.to_string(),
            file: file.to_string(),
            package: info.package.to_string(),
            searched: dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// The directories of `dirs` that are not the loader's defaults: smtlab's
/// own, which a "not built" error names (all of `dirs` if none are).
fn own_dirs_in(dirs: &[PathBuf]) -> impl Iterator<Item = &PathBuf> {
    let system = library_dirs();
    let own: Vec<&PathBuf> = dirs.iter().filter(|d| !system.contains(d)).collect();
    let named = if own.is_empty() {
        dirs.iter().collect()
    } else {
        own
    };
    named.into_iter()
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn allocators_are_found_by_name_or_path() {
        let tmp = std::env::temp_dir().join(format!("smtlab-alloc-{}", std::process::id()));
        fs::create_dir_all(&tmp).unwrap();
        fs::write(tmp.join("libjemalloc.so.2"), b"").unwrap();
        let dirs = vec![tmp.clone()];
        assert_eq!(find_allocator_in("glibc", &dirs), Ok(None));
        assert_eq!(
            find_allocator_in("jemalloc", &dirs).map(|p| p.map(|p| p.library)),
            Ok(Some(tmp.join("libjemalloc.so.2")))
        );
        let percpu = find_allocator_in("jemalloc-percpu", &dirs)
            .unwrap()
            .unwrap();
        assert_eq!(percpu.library, tmp.join("libjemalloc.so.2"));
        assert_eq!(
            percpu.env,
            vec![(
                "MALLOC_CONF".to_string(),
                "percpu_arena:percpu,thp:always".to_string()
            )]
        );
        let e = find_allocator_in("mimalloc", &dirs).unwrap_err();
        assert!(e.to_string().contains("apt install libmimalloc2.0"), "{e}");
        let e = find_allocator_in("hoard", &dirs).unwrap_err();
        assert!(
            e.to_string()
                .contains("glibc, jemalloc, mimalloc, tcmalloc, jemalloc-percpu, smtalloc"),
            "{e}"
        );
        let path = tmp.join("libjemalloc.so.2");
        assert_eq!(
            find_allocator_in(path.to_str().unwrap(), &[]).map(|p| p.map(|p| p.library)),
            Ok(Some(path.canonicalize().unwrap()))
        );
        assert!(matches!(
            find_allocator_in("/nonexistent/libx.so", &[]),
            Err(AllocatorError::NoSuchFile(_))
        ));
        // A directory is said to be one, not missing.
        let e = find_allocator_in(tmp.to_str().unwrap(), &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "allocator {}: a directory, not a shared object (.so) file",
                tmp.display()
            )
        );
        fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn an_installed_smtlab_finds_its_library_in_lib_smtlab_after_its_own_dir() {
        let prefix = Path::new("/opt/x");
        assert_eq!(
            own_dirs_of(&prefix.join("bin/smtlab")),
            vec![prefix.join("bin"), prefix.join("lib/smtlab")]
        );
        // A test binary: its dir, the profile's, then the profile's parent's lib/smtlab.
        let t = Path::new("/r/target/debug/deps/cli-0123");
        assert_eq!(
            own_dirs_of(t),
            vec![
                PathBuf::from("/r/target/debug/deps"),
                PathBuf::from("/r/target/debug"),
                PathBuf::from("/r/target/debug/lib/smtlab"),
            ]
        );

        let tmp = std::env::temp_dir().join(format!("smtlab-own-{}", std::process::id()));
        let bin = tmp.join("bin");
        let lib = tmp.join(INSTALLED_LIB_DIR);
        fs::create_dir_all(&bin).unwrap();
        fs::create_dir_all(&lib).unwrap();
        let dirs = own_dirs_of(&bin.join("smtlab"));
        let e = find_allocator_in("smtalloc", &dirs).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "allocator smtalloc: libsmtalloc.so not found next to smtlab nor in its \
                 ../lib/smtlab ({}, {}); build it with cargo build --release -p \
                 smtalloc-preload (or without --release for a debug smtlab), or install both \
                 with scripts/install.sh PREFIX",
                bin.display(),
                lib.display()
            )
        );
        fs::write(lib.join(SMTALLOC_FILE), b"").unwrap();
        let found = find_allocator_in("smtalloc", &dirs).unwrap().unwrap();
        assert_eq!(found.library, lib.join(SMTALLOC_FILE));
        // One next to the binary (a build tree) comes first.
        fs::write(bin.join(SMTALLOC_FILE), b"").unwrap();
        let found = find_allocator_in("smtalloc", &dirs).unwrap().unwrap();
        assert_eq!(found.library, bin.join(SMTALLOC_FILE));
        fs::remove_dir_all(&tmp).unwrap();
    }
}
