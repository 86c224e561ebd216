//! The applications by name and their parameters (`--param K=V`), checked
//! once into typed values: nothing after [`AppParams::parse`] re-checks user
//! input, so the applications never panic on a parameter.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

pub use crate::error::ParamError;

/// The names of the applications, in the order the study lists them.
pub const APPS: [&str; 3] = ["sor", "lu", "tsp"];

/// Keys that belong to the DSM, not to an application: they arrive in the
/// same `--param` map and the applications ignore them.
pub const DSM_PARAMS: &[&str] = &["loss", "per_node"];

/// One application of the study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum App {
    /// Red-black successive over-relaxation on a square grid.
    Sor,
    /// Blocked LU factorisation without pivoting (SPLASH-2 LU style).
    Lu,
    /// Travelling salesman by branch and bound over a shared job queue.
    Tsp,
}

impl App {
    /// The name used on the command line and in records.
    pub fn name(self) -> &'static str {
        match self {
            App::Sor => "sor",
            App::Lu => "lu",
            App::Tsp => "tsp",
        }
    }

    /// The parameters this application accepts, with their ranges and
    /// defaults (for `--help` and for error messages).
    pub fn params(self) -> &'static [ParamSpec] {
        match self {
            App::Sor => SOR_PARAMS,
            App::Lu => LU_PARAMS,
            App::Tsp => TSP_PARAMS,
        }
    }
}

impl fmt::Display for App {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for App {
    type Err = ParamError;

    fn from_str(s: &str) -> Result<App, ParamError> {
        match s {
            "sor" => Ok(App::Sor),
            "lu" => Ok(App::Lu),
            "tsp" => Ok(App::Tsp),
            _ => Err(ParamError::UnknownApp {
                given: s.to_string(),
            }),
        }
    }
}

/// One integer parameter: its name, default and inclusive range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    pub name: &'static str,
    pub default: u64,
    pub min: u64,
    pub max: u64,
    /// What it controls, for help text.
    pub what: &'static str,
}

/// Defaults are sized for the study: a 2-rank run on a DSM with ~30 µs
/// page fetches takes roughly 0.2 s, the sequential reference in release
/// mode well under half a second (SOR ~0.2 s, LU ~0.15-0.3 s, TSP ~0.03 s
/// with ~1700 jobs, so TSP's time on the DSM is mostly its locking).
const SOR_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "n",
        default: 512,
        min: 8,
        max: 4096,
        what: "interior grid points per side (the grid is (n+2) x (n+2))",
    },
    ParamSpec {
        name: "iterations",
        default: 20,
        min: 1,
        max: 10_000,
        what: "red-black sweeps",
    },
];

const LU_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "n",
        default: 512,
        min: 16,
        max: 4096,
        what: "matrix order (n x n)",
    },
    ParamSpec {
        name: "block",
        default: 32,
        min: 4,
        max: 512,
        what: "block order (b x b blocks; must divide n)",
    },
    ParamSpec {
        name: "seed",
        default: 1,
        min: 0,
        max: u64::MAX,
        what: "seed of the matrix",
    },
];

const TSP_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "cities",
        default: 12,
        min: 4,
        max: 16,
        what: "cities (tours start and end at city 0)",
    },
    ParamSpec {
        name: "seed",
        default: 1,
        min: 0,
        max: u64::MAX,
        what: "seed of the distance matrix",
    },
    ParamSpec {
        name: "depth",
        default: 3,
        min: 1,
        max: 5,
        what: "cities after city 0 fixed by one job of the shared queue (at most cities-2)",
    },
];

/// SOR: the grid is `(n + 2) x (n + 2)` with a fixed boundary; `iterations`
/// red-black sweeps with the over-relaxation factor [`crate::sor::OMEGA`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SorParams {
    pub n: usize,
    pub iterations: usize,
}

/// LU: an `n x n` matrix in `block x block` blocks (`block` divides `n`),
/// generated from `seed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LuParams {
    pub n: usize,
    pub block: usize,
    pub seed: u64,
}

/// TSP: `cities` cities with distances from `seed`; each job fixes the
/// `depth` cities after city 0 (`1 <= depth <= cities - 2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TspParams {
    pub cities: usize,
    pub seed: u64,
    pub depth: usize,
}

/// One application with its checked parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AppParams {
    Sor(SorParams),
    Lu(LuParams),
    Tsp(TspParams),
}

impl AppParams {
    /// Check `given` (the `--param` map) for `app`: every key must be one
    /// of the app's parameters or one of [`DSM_PARAMS`] (ignored here);
    /// absent parameters take their defaults.
    pub fn parse(app: App, given: &BTreeMap<String, String>) -> Result<AppParams, ParamError> {
        let specs = app.params();
        for key in given.keys() {
            let known = specs.iter().any(|s| s.name == key) || DSM_PARAMS.contains(&key.as_str());
            if !known {
                return Err(ParamError::Unknown {
                    app: app.name(),
                    name: key.clone(),
                    valid: valid_list(specs),
                });
            }
        }
        let get = |name: &str| -> Result<u64, ParamError> {
            let spec = specs
                .iter()
                .find(|s| s.name == name)
                .expect("every name asked for is in the app's table");
            match given.get(name) {
                None => Ok(spec.default),
                Some(v) => parse_in_range(spec, v),
            }
        };
        Ok(match app {
            App::Sor => AppParams::Sor(SorParams {
                n: get("n")? as usize,
                iterations: get("iterations")? as usize,
            }),
            App::Lu => {
                let n = get("n")? as usize;
                let block = get("block")? as usize;
                if n % block != 0 {
                    return Err(ParamError::Invalid {
                        name: "block",
                        value: block.to_string(),
                        expected: format!("must divide n={n} (e.g. {})", divisors_hint(n)),
                    });
                }
                AppParams::Lu(LuParams {
                    n,
                    block,
                    seed: get("seed")?,
                })
            }
            App::Tsp => {
                let cities = get("cities")? as usize;
                let depth = get("depth")? as usize;
                // A job must leave at least one city to search, so that a
                // job is a subtree and not a finished tour.
                let max_depth = (cities - 2).min(5);
                if depth > max_depth {
                    return Err(ParamError::Invalid {
                        name: "depth",
                        value: depth.to_string(),
                        expected: format!(
                            "expected an integer from 1 to {max_depth} with cities={cities}"
                        ),
                    });
                }
                AppParams::Tsp(TspParams {
                    cities,
                    seed: get("seed")?,
                    depth,
                })
            }
        })
    }

    /// Every parameter at its default.
    pub fn defaults(app: App) -> AppParams {
        AppParams::parse(app, &BTreeMap::new()).expect("the defaults are valid")
    }

    /// Which application these parameters are for.
    pub fn app(&self) -> App {
        match self {
            AppParams::Sor(_) => App::Sor,
            AppParams::Lu(_) => App::Lu,
            AppParams::Tsp(_) => App::Tsp,
        }
    }
}

/// `sor n=512 iterations=20`: the app and every parameter, for records.
impl fmt::Display for AppParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppParams::Sor(p) => write!(f, "sor n={} iterations={}", p.n, p.iterations),
            AppParams::Lu(p) => write!(f, "lu n={} block={} seed={}", p.n, p.block, p.seed),
            AppParams::Tsp(p) => write!(
                f,
                "tsp cities={} seed={} depth={}",
                p.cities, p.seed, p.depth
            ),
        }
    }
}

fn parse_in_range(spec: &ParamSpec, value: &str) -> Result<u64, ParamError> {
    match value.trim().parse::<u64>() {
        Ok(v) if (spec.min..=spec.max).contains(&v) => Ok(v),
        _ => Err(ParamError::Invalid {
            name: spec.name,
            value: value.to_string(),
            expected: format!("expected an integer from {} to {}", spec.min, spec.max),
        }),
    }
}

fn valid_list(specs: &[ParamSpec]) -> String {
    let own: Vec<&str> = specs.iter().map(|s| s.name).collect();
    format!(
        "{} (and the DSM's {})",
        own.join(", "),
        DSM_PARAMS.join(", ")
    )
}

/// A few block sizes that would divide `n`, to make the error actionable.
fn divisors_hint(n: usize) -> String {
    let spec = LU_PARAMS[1];
    let fits: Vec<String> = (spec.min as usize..=(spec.max as usize).min(n))
        .filter(|b| n % b == 0)
        .take(4)
        .map(|b| b.to_string())
        .collect();
    if fits.is_empty() {
        format!("no block from {} to {} does", spec.min, spec.max)
    } else {
        fits.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn err(app: App, kv: &[(&str, &str)]) -> String {
        AppParams::parse(app, &map(kv)).unwrap_err().to_string()
    }

    #[test]
    fn app_names_round_trip() {
        for name in APPS {
            let app: App = name.parse().unwrap();
            assert_eq!(app.name(), name);
        }
        let e = "fft".parse::<App>().unwrap_err().to_string();
        assert_eq!(e, "unknown DSM app `fft`; valid: sor, lu, tsp");
    }

    #[test]
    fn defaults_and_overrides() {
        let p = AppParams::parse(App::Sor, &map(&[("n", "64"), ("iterations", "5")])).unwrap();
        assert_eq!(
            p,
            AppParams::Sor(SorParams {
                n: 64,
                iterations: 5
            })
        );
        assert_eq!(p.to_string(), "sor n=64 iterations=5");
        for name in APPS {
            let app: App = name.parse().unwrap();
            assert_eq!(AppParams::defaults(app).app(), app);
        }
    }

    #[test]
    fn bad_value_names_parameter_value_and_range() {
        assert_eq!(
            err(App::Sor, &[("n", "abc")]),
            "--param n=abc: expected an integer from 8 to 4096"
        );
        assert_eq!(
            err(App::Sor, &[("iterations", "0")]),
            "--param iterations=0: expected an integer from 1 to 10000"
        );
        assert_eq!(
            err(App::Lu, &[("seed", "-1")]),
            "--param seed=-1: expected an integer from 0 to 18446744073709551615"
        );
    }

    #[test]
    fn unknown_key_lists_valid_ones() {
        assert_eq!(
            err(App::Lu, &[("size", "64")]),
            "--param size: app `lu` has no parameter `size`; valid: n, block, seed \
             (and the DSM's loss, per_node)"
        );
    }

    #[test]
    fn block_must_divide_n() {
        assert_eq!(
            err(App::Lu, &[("n", "96"), ("block", "64")]),
            "--param block=64: must divide n=96 (e.g. 4, 6, 8, 12)"
        );
    }

    #[test]
    fn cities_and_depth_ranges() {
        assert_eq!(
            err(App::Tsp, &[("cities", "17")]),
            "--param cities=17: expected an integer from 4 to 16"
        );
        assert_eq!(
            err(App::Tsp, &[("cities", "3")]),
            "--param cities=3: expected an integer from 4 to 16"
        );
        assert_eq!(
            err(App::Tsp, &[("cities", "4"), ("depth", "3")]),
            "--param depth=3: expected an integer from 1 to 2 with cities=4"
        );
    }

    #[test]
    fn dsm_keys_pass_through() {
        let p = AppParams::parse(
            App::Tsp,
            &map(&[("loss", "0.01"), ("per_node", "2"), ("cities", "9")]),
        )
        .unwrap();
        let AppParams::Tsp(t) = p else {
            panic!("tsp parsed as {p:?}")
        };
        assert_eq!(t.cities, 9);
    }

    #[test]
    fn every_error_is_one_line() {
        let cases: [(App, &[(&str, &str)]); 5] = [
            (App::Sor, &[("n", "1e9")]),
            (App::Lu, &[("block", "7")]),
            (App::Lu, &[("x", "1")]),
            (App::Tsp, &[("depth", "9")]),
            (App::Tsp, &[("seed", "")]),
        ];
        for (app, kv) in cases {
            let e = err(app, kv);
            assert!(!e.contains('\n'), "{e}");
            assert!(e.starts_with("--param "), "{e}");
        }
    }
}
