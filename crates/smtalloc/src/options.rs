//! `SMTALLOC_*` environment options, read once at init with `getenv` into
//! stack buffers (no allocation: this runs inside the first `malloc`).

use core::ffi::CStr;

/// Default initial arena size per core (`SMTALLOC_RESERVE_PER_CORE`).
/// Virtual only until touched; a multiple of mimalloc's 32 MiB arena unit.
pub const DEFAULT_RESERVE: usize = 256 << 20;

/// Default `SMTALLOC_THP_AFTER`: the start of each arena region that stays
/// in 4 KiB pages until the region's heap has claimed this much.
pub const DEFAULT_THP_AFTER: usize = 16 << 20;

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
    /// Unparsable values keep their defaults.
    pub fn from_env(get: impl Fn(&CStr, &mut [u8]) -> Option<usize>) -> Options {
        let mut o = Options::default();
        let mut buf = [0u8; 64];
        if let Some(n) = get(c"SMTALLOC_STATS", &mut buf) {
            o.stats = parse_bool(&buf[..n]).unwrap_or(false);
        }
        if let Some(n) = get(c"SMTALLOC_VERBOSE", &mut buf) {
            o.verbose = match parse_bool(&buf[..n]) {
                Some(b) => b as u32,
                None => parse_u64(&buf[..n]).map(|v| v.min(9) as u32).unwrap_or(0),
            };
        }
        if let Some(n) = get(c"SMTALLOC_RESERVE_PER_CORE", &mut buf) {
            if let Some(v) = parse_size(&buf[..n]) {
                o.reserve = v;
            }
        }
        if let Some(n) = get(c"SMTALLOC_THP", &mut buf) {
            o.thp = parse_bool(&buf[..n]).unwrap_or(true);
        }
        if let Some(n) = get(c"SMTALLOC_THP_AFTER", &mut buf) {
            if let Some(v) = parse_size(&buf[..n]) {
                o.thp_after = v;
            }
        }
        if let Some(n) = get(c"SMTALLOC_LARGE_CACHE", &mut buf) {
            if let Some(v) = parse_size(&buf[..n]) {
                o.large_cache = v;
            }
        }
        o
    }
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

    #[test]
    fn from_env() {
        let o = Options::from_env(|name, buf| {
            let v: &[u8] = match name.to_bytes() {
                b"SMTALLOC_STATS" => b"1",
                b"SMTALLOC_RESERVE_PER_CORE" => b"128MiB",
                b"SMTALLOC_VERBOSE" => b"2",
                b"SMTALLOC_THP_AFTER" => b"16M",
                b"SMTALLOC_LARGE_CACHE" => b"0",
                _ => return None,
            };
            buf[..v.len()].copy_from_slice(v);
            Some(v.len())
        });
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
}
