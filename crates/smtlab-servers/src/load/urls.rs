//! Which path each request asks for, and how its body is checked.
//!
//! [`Paths`] is built once per run from the configuration's
//! [`Urls`](super::Urls) and shared by the client threads; each thread
//! draws from it with its own [`Picker`]: the SPECweb96 mix with a ChaCha
//! stream of its own (the run's seed, the thread's index as the stream, so
//! a run is repeatable), or the list in turn from its own starting point.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::fileset::{BodyCheck, FileSet, Mix, MAX_DIRS};

/// The paths of a run, with each one's expected size when it is a file
/// of the set (its body can then be checked).
#[derive(Debug)]
pub enum Paths<'a> {
    Mix { set: &'a FileSet, mix: Mix },
    List(Vec<(String, Option<u64>)>),
}

impl<'a> Paths<'a> {
    pub fn mix(set: &'a FileSet) -> Paths<'a> {
        Paths::Mix {
            set,
            mix: Mix::specweb96(set),
        }
    }

    /// A list of paths; those naming a file of a SPECweb96 set
    /// (`/dirNNNNN/classC_K`) get that file's size.
    pub fn list(paths: &[String]) -> Paths<'a> {
        let dirs = paths.iter().filter_map(|p| dir_of(p)).max();
        let set = dirs.and_then(|d| FileSet::with_dirs(d + 1).ok());
        Paths::List(
            paths
                .iter()
                .map(|p| {
                    let size = set.as_ref().and_then(|s| s.find(p)).map(|f| f.size);
                    (p.clone(), size)
                })
                .collect(),
        )
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
        let (path, size): (&'a str, Option<u64>) = match self.paths {
            Paths::Mix { set, mix } => {
                let f = &set.files[mix.pick(&mut self.rng)];
                (&f.path, Some(f.size))
            }
            Paths::List(list) => {
                let (p, size) = &list[self.next % list.len()];
                self.next = self.next.wrapping_add(1);
                (p, *size)
            }
        };
        let check = size
            .filter(|_| self.verify)
            .map(|s| BodyCheck::new(path, s));
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
        let Paths::List(l) = &paths else { panic!() };
        assert_eq!(l[1].1, Some(4 * 1024));
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
