//! The SPECweb96-like file set: what the web server serves and the load
//! generator asks for.
//!
//! Like SPECweb96, the tree is made of directories `dirNNNNN`, each holding
//! four classes of nine files: `classC_K` is `(K + 1) * BASE[C]` bytes, with
//! `BASE` = 102 B, 1 KiB, 10 KiB and 100 KiB (so 0.1–0.9 KB, 1–9 KB, 10–90
//! KB, 100–900 KB). Requests pick a class 35/50/14/1% of the time, then a
//! file of that class with Zipf popularity (rank r asked in proportion to
//! 1/r). A directory is about 4.9 MB; the size of the set is a parameter
//! (the paper served 500 MB; the default fits the page cache).
//!
//! Every byte is a function of the file's URL path and its offset
//! ([`byte_at`]), so anyone holding the path can check a body without the
//! files ([`BodyCheck`]): the load generator verifies what it receives, and
//! a server that sends a wrong or short body is caught. Bodies are
//! printable (64 base64 characters a line) so `curl` shows them sanely.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::Path;

use rand::Rng;

/// Bytes of a class's smallest file; file `K` is `(K + 1)` times this.
pub const CLASS_BASE: [u64; 4] = [102, 1024, 10 * 1024, 100 * 1024];
/// Files per class and directory.
pub const FILES_PER_CLASS: usize = 9;
/// How often each class is requested (SPECweb96).
pub const CLASS_MIX: [f64; 4] = [0.35, 0.50, 0.14, 0.01];
/// Bytes in one directory: 45 times the sum of the bases.
pub const DIR_BYTES: u64 = 45 * (CLASS_BASE[0] + CLASS_BASE[1] + CLASS_BASE[2] + CLASS_BASE[3]);
/// The default size: 10 directories, about 51 MB.
pub const DEFAULT_DIRS: usize = 10;
/// The most directories a set may have (about 50 GB): a bound at the edge.
pub const MAX_DIRS: usize = 10_000;
/// Written at the root once every file is there: a tree with this marker
/// and the same directory count is not written again.
pub const MARKER: &str = ".smtlab-fileset";

/// One file of the set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpec {
    /// The URL path, e.g. `/dir00003/class1_4`.
    pub path: String,
    pub class: usize,
    pub size: u64,
}

/// The files of a set of `dirs` directories (a description; nothing on disk
/// until [`FileSet::write_to`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSet {
    pub dirs: usize,
    /// Directory-major, then class, then file number.
    pub files: Vec<FileSpec>,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum FileSetError {
    #[error("file set size {bytes} bytes: at least one directory ({DIR_BYTES} bytes) and at most {MAX_DIRS} directories")]
    Size { bytes: u64 },
}

impl FileSet {
    /// A set of `dirs` directories (1 to [`MAX_DIRS`]).
    pub fn with_dirs(dirs: usize) -> Result<FileSet, FileSetError> {
        if dirs == 0 || dirs > MAX_DIRS {
            return Err(FileSetError::Size {
                bytes: dirs as u64 * DIR_BYTES,
            });
        }
        let mut files = Vec::with_capacity(dirs * 4 * FILES_PER_CLASS);
        for d in 0..dirs {
            for (class, base) in CLASS_BASE.iter().enumerate() {
                for k in 0..FILES_PER_CLASS {
                    files.push(FileSpec {
                        path: format!("/dir{d:05}/class{class}_{k}"),
                        class,
                        size: (k as u64 + 1) * base,
                    });
                }
            }
        }
        Ok(FileSet { dirs, files })
    }

    /// The set closest to `bytes` in size (whole directories, at least one).
    pub fn with_total_bytes(bytes: u64) -> Result<FileSet, FileSetError> {
        let dirs = (bytes + DIR_BYTES / 2) / DIR_BYTES;
        if dirs == 0 || dirs > MAX_DIRS as u64 {
            return Err(FileSetError::Size { bytes });
        }
        FileSet::with_dirs(dirs as usize)
    }

    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// The file at a URL path (`/dir00000/class0_0`).
    pub fn find(&self, path: &str) -> Option<&FileSpec> {
        let (d, class, k) = parse_path(path)?;
        if d >= self.dirs {
            return None;
        }
        self.files
            .get((d * 4 + class) * FILES_PER_CLASS + k)
            .filter(|f| f.path == path)
    }

    /// Write the tree under `root` (created if missing). A tree already
    /// written there for the same number of directories (its marker file
    /// says so) is kept as it is.
    pub fn write_to(&self, root: &Path) -> io::Result<()> {
        let marker = root.join(MARKER);
        let want = format!("dirs={}\n", self.dirs);
        if fs::read_to_string(&marker).is_ok_and(|m| m == want) {
            return Ok(());
        }
        let mut buf = Vec::new();
        let mut last_dir = None;
        for f in &self.files {
            let p = root.join(f.path.trim_start_matches('/'));
            if let Some(dir) = p.parent() {
                fs::create_dir_all(dir)?;
                if last_dir.as_deref() != Some(dir) {
                    remove_dead_asides(dir);
                    last_dir = Some(dir.to_path_buf());
                }
            }
            buf.resize(f.size as usize, 0);
            fill(content_key(&f.path), 0, &mut buf);
            // Written aside, then renamed: a server already serving this
            // tree (another run writing it at the same time) never sees a
            // file half written.
            let aside = p.with_extension(format!("tmp-{}", std::process::id()));
            let mut out = fs::File::create(&aside)?;
            out.write_all(&buf)?;
            drop(out);
            fs::rename(&aside, &p)?;
        }
        fs::write(marker, want)
    }
}

/// Remove the files a writer killed while it wrote this directory left
/// aside (`classC_K.tmp-PID`, its process gone): nothing else would, since
/// the next writer's asides carry its own pid. A writer still alive (in
/// this pid namespace) keeps its own.
fn remove_dead_asides(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.rsplit_once(".tmp-"))
            .and_then(|(_, pid)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// A size in bytes: a number (decimals allowed) and an optional unit, B,
/// KB, MB, GB (powers of 1000; K, M, G alike) or KiB, MiB, GiB (`5MB`,
/// `0.5GB`, `2MiB`, `1234`). Shared by `serve web --files`, `load http
/// --files` and `run -w web --param files=`.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().ok()?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = value * scale;
    (bytes.is_finite() && bytes < 1e15).then_some(bytes as u64)
}

/// `(dir, class, k)` of `/dirNNNNN/classC_K`.
fn parse_path(path: &str) -> Option<(usize, usize, usize)> {
    let rest = path.strip_prefix("/dir")?;
    let (d, file) = rest.split_once('/')?;
    let (c, k) = file.strip_prefix("class")?.split_once('_')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if d.len() != 5 || !digits(d) || c.len() != 1 || !digits(c) || k.len() != 1 || !digits(k) {
        return None;
    }
    let (c, k): (usize, usize) = (c.parse().ok()?, k.parse().ok()?);
    (c < 4 && k < FILES_PER_CLASS).then_some((d.parse().ok()?, c, k))
}

/// The key that seeds a file's content: FNV-1a of its URL path.
pub fn content_key(path: &str) -> u64 {
    path.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// SplitMix64's output function: a well-mixed 64-bit word from any input.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The byte at `offset` of the file whose [`content_key`] is `key`: a
/// newline ends every 64-byte line, the rest are base64 characters drawn
/// from one mixed word per 8 bytes.
pub fn byte_at(key: u64, offset: u64) -> u8 {
    if offset % 64 == 63 {
        return b'\n';
    }
    let word = mix64(key ^ (offset / 8).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    ALPHABET[((word >> (8 * (offset % 8))) & 63) as usize]
}

/// Fill `buf` with the file's bytes from `offset` on: [`byte_at`] for each,
/// with one mixed word per 8 bytes rather than one per byte (the load
/// generator checks every body with it, and the check was its bottleneck).
pub fn fill(key: u64, offset: u64, buf: &mut [u8]) {
    let mut i = 0;
    while i < buf.len() {
        let p = offset + i as u64;
        let word = mix64(key ^ (p / 8).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let n = (8 - (p % 8) as usize).min(buf.len() - i);
        for (j, b) in buf[i..i + n].iter_mut().enumerate() {
            let q = p + j as u64;
            *b = if q % 64 == 63 {
                b'\n'
            } else {
                ALPHABET[((word >> (8 * (q % 8))) & 63) as usize]
            };
        }
        i += n;
    }
}

/// Where a body first differs from the file's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyMismatch {
    /// The byte at this offset is wrong.
    Byte { offset: u64 },
    /// The body has this many bytes; the file has `want`.
    Length { got: u64, want: u64 },
}

impl fmt::Display for BodyMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyMismatch::Byte { offset } => write!(f, "wrong byte at offset {offset}"),
            BodyMismatch::Length { got, want } => {
                write!(f, "{got} bytes where the file has {want}")
            }
        }
    }
}

/// Checks a body as it arrives, chunk by chunk.
#[derive(Debug, Clone)]
pub struct BodyCheck {
    key: u64,
    want: u64,
    seen: u64,
    first_bad: Option<u64>,
    /// The whole expected body, when the caller keeps it (a load
    /// generator asking for the same files again and again): compared
    /// with `memcmp` instead of made anew.
    expected: Option<std::sync::Arc<[u8]>>,
}

impl BodyCheck {
    /// A check of the body of `path`, which should be `size` bytes.
    pub fn new(path: &str, size: u64) -> BodyCheck {
        BodyCheck {
            key: content_key(path),
            want: size,
            seen: 0,
            first_bad: None,
            expected: None,
        }
    }

    /// A check against `expected`, the file's whole content (made with
    /// [`fill`] for this path): the same verdicts as [`BodyCheck::new`],
    /// for a fraction of the CPU.
    pub fn against(path: &str, expected: std::sync::Arc<[u8]>) -> BodyCheck {
        BodyCheck {
            expected: Some(expected.clone()),
            ..BodyCheck::new(path, expected.len() as u64)
        }
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        if let Some(expected) = &self.expected {
            if self.first_bad.is_none() {
                let from = (self.seen as usize).min(expected.len());
                let want = &expected[from..(from + chunk.len()).min(expected.len())];
                // Bytes past the end are caught by the length check.
                let got = &chunk[..want.len()];
                if got != want {
                    let i = got
                        .iter()
                        .zip(want)
                        .position(|(a, b)| a != b)
                        .expect("slices differ");
                    self.first_bad = Some(self.seen + i as u64);
                }
            }
            self.seen += chunk.len() as u64;
            return;
        }
        // The expected bytes made a block at a time and compared as slices.
        let mut expect = [0u8; 4096];
        let mut at = 0;
        while self.first_bad.is_none() && at < chunk.len() {
            let piece = &chunk[at..(at + expect.len()).min(chunk.len())];
            let want = &mut expect[..piece.len()];
            fill(self.key, self.seen + at as u64, want);
            if piece != want {
                let i = piece
                    .iter()
                    .zip(want.iter())
                    .position(|(a, b)| a != b)
                    .expect("slices differ");
                self.first_bad = Some(self.seen + (at + i) as u64);
            }
            at += piece.len();
        }
        self.seen += chunk.len() as u64;
    }

    /// The verdict once the whole body was fed.
    pub fn finish(&self) -> Result<(), BodyMismatch> {
        if let Some(offset) = self.first_bad.filter(|&o| o < self.want) {
            return Err(BodyMismatch::Byte { offset });
        }
        if self.seen != self.want {
            return Err(BodyMismatch::Length {
                got: self.seen,
                want: self.want,
            });
        }
        Ok(())
    }
}

/// The SPECweb96 request mix over a set: a class by [`CLASS_MIX`], then a
/// file of the class by Zipf popularity over all its files (rank r, counted
/// from 1 in directory order, has weight 1/r).
#[derive(Debug, Clone)]
pub struct Mix {
    class_cdf: [f64; 4],
    /// Per class: indexes into `FileSet::files` by rank, and the cumulative
    /// weights.
    classes: Vec<(Vec<usize>, Vec<f64>)>,
}

impl Mix {
    pub fn specweb96(set: &FileSet) -> Mix {
        let mut class_cdf = [0.0; 4];
        let mut acc = 0.0;
        for (c, p) in CLASS_MIX.iter().enumerate() {
            acc += p;
            class_cdf[c] = acc;
        }
        let classes = (0..4)
            .map(|class| {
                let files: Vec<usize> = (0..set.files.len())
                    .filter(|&i| set.files[i].class == class)
                    .collect();
                let mut acc = 0.0;
                let cdf = (1..=files.len())
                    .map(|r| {
                        acc += 1.0 / r as f64;
                        acc
                    })
                    .collect();
                (files, cdf)
            })
            .collect();
        Mix { class_cdf, classes }
    }

    /// An index into the set's files.
    pub fn pick(&self, rng: &mut impl Rng) -> usize {
        let u: f64 = rng.random::<f64>() * self.class_cdf[3];
        let class = self.class_cdf.iter().position(|&c| u < c).unwrap_or(3);
        let (files, cdf) = &self.classes[class];
        let v = rng.random::<f64>() * cdf[cdf.len() - 1];
        files[cdf.partition_point(|&c| c <= v).min(files.len() - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_directory_holds_four_classes_of_nine_files() {
        let set = FileSet::with_dirs(2).unwrap();
        assert_eq!(set.files.len(), 72);
        assert_eq!(set.total_bytes(), 2 * DIR_BYTES);
        assert_eq!(set.files[0].path, "/dir00000/class0_0");
        assert_eq!(set.files[0].size, 102);
        assert_eq!(set.files[35].path, "/dir00000/class3_8");
        assert_eq!(set.files[35].size, 921_600);
        assert_eq!(set.find("/dir00001/class2_3").unwrap().size, 40_960);
        for bad in [
            "/dir00002/class0_0",
            "/dir0001/class0_0",
            "/dir00000/class4_0",
            "/dir00000/class0_9",
            "/x",
        ] {
            assert!(set.find(bad).is_none(), "{bad}");
        }
        assert_eq!(
            FileSet::with_total_bytes(50_000_000).unwrap().dirs,
            DEFAULT_DIRS
        );
        assert!(FileSet::with_total_bytes(1000).is_err());
        assert!(FileSet::with_dirs(MAX_DIRS + 1).is_err());
    }

    #[test]
    fn bodies_are_checked_byte_for_byte_and_by_length() {
        let path = "/dir00000/class1_2";
        let mut body = vec![0; 3072];
        fill(content_key(path), 0, &mut body);
        assert_eq!(body[63], b'\n');
        assert!(body.iter().all(|b| b.is_ascii_graphic() || *b == b'\n'));
        let mut ok = BodyCheck::new(path, 3072);
        for chunk in body.chunks(1000) {
            ok.feed(chunk);
        }
        assert_eq!(ok.finish(), Ok(()));
        let mut other = vec![0; 3072];
        fill(content_key("/dir00000/class1_3"), 0, &mut other);
        assert_ne!(body, other, "files differ");
        body[2000] ^= 1;
        let mut bad = BodyCheck::new(path, 3072);
        bad.feed(&body);
        assert_eq!(bad.finish(), Err(BodyMismatch::Byte { offset: 2000 }));
        let mut short = BodyCheck::new(path, 3072);
        short.feed(&other[..0]);
        assert_eq!(
            short.finish(),
            Err(BodyMismatch::Length { got: 0, want: 3072 })
        );
    }

    proptest::proptest! {
        /// The word-at-a-time fill and the block-wise check agree with
        /// `byte_at`, the content's definition, at any offset and length;
        /// a flipped byte is found where it is, across block boundaries.
        #[test]
        fn fill_and_check_agree_with_byte_at(
            key in proptest::prelude::any::<u64>(),
            offset in 0u64..100_000,
            len in 0usize..10_000,
            flip in proptest::prelude::any::<proptest::sample::Index>(),
        ) {
            let mut buf = vec![0; len];
            fill(key, offset, &mut buf);
            for (i, b) in buf.iter().enumerate() {
                proptest::prop_assert_eq!(*b, byte_at(key, offset + i as u64));
            }
            let mut check = BodyCheck { key, want: offset + len as u64, seen: 0, first_bad: None, expected: None };
            let mut head = vec![0; offset as usize];
            fill(key, 0, &mut head);
            check.feed(&head);
            if len > 0 {
                let at = flip.index(len);
                buf[at] ^= 0x20;
                check.feed(&buf);
                proptest::prop_assert_eq!(
                    check.finish(),
                    Err(BodyMismatch::Byte { offset: offset + at as u64 })
                );
            } else {
                proptest::prop_assert_eq!(check.finish(), Ok(()));
            }
        }
    }

    #[test]
    fn a_check_against_kept_bytes_gives_the_same_verdicts() {
        let path = "/dir00000/class2_1";
        let mut body = vec![0; 20_480];
        fill(content_key(path), 0, &mut body);
        let kept: std::sync::Arc<[u8]> = body.clone().into();
        let verdict = |b: &[u8], chunk: usize| {
            let (mut a, mut n) = (
                BodyCheck::against(path, kept.clone()),
                BodyCheck::new(path, 20_480),
            );
            for c in b.chunks(chunk.max(1)) {
                a.feed(c);
                n.feed(c);
            }
            assert_eq!(a.finish(), n.finish());
            a.finish()
        };
        assert_eq!(verdict(&body, 1000), Ok(()));
        let mut bad = body.clone();
        bad[12_345] ^= 1;
        assert_eq!(
            verdict(&bad, 4096),
            Err(BodyMismatch::Byte { offset: 12_345 })
        );
        assert_eq!(
            verdict(&body[..100], 7),
            Err(BodyMismatch::Length {
                got: 100,
                want: 20_480
            })
        );
        let mut long = body.clone();
        long.extend_from_slice(b"extra");
        assert_eq!(
            verdict(&long, 3000),
            Err(BodyMismatch::Length {
                got: 20_485,
                want: 20_480
            })
        );
    }

    #[test]
    fn the_tree_is_written_once_with_the_content_function() {
        let dir = tempfile::tempdir().unwrap();
        let set = FileSet::with_dirs(1).unwrap();
        set.write_to(dir.path()).unwrap();
        for f in &set.files {
            let body = fs::read(dir.path().join(&f.path[1..])).unwrap();
            let mut check = BodyCheck::new(&f.path, f.size);
            check.feed(&body);
            assert_eq!(check.finish(), Ok(()), "{}", f.path);
        }
        // Written again only when the marker differs.
        let p = dir.path().join("dir00000/class0_0");
        fs::write(&p, b"changed").unwrap();
        set.write_to(dir.path()).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"changed");
        fs::remove_file(dir.path().join(MARKER)).unwrap();
        set.write_to(dir.path()).unwrap();
        assert_eq!(fs::read(&p).unwrap().len(), 102);
    }

    #[test]
    fn a_killed_writers_half_written_file_is_removed_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("dir00000");
        fs::create_dir_all(&d).unwrap();
        // Past any pid_max: that writer is gone. Pid 1 is alive.
        let dead = d.join("class1_3.tmp-4294967295");
        let alive = d.join("class1_4.tmp-1");
        fs::write(&dead, b"half").unwrap();
        fs::write(&alive, b"half").unwrap();
        FileSet::with_dirs(1).unwrap().write_to(dir.path()).unwrap();
        assert!(!dead.exists());
        assert!(alive.exists());
    }

    #[test]
    fn the_mix_follows_the_class_shares_and_zipf_inside_a_class() {
        let set = FileSet::with_dirs(3).unwrap();
        let mix = Mix::specweb96(&set);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let n = 200_000;
        let mut class = [0usize; 4];
        let mut count = vec![0usize; set.files.len()];
        for _ in 0..n {
            let i = mix.pick(&mut rng);
            class[set.files[i].class] += 1;
            count[i] += 1;
        }
        for c in 0..4 {
            let share = class[c] as f64 / n as f64;
            assert!((share - CLASS_MIX[c]).abs() < 0.01, "class {c}: {share}");
        }
        // Class 1's most popular file (rank 1) against rank 2: about 2x.
        let ranks: Vec<usize> = (0..set.files.len())
            .filter(|&i| set.files[i].class == 1)
            .collect();
        let ratio = count[ranks[0]] as f64 / count[ranks[1]] as f64;
        assert!((1.8..2.2).contains(&ratio), "{ratio}");
        assert!(
            count[ranks[ranks.len() - 1]] > 0,
            "the last rank is asked too"
        );
    }
}
