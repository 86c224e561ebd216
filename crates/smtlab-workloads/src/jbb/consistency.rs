//! The consistency checks run on a warehouse after the measured window:
//! each district's money and orders, and the stock, against what the
//! transactions recorded (`Warehouse::check`).

use crate::error::WrongResult;

use super::tables::District;
use super::warehouse::Warehouse;

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

impl Warehouse {
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
}
