//! CPU -> physical core map, read once at init from sysfs
//! (`/sys/devices/system/cpu/cpuN/topology/{core_id,physical_package_id}`)
//! into stack buffers. SMT siblings (same package, same core id) share one
//! core index, so they share an arena: they share the core's TLB too.
//!
//! Called by `init` only, which passes in the file reader
//! (`os::read_file`): this file is safe code, tested on fake sysfs trees.

use core::ffi::CStr;

/// What [`read_core_map`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Topo {
    /// CPU numbers 0..cpus are mapped (from `/sys/devices/system/cpu/possible`).
    pub cpus: usize,
    /// Dense core indices 0..cores.
    pub cores: usize,
}

/// Parses a leading decimal number (sysfs files end in a newline).
pub fn parse_num(s: &[u8]) -> Option<u32> {
    let end = s
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    s[..end].iter().try_fold(0u32, |a, &b| {
        a.checked_mul(10)?.checked_add(u32::from(b - b'0'))
    })
}

/// The highest CPU number in a CPU list such as `0-3,8-11`.
pub fn max_in_list(s: &[u8]) -> Option<u32> {
    s.split(|&b| b == b',' || b == b'-' || b == b'\n')
        .filter_map(parse_num)
        .max()
}

/// Gives each distinct key (package, core id) a dense index in order of
/// first appearance; a CPU without a key (offline, unreadable) is a core of
/// its own. Returns the number of cores.
pub fn assign_cores(keys: &[Option<(u32, u32)>], out: &mut [u16]) -> usize {
    let mut cores = 0usize;
    for (i, key) in keys.iter().enumerate() {
        let existing = key.and_then(|k| keys[..i].iter().position(|&o| o == Some(k)));
        out[i] = match existing {
            Some(first) => out[first],
            None => {
                cores += 1;
                (cores - 1) as u16
            }
        };
    }
    cores.max(1)
}

/// A tiny formatter for sysfs paths into a stack buffer.
struct PathBuf {
    buf: [u8; 96],
    len: usize,
}

impl PathBuf {
    fn new() -> Self {
        PathBuf {
            buf: [0; 96],
            len: 0,
        }
    }
    fn push(&mut self, s: &[u8]) {
        let n = s.len().min(self.buf.len() - 1 - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s[..n]);
        self.len += n;
    }
    fn push_num(&mut self, mut v: usize) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }
    fn as_cstr(&mut self) -> &CStr {
        self.buf[self.len] = 0;
        CStr::from_bytes_with_nul(&self.buf[..=self.len]).unwrap_or(c"")
    }
}

fn read_num(
    read: &impl Fn(&CStr, &mut [u8]) -> Option<usize>,
    cpu: usize,
    file: &[u8],
) -> Option<u32> {
    let mut p = PathBuf::new();
    p.push(b"/sys/devices/system/cpu/cpu");
    p.push_num(cpu);
    p.push(b"/topology/");
    p.push(file);
    let mut buf = [0u8; 32];
    let n = read(p.as_cstr(), &mut buf)?;
    parse_num(&buf[..n])
}

/// Fills `map[cpu]` with the core index of each CPU, reading files through
/// `read(path, buf) -> Some(len)`.
pub fn read_core_map(map: &mut [u16], read: impl Fn(&CStr, &mut [u8]) -> Option<usize>) -> Topo {
    let mut buf = [0u8; 256];
    let cpus = read(c"/sys/devices/system/cpu/possible", &mut buf)
        .and_then(|n| max_in_list(&buf[..n]))
        .map_or(1, |m| m as usize + 1)
        .min(map.len());
    let mut keys = [None; 1024];
    let cpus = cpus.min(keys.len());
    for (cpu, key) in keys.iter_mut().enumerate().take(cpus) {
        let core = read_num(&read, cpu, b"core_id");
        let pkg = read_num(&read, cpu, b"physical_package_id");
        *key = core.zip(pkg).map(|(c, p)| (p, c));
    }
    let cores = assign_cores(&keys[..cpus], map);
    // CPUs beyond `possible` never run us; spread them anyway.
    for (i, slot) in map.iter_mut().enumerate().skip(cpus) {
        *slot = (i % cores) as u16;
    }
    Topo { cpus, cores }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_numbers() {
        assert_eq!(parse_num(b"17\n"), Some(17));
        assert_eq!(parse_num(b"x"), None);
        assert_eq!(max_in_list(b"0-3,8-11\n"), Some(11));
        assert_eq!(max_in_list(b"0\n"), Some(0));
    }

    #[test]
    fn smt_siblings_share_a_core() {
        // 2 packages x 2 cores x 2 threads, Linux-style numbering:
        // cpu i and i+4 are siblings; one cpu unreadable.
        let keys = [
            Some((0, 0)),
            Some((0, 1)),
            Some((1, 0)),
            Some((1, 1)),
            Some((0, 0)),
            Some((0, 1)),
            Some((1, 0)),
            None,
        ];
        let mut out = [0u16; 8];
        assert_eq!(assign_cores(&keys, &mut out), 5);
        assert_eq!(out, [0, 1, 2, 3, 0, 1, 2, 4]);
    }

    #[test]
    fn reads_sysfs_like_files() {
        let mut map = [0u16; 16];
        let topo = read_core_map(&mut map, |path, buf| {
            let p = path.to_bytes();
            let v: &[u8] = if p.ends_with(b"possible") {
                b"0-3\n"
            } else if p.ends_with(b"core_id") {
                // cpu0..3 -> core 0,1,0,1 (SMT pairs 0/2, 1/3)
                let cpu = p[27] - b'0';
                if cpu % 2 == 0 {
                    b"0\n"
                } else {
                    b"1\n"
                }
            } else {
                b"0\n"
            };
            buf[..v.len()].copy_from_slice(v);
            Some(v.len())
        });
        assert_eq!(topo, Topo { cpus: 4, cores: 2 });
        assert_eq!(&map[..4], &[0, 1, 0, 1]);
    }
}
