//! The preload library's interface: the library itself and the environment
//! variables it reads (described in the [module documentation](super)).
//! Its own file so that the files which build, run and read the library
//! share these names without going through the module that declares them.

/// The LD_PRELOAD library, built from `preload/pin_preload.c`.
pub const PRELOAD_SO: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libsmtlab_pin.so"));

/// CPU list, in pinning order (see the module documentation).
pub const ENV_CPUS: &str = "SMTLAB_PIN_CPUS";
/// Hexadecimal skip mask.
pub const ENV_SKIP: &str = "SMTLAB_PIN_SKIP";
/// Path of the report file.
pub const ENV_REPORT: &str = "SMTLAB_PIN_REPORT";
/// Longest CPU list the library accepts.
pub const MAX_LIST: usize = 16384;
/// Created threads a skip mask can name.
pub const SKIP_BITS: u32 = 64;
