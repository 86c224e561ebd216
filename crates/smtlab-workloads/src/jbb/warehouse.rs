//! One warehouse and the six transaction types run on it (SPECjbb2005's
//! mix, dealt from a [`Deck`]). Its tables are `tables.rs`, its initial
//! population `population.rs`, the checks run after the measured window
//! `consistency.rs`.
//!
//! A warehouse belongs to exactly one worker thread, which builds it (first
//! touch on its own NUMA node) and is the only one to touch it: no locks.
//! The company tables it reads are shared and never written.

use std::fmt::Write as _;
use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::company::{
    last_name, nurand, Company, DISTRICTS, NURAND_C_ID, NURAND_C_ITEM, NURAND_C_LAST,
};

use super::population::{load_district, load_stock, load_stock_info, random_string};
use super::tables::{
    Config, Counts, Customer, District, History, Order, OrderLine, Stock, StockInfo, RECENT,
};

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
