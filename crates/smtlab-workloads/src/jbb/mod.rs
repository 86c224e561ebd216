//! `jbb`: in-memory warehouse transaction processing after SPECjbb2005's
//! public description.
//!
//! **What it models.** A company with an item catalogue (20,000 items) and
//! customer master data; one warehouse per worker, each with 10 districts,
//! their customers' accounts, stock for every item, payment history, and
//! per district an order table (about 10 lines per order) and a new-order
//! table. Each worker runs its own warehouse with no think time, dealing
//! transactions from a shuffled deck of 33 cards (NewOrder 10, Payment 10,
//! CustomerReport 10, OrderStatus 1, Delivery 1, StockLevel 1). One
//! operation is one transaction; the metric is transactions per second.
//! Orders, order lines, history records and report strings are allocated
//! and freed as a Java server's objects would be (an order object and its
//! line vector per NewOrder, a history record and its string per Payment, a
//! report string per CustomerReport; the oldest orders and history records
//! are retired), so the allocator and huge pages matter — but every table
//! is capped, so memory stays bounded in any run length.
//!
//! **What is shared.** The company tables (items, customer master data and
//! the by-name index) are built once per process in `setup` and read by
//! every worker thread of that process through an `Arc`: in the thread
//! model one copy serves all warehouses; in the process model each process
//! holds its own replica, as each JVM of a multi-JVM run does. Warehouses
//! are private: each is built by its own worker thread in `worker()` (first
//! touch on that thread's NUMA node) and touched by no one else, so there
//! are no locks and no shared writes (supply is always from the home
//! warehouse; SPECjbb2005's remote-warehouse orders would need locking the
//! real benchmark avoids too).
//!
//! **How it is verified.** After the window each worker checks its own
//! warehouse: warehouse YTD = sum of district YTDs = sum of payment history
//! (live + retired) = sum of customers' YTD payments; payment counts =
//! history records; customers' balances + payments = amounts delivered;
//! per district next order id - 1 = orders created (live + retired),
//! new-order entries = undelivered orders, in order; every order has 5-15
//! lines whose delivery dates agree with its carrier; stock units and lines
//! taken = those of the orders NewOrder created, each item's stock obeys
//! the replenishment rule; transactions counted = the worker's operations.
//! `verify` fails the sample with the first broken check.

pub mod company;
mod consistency;
mod population;
mod tables;
pub mod warehouse;

use std::sync::{Arc, Mutex};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::config::JbbSettings as Settings;
use crate::error::{WorkloadError, WrongResult};
use crate::{
    param_u64, ParamSpec, Params, ProcessContext, ProcessState, TimeMetric, WorkerResult,
    WorkerSlot, WorkerState, Workload, WorkloadInfo,
};
use crate::{resolve_checked, WorkloadConfig};
use company::Company;
use tables::Config;
use warehouse::Warehouse;

pub struct Jbb;

/// What a worker's `finish` found, for `verify` (same process).
#[derive(Debug, Clone)]
struct Report {
    transactions: u64,
    digest: u64,
    check: Result<(), WrongResult>,
}

type Reports = Arc<Mutex<Vec<Option<Report>>>>;

fn worker_seed(seed: u64, worker: usize) -> u64 {
    seed ^ (worker as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn ranged(params: &Params, name: &str, lo: u64, hi: u64) -> Result<u64, WorkloadError> {
    let v = param_u64(params, name)?;
    if !(lo..=hi).contains(&v) {
        return Err(WorkloadError::param(
            name,
            v,
            format!("expected {lo}..={hi}"),
        ));
    }
    Ok(v)
}

impl Workload for Jbb {
    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            name: "jbb",
            summary: "SPECjbb2005-style warehouse transactions, one warehouse per worker, \
                      company tables shared per process",
            params: vec![
                ParamSpec {
                    name: "seed",
                    default: "1",
                    help: "seed of the company tables and (mixed with the worker number) of each warehouse",
                },
                ParamSpec {
                    name: "items",
                    default: "20000",
                    help: "items in the company catalogue (each warehouse stocks all)",
                },
                ParamSpec {
                    name: "customers",
                    default: "3000",
                    help: "customers per district (10 districts per warehouse)",
                },
                ParamSpec {
                    name: "initial_orders",
                    default: "3000",
                    help: "orders per district at load (the newest 30% undelivered)",
                },
                ParamSpec {
                    name: "max_orders",
                    default: "0",
                    help: "orders kept per district, the oldest retired beyond it \
                           (0: initial_orders, at least 1)",
                },
                ParamSpec {
                    name: "max_history",
                    default: "0",
                    help: "payment history records kept per district (0: customers)",
                },
                ParamSpec {
                    name: "corrupt",
                    default: "0",
                    help: "test-only: 1 breaks a year-to-date total, to check that wrong results fail",
                },
            ],
            operation: "one transaction from the 33-card deck (NewOrder, Payment, CustomerReport \
                        10 each; OrderStatus, Delivery, StockLevel 1 each)",
            verification: "per warehouse: YTD totals = district YTDs = payment history = customer \
                           payments; order ids, new-order entries and undelivered orders agree; \
                           stock taken = order lines created; transactions = operations",
            ..WorkloadInfo::timed(TimeMetric::throughput("tx/s"))
        }
    }

    fn setup(
        &self,
        config: &WorkloadConfig,
        ctx: &ProcessContext,
    ) -> Result<Box<dyn ProcessState>, WorkloadError> {
        let WorkloadConfig::Jbb(settings) = *config else {
            return Err(config.not_for("jbb"));
        };
        let Settings {
            seed,
            items,
            customers,
            initial_orders,
            max_orders,
            max_history,
            corrupt,
        } = settings;
        let cfg = Config {
            customers,
            initial_orders,
            max_orders,
            max_history,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Ok(Box::new(JbbProcess {
            company: Arc::new(Company::build(&mut rng, items, cfg.customers)),
            cfg,
            seed,
            corrupt,
            reports: Arc::new(Mutex::new(vec![None; ctx.threads.max(1)])),
        }))
    }

    fn parse(&self, params: &Params) -> Result<WorkloadConfig, WorkloadError> {
        let params = resolve_checked(&self.info(), params)?;
        Ok(WorkloadConfig::Jbb(Settings::parse(&params)?))
    }
}

impl Settings {
    /// The parameters (defaults filled in), range-checked.
    fn parse(params: &Params) -> Result<Settings, WorkloadError> {
        let corrupt = ranged(params, "corrupt", 0, 1)? == 1;
        let seed = param_u64(params, "seed")?;
        let items = ranged(params, "items", 1, 10_000_000)? as usize;
        let customers = ranged(params, "customers", 1, 1_000_000)? as usize;
        let initial_orders = ranged(params, "initial_orders", 0, 1_000_000)? as usize;
        let max_orders = match ranged(params, "max_orders", 0, 1_000_000)? as usize {
            0 => initial_orders.max(1),
            m if m < initial_orders => {
                return Err(WorkloadError::param(
                    "max_orders",
                    m,
                    format!("must be at least initial_orders ({initial_orders})"),
                ))
            }
            m => m,
        };
        let max_history = match ranged(params, "max_history", 0, 1_000_000)? as usize {
            0 => customers,
            m if m < customers => {
                return Err(WorkloadError::param(
                    "max_history",
                    m,
                    format!(
                        "must be at least customers ({customers}), who each start with one \
                         payment"
                    ),
                ))
            }
            m => m,
        };
        Ok(Settings {
            seed,
            items,
            customers,
            initial_orders,
            max_orders,
            max_history,
            corrupt,
        })
    }
}

struct JbbProcess {
    company: Arc<Company>,
    cfg: Config,
    seed: u64,
    corrupt: bool,
    reports: Reports,
}

impl ProcessState for JbbProcess {
    fn worker(&self, slot: WorkerSlot) -> Result<Box<dyn WorkerState>, WorkloadError> {
        let rng = ChaCha8Rng::seed_from_u64(worker_seed(self.seed, slot.worker));
        Ok(Box::new(JbbWorker {
            wh: Box::new(Warehouse::build(self.company.clone(), self.cfg, rng)),
            thread: slot.thread,
            corrupt: self.corrupt,
            reports: self.reports.clone(),
        }))
    }

    fn verify(&self, results: &[(WorkerSlot, WorkerResult)]) -> Result<(), WrongResult> {
        let reports = self.reports.lock().map_err(|_| "jbb: a worker panicked")?;
        for (slot, r) in results {
            let w = slot.worker;
            let rep = reports
                .get(slot.thread)
                .and_then(|r| r.as_ref())
                .ok_or_else(|| format!("jbb warehouse {w}: no report from its worker"))?;
            rep.check
                .as_ref()
                .map_err(|e| format!("jbb warehouse {w}: {e}"))?;
            if rep.transactions != r.ops || rep.digest != r.checksum {
                return Err(format!(
                    "jbb warehouse {w}: worker reported {} ops / digest {:#x}, warehouse holds \
                     {} transactions / digest {:#x}",
                    r.ops, r.checksum, rep.transactions, rep.digest
                )
                .into());
            }
            if let Some(q) = slot.quota {
                if r.ops != q {
                    return Err(format!(
                        "jbb warehouse {w}: did {} transactions, its quota was {q}",
                        r.ops
                    )
                    .into());
                }
            }
        }
        Ok(())
    }
}

struct JbbWorker {
    wh: Box<Warehouse>,
    thread: usize,
    corrupt: bool,
    reports: Reports,
}

impl WorkerState for JbbWorker {
    fn step(&mut self, max_ops: u64) -> u64 {
        for _ in 0..max_ops {
            self.wh.run_one();
        }
        max_ops
    }

    fn finish(&mut self) -> WorkerResult {
        if self.corrupt {
            // A lost cent: the kind of bug the YTD checks exist to catch.
            self.wh.districts[0].ytd += 1;
        }
        let report = Report {
            transactions: self.wh.transactions,
            digest: self.wh.digest(),
            check: self.wh.check(),
        };
        let result = WorkerResult {
            ops: report.transactions,
            checksum: report.digest,
        };
        if let Ok(mut r) = self.reports.lock() {
            if let Some(slot) = r.get_mut(self.thread) {
                *slot = Some(report);
            }
        }
        result
    }
}

#[cfg(test)]
mod tests;
