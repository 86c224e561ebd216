//! Test data for this crate's tests and the stop rule's (`smtlab-measure`,
//! through the `testing` feature): deterministic normal draws.
use rand::RngCore;
use rand_chacha::ChaCha8Rng;

/// Standard normal draws (Box-Muller) from a seeded ChaCha8, so every
/// simulated test is deterministic.
pub fn normals(rng: &mut ChaCha8Rng, n: usize, mean: f64, sd: f64) -> Vec<f64> {
    let unit = |rng: &mut ChaCha8Rng| ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    (0..n)
        .map(|_| {
            let (u1, u2) = (unit(rng), unit(rng));
            mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        })
        .collect()
}
