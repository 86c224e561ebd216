//! A warehouse's tables, as SPECjbb2005 (after TPC-C) has them: stock and
//! its text, customers' mutable state, orders with their lines, payment
//! history, districts, and the counts of what the transactions did; and
//! the configuration of their sizes.

use std::collections::VecDeque;

use super::company::DISTRICTS;

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
    pub(super) fn first_order_id(&self) -> u32 {
        self.orders.front().map_or(self.next_order_id, |o| o.id)
    }

    pub(super) fn order(&self, id: u32) -> Option<&Order> {
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

/// The initial payment every customer has made, as TPC-C loads (cents).
pub const INITIAL_PAYMENT: i64 = 1000;
