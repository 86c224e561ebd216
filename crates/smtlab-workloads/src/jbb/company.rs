//! The company-wide, read-mostly tables: the item catalogue and the customer
//! master data (names, credit, discount, address), with a by-last-name index.
//!
//! Built once per process in `setup`; in the thread model every warehouse of
//! the process reads the same copy through an `Arc`, in the process model each
//! process holds its own replica (as each JVM of a multi-JVM SPECjbb run
//! does). Nothing here is written after set-up, so sharing it costs no
//! coherence traffic.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Districts per warehouse (fixed by the benchmark).
pub const DISTRICTS: usize = 10;

/// Syllables of TPC-C/SPECjbb customer last names: a name is three
/// syllables chosen by the digits of a number 0..999.
const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// A catalogue item. Prices are in cents so that every sum is exact and the
/// year-to-date checks can demand equality.
pub struct Item {
    pub price: u32,
    pub name: [u8; 24],
    pub data: [u8; 50],
}

/// The read-only part of a customer: the same for every warehouse's
/// customer (district, id), so the company holds one table per process.
pub struct CustomerMaster {
    pub first: [u8; 16],
    /// Last name as a number 0..999 (see [`last_name`]).
    pub last: u16,
    pub bad_credit: bool,
    /// Discount in 1/10000.
    pub discount: u32,
    pub credit_limit: i64,
    pub street: [u8; 40],
    pub city: [u8; 20],
    pub phone: [u8; 16],
}

pub struct Company {
    pub items: Vec<Item>,
    pub customers_per_district: usize,
    /// `DISTRICTS * customers_per_district` records, district-major.
    pub customers: Vec<CustomerMaster>,
    /// Per district: (last name, first name, customer id) sorted, for
    /// lookups by last name (60% of Payment, OrderStatus, CustomerReport).
    pub by_name: Vec<Vec<(u16, [u8; 16], u32)>>,
}

/// The run-time constant C of TPC-C's non-uniform random numbers.
pub const NURAND_C_LAST: u64 = 157;
pub const NURAND_C_ID: u64 = 259;
pub const NURAND_C_ITEM: u64 = 7911;

/// TPC-C's non-uniform random number in `x..=y` (hot items and customers,
/// as in the real benchmark).
pub fn nurand(rng: &mut ChaCha8Rng, a: u64, c: u64, x: u64, y: u64) -> u64 {
    (((rng.random_range(0..=a) | rng.random_range(x..=y)) + c) % (y - x + 1)) + x
}

/// The text of last name number `n` (0..999).
pub fn last_name(n: u16) -> String {
    let n = n as usize;
    let mut s = String::with_capacity(16);
    s.push_str(SYLLABLES[n / 100 % 10]);
    s.push_str(SYLLABLES[n / 10 % 10]);
    s.push_str(SYLLABLES[n % 10]);
    s
}

/// Random uppercase letters, as the benchmark's random strings.
pub fn fill_alpha(rng: &mut ChaCha8Rng, buf: &mut [u8]) {
    for b in buf {
        *b = b'A' + rng.random_range(0..26u8);
    }
}

impl Company {
    pub fn build(rng: &mut ChaCha8Rng, items: usize, customers_per_district: usize) -> Company {
        let items = (0..items)
            .map(|_| {
                let mut it = Item {
                    price: rng.random_range(100..=10_000),
                    name: [0; 24],
                    data: [0; 50],
                };
                fill_alpha(rng, &mut it.name);
                fill_alpha(rng, &mut it.data);
                it
            })
            .collect();
        let mut customers = Vec::with_capacity(DISTRICTS * customers_per_district);
        let mut by_name = Vec::with_capacity(DISTRICTS);
        for _ in 0..DISTRICTS {
            let mut index = Vec::with_capacity(customers_per_district);
            for c in 0..customers_per_district {
                // TPC-C: the first 1000 customers take every name once, the
                // rest a non-uniform choice, so some names are common.
                let last = if c < 1000 {
                    c as u16
                } else {
                    nurand(rng, 255, NURAND_C_LAST, 0, 999) as u16
                };
                let mut m = CustomerMaster {
                    first: [0; 16],
                    last,
                    bad_credit: rng.random_range(0..10) == 0,
                    discount: rng.random_range(0..=5000),
                    credit_limit: 5_000_000,
                    street: [0; 40],
                    city: [0; 20],
                    phone: [0; 16],
                };
                fill_alpha(rng, &mut m.first);
                fill_alpha(rng, &mut m.street);
                fill_alpha(rng, &mut m.city);
                for b in &mut m.phone {
                    *b = b'0' + rng.random_range(0..10u8);
                }
                index.push((m.last, m.first, c as u32));
                customers.push(m);
            }
            index.sort_unstable();
            by_name.push(index);
        }
        Company {
            items,
            customers_per_district,
            customers,
            by_name,
        }
    }

    pub fn customer(&self, district: usize, c: usize) -> &CustomerMaster {
        &self.customers[district * self.customers_per_district + c]
    }

    /// TPC-C's rule for a lookup by last name: of the customers with that
    /// name, sorted by first name, the one in the middle. `None` when nobody
    /// has the name (possible with few customers).
    pub fn find_by_name(&self, district: usize, last: u16) -> Option<usize> {
        let index = &self.by_name[district];
        let lo = index.partition_point(|e| e.0 < last);
        let hi = index.partition_point(|e| e.0 <= last);
        if lo == hi {
            return None;
        }
        Some(index[lo + (hi - lo - 1) / 2].2 as usize)
    }
}
