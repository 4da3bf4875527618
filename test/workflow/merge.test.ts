// publishMode 'merge' on the sample, extracting by modification time: a
// merge that updates, inserts, soft-deletes and keeps newer live rows,
// with readers reading throughout; duplicate staging keys refused with
// sample keys; replays that change nothing; scheduled runs whose lookback
// publishes a late row exactly once; a bad modifiedColumn refused by Plan.
// The merge of a week (readers reading) is arranged once; each describe acts
// on its own copy of what it left (test/support/workflow.ts useFork).

// First: it replaces the pipelines before any other module reads them.
import '../support/merge-pipeline.ts';
import { describe, expect, it } from 'vitest';
import { definePipelines } from '../../domain/define-pipeline.ts';
import { batchIdFor, previousVersionTableFor, stagingTableFor } from '../../domain/plan/plan.ts';
import { intervalWriters } from '../../domain/publish/sql/intervals.ts';
import { warehouseFromEnv } from '../../functions/commons/warehouse.ts';
import type { PlanEvent } from '../../functions/plan/batch.ts';
import { plan } from '../../functions/plan/index.ts';
import { localHandlerEnvironment } from '../../local/aws-clients.ts';
import { ReaderPool, type ReaderSample } from '../../local/readers.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { holdGate, type LockGate } from '../support/lock-gate.ts';
import { addMergeColumns, LOOKBACK, mergeSpec } from '../support/merge-pipeline.ts';
import { lastIntervals, scheduledRunOn, THREE_SCHEDULED_RUNS } from '../support/scheduled-run.ts';
import { suiteTargetKind } from '../support/target-kind.ts';
import { until } from '../support/until.ts';
import { LIVE, PIPELINE, useFork, useWorkflowFixture, type Workflow } from '../support/workflow.ts';

const SOURCE = 'source.sales_order_lines';
const [FROM_DAY, TO_DAY] = [10, 17];
/** Sums to a different value when a row is added, removed or its amount changes. */
const KEY = 'order_id * 1000 + line_no + amount';
const ts = (day: number) => sampleDay(day).toISOString().slice(0, 19);
const window = (from: number, to: number) => ({ pipeline: PIPELINE.name, from: sampleDay(from).toISOString(), to: sampleDay(to).toISOString() });
/** Every column, the merge's two included. */
const CONTENT = `SELECT count(*)::int AS rows, md5(COALESCE(string_agg(concat_ws(':', order_id, line_no, ordered_at, customer_id, product_id, quantity, amount, unit_price, updated_at, deleted), ',' ORDER BY order_id, line_no), '')) AS digest`;
/** A source row's key modified in `[from, to)`. */
const modifiedIn = (row: string, from: number, to: number) =>
  `EXISTS (SELECT 1 FROM ${SOURCE} m WHERE m.order_id = ${row}.order_id AND m.line_no = ${row}.line_no AND m.updated_at >= '${ts(from)}' AND m.updated_at < '${ts(to)}')`;
/** The source's rows as the live table holds them. */
const SOURCE_AS_LIVE = `(SELECT order_id, line_no, ordered_at, customer_id, product_id, quantity, amount, CAST(amount / quantity AS numeric(12, 4)) AS unit_price, updated_at, deleted FROM ${SOURCE})`;

async function content(wf: Workflow, from: string): Promise<{ rows: number; digest: string }> {
  return (await wf.query<{ rows: number; digest: string }>(`${CONTENT} FROM ${from}`))[0]!;
}

async function state(wf: Workflow): Promise<string> {
  const [row] = await wf.query<{ count: number; k: string }>(`SELECT count(*)::int AS count, COALESCE(sum(${KEY}), 0)::text AS k FROM ${LIVE}`);
  return `${row!.count}/${row!.k}`;
}

function states(samples: readonly ReaderSample[]): string[] {
  return [...new Set(samples.map((s) => (s.error ? `error: ${s.error}` : `${s.count}/${s.keySum}`)))];
}

async function firstKeyOn(wf: Workflow, day: number, offset = 0): Promise<{ order_id: string; line_no: number }> {
  const [row] = await wf.query<{ order_id: string; line_no: number }>(
    `SELECT order_id, line_no FROM ${SOURCE} WHERE ordered_at >= $1 ORDER BY ordered_at OFFSET $2 LIMIT 1`,
    [ts(day), offset],
  );
  return row!;
}

const isNewerRow = (key: { order_id: string; line_no: number }) => `(l.order_id = ${key.order_id} AND l.line_no = ${key.line_no})`;
const UNTOUCHED = `(SELECT * FROM ${LIVE} l WHERE NOT ${modifiedIn('l', FROM_DAY, TO_DAY)}) AS l`;

// Changes upstream modified inside [FROM_DAY, TO_DAY), a live row newer than its
// source's change, then the merge of that week, readers reading before, while
// and after Publish holds its transaction.
const fixture = useWorkflowFixture(
  'wf_merge',
  async (wf) => {
    await wf.sample({ rowsPerDay: 20, sourceDays: 40, liveDays: 35 });
    await addMergeColumns((sql) => wf.query(sql));
    // Corrections of old events, a new line, a deleted one.
    const updated = await wf.query<{ n: number }>(
      `WITH u AS (UPDATE ${SOURCE} SET amount = amount + 1, updated_at = $1::timestamp + interval '1 hour'
                   WHERE line_no = 1 AND ordered_at >= $2 AND ordered_at < $3 RETURNING 1) SELECT count(*)::int AS n FROM u`,
      [ts(12), ts(3), ts(5)],
    );
    await wf.query(
      `INSERT INTO ${SOURCE} VALUES (900000001, 1, $1::timestamp + interval '5 hours', 7, 8, 2, 50.00, $2::timestamp + interval '2 hours', false)`,
      [ts(4), ts(13)],
    );
    const deleted = await firstKeyOn(wf, 6);
    await wf.query(`UPDATE ${SOURCE} SET deleted = true, updated_at = $1 WHERE order_id = $2 AND line_no = $3`, [ts(14), deleted.order_id, deleted.line_no]);
    // A key whose live row is newer (modified on day 30) than the source's change (day 15): the live row stays.
    const newer = await firstKeyOn(wf, 8);
    await wf.query(`UPDATE ${LIVE} SET amount = 777, unit_price = 777.0 / quantity, updated_at = $1 WHERE order_id = $2 AND line_no = $3`, [
      ts(30),
      newer.order_id,
      newer.line_no,
    ]);
    await wf.query(`UPDATE ${SOURCE} SET amount = 555, updated_at = $1 WHERE order_id = $2 AND line_no = $3`, [ts(15), newer.order_id, newer.line_no]);
    // A change modified after the interval: not this merge's.
    await wf.query(`UPDATE ${SOURCE} SET amount = amount + 100, updated_at = $1 WHERE line_no = 2 AND ordered_at >= $2 AND ordered_at < $3`, [
      ts(20),
      ts(1),
      ts(2),
    ]);

    const beforeUntouched = await content(wf, UNTOUCHED);
    const beforeNewer = await content(wf, `(SELECT * FROM ${LIVE} l WHERE ${isNewerRow(newer)}) AS l`);
    const before = await state(wf);

    const readers = new ReaderPool(wf.wh.pg, 2, { keyExpression: KEY, pauseMs: 2 });
    readers.watch(LIVE);
    // Publish held inside its transaction, after its DELETE and INSERT, at its update of the batch's attempt.
    let gate: LockGate | undefined;
    wf.faults.Publish = async (input, next) => {
      gate = await holdGate(wf.wh.pg, { table: 'atomic_publish.batch_attempts' });
      return next(input);
    };
    let heldModes: string[];
    let result: ExecutionResult;
    try {
      const running = await wf.start(window(FROM_DAY, TO_DAY), 'merge-week');
      await until(() => gate !== undefined, 'Publish to start');
      const [pid] = await gate!.waiting();
      heldModes = (await wf.query<{ mode: string }>(`SELECT mode FROM pg_locks WHERE pid = $1 AND relation = $2::regclass AND granted`, [pid, LIVE])).map(
        (h) => h.mode,
      );
      await readers.readAll();
      readers.phase('held');
      await readers.readAll();
      readers.phase('released');
      await gate!.release();
      result = await running.result;
      readers.phase('after');
      await readers.readAll();
    } finally {
      await gate?.release();
      wf.reset();
    }
    const samples = await readers.close();
    return { updated: updated[0]!.n, deleted, newer, beforeUntouched, beforeNewer, before, heldModes, result, samples };
  },
  { env: { PUBLISH_LOCK_WAIT_MS: '600000' } },
);

describe('merge', () => {
  describe('of a week', () => {
    const wf = useFork(fixture);

    it('updates, inserts and soft-deletes by the business key in one transaction while readers read: old or new, never a mix; a newer live row is kept', async () => {
      const { updated, deleted, newer, beforeUntouched, beforeNewer, before, heldModes, result, samples } = fixture.arranged;
      expect(updated).toBeGreaterThan(5);
      expect(heldModes).toContain('RowExclusiveLock');
      expect(heldModes).not.toContain('AccessExclusiveLock');
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      const isNewer = isNewerRow(newer);
      const after = await state(wf);
      expect(after).not.toBe(before);

      // Old or new, nothing else; while held, the old state only.
      for (const s of states(samples)) expect([before, after]).toContain(s);
      expect(states(samples.filter((s) => s.phase === 'held'))).toEqual([before]);
      expect(states(samples.filter((s) => s.phase === 'after'))).toEqual([after]);

      // Keys modified in the interval now hold the source's row (the deleted one gone), except the newer live row.
      expect(await content(wf, `(SELECT * FROM ${LIVE} l WHERE ${modifiedIn('l', FROM_DAY, TO_DAY)} AND NOT ${isNewer}) AS l`)).toEqual(
        await content(wf, `(SELECT * FROM ${SOURCE_AS_LIVE} l WHERE ${modifiedIn('l', FROM_DAY, TO_DAY)} AND NOT ${isNewer} AND NOT deleted) AS l`),
      );
      expect(await content(wf, `(SELECT * FROM ${LIVE} l WHERE ${isNewer}) AS l`)).toEqual(beforeNewer);
      expect(await wf.query(`SELECT count(*)::int AS n FROM ${LIVE} WHERE order_id = $1 AND line_no = $2`, [deleted.order_id, deleted.line_no])).toEqual([
        { n: 0 },
      ]);
      expect(await wf.query(`SELECT count(*)::int AS n, min(ordered_at) AS t FROM ${LIVE} WHERE order_id = 900000001`)).toEqual([
        { n: 1, t: new Date(sampleDay(4).getTime() + 5 * 3_600_000) },
      ]);
      // Every other row exactly as it was, the change modified after the interval included.
      expect(await content(wf, UNTOUCHED)).toEqual(beforeUntouched);

      // The live rows the merge replaced (the corrections and the deleted line) are the publication's old version.
      const batchId = batchIdFor(PIPELINE, { from: sampleDay(FROM_DAY), to: sampleDay(TO_DAY) });
      const retained = `analytics.${previousVersionTableFor(PIPELINE, batchId)}`;
      expect((await content(wf, retained)).rows).toBe(updated + 1);
      expect(await wf.query(`SELECT count(*)::int AS n FROM ${retained} l WHERE ${isNewer}`)).toEqual([{ n: 0 }]);
      const [publication] = await wf.query<Record<string, unknown>>(
        `SELECT publish_mode, interval_start, interval_end, old_version_table FROM atomic_publish.publications WHERE batch_id = $1`,
        [batchId],
      );
      expect(publication).toEqual({ publish_mode: 'merge', interval_start: sampleDay(FROM_DAY), interval_end: sampleDay(TO_DAY), old_version_table: retained });
    });
  });

  describe('replayed', () => {
    const wf = useFork(fixture);

    it('replays the merge without changing anything, and a later batch re-reading the same versions changes nothing either', async () => {
      const before = await content(wf, LIVE);
      const publications = await wf.publications();

      const replay = await wf.run(window(FROM_DAY, TO_DAY), 'merge-week-replay');
      expect(replay.status, `${replay.error}: ${replay.cause}`).toBe('SUCCEEDED');
      expect(await content(wf, LIVE)).toEqual(before);
      expect(await wf.publications()).toEqual(publications);

      const overlap = await wf.run(window(12, 16), 'merge-overlap');
      expect(overlap.status, `${overlap.error}: ${overlap.cause}`).toBe('SUCCEEDED');
      expect(await content(wf, LIVE)).toEqual(before);
      const batchId = batchIdFor(PIPELINE, { from: sampleDay(12), to: sampleDay(16) });
      expect((await content(wf, `analytics.${previousVersionTableFor(PIPELINE, batchId)}`)).rows).toBe(0);
      expect(await wf.publications()).toHaveLength(publications.length + 1);
    });
  });

  describe('with duplicate keys in staging', () => {
    const wf = useFork(fixture);

    it('refuses duplicate business keys in staging before the merge, with sample keys in the alert', async () => {
      const dup = await firstKeyOn(wf, 17, 3);
      await wf.query(
        `INSERT INTO ${SOURCE} SELECT order_id, line_no, ordered_at, customer_id, product_id, quantity, amount + 5, updated_at, deleted FROM ${SOURCE} WHERE order_id = $1 AND line_no = $2`,
        [dup.order_id, dup.line_no],
      );
      const before = await content(wf, LIVE);
      const publications = await wf.publications();
      try {
        const result = await wf.run(window(17, 18), 'merge-duplicates');
        expect(result.status).toBe('FAILED');
        const message = result.alerts[0]?.message ?? '';
        expect(message).toContain('business_key_unique: observed 1 key value(s) on more than one row');
        expect(message).toContain(`sample keys: (order_id, line_no) = (${dup.order_id}, ${dup.line_no}) on 2 rows`);
        expect(await content(wf, LIVE)).toEqual(before);
        expect(await wf.publications()).toEqual(publications);
      } finally {
        await wf.query(
          `DELETE FROM ${SOURCE} WHERE order_id = $1 AND line_no = $2 AND amount = (SELECT max(amount) FROM ${SOURCE} WHERE order_id = $1 AND line_no = $2)`,
          [dup.order_id, dup.line_no],
        );
      }
    });
  });

  describe('with a bad modifiedColumn', () => {
    const wf = useFork(fixture);

    it('refuses a modifiedColumn that is not a timestamp column of the live table in Plan, before writing anything', async () => {
      const registry = definePipelines([{ ...mergeSpec, modifiedColumn: 'customer_id' }]);
      const bad = registry[0]!;
      wf.faults.Plan = async (input) => {
        const env = localHandlerEnvironment(wf.wh.endpoint, wf.wh.pg.database, { pollMaxDelayMs: 100 }, suiteTargetKind());
        return JSON.parse(JSON.stringify(await plan(input as PlanEvent, warehouseFromEnv(env), registry))) as unknown;
      };
      const publications = await wf.publications();
      try {
        const result = await wf.run(window(20, 21), 'merge-bad-modified-column');
        expect(result.status).toBe('FAILED');
        expect(result.alerts[0]?.message).toContain(
          'modifiedColumn customer_id of analytics.sales_order_lines is integer; it must be a timestamp without time zone holding UTC',
        );
      } finally {
        wf.reset();
      }
      const batchId = batchIdFor(bad, { from: sampleDay(20), to: sampleDay(21) });
      expect(await wf.query(`SELECT batch_id FROM atomic_publish.batches WHERE batch_id = $1`, [batchId])).toEqual([]);
      expect(await wf.query(`SELECT tablename FROM pg_tables WHERE tablename = $1`, [stagingTableFor(bad, batchId)])).toEqual([]);
      expect(await wf.publications()).toEqual(publications);
    });
  });
});

describe('scheduled runs extracting by modification time, with a lookback', () => {
  const wf = useFork(fixture);

  it('publishes an old event entered late exactly once over two scheduled runs, with its event time', async () => {
    const first = await scheduledRunOn(wf, 36, 'merge-scheduled-36');
    expect(first.status, `${first.error}: ${first.cause}`).toBe('SUCCEEDED');
    const modified = (from: number, to: number) => `updated_at >= '${ts(from)}' AND updated_at < '${ts(to)}'`;
    expect(await content(wf, `(SELECT * FROM ${LIVE} WHERE ${modified(36 - 1 - LOOKBACK, 36)}) AS l`)).toEqual(
      await content(wf, `(SELECT * FROM ${SOURCE_AS_LIVE} s WHERE ${modified(36 - 1 - LOOKBACK, 36)}) AS l`),
    );

    // An order line of day 20, entered in the source system late on day 35, reaching the source after the morning run.
    const eventTime = new Date(sampleDay(20).getTime() + 3 * 3_600_000);
    await wf.query(`INSERT INTO ${SOURCE} VALUES (900000002, 1, $1, 9, 9, 1, 19.99, $2::timestamp + interval '23 hours', false)`, [
      eventTime.toISOString().slice(0, 19),
      ts(35),
    ]);
    const late = () => wf.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${LIVE} WHERE order_id = 900000002`);
    expect(await late()).toEqual([{ n: 0 }]);

    const second = await scheduledRunOn(wf, 37, 'merge-scheduled-37');
    expect(second.status, `${second.error}: ${second.cause}`).toBe('SUCCEEDED');
    expect(await wf.query(`SELECT count(*)::int AS n, min(ordered_at) AS t FROM ${LIVE} WHERE order_id = 900000002`)).toEqual([{ n: 1, t: eventTime }]);

    const third = await scheduledRunOn(wf, 38, 'merge-scheduled-38');
    expect(third.status, `${third.error}: ${third.cause}`).toBe('SUCCEEDED');
    expect(await late()).toEqual([{ n: 1 }]);
    // The overlapping windows re-read rows already merged: no key twice.
    expect(await wf.query(`SELECT count(*)::int - count(DISTINCT (order_id, line_no))::int AS doubled FROM ${LIVE}`)).toEqual([{ doubled: 0 }]);
    expect(await content(wf, `(SELECT * FROM ${LIVE} WHERE ${modified(34, 38)}) AS l`)).toEqual(
      await content(wf, `(SELECT * FROM ${SOURCE_AS_LIVE} s WHERE ${modified(34, 38)}) AS l`),
    );

    expect(await lastIntervals(wf, 'merge', 3)).toEqual(THREE_SCHEDULED_RUNS);
  });
});

describe('rollback and the intervals a table holds', () => {
  describe('a rollback of a merge publication', () => {
    const wf = useFork(fixture);

    it('refuses to roll back a merge publication (its old version holds only the rows it replaced, and the keys it inserted are not recorded), before writing anything', async () => {
      const before = await content(wf, LIVE);
      const publications = await wf.publications();

      const result = await wf.run({ pipeline: PIPELINE.name, rollback: {} }, 'merge-rollback');

      expect(result.status).toBe('FAILED');
      expect(result.alerts[0]?.message).toMatch(/latest publication \(\d+\) was published by merge: its old version holds only the rows it replaced/);
      expect(await content(wf, LIVE)).toEqual(before);
      expect(await wf.publications()).toEqual(publications);
    });
  });

  describe('the intervals written by merges', () => {
    const wf = useFork(fixture);

    it('lists no stretch of the table as written by a merge publication (intervalWriters)', async () => {
      const merges = await wf.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM atomic_publish.publications WHERE publish_mode = 'merge' AND interval_start IS NOT NULL`,
      );
      expect(merges[0]!.n).toBeGreaterThan(0);
      expect(await wf.query(intervalWriters(PIPELINE.name).sql.replace(':pipeline', '$1'), [PIPELINE.name])).toEqual([]);
    });
  });
});
