//! A warehouse's initial population: its stock, each district with its
//! customers and initial orders, drawn from the worker's seeded stream in
//! a fixed order (a test pins the digest of the result).

use std::collections::VecDeque;

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::company::{fill_alpha, DISTRICTS};

use super::tables::{
    Config, Customer, District, History, Order, OrderLine, Stock, StockInfo, INITIAL_PAYMENT,
    RECENT,
};

pub(super) fn random_string(rng: &mut ChaCha8Rng, lo: usize, hi: usize) -> String {
    let mut b = vec![0u8; rng.random_range(lo..=hi)];
    fill_alpha(rng, &mut b);
    String::from_utf8(b).expect("ASCII")
}

/// The stock of `items` items at load: a random quantity of each.
pub(super) fn load_stock(items: usize, rng: &mut ChaCha8Rng) -> Vec<Stock> {
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
pub(super) fn load_stock_info(items: usize, rng: &mut ChaCha8Rng) -> Vec<StockInfo> {
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
pub(super) fn load_district(cfg: &Config, items: u32, rng: &mut ChaCha8Rng) -> District {
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
pub(super) fn load_orders(
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
