//! `SMTALLOC_*` environment options, read once at init with `getenv` into
//! stack buffers (no allocation: this runs inside the first `malloc`).
//!
//! Parsed by `init` only, which passes in `getenv` (`os::getenv_into`):
//! this file is safe code, tested with a fake environment; `settings` keeps
//! the result, `arena` and `stats` use its rounding and number parsing.

use core::ffi::CStr;

/// Default initial arena size per core (`SMTALLOC_RESERVE_PER_CORE`).
/// Virtual only until touched; a multiple of mimalloc's 32 MiB arena unit.
pub const DEFAULT_RESERVE: usize = 256 << 20;

/// Default `SMTALLOC_THP_AFTER`: the start of each arena region that stays
/// in 4 KiB pages until the region's heap has claimed this much. Two of
/// mimalloc's 32 MiB segments: measured on real programs (the
/// `alloc_rss_real` bench), 16 MiB (rounded up to one segment) gave python3
/// with a 60 MB heap 1.5x glibc's peak RSS, since collapsing the lazy start
/// makes every touched frame of it a whole huge page; 64 MiB gives 1.19x,
/// and a heap past it (the allocation benchmarks) is still all huge pages.
pub const DEFAULT_THP_AFTER: usize = 64 << 20;

/// Default `SMTALLOC_LARGE_CACHE`: bytes of freed large blocks kept for
/// reuse (glibc keeps freed blocks up to its mmap threshold's maximum,
/// 32 MiB, in its heap).
pub const DEFAULT_LARGE_CACHE: usize = 32 << 20;

/// The options (see the table in the crate docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// `SMTALLOC_STATS`: count allocations per core and print stats at exit.
    pub stats: bool,
    /// `SMTALLOC_VERBOSE`: 1 = init and arena creation on stderr, 2 = also
    /// mimalloc's own messages.
    pub verbose: u32,
    /// `SMTALLOC_RESERVE_PER_CORE`: initial arena bytes per core.
    pub reserve: usize,
    /// `SMTALLOC_THP` (default on): `madvise(MADV_HUGEPAGE)` the arenas.
    pub thp: bool,
    /// `SMTALLOC_THP_AFTER`: bytes at the start of each arena region left
    /// in 4 KiB pages until mimalloc has claimed as many in the region.
    pub thp_after: usize,
    /// `SMTALLOC_LARGE_CACHE`: bytes of freed large blocks kept for reuse.
    pub large_cache: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            stats: false,
            verbose: 0,
            reserve: DEFAULT_RESERVE,
            thp: true,
            thp_after: DEFAULT_THP_AFTER,
            large_cache: DEFAULT_LARGE_CACHE,
        }
    }
}

impl Options {
    /// Reads the options through `get(name, buf) -> Some(len)` (getenv).
    /// An unparsable value keeps its default and is reported through
    /// `rejected(name, value, what is valid)`: smtalloc runs inside someone
    /// else's program, so it can warn but not stop it.
    pub fn from_env(
        get: impl Fn(&CStr, &mut [u8]) -> Option<usize>,
        mut rejected: impl FnMut(&CStr, &[u8], &str),
    ) -> Options {
        const BOOL: &str = "1 or 0 (yes/no, on/off, true/false)";
        const SIZE: &str = "a size such as 64MiB, 512K or 4096";
        let mut o = Options::default();
        let mut read = |name: &CStr, valid: &str, parse: &dyn Fn(&[u8]) -> Option<usize>| {
            read_one(&get, &mut rejected, name, valid, parse)
        };
        let flag = |v: &[u8]| parse_bool(v).map(usize::from);
        let size = |v: &[u8]| parse_size(v);
        let level = |v: &[u8]| match parse_bool(v) {
            Some(b) => Some(usize::from(b)),
            None => parse_u64(v).map(|l| l.min(9) as usize),
        };
        if let Some(v) = read(c"SMTALLOC_STATS", BOOL, &flag) {
            o.stats = v == 1;
        }
        if let Some(v) = read(c"SMTALLOC_VERBOSE", "0, 1 or 2", &level) {
            o.verbose = v as u32;
        }
        if let Some(v) = read(c"SMTALLOC_RESERVE_PER_CORE", SIZE, &size) {
            o.reserve = v;
        }
        if let Some(v) = read(c"SMTALLOC_THP", BOOL, &flag) {
            o.thp = v == 1;
        }
        if let Some(v) = read(c"SMTALLOC_THP_AFTER", SIZE, &size) {
            o.thp_after = v;
        }
        if let Some(v) = read(c"SMTALLOC_LARGE_CACHE", SIZE, &size) {
            o.large_cache = v;
        }
        o
    }
}

/// One variable: its parsed value, `None` if unset or unparsable (then
/// reported through `rejected`).
fn read_one(
    get: &dyn Fn(&CStr, &mut [u8]) -> Option<usize>,
    rejected: &mut dyn FnMut(&CStr, &[u8], &str),
    name: &CStr,
    valid: &str,
    parse: &dyn Fn(&[u8]) -> Option<usize>,
) -> Option<usize> {
    let mut buf = [0u8; 64];
    let n = get(name, &mut buf)?;
    let value = parse(&buf[..n]);
    if value.is_none() {
        rejected(name, &buf[..n], valid);
    }
    value
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &s[start..end]
}

/// `1/yes/true/on` and `0/no/false/off` (any case); `None` otherwise.
pub fn parse_bool(s: &[u8]) -> Option<bool> {
    let s = trim(s);
    let is = |w: &[u8]| s.eq_ignore_ascii_case(w);
    if is(b"1") || is(b"yes") || is(b"true") || is(b"on") {
        Some(true)
    } else if is(b"0") || is(b"no") || is(b"false") || is(b"off") || s.is_empty() {
        Some(false)
    } else {
        None
    }
}

/// A decimal integer.
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    let s = trim(s);
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |acc, &b| {
        if b.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// A size: a decimal number with an optional binary unit `K`, `M`, `G`, `T`
/// (`k`, `KB`, `KiB` ... all mean 1024^n): `64MiB`, `64M`, `1g`, `4096`.
pub fn parse_size(s: &[u8]) -> Option<usize> {
    let s = trim(s);
    let digits = s
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    let n = parse_u64(&s[..digits])?;
    let unit = trim(&s[digits..]);
    let shift = match unit.first().map(u8::to_ascii_lowercase) {
        None => 0,
        Some(b'b') if unit.len() == 1 => 0,
        Some(b'k') => 10,
        Some(b'm') => 20,
        Some(b'g') => 30,
        Some(b't') => 40,
        _ => return None,
    };
    let rest = &unit[unit.len().min(1)..];
    let ok_suffix =
        rest.is_empty() || rest.eq_ignore_ascii_case(b"b") || rest.eq_ignore_ascii_case(b"ib");
    if !ok_suffix {
        return None;
    }
    let v = n.checked_mul(1u64 << shift)?;
    usize::try_from(v).ok()
}

/// Rounds an arena size up to a whole number of `unit`s (at least one):
/// mimalloc uses arenas in 32 MiB chunks and smtalloc hands memory to cores
/// in 2 MiB frames.
pub fn round_reserve(want: usize, unit: usize) -> usize {
    let unit = unit.max(1);
    want.max(1).div_ceil(unit).saturating_mul(unit)
}

/// Rounds `SMTALLOC_THP_AFTER` up to whole 2 MiB frames (0 stays 0: every
/// frame is advised up front).
pub fn round_frames(want: usize) -> usize {
    const FRAME: usize = 2 << 20;
    want.div_ceil(FRAME).saturating_mul(FRAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size(b"64MiB"), Some(64 << 20));
        assert_eq!(parse_size(b"64M"), Some(64 << 20));
        assert_eq!(parse_size(b" 1g "), Some(1 << 30));
        assert_eq!(parse_size(b"4096"), Some(4096));
        assert_eq!(parse_size(b"2KB"), Some(2048));
        assert_eq!(parse_size(b"12x"), None);
        assert_eq!(parse_size(b"MiB"), None);
        assert_eq!(parse_size(b"99999999999999999999T"), None);
    }

    #[test]
    fn bools_and_rounding() {
        assert_eq!(parse_bool(b"1"), Some(true));
        assert_eq!(parse_bool(b"Off"), Some(false));
        assert_eq!(parse_bool(b"2"), None);
        assert_eq!(round_reserve(1, 32 << 20), 32 << 20);
        assert_eq!(round_reserve(64 << 20, 32 << 20), 64 << 20);
        assert_eq!(round_reserve((64 << 20) + 1, 32 << 20), 96 << 20);
        assert_eq!(round_frames(0), 0);
        assert_eq!(round_frames(1), 2 << 20);
        assert_eq!(round_frames(8 << 20), 8 << 20);
    }

    /// A `getenv` over `vars` for [`Options::from_env`].
    fn env<'a>(vars: &'a [(&str, &str)]) -> impl Fn(&CStr, &mut [u8]) -> Option<usize> + 'a {
        move |name, buf| {
            let (_, v) = vars.iter().find(|(k, _)| k.as_bytes() == name.to_bytes())?;
            buf[..v.len()].copy_from_slice(v.as_bytes());
            Some(v.len())
        }
    }

    #[test]
    fn from_env() {
        let o = Options::from_env(
            env(&[
                ("SMTALLOC_STATS", "1"),
                ("SMTALLOC_RESERVE_PER_CORE", "128MiB"),
                ("SMTALLOC_VERBOSE", "2"),
                ("SMTALLOC_THP_AFTER", "16M"),
                ("SMTALLOC_LARGE_CACHE", "0"),
            ]),
            |name, _, _| panic!("{name:?} rejected"),
        );
        assert_eq!(
            o,
            Options {
                stats: true,
                verbose: 2,
                reserve: 128 << 20,
                thp: true,
                thp_after: 16 << 20,
                large_cache: 0,
            }
        );
    }

    #[test]
    fn unparsable_values_keep_their_defaults_and_are_reported() {
        let mut rejected = Vec::new();
        let o = Options::from_env(
            env(&[
                ("SMTALLOC_STATS", "maybe"),
                ("SMTALLOC_LARGE_CACHE", "lots"),
                ("SMTALLOC_THP_AFTER", "8M"),
            ]),
            |name, value, valid| {
                rejected.push(format!(
                    "{}={}: {valid}",
                    name.to_str().unwrap(),
                    String::from_utf8_lossy(value)
                ))
            },
        );
        assert_eq!(
            o,
            Options {
                thp_after: 8 << 20,
                ..Options::default()
            }
        );
        assert_eq!(
            rejected,
            [
                "SMTALLOC_STATS=maybe: 1 or 0 (yes/no, on/off, true/false)",
                "SMTALLOC_LARGE_CACHE=lots: a size such as 64MiB, 512K or 4096",
            ]
        );
    }
}
