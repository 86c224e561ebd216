use super::warehouse::{Tx, DECK_MIX, DECK_SIZE, TX_KINDS};
use super::*;
use crate::error::WrongResult;
use crate::testing::{self, ctx, slot};

fn params(kv: &[(&str, &str)]) -> Params {
    testing::params(&Jbb.info(), kv).unwrap()
}

fn small() -> Params {
    params(&[
        ("items", "2000"),
        ("customers", "120"),
        ("initial_orders", "150"),
    ])
}

fn warehouse(p: &Params, worker: usize) -> Warehouse {
    let seed = param_u64(p, "seed").unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let customers = param_u64(p, "customers").unwrap() as usize;
    let initial_orders = param_u64(p, "initial_orders").unwrap() as usize;
    let company = Arc::new(Company::build(
        &mut rng,
        param_u64(p, "items").unwrap() as usize,
        customers,
    ));
    let max_orders = match param_u64(p, "max_orders").unwrap() as usize {
        0 => initial_orders.max(1),
        m => m,
    };
    let cfg = Config {
        customers,
        initial_orders,
        max_orders,
        max_history: customers,
    };
    Warehouse::build(
        company,
        cfg,
        ChaCha8Rng::seed_from_u64(worker_seed(seed, worker)),
    )
}

#[test]
fn deck_has_33_cards_in_the_benchmark_mix() {
    assert_eq!(DECK_SIZE, 33);
    assert_eq!(DECK_MIX.iter().map(|m| m.1).sum::<usize>(), 33);
    let mut deck = warehouse::Deck::new();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let dealt: Vec<Tx> = (0..33 * 4).map(|_| deck.deal(&mut rng)).collect();
    for hand in dealt.chunks(33) {
        for (tx, n) in DECK_MIX {
            assert_eq!(hand.iter().filter(|&&t| t == tx).count(), n, "{tx:?}");
        }
    }
    // Shuffled, and differently each time round.
    assert_ne!(dealt[..33], dealt[33..66]);
    let want = [10, 10, 1, 1, 1, 10];
    for (tx, n) in TX_KINDS.iter().zip(want) {
        assert_eq!(DECK_MIX.iter().find(|m| m.0 == *tx).unwrap().1, n);
    }
}

#[test]
fn warehouse_runs_transactions_and_all_checks_pass() {
    let mut wh = warehouse(&small(), 0);
    wh.check().unwrap();
    for _ in 0..33_000 {
        wh.run_one();
    }
    wh.check().unwrap();
    assert_eq!(wh.transactions, 33_000);
    assert_eq!(
        wh.counts.by_kind,
        [10_000, 10_000, 1_000, 1_000, 1_000, 10_000]
    );
}

#[test]
fn default_sizes_build_and_check() {
    let p = params(&[]);
    let mut wh = warehouse(&p, 0);
    assert_eq!(wh.company.items.len(), 20_000);
    assert_eq!(wh.districts.len(), 10);
    assert_eq!(wh.districts[0].customers.len(), 3000);
    assert_eq!(wh.districts[0].orders.len(), 3000);
    assert_eq!(wh.districts[0].new_orders.len(), 900);
    for _ in 0..3300 {
        wh.run_one();
    }
    wh.check().unwrap();
    let mb = wh.approx_bytes() as f64 / 1e6;
    assert!((20.0..80.0).contains(&mb), "{mb} MB");
}

/// Totals that transactions change, to see exactly what each one touched.
#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    ytd: i64,
    district_ytd: Vec<i64>,
    next_ids: Vec<u32>,
    new_orders: Vec<usize>,
    history: Vec<usize>,
    balances: Vec<i64>,
    stock_ytd: u64,
    delivered: Vec<u64>,
}

fn snap(wh: &Warehouse) -> Snapshot {
    let d = &wh.districts;
    Snapshot {
        ytd: wh.ytd,
        district_ytd: d.iter().map(|d| d.ytd).collect(),
        next_ids: d.iter().map(|d| d.next_order_id).collect(),
        new_orders: d.iter().map(|d| d.new_orders.len()).collect(),
        history: d
            .iter()
            .map(|d| d.history.len() + d.retired_history as usize)
            .collect(),
        balances: d
            .iter()
            .map(|d| d.customers.iter().map(|c| c.balance).sum())
            .collect(),
        stock_ytd: wh.stock.iter().map(|s| s.ytd).sum(),
        delivered: d.iter().map(|d| d.deliveries).collect(),
    }
}

fn changed<T: PartialEq>(a: &[T], b: &[T]) -> Vec<usize> {
    (0..a.len()).filter(|&i| a[i] != b[i]).collect()
}

#[test]
fn new_order_creates_one_order_with_lines_and_a_new_order_entry() {
    let mut wh = warehouse(&small(), 0);
    for _ in 0..50 {
        let before = snap(&wh);
        wh.run(Tx::NewOrder);
        let after = snap(&wh);
        let ds = changed(&before.next_ids, &after.next_ids);
        assert_eq!(ds.len(), 1);
        let d = ds[0];
        assert_eq!(after.next_ids[d], before.next_ids[d] + 1);
        assert_eq!(after.new_orders[d], before.new_orders[d] + 1);
        let dist = &wh.districts[d];
        let o = dist.orders.back().unwrap();
        assert_eq!(o.id, before.next_ids[d]);
        assert_eq!(o.carrier, 0);
        assert!((5..=15).contains(&o.lines.len()));
        assert_eq!(*dist.new_orders.back().unwrap(), o.id);
        assert_eq!(dist.customers[o.customer as usize].last_order, o.id);
        let qty: u64 = o.lines.iter().map(|l| u64::from(l.quantity)).sum();
        assert_eq!(after.stock_ytd, before.stock_ytd + qty);
        assert_eq!(dist.orders.len(), 150, "the oldest is retired at the cap");
        // Money does not move.
        assert_eq!((before.ytd, &before.balances), (after.ytd, &after.balances));
    }
    wh.check().unwrap();
}

#[test]
fn payment_updates_every_ytd_and_appends_history() {
    let mut wh = warehouse(&small(), 0);
    for _ in 0..50 {
        let before = snap(&wh);
        wh.run(Tx::Payment);
        let after = snap(&wh);
        let ds = changed(&before.district_ytd, &after.district_ytd);
        assert_eq!(ds.len(), 1);
        let d = ds[0];
        let h = wh.districts[d].history.back().unwrap();
        let amount = h.amount;
        assert!((100..=500_000).contains(&amount));
        assert_eq!(after.ytd, before.ytd + amount);
        assert_eq!(after.district_ytd[d], before.district_ytd[d] + amount);
        assert_eq!(after.balances[d], before.balances[d] - amount);
        assert_eq!(after.history[d], before.history[d] + 1);
        assert_eq!(
            changed(&before.history, &after.history),
            vec![d],
            "one history record, in that district"
        );
        assert_eq!(before.next_ids, after.next_ids);
        assert_eq!(before.stock_ytd, after.stock_ytd);
    }
    wh.check().unwrap();
}

#[test]
fn delivery_removes_the_oldest_new_order_of_every_district() {
    let mut wh = warehouse(&small(), 0);
    let oldest: Vec<u32> = wh.districts.iter().map(|d| d.new_orders[0]).collect();
    let before = snap(&wh);
    wh.run(Tx::Delivery);
    let after = snap(&wh);
    for (d, dist) in wh.districts.iter().enumerate() {
        assert_eq!(after.new_orders[d], before.new_orders[d] - 1);
        assert!(dist.new_orders.iter().all(|&id| id != oldest[d]));
        let o = dist.orders.iter().find(|o| o.id == oldest[d]).unwrap();
        assert_ne!(o.carrier, 0);
        assert!(o.lines.iter().all(|l| l.delivery_date != 0));
        let sum: i64 = o.lines.iter().map(|l| l.amount).sum();
        assert_eq!(after.balances[d], before.balances[d] + sum);
        assert_eq!(after.delivered[d], before.delivered[d] + 1);
    }
    assert_eq!(before.ytd, after.ytd);
    assert_eq!(before.next_ids, after.next_ids);
    wh.check().unwrap();
}

#[test]
fn read_only_transactions_change_no_table() {
    let mut wh = warehouse(&small(), 0);
    for _ in 0..200 {
        wh.run_one();
    }
    for tx in [Tx::OrderStatus, Tx::StockLevel, Tx::CustomerReport] {
        let before = snap(&wh);
        let out = wh.out;
        for _ in 0..20 {
            wh.run(tx);
        }
        assert_eq!(before, snap(&wh), "{tx:?}");
        assert_ne!(out, wh.out, "{tx:?} produced output");
    }
    wh.check().unwrap();
}

#[test]
fn memory_stays_bounded_over_many_transactions() {
    let mut wh = warehouse(&small(), 0);
    for _ in 0..30_000 {
        wh.run_one();
    }
    let early = wh.approx_bytes();
    for _ in 0..300_000 {
        wh.run_one();
    }
    let late = wh.approx_bytes();
    assert!(
        (late as f64) < early as f64 * 1.1,
        "grew from {early} to {late} bytes"
    );
    for d in &wh.districts {
        assert!(d.orders.len() <= 150);
        assert!(d.history.len() <= 120);
        assert!(d.retired_orders > 0 && d.retired_history > 0);
    }
    wh.check().unwrap();
}

#[test]
fn new_orders_outrunning_delivery_are_delivered_on_retirement() {
    let mut wh = warehouse(&small(), 0);
    for _ in 0..5000 {
        wh.run(Tx::NewOrder);
    }
    assert!(wh.counts.forced_deliveries > 0);
    for d in &wh.districts {
        assert!(d.orders.len() <= 150);
        assert!(d.new_orders.len() <= 150);
    }
    wh.check().unwrap();
}

#[test]
fn checks_catch_broken_tables() {
    let p = small();
    let mut wh = warehouse(&p, 0);
    for _ in 0..2000 {
        wh.run_one();
    }
    wh.check().unwrap();
    wh.ytd += 5;
    assert!(wh.check().unwrap_err().contains("warehouse YTD"));
    wh.ytd -= 5;
    let id = wh.districts[3].new_orders.pop_back().unwrap();
    assert!(wh.check().unwrap_err().contains("new-order entries"));
    wh.districts[3].new_orders.push_back(id);
    wh.stock[7].quantity += 1;
    assert!(wh.check().unwrap_err().contains("item 8"));
    wh.stock[7].quantity -= 1;
    wh.districts[2].next_order_id += 1;
    assert!(wh.check().unwrap_err().contains("next order id"));
}

fn run_workers(p: &Params, threads: usize, txs: u64) -> Result<(), WrongResult> {
    let state: Arc<dyn ProcessState> =
        Arc::from(Jbb.setup(&Jbb.parse(p).unwrap(), &ctx(threads)).unwrap());
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let state = state.clone();
            std::thread::spawn(move || {
                let s = slot(t, threads);
                let mut w = state.worker(s).unwrap();
                let mut done = 0;
                while done < txs {
                    done += w.step((txs - done).min(64));
                }
                (s, w.finish())
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for (_, r) in &results {
        assert_eq!(r.ops, txs);
    }
    state.verify(&results)
}

#[test]
fn two_threads_sharing_one_process_state_verify() {
    run_workers(&small(), 2, 20_000).unwrap();
}

#[test]
fn corrupt_fails_verification_with_a_reason() {
    let mut p = small();
    p.insert("corrupt".into(), "1".into());
    let e = run_workers(&p, 2, 1000).unwrap_err();
    assert!(e.contains("jbb warehouse 0") && e.contains("YTD"), "{e}");
}

#[test]
fn verify_rejects_mismatched_results() {
    let p = small();
    let state = Jbb.setup(&Jbb.parse(&p).unwrap(), &ctx(1)).unwrap();
    let s = slot(0, 1);
    let mut w = state.worker(s).unwrap();
    w.step(100);
    let r = w.finish();
    assert!(state.verify(&[(s, r.clone())]).is_ok());
    let bad = WorkerResult { ops: 99, ..r };
    assert!(state.verify(&[(s, bad)]).unwrap_err().contains("99 ops"));
    let quota = WorkerSlot {
        quota: Some(101),
        ..s
    };
    assert!(state
        .verify(&[(quota, r)])
        .unwrap_err()
        .contains("quota was 101"));
}

#[test]
fn same_seed_same_result() {
    let p = small();
    let (mut a, mut b) = (warehouse(&p, 1), warehouse(&p, 1));
    for _ in 0..5000 {
        a.run_one();
        b.run_one();
    }
    assert_eq!(a.digest(), b.digest());
    let mut c = warehouse(&p, 2);
    for _ in 0..5000 {
        c.run_one();
    }
    assert_ne!(a.digest(), c.digest());
}

#[test]
fn bad_params_name_the_parameter() {
    for (k, v) in [
        ("customers", "0"),
        ("items", "x"),
        ("corrupt", "2"),
        ("max_orders", "10"),
        ("max_history", "5"),
    ] {
        let e = testing::config(&Jbb, &[(k, v)])
            .err()
            .unwrap_or_else(|| panic!("{k}={v} accepted"))
            .to_string();
        assert!(e.contains(&format!("--param {k}")), "{k}={v}: {e}");
    }
    assert!(testing::params(&Jbb.info(), &[("warehouses", "2")])
        .unwrap_err()
        .to_string()
        .contains("warehouses"));
}

/// The seeded load and run, pinned: the warehouse's state after loading
/// and after 3000 transactions is what it was when the load and the
/// checks were one function each (the draws from the seed in the same
/// order), and every check still passes.
#[test]
fn a_seeded_warehouse_loads_and_runs_to_a_pinned_digest() {
    let p = small();
    let mut wh = warehouse(&p, 3);
    wh.check().unwrap();
    let loaded = wh.digest();
    for _ in 0..3000 {
        wh.run_one();
    }
    wh.check().unwrap();
    assert_eq!((loaded, wh.digest()), (LOADED_DIGEST, RUN_DIGEST));
}

const LOADED_DIGEST: u64 = 7173232282665824381;
const RUN_DIGEST: u64 = 5950608381870608689;

/// Every group of checks still names what it found: a district's
/// accounts, its orders, the stock, the transaction count.
#[test]
fn each_check_names_its_table() {
    let p = small();
    let mut wh = warehouse(&p, 0);
    for _ in 0..2000 {
        wh.run_one();
    }
    wh.check().unwrap();
    wh.districts[4].customers[0].delivery_cnt += 1;
    assert_eq!(
        wh.check().unwrap_err().to_string(),
        format!(
            "district 5: customers' delivery count {} != deliveries {}",
            wh.districts[4].deliveries + 1,
            wh.districts[4].deliveries
        )
    );
    wh.districts[4].customers[0].delivery_cnt -= 1;
    let cap = wh.cfg.max_orders;
    wh.cfg.max_orders = 0;
    assert!(wh
        .check()
        .unwrap_err()
        .to_string()
        .ends_with("orders held, more than the cap 0"));
    wh.cfg.max_orders = cap;
    wh.transactions += 1;
    assert!(wh.check().unwrap_err().to_string().ends_with("by kind"));
}
