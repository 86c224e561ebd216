//! The seeded random streams everything here draws from: ChaCha8 keyed by
//! (seed, domain tag), and an unbiased bounded integer of our own, so a
//! seeded order or interval does not change when a dependency is upgraded.
//! Uses nothing else in this crate.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Streams of the `stats` domain, so that summarize, ratio_ci and
/// medians_ci, given the same user seed, never draw the same stream as each
/// other or as the scheduler (`smtlab-measure`'s schedule uses its own
/// domain tag).
pub(crate) const STREAM_SUMMARY: u64 = 1;
pub(crate) const STREAM_RATIO: u64 = 2;
pub(crate) const STREAM_MEDIANS: u64 = 3;

/// A uniform integer in `0..n` (`n > 0`) from the raw output of `rng`:
/// Lemire's multiply-and-reject method, exactly unbiased. Ours rather than
/// `rand`'s `random_range`, whose algorithm `rand` does not promise to keep
/// between versions: a seeded order or interval must not change when a
/// dependency is upgraded. Below 2^32 it draws 32 bits at a time, which
/// halves the ChaCha output the bootstrap consumes (its main cost). Shared
/// with the measurement loop's schedule (`smtlab-measure`).
pub fn uniform_below(rng: &mut impl RngCore, n: usize) -> usize {
    debug_assert!(n > 0);
    if let Ok(n) = u32::try_from(n) {
        let mut m = u64::from(rng.next_u32()) * u64::from(n);
        if (m as u32) < n {
            // Reject the few low products that would over-represent some
            // outputs: 2^32 mod n of them.
            let threshold = n.wrapping_neg() % n;
            while (m as u32) < threshold {
                m = u64::from(rng.next_u32()) * u64::from(n);
            }
        }
        return (m >> 32) as usize;
    }
    let n = n as u64;
    let mut m = u128::from(rng.next_u64()) * u128::from(n);
    if (m as u64) < n {
        let threshold = n.wrapping_neg() % n;
        while (m as u64) < threshold {
            m = u128::from(rng.next_u64()) * u128::from(n);
        }
    }
    (m >> 64) as usize
}

/// ChaCha8 keyed by (user seed, domain tag), on stream `stream`. Building
/// the key ourselves keeps the bits fully specified by this file plus
/// ChaCha8 itself; the tag keeps users of the same seed independent.
pub fn rng_for_domain(seed: u64, domain: &[u8; 8], stream: u64) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(domain);
    let mut rng = ChaCha8Rng::from_seed(key);
    rng.set_stream(stream);
    rng
}

pub(crate) fn rng_for(seed: u64, stream: u64) -> ChaCha8Rng {
    rng_for_domain(seed, b"stats\0\0\0", stream)
}
