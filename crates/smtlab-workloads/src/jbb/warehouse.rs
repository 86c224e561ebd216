//! One warehouse: its districts, customers' mutable state, stock, orders,
//! new orders and payment history; the six transaction types; and the
//! consistency checks run after the measured window.
//!
//! A warehouse belongs to exactly one worker thread, which builds it (first
//! touch on its own NUMA node) and is the only one to touch it: no locks.
//! The company tables it reads are shared and never written.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::company::{
    fill_alpha, last_name, nurand, Company, DISTRICTS, NURAND_C_ID, NURAND_C_ITEM, NURAND_C_LAST,
};
use crate::error::WrongResult;

/// Transactions, in SPECjbb2005's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tx {
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
    CustomerReport,
}

pub const TX_KINDS: [Tx; 6] = [
    Tx::NewOrder,
    Tx::Payment,
    Tx::OrderStatus,
    Tx::Delivery,
    Tx::StockLevel,
    Tx::CustomerReport,
];

/// SPECjbb2005's deck: how many of the 33 cards each transaction gets.
pub const DECK_MIX: [(Tx, usize); 6] = [
    (Tx::NewOrder, 10),
    (Tx::Payment, 10),
    (Tx::OrderStatus, 1),
    (Tx::Delivery, 1),
    (Tx::StockLevel, 1),
    (Tx::CustomerReport, 10),
];
pub const DECK_SIZE: usize = 33;

/// The shuffled deck a worker deals its transactions from; reshuffled when
/// used up, so every 33 transactions have exactly the benchmark's mix.
pub struct Deck {
    pub cards: [Tx; DECK_SIZE],
    next: usize,
}

impl Deck {
    pub fn new() -> Deck {
        let mut cards = [Tx::NewOrder; DECK_SIZE];
        let mut i = 0;
        for (tx, n) in DECK_MIX {
            for _ in 0..n {
                cards[i] = tx;
                i += 1;
            }
        }
        assert_eq!(i, DECK_SIZE);
        Deck {
            cards,
            next: DECK_SIZE,
        }
    }

    pub fn deal(&mut self, rng: &mut ChaCha8Rng) -> Tx {
        if self.next == DECK_SIZE {
            self.cards.shuffle(rng);
            self.next = 0;
        }
        let t = self.cards[self.next];
        self.next += 1;
        t
    }
}

impl Default for Deck {
    fn default() -> Self {
        Deck::new()
    }
}

/// Sizes of one warehouse (from the workload's parameters).
#[derive(Debug, Clone, Copy)]
pub struct Config {
    pub customers: usize,
    pub initial_orders: usize,
    /// Orders kept per district: the oldest beyond this are retired.
    pub max_orders: usize,
    /// Payment history records kept per district.
    pub max_history: usize,
}

/// Stock of one item in this warehouse: the counters every NewOrder and
/// StockLevel updates or reads, kept apart from the descriptive text (a
/// column split, as a database would) so the hot table is 24 bytes an item
/// and one random stock access costs one cache line, not two.
pub struct Stock {
    pub quantity: i32,
    /// The quantity at load time, to check the replenishment rule.
    pub initial: i32,
    pub ytd: u64,
    pub order_cnt: u32,
    pub remote_cnt: u32,
}

/// The descriptive part of an item's stock (per-district text, data):
/// loaded, and cold afterwards. An order line's district info is this
/// item's text for the order's district: in Java the line holds a reference
/// to the stock's string, not a copy of its characters, so NewOrder does
/// not read the text either.
pub struct StockInfo {
    pub dist_info: [[u8; 24]; DISTRICTS],
    pub data: [u8; 50],
}

/// How many recent payments and orders a customer remembers, for
/// CustomerReport (SPECjbb2005 reports the last five of each).
pub const RECENT: usize = 5;

/// The mutable part of a customer (the master data is the company's).
pub struct Customer {
    pub balance: i64,
    pub ytd_payment: i64,
    pub payment_cnt: u32,
    pub delivery_cnt: u32,
    /// Id of the customer's latest order (0: none).
    pub last_order: u32,
    /// Bad-credit customers get each payment prepended here (at most 500
    /// bytes), a fresh string each time as Java would allocate.
    pub data: String,
    pub recent_payments: [(u64, i64); RECENT],
    pub recent_orders: [u32; RECENT],
    pub recent_next: u8,
    pub orders_next: u8,
}

pub struct OrderLine {
    pub item: u32,
    pub quantity: u32,
    pub amount: i64,
    /// 0 until delivered.
    pub delivery_date: u64,
}

/// An order: one heap object plus its own vector of lines, allocated by
/// NewOrder and freed when retired, as a Java server's would be.
pub struct Order {
    pub id: u32,
    pub customer: u32,
    pub entry_date: u64,
    /// 0 until delivered, then 1..=10.
    pub carrier: u8,
    pub total: i64,
    /// Units over all lines, kept so that retiring the order need not walk
    /// its (by then cold) lines; checked against them at the end.
    pub units: u32,
    pub lines: Vec<OrderLine>,
}

pub struct History {
    pub customer: u32,
    pub date: u64,
    pub amount: i64,
    pub data: String,
}

pub struct District {
    pub name: String,
    /// Tax in 1/10000.
    pub tax: u32,
    pub ytd: i64,
    pub next_order_id: u32,
    pub customers: Vec<Customer>,
    /// Live orders, ids consecutive from the front.
    pub orders: VecDeque<Box<Order>>,
    /// Ids of undelivered orders, oldest first.
    pub new_orders: VecDeque<u32>,
    pub history: VecDeque<History>,
    // Totals of what has been retired, so the checks still balance.
    pub retired_orders: u64,
    pub retired_history: u64,
    pub retired_history_amount: i64,
    /// Deliveries made and the amounts they added to customer balances.
    pub deliveries: u64,
    pub delivered_amount: i64,
}

impl District {
    fn first_order_id(&self) -> u32 {
        self.orders.front().map_or(self.next_order_id, |o| o.id)
    }

    fn order(&self, id: u32) -> Option<&Order> {
        let first = self.first_order_id();
        if id < first {
            return None;
        }
        self.orders.get((id - first) as usize).map(|o| &**o)
    }
}

/// Counts of work done, for the checks and the tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub by_kind: [u64; 6],
    /// NewOrder lines and their quantities whose orders were retired.
    pub retired_new_lines: u64,
    pub retired_new_qty: u64,
    /// Old undelivered orders delivered on retirement (only if NewOrder
    /// outruns Delivery in one district for long).
    pub forced_deliveries: u64,
}

pub struct Warehouse {
    pub company: Arc<Company>,
    pub cfg: Config,
    pub name: String,
    pub tax: u32,
    pub ytd: i64,
    pub districts: Vec<District>,
    pub stock: Vec<Stock>,
    pub stock_info: Vec<StockInfo>,
    pub rng: ChaCha8Rng,
    pub deck: Deck,
    /// Logical clock: the dates of orders, deliveries and payments.
    pub clock: u64,
    pub transactions: u64,
    pub counts: Counts,
    /// Fold of every transaction's output, so none can be optimised away.
    pub out: u64,
}

fn mix(h: u64, v: u64) -> u64 {
    (h ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29)
}

fn random_string(rng: &mut ChaCha8Rng, lo: usize, hi: usize) -> String {
    let mut b = vec![0u8; rng.random_range(lo..=hi)];
    fill_alpha(rng, &mut b);
    String::from_utf8(b).expect("ASCII")
}

/// The stock of `items` items at load: a random quantity of each.
fn load_stock(items: usize, rng: &mut ChaCha8Rng) -> Vec<Stock> {
    (0..items)
        .map(|_| {
            let q = rng.random_range(10..=100);
            Stock {
                quantity: q,
                initial: q,
                ytd: 0,
                order_cnt: 0,
                remote_cnt: 0,
            }
        })
        .collect()
}

/// The stock information of `items` items at load: random text.
fn load_stock_info(items: usize, rng: &mut ChaCha8Rng) -> Vec<StockInfo> {
    (0..items)
        .map(|_| {
            let mut s = StockInfo {
                dist_info: [[0; 24]; DISTRICTS],
                data: [0; 50],
            };
            for d in &mut s.dist_info {
                fill_alpha(rng, d);
            }
            fill_alpha(rng, &mut s.data);
            s
        })
        .collect()
}

/// One district at load: its customers, each with one payment in the
/// history, and `initial_orders` orders (of `items` items) of which the
/// newest 30% are undelivered.
fn load_district(cfg: &Config, items: u32, rng: &mut ChaCha8Rng) -> District {
    let mut customers: Vec<Customer> = (0..cfg.customers)
        .map(|_| Customer {
            balance: -INITIAL_PAYMENT,
            ytd_payment: INITIAL_PAYMENT,
            payment_cnt: 1,
            delivery_cnt: 0,
            last_order: 0,
            data: random_string(rng, 300, 500),
            recent_payments: [(0, 0); RECENT],
            recent_orders: [0; RECENT],
            recent_next: 0,
            orders_next: 0,
        })
        .collect();
    let history = (0..cfg.customers)
        .map(|c| History {
            customer: c as u32,
            date: 0,
            amount: INITIAL_PAYMENT,
            data: random_string(rng, 12, 24),
        })
        .collect();
    let (orders, new_orders) = load_orders(cfg, items, &mut customers, rng);
    District {
        name: random_string(rng, 6, 10),
        tax: rng.random_range(0..=2000),
        ytd: INITIAL_PAYMENT * cfg.customers as i64,
        next_order_id: cfg.initial_orders as u32 + 1,
        customers,
        orders,
        new_orders,
        history,
        retired_orders: 0,
        retired_history: 0,
        retired_history_amount: 0,
        deliveries: 0,
        delivered_amount: 0,
    }
}

/// A district's `initial_orders` orders at load, each by a customer in a
/// random order (as TPC-C loads), noted in that customer's recent orders;
/// the newest 30% undelivered, their ids also in the new-order queue.
fn load_orders(
    cfg: &Config,
    items: u32,
    customers: &mut [Customer],
    rng: &mut ChaCha8Rng,
) -> (VecDeque<Box<Order>>, VecDeque<u32>) {
    let undelivered_from = cfg.initial_orders - cfg.initial_orders * 3 / 10;
    // Each customer places orders in a random order, as TPC-C loads.
    let mut who: Vec<u32> = (0..cfg.customers as u32).collect();
    who.shuffle(rng);
    let mut orders = VecDeque::with_capacity(cfg.max_orders + 1);
    let mut new_orders = VecDeque::with_capacity(cfg.max_orders + 1);
    for i in 0..cfg.initial_orders {
        let id = i as u32 + 1;
        let delivered = i < undelivered_from;
        let n = rng.random_range(5..=15);
        let lines = (0..n)
            .map(|_| OrderLine {
                item: rng.random_range(0..items),
                quantity: 5,
                amount: if delivered {
                    0
                } else {
                    rng.random_range(1..=999_999)
                },
                delivery_date: u64::from(delivered),
            })
            .collect();
        let customer = who[i % who.len()];
        let c = &mut customers[customer as usize];
        c.last_order = id;
        c.recent_orders[c.orders_next as usize] = id;
        c.orders_next = (c.orders_next + 1) % RECENT as u8;
        orders.push_back(Box::new(Order {
            id,
            customer,
            entry_date: 0,
            carrier: if delivered {
                rng.random_range(1..=10)
            } else {
                0
            },
            total: 0,
            units: 5 * n,
            lines,
        }));
        if !delivered {
            new_orders.push_back(id);
        }
    }
    (orders, new_orders)
}

/// District `d1`'s money: its YTD equals its payment history and its
/// customers' payments; payment and delivery counts agree; balances plus
/// payments equal what was delivered.
fn check_district_accounts(d1: usize, dist: &District) -> Result<(), WrongResult> {
    let hist: i64 =
        dist.history.iter().map(|h| h.amount).sum::<i64>() + dist.retired_history_amount;
    if dist.ytd != hist {
        return Err(format!(
            "district {d1}: YTD {} != sum of payment history {hist}",
            dist.ytd
        )
        .into());
    }
    let paid: i64 = dist.customers.iter().map(|c| c.ytd_payment).sum();
    if paid != dist.ytd {
        return Err(format!(
            "district {d1}: customers' YTD payments {paid} != district YTD {}",
            dist.ytd
        )
        .into());
    }
    let payments: u64 = dist
        .customers
        .iter()
        .map(|c| u64::from(c.payment_cnt))
        .sum();
    let records = dist.history.len() as u64 + dist.retired_history;
    if payments != records {
        return Err(format!(
            "district {d1}: customers' payment count {payments} != history records {records}"
        )
        .into());
    }
    let bal: i64 = dist
        .customers
        .iter()
        .map(|c| c.balance + c.ytd_payment)
        .sum();
    if bal != dist.delivered_amount {
        return Err(format!(
            "district {d1}: balances + payments {bal} != amount delivered {}",
            dist.delivered_amount
        )
        .into());
    }
    let dcnt: u64 = dist
        .customers
        .iter()
        .map(|c| u64::from(c.delivery_cnt))
        .sum();
    if dcnt != dist.deliveries {
        return Err(format!(
            "district {d1}: customers' delivery count {dcnt} != deliveries {}",
            dist.deliveries
        )
        .into());
    }
    Ok(())
}

/// The initial payment every customer has made, as TPC-C loads (cents).
const INITIAL_PAYMENT: i64 = 1000;

impl Warehouse {
    /// Load a warehouse as the benchmark does: stock for every item, every
    /// customer with one payment in the history, `initial_orders` orders
    /// per district of which the newest 30% are undelivered.
    pub fn build(company: Arc<Company>, cfg: Config, mut rng: ChaCha8Rng) -> Warehouse {
        // The order of the draws from `rng` is the load's: stock, stock
        // information, each district, then the warehouse's own fields.
        let stock = load_stock(company.items.len(), &mut rng);
        let stock_info = load_stock_info(company.items.len(), &mut rng);
        let items = company.items.len() as u32;
        let districts: Vec<District> = (0..DISTRICTS)
            .map(|_| load_district(&cfg, items, &mut rng))
            .collect();
        let ytd = districts.iter().map(|d| d.ytd).sum();
        Warehouse {
            company,
            cfg,
            name: random_string(&mut rng, 6, 10),
            tax: rng.random_range(0..=2000),
            ytd,
            districts,
            stock,
            stock_info,
            rng,
            deck: Deck::new(),
            clock: 1,
            transactions: 0,
            counts: Counts::default(),
            out: 0,
        }
    }

    /// Deal the next card and run that transaction.
    pub fn run_one(&mut self) {
        let tx = self.deck.deal(&mut self.rng);
        self.run(tx);
    }

    pub fn run(&mut self, tx: Tx) {
        self.clock += 1;
        let v = match tx {
            Tx::NewOrder => self.new_order(),
            Tx::Payment => self.payment(),
            Tx::OrderStatus => self.order_status(),
            Tx::Delivery => self.delivery(),
            Tx::StockLevel => self.stock_level(),
            Tx::CustomerReport => self.customer_report(),
        };
        self.out = mix(self.out, v);
        self.counts.by_kind[tx as usize] += 1;
        self.transactions += 1;
    }

    fn pick_district(&mut self) -> usize {
        self.rng.random_range(0..DISTRICTS)
    }

    fn pick_customer_by_id(&mut self) -> usize {
        nurand(
            &mut self.rng,
            1023,
            NURAND_C_ID,
            1,
            self.cfg.customers as u64,
        ) as usize
            - 1
    }

    /// 60% by last name, 40% by id, as TPC-C's Payment and OrderStatus.
    fn pick_customer(&mut self, d: usize) -> usize {
        if self.rng.random_range(0..100) < 60 {
            let last = nurand(&mut self.rng, 255, NURAND_C_LAST, 0, 999) as u16;
            if let Some(c) = self.company.find_by_name(d, last) {
                return c;
            }
        }
        self.pick_customer_by_id()
    }

    /// NewOrder: 5-15 lines of (mostly hot) items, each taking stock; a new
    /// order object and a new-order entry; the oldest order retired when the
    /// district holds more than `max_orders`.
    pub fn new_order(&mut self) -> u64 {
        let d = self.pick_district();
        let c = self.pick_customer_by_id();
        let n = self.rng.random_range(5..=15);
        let items = self.company.items.len() as u64;
        let mut lines = Vec::with_capacity(n);
        let mut sum = 0i64;
        let mut units = 0;
        for _ in 0..n {
            let item = nurand(&mut self.rng, 8191, NURAND_C_ITEM, 1, items) as usize - 1;
            let quantity = self.rng.random_range(1..=10u32);
            let price = self.company.items[item].price;
            let s = &mut self.stock[item];
            // TPC-C's replenishment: stock never falls below 10.
            if s.quantity >= quantity as i32 + 10 {
                s.quantity -= quantity as i32;
            } else {
                s.quantity = s.quantity - quantity as i32 + 91;
            }
            s.ytd += u64::from(quantity);
            s.order_cnt += 1;
            let amount = i64::from(quantity) * i64::from(price);
            sum += amount;
            units += quantity;
            lines.push(OrderLine {
                item: item as u32,
                quantity,
                amount,
                delivery_date: 0,
            });
        }
        let master = self.company.customer(d, c);
        let total = sum * i64::from(10_000 - master.discount) / 10_000
            * i64::from(10_000 + self.tax + self.districts[d].tax)
            / 10_000;
        let dist = &mut self.districts[d];
        let id = dist.next_order_id;
        dist.next_order_id += 1;
        dist.orders.push_back(Box::new(Order {
            id,
            customer: c as u32,
            entry_date: self.clock,
            carrier: 0,
            total,
            units,
            lines,
        }));
        dist.new_orders.push_back(id);
        let cu = &mut dist.customers[c];
        cu.last_order = id;
        cu.recent_orders[cu.orders_next as usize] = id;
        cu.orders_next = (cu.orders_next + 1) % RECENT as u8;
        self.retire_orders(d);
        mix(u64::from(id), total as u64)
    }

    /// Free the oldest orders beyond the cap, keeping totals of what they
    /// held. An undelivered one is delivered first, so counts stay exact.
    fn retire_orders(&mut self, d: usize) {
        while self.districts[d].orders.len() > self.cfg.max_orders {
            if self.districts[d].orders[0].carrier == 0 {
                self.deliver_oldest(d, 1);
                self.counts.forced_deliveries += 1;
            }
            let dist = &mut self.districts[d];
            let o = dist.orders.pop_front().expect("over the cap");
            dist.retired_orders += 1;
            if o.id as usize > self.cfg.initial_orders {
                self.counts.retired_new_lines += o.lines.len() as u64;
                self.counts.retired_new_qty += u64::from(o.units);
            }
        }
    }

    /// Payment: the amount goes to the warehouse's, the district's and the
    /// customer's year-to-date totals, and a history record is appended.
    pub fn payment(&mut self) -> u64 {
        let d = self.pick_district();
        let c = self.pick_customer(d);
        let amount: i64 = self.rng.random_range(100..=500_000);
        self.ytd += amount;
        let clock = self.clock;
        let master = self.company.customer(d, c);
        let dist = &mut self.districts[d];
        dist.ytd += amount;
        let cu = &mut dist.customers[c];
        cu.balance -= amount;
        cu.ytd_payment += amount;
        cu.payment_cnt += 1;
        cu.recent_payments[cu.recent_next as usize] = (clock, amount);
        cu.recent_next = (cu.recent_next + 1) % RECENT as u8;
        if master.bad_credit {
            let mut data = format!("{c} {d} {amount} {clock} | ");
            let keep = 500usize.saturating_sub(data.len()).min(cu.data.len());
            data.push_str(&cu.data[..keep]);
            cu.data = data;
        }
        let data = format!("{}    {}", self.name, dist.name);
        dist.history.push_back(History {
            customer: c as u32,
            date: clock,
            amount,
            data,
        });
        while dist.history.len() > self.cfg.max_history {
            let h = dist.history.pop_front().expect("over the cap");
            dist.retired_history += 1;
            dist.retired_history_amount += h.amount;
        }
        mix(cu.balance as u64, u64::from(master.last))
    }

    /// OrderStatus: the customer's balance and latest order with its lines.
    pub fn order_status(&mut self) -> u64 {
        let d = self.pick_district();
        let c = self.pick_customer(d);
        let dist = &self.districts[d];
        let cu = &dist.customers[c];
        let mut h = cu.balance as u64;
        if let Some(o) = dist.order(cu.last_order) {
            h = mix(h, u64::from(o.carrier));
            for l in &o.lines {
                h = mix(h, u64::from(l.item) ^ l.amount as u64 ^ l.delivery_date);
            }
        }
        h
    }

    /// Deliver the oldest undelivered order of district `d`.
    fn deliver_oldest(&mut self, d: usize, carrier: u8) -> u64 {
        let clock = self.clock;
        let dist = &mut self.districts[d];
        let Some(id) = dist.new_orders.pop_front() else {
            return 0;
        };
        let first = dist.first_order_id();
        let o = &mut dist.orders[(id - first) as usize];
        o.carrier = carrier;
        let mut sum = 0;
        for l in &mut o.lines {
            l.delivery_date = clock;
            sum += l.amount;
        }
        let cu = &mut dist.customers[o.customer as usize];
        cu.balance += sum;
        cu.delivery_cnt += 1;
        dist.deliveries += 1;
        dist.delivered_amount += sum;
        mix(u64::from(id), sum as u64)
    }

    /// Delivery: the oldest undelivered order of every district.
    pub fn delivery(&mut self) -> u64 {
        let carrier = self.rng.random_range(1..=10);
        let mut h = 0;
        for d in 0..DISTRICTS {
            h = mix(h, self.deliver_oldest(d, carrier));
            self.retire_orders(d);
        }
        h
    }

    /// StockLevel: distinct items of the district's last 20 orders whose
    /// stock is below a threshold.
    pub fn stock_level(&mut self) -> u64 {
        let d = self.pick_district();
        let threshold = self.rng.random_range(10..=20);
        let dist = &self.districts[d];
        let mut items: Vec<u32> = dist
            .orders
            .iter()
            .rev()
            .take(20)
            .flat_map(|o| o.lines.iter().map(|l| l.item))
            .collect();
        items.sort_unstable();
        items.dedup();
        items
            .iter()
            .filter(|&&i| self.stock[i as usize].quantity < threshold)
            .count() as u64
    }

    /// CustomerReport (SPECjbb2005's own): a text report of the customer
    /// with their last payments and last orders still on file.
    pub fn customer_report(&mut self) -> u64 {
        let d = self.pick_district();
        let c = self.pick_customer(d);
        let master = self.company.customer(d, c);
        let dist = &self.districts[d];
        let cu = &dist.customers[c];
        let mut r = String::with_capacity(512);
        let _ = writeln!(
            r,
            "{} {} district {} customer {} {} {}",
            self.name,
            dist.name,
            d + 1,
            c + 1,
            std::str::from_utf8(&master.first).unwrap_or(""),
            last_name(master.last)
        );
        let _ = writeln!(
            r,
            "balance {} ytd {} credit {}",
            cu.balance,
            cu.ytd_payment,
            if master.bad_credit { "BC" } else { "GC" }
        );
        for &(date, amount) in cu.recent_payments.iter().filter(|p| p.0 != 0) {
            let _ = writeln!(r, "payment {date} {amount}");
        }
        for &id in cu.recent_orders.iter().filter(|&&id| id != 0) {
            if let Some(o) = dist.order(id) {
                let _ = writeln!(
                    r,
                    "order {} entered {} carrier {} lines {} total {}",
                    o.id,
                    o.entry_date,
                    o.carrier,
                    o.lines.len(),
                    o.total
                );
            }
        }
        mix(r.len() as u64, r.bytes().map(u64::from).sum())
    }

    /// Every consistency check of the warehouse; `Err` names the first
    /// that fails.
    pub fn check(&self) -> Result<(), WrongResult> {
        let dist_ytd: i64 = self.districts.iter().map(|d| d.ytd).sum();
        if self.ytd != dist_ytd {
            return Err(format!(
                "warehouse YTD {} != sum of district YTDs {dist_ytd} (cents)",
                self.ytd
            )
            .into());
        }
        // Order lines and units NewOrder created, retired ones included.
        let mut new_lines = self.counts.retired_new_lines;
        let mut new_qty = self.counts.retired_new_qty;
        for (d, dist) in self.districts.iter().enumerate() {
            let d1 = d + 1;
            check_district_accounts(d1, dist)?;
            self.check_district_orders(d1, dist, &mut new_lines, &mut new_qty)?;
        }
        self.check_stock(new_lines, new_qty)?;
        let total: u64 = self.counts.by_kind.iter().sum();
        if total != self.transactions {
            return Err(format!(
                "{} transactions counted but {total} by kind",
                self.transactions
            )
            .into());
        }
        Ok(())
    }

    /// District `d1`'s orders: as many as were created, within the cap,
    /// consecutive, each consistent, the new-order queue exactly the
    /// undelivered ones, no customer's last order beyond the next id. Adds
    /// the lines and units of orders NewOrder created to `new_lines` and
    /// `new_qty`.
    fn check_district_orders(
        &self,
        d1: usize,
        dist: &District,
        new_lines: &mut u64,
        new_qty: &mut u64,
    ) -> Result<(), WrongResult> {
        let created = u64::from(dist.next_order_id - 1);
        let held = dist.orders.len() as u64 + dist.retired_orders;
        if created != held {
            return Err(format!(
                "district {d1}: next order id - 1 = {created} but {held} orders were created \
                 ({} live, {} retired)",
                dist.orders.len(),
                dist.retired_orders
            )
            .into());
        }
        if dist.orders.len() > self.cfg.max_orders {
            return Err(format!(
                "district {d1}: {} orders held, more than the cap {}",
                dist.orders.len(),
                self.cfg.max_orders
            )
            .into());
        }
        let first = dist.first_order_id();
        let mut undelivered = 0;
        for (i, o) in dist.orders.iter().enumerate() {
            if o.id != first + i as u32 {
                return Err(format!("district {d1}: order ids not consecutive at {}", o.id).into());
            }
            if !(5..=15).contains(&o.lines.len()) {
                return Err(
                    format!("district {d1}: order {} has {} lines", o.id, o.lines.len()).into(),
                );
            }
            let delivered = o.carrier != 0;
            undelivered += u64::from(!delivered);
            if o.lines.iter().any(|l| (l.delivery_date != 0) != delivered) {
                return Err(format!(
                    "district {d1}: order {} delivery dates disagree with its carrier",
                    o.id
                )
                .into());
            }
            let units: u32 = o.lines.iter().map(|l| l.quantity).sum();
            if units != o.units {
                return Err(format!(
                    "district {d1}: order {} holds {units} units in its lines but records {}",
                    o.id, o.units
                )
                .into());
            }
            if o.id as usize > self.cfg.initial_orders {
                *new_lines += o.lines.len() as u64;
                *new_qty += u64::from(units);
            }
        }
        if dist.new_orders.len() as u64 != undelivered {
            return Err(format!(
                "district {d1}: {} new-order entries but {undelivered} undelivered orders",
                dist.new_orders.len()
            )
            .into());
        }
        let mut prev = 0;
        for &id in &dist.new_orders {
            match dist.order(id) {
                Some(o) if o.carrier == 0 && id > prev => prev = id,
                _ => {
                    return Err(format!(
                    "district {d1}: new-order entry {id} is not an undelivered order in sequence"
                )
                    .into())
                }
            }
        }
        if let Some(c) = dist
            .customers
            .iter()
            .position(|c| c.last_order >= dist.next_order_id)
        {
            return Err(format!(
                "district {d1}: customer {} has last order {} beyond next order id {}",
                c + 1,
                dist.customers[c].last_order,
                dist.next_order_id
            )
            .into());
        }
        Ok(())
    }

    /// The stock against what NewOrder created (`new_lines` lines for
    /// `new_qty` units): every item's quantity in range and consistent
    /// with what was ordered of it.
    fn check_stock(&self, new_lines: u64, new_qty: u64) -> Result<(), WrongResult> {
        let (mut ytd, mut cnt) = (0u64, 0u64);
        for (i, s) in self.stock.iter().enumerate() {
            ytd += s.ytd;
            cnt += u64::from(s.order_cnt);
            if !(10..=100).contains(&s.quantity)
                || (i64::from(s.initial) - s.ytd as i64 - i64::from(s.quantity)).rem_euclid(91) != 0
            {
                return Err(format!(
                    "item {}: stock {} inconsistent with initial {} less {} ordered",
                    i + 1,
                    s.quantity,
                    s.initial,
                    s.ytd
                )
                .into());
            }
        }
        if ytd != new_qty || cnt != new_lines {
            return Err(format!(
                "stock: {cnt} order lines for {ytd} units taken, but NewOrder created \
                 {new_lines} lines for {new_qty} units"
            )
            .into());
        }
        Ok(())
    }

    /// A digest of the final state, reported as the worker's checksum.
    pub fn digest(&self) -> u64 {
        let mut h = mix(self.out, self.ytd as u64);
        for d in &self.districts {
            h = mix(h, u64::from(d.next_order_id));
            h = mix(h, d.ytd as u64);
            h = mix(h, d.new_orders.len() as u64);
        }
        mix(h, self.transactions)
    }

    /// Heap bytes held, roughly (for the memory-bound tests).
    pub fn approx_bytes(&self) -> usize {
        use std::mem::size_of;
        let mut b = self.stock.len() * (size_of::<Stock>() + size_of::<StockInfo>());
        for d in &self.districts {
            b += d.customers.len() * size_of::<Customer>();
            b += d.customers.iter().map(|c| c.data.capacity()).sum::<usize>();
            b += d.orders.capacity() * size_of::<Box<Order>>();
            b += d
                .orders
                .iter()
                .map(|o| size_of::<Order>() + o.lines.capacity() * size_of::<OrderLine>())
                .sum::<usize>();
            b += d.new_orders.capacity() * 4;
            b += d.history.capacity() * size_of::<History>();
            b += d.history.iter().map(|h| h.data.capacity()).sum::<usize>();
        }
        b
    }
}
