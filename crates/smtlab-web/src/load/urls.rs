//! Which path each request asks for, and how its body is checked.
//!
//! [`Paths`] is built once per run from the configuration's
//! [`Urls`](super::Urls) and shared by the client threads; each thread
//! draws from it with its own [`Picker`]: the SPECweb96 mix with a ChaCha
//! stream of its own (the run's seed, the thread's index as the stream, so
//! a run is repeatable), or the list in turn from its own starting point.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::fileset::{content_key, fill, BodyCheck, FileSet, Mix, MAX_DIRS};

/// The most bytes of expected bodies this process keeps (made once per
/// file, then compared with `memcmp`): the default file set (51 MB) fits;
/// past it, bodies are checked by making their bytes anew.
const KEPT_BYTES: u64 = 256 << 20;

/// The expected bodies made in this process, by path and size, shared by
/// every run it makes (each sample of `smtlab run -w web` is a run of the
/// load generator): made once, not once a sample.
static BODIES: Mutex<Bodies> = Mutex::new(Bodies {
    by_path: BTreeMap::new(),
    bytes: 0,
});

struct Bodies {
    by_path: BTreeMap<(String, u64), Arc<[u8]>>,
    bytes: u64,
}

/// The body of `path` (`size` bytes), made now if this process has not
/// made it yet and it fits in [`KEPT_BYTES`].
fn body(path: &str, size: u64) -> Option<Arc<[u8]>> {
    // A thread that panicked holding the lock left the map whole (it only
    // inserts whole bodies).
    let mut bodies = BODIES.lock().unwrap_or_else(|e| e.into_inner());
    let key = (path.to_string(), size);
    if let Some(b) = bodies.by_path.get(&key) {
        return Some(b.clone());
    }
    if bodies.bytes + size > KEPT_BYTES {
        return None;
    }
    let mut made = vec![0u8; size as usize];
    fill(content_key(path), 0, &mut made);
    let made: Arc<[u8]> = Arc::from(made);
    bodies.bytes += size;
    bodies.by_path.insert(key, made.clone());
    Some(made)
}

/// A run's expected bodies, one slot per path, taken from those the
/// process keeps on first use by whichever thread asks first (after that,
/// a lock-free read on the hot path).
#[derive(Debug, Default)]
pub struct Kept {
    slots: Vec<OnceLock<Option<Arc<[u8]>>>>,
    /// Bytes of the bodies this run holds.
    bytes: AtomicU64,
}

impl Kept {
    fn with_slots(n: usize) -> Kept {
        Kept {
            slots: (0..n).map(|_| OnceLock::new()).collect(),
            bytes: AtomicU64::new(0),
        }
    }

    /// The kept bytes of path `i` (`size` bytes), if the process keeps
    /// (or can still keep) them.
    fn kept(&self, i: usize, path: &str, size: u64) -> &Option<Arc<[u8]>> {
        self.slots[i].get_or_init(|| {
            let b = body(path, size);
            if b.is_some() {
                self.bytes.fetch_add(size, Ordering::Relaxed);
            }
            b
        })
    }

    /// The check of path `i` (`size` bytes): against its kept bytes while
    /// they fit in [`KEPT_BYTES`], else made anew.
    fn check(&self, i: usize, path: &str, size: u64) -> BodyCheck {
        match self.kept(i, path, size) {
            Some(bytes) => BodyCheck::against(path, bytes.clone()),
            None => BodyCheck::new(path, size),
        }
    }
}

/// The paths of a run, with each one's expected size when it is a file
/// of the set (its body can then be checked).
#[derive(Debug)]
pub enum Paths<'a> {
    Mix {
        set: &'a FileSet,
        mix: Mix,
        kept: Kept,
    },
    /// Each path with its size and its slot in [`Kept`] (one per distinct
    /// path: a list repeats its paths).
    List(Vec<(String, Option<u64>, usize)>, Kept),
}

impl<'a> Paths<'a> {
    pub fn mix(set: &'a FileSet) -> Paths<'a> {
        Paths::Mix {
            set,
            mix: Mix::specweb96(set),
            kept: Kept::with_slots(set.files.len()),
        }
    }

    /// A list of paths; those naming a file of a SPECweb96 set
    /// (`/dirNNNNN/classC_K`) get that file's size.
    pub fn list(paths: &[String]) -> Paths<'a> {
        let dirs = paths.iter().filter_map(|p| dir_of(p)).max();
        let set = dirs.and_then(|d| FileSet::with_dirs(d + 1).ok());
        let mut slots: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        let list: Vec<(String, Option<u64>, usize)> = paths
            .iter()
            .map(|p| {
                let size = set.as_ref().and_then(|s| s.find(p)).map(|f| f.size);
                let next = slots.len();
                let slot = *slots.entry(p.as_str()).or_insert(next);
                (p.clone(), size, slot)
            })
            .collect();
        Paths::List(list, Kept::with_slots(slots.len()))
    }
}

impl Paths<'_> {
    /// Make every body to be checked now, before the run: made on first
    /// use instead, a large file first asked for mid-window would hold its
    /// client thread (and leave the server idle) while it is made.
    pub fn keep_all(&self) {
        match self {
            Paths::Mix { set, kept, .. } => {
                for (i, f) in set.files.iter().enumerate() {
                    kept.kept(i, &f.path, f.size);
                }
            }
            Paths::List(list, kept) => {
                for (p, size, slot) in list {
                    if let Some(size) = size {
                        kept.kept(*slot, p, *size);
                    }
                }
            }
        }
    }
}

/// The directory number of `/dirNNNNN/...`, if it is one a set can have.
fn dir_of(path: &str) -> Option<usize> {
    let digits = path.strip_prefix("/dir")?.get(..5)?;
    let d: usize = digits.parse().ok()?;
    (d < MAX_DIRS).then_some(d)
}

/// One thread's source of requests.
#[derive(Debug)]
pub struct Picker<'a> {
    paths: &'a Paths<'a>,
    rng: ChaCha8Rng,
    next: usize,
    verify: bool,
}

impl<'a> Picker<'a> {
    /// Thread `thread`'s picker.
    pub fn new(paths: &'a Paths<'a>, seed: u64, thread: usize, verify: bool) -> Picker<'a> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(thread as u64);
        Picker {
            paths,
            rng,
            next: thread,
            verify,
        }
    }

    /// The next path, and the check of its body when it is verified.
    pub fn next(&mut self) -> (&'a str, Option<BodyCheck>) {
        let (path, size, i, kept): (&'a str, Option<u64>, usize, &'a Kept) = match self.paths {
            Paths::Mix { set, mix, kept } => {
                let i = mix.pick(&mut self.rng);
                let f = &set.files[i];
                (&f.path, Some(f.size), i, kept)
            }
            Paths::List(list, kept) => {
                let (p, size, slot) = &list[self.next % list.len()];
                self.next = self.next.wrapping_add(1);
                (p, *size, *slot, kept)
            }
        };
        let check = size.filter(|_| self.verify).map(|s| kept.check(i, path, s));
        (path, check)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_cycles_and_knows_the_files_of_a_set() {
        let list = vec![
            "/index.html".to_string(),
            "/dir00002/class1_3".to_string(),
            "/dir00002/class9_3".to_string(),
        ];
        let paths = Paths::list(&list);
        let mut p = Picker::new(&paths, 1, 1, true);
        let (a, check) = p.next();
        assert_eq!(a, "/dir00002/class1_3");
        assert!(check.is_some());
        let (b, check) = p.next();
        assert_eq!(b, "/dir00002/class9_3");
        assert!(check.is_none());
        assert_eq!(p.next().0, "/index.html");
        assert_eq!(p.next().0, "/dir00002/class1_3");
        let mut unverified = Picker::new(&paths, 1, 1, false);
        assert!(unverified.next().1.is_none());
        let Paths::List(l, kept) = &paths else {
            panic!()
        };
        assert_eq!(l[1].1, Some(4 * 1024));
        assert_eq!(kept.slots.len(), 3);
        // A list that repeats a path keeps one copy of its body.
        let twice = Paths::list(&[list[1].clone(), list[0].clone(), list[1].clone()]);
        let Paths::List(l, kept) = &twice else {
            panic!()
        };
        assert_eq!((l[0].2, l[1].2, l[2].2), (0, 1, 0));
        assert_eq!(kept.slots.len(), 2);
    }

    #[test]
    fn bodies_are_kept_before_the_run_and_checked_against() {
        let set = FileSet::with_dirs(1).unwrap();
        let paths = Paths::mix(&set);
        paths.keep_all();
        let Paths::Mix { kept, .. } = &paths else {
            panic!()
        };
        assert!(kept.slots.iter().all(|s| matches!(s.get(), Some(Some(_)))));
        assert_eq!(kept.bytes.load(Ordering::Relaxed), set.total_bytes());
        let f = &set.files[20];
        let mut body = vec![0; f.size as usize];
        fill(content_key(&f.path), 0, &mut body);
        let mut check = kept.check(20, &f.path, f.size);
        check.feed(&body);
        assert_eq!(check.finish(), Ok(()));
    }

    #[test]
    fn the_mix_is_repeatable_per_seed_and_differs_between_threads() {
        let set = FileSet::with_dirs(2).unwrap();
        let paths = Paths::mix(&set);
        let draw = |seed, thread| {
            let mut p = Picker::new(&paths, seed, thread, true);
            (0..50).map(|_| p.next().0).collect::<Vec<_>>()
        };
        assert_eq!(draw(7, 0), draw(7, 0));
        assert_ne!(draw(7, 0), draw(7, 1));
        assert_ne!(draw(7, 0), draw(8, 0));
        assert!(Picker::new(&paths, 1, 0, true).next().1.is_some());
    }
}
