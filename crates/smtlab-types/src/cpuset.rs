//! `CpuSet`: an ordered set of PU OS indexes, with the two text forms the
//! kernel uses: lists (`0,2-5,8`, as in `cpulist` and cgroup `cpuset.cpus`)
//! and hexadecimal masks (`00000000,0000000f`, as in `cpumap` and
//! `shared_cpu_map`).

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Largest OS index accepted when parsing: Linux's `NR_CPUS` tops out at 8192
/// today; a bigger number is a typo, and refusing it keeps a mistyped range
/// such as `0-4000000000` from allocating gigabytes.
pub const MAX_CPU: u32 = 65_535;

/// An ordered set of PU OS indexes. Serialised as a JSON array of integers.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CpuSet(BTreeSet<u32>);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CpuSetError {
    #[error("`{token}` is not a CPU number or range; expected a list like 0,2-5,8")]
    BadToken { token: String },
    #[error("`{token}` is a descending range; write it low-high, e.g. 2-5")]
    Descending { token: String },
    #[error("CPU {cpu} in `{token}` is larger than {max}")]
    TooLarge { token: String, cpu: u64, max: u32 },
    #[error("`{text}` is not a hexadecimal CPU mask; expected e.g. 0x3 or 00000000,0000000f")]
    BadMask { text: String },
}

impl CpuSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse a kernel CPU list: `0,2-5,8`. Empty text is the empty set, as in
    /// sysfs's `offline` file when nothing is offline. Whitespace around the
    /// text (the trailing newline of a sysfs file) is ignored.
    pub fn parse_list(text: &str) -> Result<Self, CpuSetError> {
        let mut set = CpuSet::new();
        let text = text.trim();
        if text.is_empty() {
            return Ok(set);
        }
        for token in text.split(',') {
            let token = token.trim();
            let bad = || CpuSetError::BadToken {
                token: token.to_string(),
            };
            let num = |s: &str| -> Result<u32, CpuSetError> {
                if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad());
                }
                let v: u64 = s.parse().map_err(|_| bad())?;
                if v > MAX_CPU as u64 {
                    return Err(CpuSetError::TooLarge {
                        token: token.to_string(),
                        cpu: v,
                        max: MAX_CPU,
                    });
                }
                Ok(v as u32)
            };
            match token.split_once('-') {
                None => {
                    set.insert(num(token)?);
                }
                Some((lo, hi)) => {
                    let (lo, hi) = (num(lo)?, num(hi)?);
                    if lo > hi {
                        return Err(CpuSetError::Descending {
                            token: token.to_string(),
                        });
                    }
                    set.0.extend(lo..=hi);
                }
            }
        }
        Ok(set)
    }

    /// Parse a kernel hexadecimal mask: 32-bit words separated by commas,
    /// most significant first (`00000000,00000101`), with or without `0x`.
    pub fn parse_mask(text: &str) -> Result<Self, CpuSetError> {
        let bad = || CpuSetError::BadMask {
            text: text.trim().to_string(),
        };
        let t = text.trim();
        let t = t
            .strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .unwrap_or(t);
        let digits: String = t.chars().filter(|c| *c != ',').collect();
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let mut set = CpuSet::new();
        for (i, c) in digits.chars().rev().enumerate() {
            let nibble = c.to_digit(16).expect("checked hex digit");
            for bit in 0..4 {
                if nibble & (1 << bit) != 0 {
                    let cpu = (i * 4 + bit) as u64;
                    if cpu > MAX_CPU as u64 {
                        return Err(bad());
                    }
                    set.insert(cpu as u32);
                }
            }
        }
        Ok(set)
    }

    pub fn insert(&mut self, cpu: u32) -> bool {
        self.0.insert(cpu)
    }
    pub fn remove(&mut self, cpu: u32) -> bool {
        self.0.remove(&cpu)
    }
    pub fn contains(&self, cpu: u32) -> bool {
        self.0.contains(&cpu)
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn first(&self) -> Option<u32> {
        self.0.first().copied()
    }
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = u32> + '_ {
        self.0.iter().copied()
    }
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.0.is_subset(&other.0)
    }
    pub fn intersects(&self, other: &CpuSet) -> bool {
        !self.0.is_disjoint(&other.0)
    }
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.intersection(&other.0).copied().collect())
    }
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.union(&other.0).copied().collect())
    }
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.difference(&other.0).copied().collect())
    }

    /// The kernel list form, `0,2-5,8`; the empty set is the empty string.
    pub fn to_list(&self) -> String {
        let mut out = Vec::new();
        let mut it = self.0.iter().copied().peekable();
        while let Some(lo) = it.next() {
            let mut hi = lo;
            // `checked_add`: u32::MAX ends a range rather than overflowing.
            while hi
                .checked_add(1)
                .is_some_and(|next| it.peek() == Some(&next))
            {
                hi = it.next().expect("peeked");
            }
            out.push(if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            });
        }
        out.join(",")
    }

    /// `0x`-prefixed hexadecimal mask, as hwloc prints it (`0x00000f90`).
    pub fn to_mask(&self) -> String {
        let top = self.0.last().copied().unwrap_or(0);
        let words = top as usize / 32 + 1;
        let mut w = vec![0u32; words];
        for cpu in self.iter() {
            w[cpu as usize / 32] |= 1 << (cpu % 32);
        }
        let body: Vec<String> = w.iter().rev().map(|x| format!("{x:08x}")).collect();
        format!("0x{}", body.join(","))
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        CpuSet(iter.into_iter().collect())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({})", self.to_list())
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_list())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_lists() {
        let s = CpuSet::parse_list("0,2-5,8\n").unwrap();
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 2, 3, 4, 5, 8]);
        assert_eq!(s.to_list(), "0,2-5,8");
        assert!(CpuSet::parse_list("").unwrap().is_empty());
    }

    #[test]
    fn the_highest_cpu_number_ends_a_range_instead_of_overflowing() {
        let s: CpuSet = [u32::MAX - 1, u32::MAX].into_iter().collect();
        assert_eq!(s.to_list(), "4294967294-4294967295");
        let one: CpuSet = [u32::MAX].into_iter().collect();
        assert_eq!(one.to_list(), "4294967295");
    }

    #[test]
    fn rejects_bad_lists_naming_the_token() {
        assert_eq!(
            CpuSet::parse_list("0,2-").unwrap_err(),
            CpuSetError::BadToken { token: "2-".into() }
        );
        assert!(matches!(
            CpuSet::parse_list("5-2"),
            Err(CpuSetError::Descending { .. })
        ));
        assert!(matches!(
            CpuSet::parse_list("0-4000000000"),
            Err(CpuSetError::TooLarge { .. })
        ));
        assert!(CpuSet::parse_list("a").is_err());
        assert!(CpuSet::parse_list("-1").is_err());
    }

    #[test]
    fn parses_kernel_masks() {
        let s = CpuSet::parse_mask("00000000,00000101\n").unwrap();
        assert_eq!(s.to_list(), "0,8");
        let s = CpuSet::parse_mask("0x00000f90").unwrap();
        assert_eq!(s.to_list(), "4,7-11");
        let s = CpuSet::parse_mask("00000001,00000000").unwrap();
        assert_eq!(s.to_list(), "32");
        assert!(CpuSet::parse_mask("xyz").is_err());
    }

    proptest! {
        #[test]
        fn list_and_mask_round_trip(v in proptest::collection::btree_set(0u32..300, 0..40)) {
            let s: CpuSet = v.iter().copied().collect();
            prop_assert_eq!(CpuSet::parse_list(&s.to_list()).unwrap(), s.clone());
            prop_assert_eq!(CpuSet::parse_mask(&s.to_mask()).unwrap(), s);
        }
    }
}
