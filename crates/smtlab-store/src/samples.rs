//! Samples: one sample committed with its workers and counters in one
//! transaction, outlier flags, and a point's samples read back exactly as
//! they were added.

use std::collections::HashMap;

use rusqlite::{ffi, params, Transaction, TransactionBehavior};

use smtlab_types::{
    CounterScope, CounterStatus, CounterValue, ResourceUsage, Sample, SampleStatus, WorkerSample,
};

use crate::columns::{extended_code, json_col, parse_col, real_or_nan};
use crate::error::StoreError;
use crate::store::Store;

impl Store {
    /// Commit one sample of a point with its workers and all counters, in one
    /// transaction: after a crash it is either wholly stored or absent.
    /// Returns the sample's id.
    pub fn add_sample(&self, point_id: i64, s: &Sample) -> Result<i64, StoreError> {
        let context = || format!("storing sample {} of point {point_id}", s.seq);
        let err = |e| self.err(context(), e);
        // IMMEDIATE takes the write lock now: a deferred transaction that
        // finds another writer when it first writes fails at once instead
        // of waiting out busy_timeout.
        let tx =
            Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate).map_err(err)?;
        let u = &s.usage;
        // NULL rather than `{}` when there is nothing extra, like every
        // sample stored before the column existed.
        let extras_json = if s.extras.is_empty() {
            None
        } else {
            Some(self.to_json(&s.extras, "extras")?)
        };
        let sample_id = {
            let mut st = self
                .conn
                .prepare_cached(
                    "INSERT INTO samples (point_id, seq, warmup, status, reason, started_at, \
                     wall_s, ops, metric, user_s, sys_s, voluntary_cs, involuntary_cs, \
                     minor_faults, major_faults, migrations, peak_rss_kb, pss_kb, anon_huge_kb, \
                     extras_json) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, \
                     ?16, ?17, ?18, ?19, ?20)",
                )
                .map_err(err)?;
            st.execute(params![
                point_id,
                s.seq,
                s.warmup,
                s.status.as_str(),
                s.reason,
                s.started_at,
                s.wall_s,
                self.opt_int(s.ops, "ops")?,
                s.metric,
                u.user_s,
                u.sys_s,
                self.opt_int(u.voluntary_cs, "voluntary_cs")?,
                self.opt_int(u.involuntary_cs, "involuntary_cs")?,
                self.opt_int(u.minor_faults, "minor_faults")?,
                self.opt_int(u.major_faults, "major_faults")?,
                self.opt_int(u.migrations, "migrations")?,
                self.opt_int(u.peak_rss_kb, "peak_rss_kb")?,
                self.opt_int(u.pss_kb, "pss_kb")?,
                self.opt_int(u.anon_huge_kb, "anon_huge_kb")?,
                extras_json,
            ])
            .map_err(|e| match extended_code(&e) {
                Some(ffi::SQLITE_CONSTRAINT_UNIQUE) => StoreError::DuplicateSample {
                    path: self.path.clone(),
                    point_id,
                    seq: s.seq,
                },
                Some(ffi::SQLITE_CONSTRAINT_FOREIGNKEY) => StoreError::NoPoint {
                    path: self.path.clone(),
                    point_id,
                },
                _ => self.err(context(), e),
            })?;
            self.conn.last_insert_rowid()
        };
        {
            let mut workers = self
                .conn
                .prepare_cached(
                    "INSERT INTO worker_samples (sample_id, worker, rank, thread, pid, tid, \
                     cpu, last_cpu, ops, start_s, end_s) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                )
                .map_err(err)?;
            for w in &s.workers {
                workers
                    .execute(params![
                        sample_id,
                        w.worker,
                        w.rank,
                        w.thread,
                        w.pid,
                        w.tid,
                        w.cpu,
                        w.last_cpu,
                        self.int(w.ops, "worker ops")?,
                        w.start_s,
                        w.end_s,
                    ])
                    .map_err(|e| {
                        if extended_code(&e) == Some(ffi::SQLITE_CONSTRAINT_UNIQUE) {
                            self.invalid(format!(
                                "sample {} of point {point_id} has two workers numbered {}",
                                s.seq, w.worker
                            ))
                        } else {
                            self.err(context(), e)
                        }
                    })?;
                for c in &w.counters {
                    self.insert_counter(sample_id, Some(w.worker), c)
                        .map_err(|e| self.counter_err(e, c, &context))?;
                }
            }
            for c in &s.counters {
                self.insert_counter(sample_id, None, c)
                    .map_err(|e| self.counter_err(e, c, &context))?;
            }
        }
        tx.commit().map_err(err)?;
        Ok(sample_id)
    }

    pub(crate) fn insert_counter(
        &self,
        sample_id: i64,
        worker: Option<usize>,
        c: &CounterValue,
    ) -> Result<(), CounterInsertError> {
        let raw = c
            .raw
            .map(i64::try_from)
            .transpose()
            .map_err(|_| CounterInsertError::Range)?;
        let mut st = self.conn.prepare_cached(
            "INSERT INTO counters (sample_id, worker, name, scope, status, raw, value, \
             fraction_running, reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        st.execute(params![
            sample_id,
            worker,
            c.name,
            c.scope.as_str(),
            counter_status_str(c.status),
            raw,
            c.value,
            c.fraction_running,
            c.reason,
        ])?;
        Ok(())
    }

    pub(crate) fn counter_err(
        &self,
        e: CounterInsertError,
        c: &CounterValue,
        context: &dyn Fn() -> String,
    ) -> StoreError {
        match e {
            CounterInsertError::Range => self.invalid(format!(
                "{}: counter {} raw count {} exceeds SQLite's INTEGER range",
                context(),
                c.name,
                c.raw.unwrap_or_default()
            )),
            CounterInsertError::Sqlite(e) => self.err(context(), e),
        }
    }

    /// Flag outliers among a point's measured samples: the listed seqs get
    /// `outlier = 1`, every other non-warm-up `ok` sample `0`, the rest
    /// (warm-ups, failures) NULL. Replaces any earlier flags.
    pub fn set_outliers(&self, point_id: i64, outlier_seqs: &[usize]) -> Result<(), StoreError> {
        let context = || format!("flagging outliers of point {point_id}");
        let err = |e| self.err(context(), e);
        let tx =
            Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate).map_err(err)?;
        self.conn
            .prepare_cached(
                "UPDATE samples SET outlier = \
                 CASE WHEN warmup = 0 AND status = 'ok' THEN 0 ELSE NULL END \
                 WHERE point_id = ?1",
            )
            .and_then(|mut st| st.execute([point_id]))
            .map_err(err)?;
        let mut st = self
            .conn
            .prepare_cached(
                "UPDATE samples SET outlier = 1 \
                 WHERE point_id = ?1 AND seq = ?2 AND warmup = 0 AND status = 'ok'",
            )
            .map_err(err)?;
        for &seq in outlier_seqs {
            if st.execute(params![point_id, seq]).map_err(err)? == 0 {
                return Err(self.invalid(format!(
                    "point {point_id} has no measured ok sample {seq} to flag as an outlier"
                )));
            }
        }
        drop(st);
        tx.commit().map_err(err)
    }

    /// The outlier flag of each of a point's samples, by seq: `None` for
    /// warm-ups, failures, and samples not yet analysed.
    pub fn outlier_flags(&self, point_id: i64) -> Result<Vec<(usize, Option<bool>)>, StoreError> {
        let context = || format!("reading outlier flags of point {point_id}");
        let mut st = self
            .conn
            .prepare_cached("SELECT seq, outlier FROM samples WHERE point_id = ?1 ORDER BY seq")
            .map_err(|e| self.err(context(), e))?;
        let rows = st
            .query_map([point_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.err(context(), e));
        rows
    }

    /// A point's samples, ordered by seq, exactly as they were added
    /// (workers and counters included, in their original order).
    pub fn samples(&self, point_id: i64) -> Result<Vec<Sample>, StoreError> {
        let err = |e| self.err(format!("reading the samples of point {point_id}"), e);
        // Three queries per point rather than three per sample: the
        // workers and counters of all its samples at once, in insertion
        // (rowid) order, dealt out by sample id. One read transaction, so
        // the three see the same snapshot while a run goes on writing.
        let _snapshot =
            Transaction::new_unchecked(&self.conn, TransactionBehavior::Deferred).map_err(err)?;
        let (mut samples, by_id) = self.sample_rows(point_id)?;
        if samples.is_empty() {
            return Ok(samples);
        }
        let worker_at = self.attach_workers(point_id, &mut samples, &by_id)?;
        self.attach_counters(point_id, &mut samples, &by_id, &worker_at)?;
        Ok(samples)
    }

    /// The first of [`Store::samples`]' three queries: a point's sample
    /// rows, without workers or counters, and where each row's id went in
    /// the vector (the other two queries deal their rows out by it).
    fn sample_rows(&self, point_id: i64) -> Result<(Vec<Sample>, HashMap<i64, usize>), StoreError> {
        let err = |e| self.err(format!("reading the samples of point {point_id}"), e);
        let mut samples: Vec<Sample> = Vec::new();
        let mut by_id: HashMap<i64, usize> = HashMap::new();
        self.each_row(
            "SELECT id, seq, warmup, status, reason, started_at, wall_s, ops, metric, \
             user_s, sys_s, voluntary_cs, involuntary_cs, minor_faults, major_faults, \
             migrations, peak_rss_kb, pss_kb, anon_huge_kb, extras_json \
             FROM samples WHERE point_id = ?1 ORDER BY seq",
            point_id,
            |r| {
                let sample = (|| {
                    Ok::<_, rusqlite::Error>(Sample {
                        seq: r.get(1)?,
                        warmup: r.get(2)?,
                        status: parse_col(r, 3, SampleStatus::parse, "sample status")?,
                        reason: r.get(4)?,
                        started_at: real_or_nan(r, 5)?,
                        wall_s: real_or_nan(r, 6)?,
                        ops: r.get(7)?,
                        metric: r.get(8)?,
                        usage: ResourceUsage {
                            user_s: r.get(9)?,
                            sys_s: r.get(10)?,
                            voluntary_cs: r.get(11)?,
                            involuntary_cs: r.get(12)?,
                            minor_faults: r.get(13)?,
                            major_faults: r.get(14)?,
                            migrations: r.get(15)?,
                            peak_rss_kb: r.get(16)?,
                            pss_kb: r.get(17)?,
                            anon_huge_kb: r.get(18)?,
                        },
                        counters: Vec::new(),
                        workers: Vec::new(),
                        extras: match r.get_ref(19)? {
                            rusqlite::types::ValueRef::Null => Default::default(),
                            _ => json_col(r, 19)?,
                        },
                    })
                })()
                .map_err(err)?;
                by_id.insert(r.get(0).map_err(err)?, samples.len());
                samples.push(sample);
                Ok(())
            },
        )?;
        Ok((samples, by_id))
    }

    /// The second query: every worker of a point's samples, pushed onto
    /// its sample in insertion order. Returns (sample index, worker
    /// number) → index in that sample's workers, for the counters.
    fn attach_workers(
        &self,
        point_id: i64,
        samples: &mut [Sample],
        by_id: &HashMap<i64, usize>,
    ) -> Result<HashMap<(usize, usize), usize>, StoreError> {
        let err = |e| self.err(format!("reading the samples of point {point_id}"), e);
        let mut worker_at: HashMap<(usize, usize), usize> = HashMap::new();
        self.each_row(
            "SELECT w.sample_id, w.worker, w.rank, w.thread, w.pid, w.tid, w.cpu, \
             w.last_cpu, w.ops, w.start_s, w.end_s \
             FROM worker_samples w JOIN samples s ON s.id = w.sample_id \
             WHERE s.point_id = ?1 ORDER BY w.id",
            point_id,
            |r| {
                let sample_id: i64 = r.get(0).map_err(err)?;
                let worker = (|| {
                    Ok::<_, rusqlite::Error>(WorkerSample {
                        worker: r.get(1)?,
                        rank: r.get(2)?,
                        thread: r.get(3)?,
                        pid: r.get(4)?,
                        tid: r.get(5)?,
                        cpu: r.get(6)?,
                        last_cpu: r.get(7)?,
                        ops: r.get(8)?,
                        start_s: real_or_nan(r, 9)?,
                        end_s: real_or_nan(r, 10)?,
                        counters: Vec::new(),
                    })
                })()
                .map_err(err)?;
                let si = self.sample_index(by_id, sample_id, point_id)?;
                let workers = &mut samples[si].workers;
                worker_at.insert((si, worker.worker), workers.len());
                workers.push(worker);
                Ok(())
            },
        )?;
        Ok(worker_at)
    }

    /// The third query: every counter of a point's samples, on its sample
    /// or, when it names a worker, on that worker; a counter naming a
    /// worker its sample does not have is a damaged file.
    fn attach_counters(
        &self,
        point_id: i64,
        samples: &mut [Sample],
        by_id: &HashMap<i64, usize>,
        worker_at: &HashMap<(usize, usize), usize>,
    ) -> Result<(), StoreError> {
        let err = |e| self.err(format!("reading the samples of point {point_id}"), e);
        self.each_row(
            "SELECT c.sample_id, c.worker, c.name, c.scope, c.status, c.raw, c.value, \
             c.fraction_running, c.reason \
             FROM counters c JOIN samples s ON s.id = c.sample_id \
             WHERE s.point_id = ?1 ORDER BY c.id",
            point_id,
            |r| {
                let (sample_id, worker, counter) = (|| {
                    Ok::<_, rusqlite::Error>((
                        r.get::<_, i64>(0)?,
                        r.get::<_, Option<usize>>(1)?,
                        CounterValue {
                            name: r.get(2)?,
                            scope: parse_col(r, 3, parse_counter_scope, "counter scope")?,
                            status: parse_col(r, 4, parse_counter_status, "counter status")?,
                            raw: r.get(5)?,
                            value: r.get(6)?,
                            fraction_running: r.get(7)?,
                            reason: r.get(8)?,
                        },
                    ))
                })()
                .map_err(err)?;
                let si = self.sample_index(by_id, sample_id, point_id)?;
                match worker {
                    None => samples[si].counters.push(counter),
                    Some(w) => match worker_at.get(&(si, w)) {
                        Some(&wi) => samples[si].workers[wi].counters.push(counter),
                        None => {
                            return Err(self.invalid(format!(
                                "corrupt record: a counter of sample {} of point {point_id} \
                                 names worker {w}, which the sample does not have",
                                samples[si].seq
                            )))
                        }
                    },
                }
                Ok(())
            },
        )
    }

    /// Run `sql` (its `?1` the point's id) and hand each row to `each`, in
    /// order: the shape of [`Store::samples`]' three queries.
    fn each_row(
        &self,
        sql: &str,
        point_id: i64,
        mut each: impl FnMut(&rusqlite::Row) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let err = |e| self.err(format!("reading the samples of point {point_id}"), e);
        let mut st = self.conn.prepare_cached(sql).map_err(err)?;
        let mut rows = st.query([point_id]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            each(r)?;
        }
        Ok(())
    }

    /// Where sample row `sample_id` went in [`Store::samples`]'s vector; the
    /// snapshot makes a miss impossible short of a damaged file.
    pub(crate) fn sample_index(
        &self,
        by_id: &HashMap<i64, usize>,
        sample_id: i64,
        point_id: i64,
    ) -> Result<usize, StoreError> {
        by_id.get(&sample_id).copied().ok_or_else(|| {
            self.invalid(format!(
                "corrupt record: sample row {sample_id} of point {point_id} vanished while read"
            ))
        })
    }
}

pub(crate) enum CounterInsertError {
    Range,
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for CounterInsertError {
    fn from(e: rusqlite::Error) -> Self {
        CounterInsertError::Sqlite(e)
    }
}

pub(crate) fn counter_status_str(s: CounterStatus) -> &'static str {
    match s {
        CounterStatus::Ok => "ok",
        CounterStatus::Unsupported => "unsupported",
        CounterStatus::NotPermitted => "not_permitted",
        CounterStatus::Error => "error",
    }
}

pub(crate) fn parse_counter_status(s: &str) -> Option<CounterStatus> {
    Some(match s {
        "ok" => CounterStatus::Ok,
        "unsupported" => CounterStatus::Unsupported,
        "not_permitted" => CounterStatus::NotPermitted,
        "error" => CounterStatus::Error,
        _ => return None,
    })
}

pub(crate) fn parse_counter_scope(s: &str) -> Option<CounterScope> {
    Some(match s {
        "user" => CounterScope::User,
        "kernel" => CounterScope::Kernel,
        "all" => CounterScope::All,
        _ => return None,
    })
}
