// publishMode 'replace-intervals' on the sample: a backfill of February
// (sample days 31 to 59) of a table whose other months stay exactly as they were, readers reading
// throughout, and scheduled runs whose lookback picks up a late row once.
// The backfill (readers reading) is arranged once; each describe acts on its
// own copy of what it left (test/support/workflow.ts useFork).
import '../support/intervals-pipeline.ts';
import { beforeAll, describe, expect, it } from 'vitest';
import { liveFingerprintQuery } from '../../domain/live-watch/sql/out-of-band.ts';
import { batchIdFor, previousVersionTableFor } from '../../domain/plan/plan.ts';
import { intervalWriters } from '../../domain/publish/sql/intervals.ts';
import { localWarehouse } from '../../local/aws-clients.ts';
import { ReaderPool, type ReaderSample } from '../../local/readers.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { LOOKBACK } from '../support/intervals-pipeline.ts';
import { holdGate, type LockGate } from '../support/lock-gate.ts';
import { lastIntervals, scheduledRunOn, THREE_SCHEDULED_RUNS } from '../support/scheduled-run.ts';
import { until } from '../support/until.ts';
import { type Fingerprint, LIVE, PIPELINE, useFork, useWorkflowFixture } from '../support/workflow.ts';

const [FROM_DAY, TO_DAY] = [31, 59];
const KEY = 'order_id * 1000 + line_no';
const ts = (day: number) => sampleDay(day).toISOString().slice(0, 19);
/** The live rows of `[from, to)` as a table expression. */
const liveDays = (from: number, to: number) => `(SELECT * FROM ${LIVE} WHERE ordered_at >= '${ts(from)}' AND ordered_at < '${ts(to)}') AS days`;
/** What the source says `[from, to)` should hold. */
const sourceDays = (from: number, to: number) =>
  `(SELECT order_id, line_no, ordered_at, customer_id, product_id, quantity, amount, CAST(amount / quantity AS numeric(12, 4)) AS unit_price
      FROM source.sales_order_lines WHERE ordered_at >= '${ts(from)}' AND ordered_at < '${ts(to)}') AS days`;
const LAST_DAY = 70;

/** Every sample a reader took: count and key sum, as one of the allowed states. */
function states(samples: readonly ReaderSample[]): string[] {
  return [...new Set(samples.map((s) => (s.error ? `error: ${s.error}` : `${s.count}/${s.keySum}`)))];
}

const BACKFILL = { pipeline: PIPELINE.name, from: sampleDay(FROM_DAY).toISOString(), to: sampleDay(TO_DAY).toISOString() };

// February replaced after upstream corrections, readers of the month and of
// the whole table reading before, while and after Publish holds its transaction.
const fixture = useWorkflowFixture(
  'wf_replace',
  async (wf) => {
    await wf.sample({ rowsPerDay: 20, sourceDays: LAST_DAY, liveDays: 65 });
    // Upstream corrections inside the month (changed amounts, a line gone, a
    // line added) and one outside it, which this backfill must not publish.
    await wf.query(`UPDATE source.sales_order_lines SET amount = amount + 1 WHERE line_no = 1 AND ordered_at >= $1 AND ordered_at < $2`, [
      ts(FROM_DAY),
      ts(TO_DAY),
    ]);
    await wf.query(`DELETE FROM source.sales_order_lines WHERE order_id = (SELECT MIN(order_id) FROM source.sales_order_lines WHERE ordered_at >= $1)`, [
      ts(40),
    ]);
    await wf.query(`INSERT INTO source.sales_order_lines VALUES (900000001, 1, $1::timestamp + interval '5 hours', 7, 8, 2, 50.00)`, [ts(45)]);
    await wf.query(`UPDATE source.sales_order_lines SET amount = amount + 100 WHERE ordered_at >= $1 AND ordered_at < $2`, [ts(62), ts(63)]);

    const before = {
      month: await wf.fingerprint(liveDays(FROM_DAY, TO_DAY)),
      earlier: await wf.fingerprint(liveDays(0, FROM_DAY)),
      later: await wf.fingerprint(liveDays(TO_DAY, LAST_DAY)),
      all: await wf.fingerprint(LIVE),
    };
    const expectedMonth = await wf.fingerprint(sourceDays(FROM_DAY, TO_DAY));

    // Readers of the month (a view) and of the whole table, through plain connections, as dashboards read.
    await wf.query(`CREATE VIEW analytics.replaced_month AS SELECT * FROM ${LIVE} WHERE ordered_at >= '${ts(FROM_DAY)}' AND ordered_at < '${ts(TO_DAY)}'`);
    await wf.query(`GRANT SELECT ON analytics.replaced_month TO PUBLIC`);
    const month = new ReaderPool(wf.wh.pg, 2, { keyExpression: KEY, pauseMs: 2 });
    const whole = new ReaderPool(wf.wh.pg, 2, { keyExpression: KEY, pauseMs: 2 });
    month.watch('analytics.replaced_month');
    whole.watch(LIVE);

    // Publish is held inside its transaction, after its DELETE and INSERT of
    // the live table, at its update of the batch's attempt: the readers then
    // read while the replace is provably under way.
    let gate: LockGate | undefined;
    wf.faults.Publish = async (input, next) => {
      gate = await holdGate(wf.wh.pg, { table: 'atomic_publish.batch_attempts' });
      return next(input);
    };
    let heldModes: string[];
    let result: ExecutionResult;
    try {
      const running = await wf.start(BACKFILL, 'replace-month');
      await until(() => gate !== undefined, 'Publish to start');
      const [pid] = await gate!.waiting();
      heldModes = (await wf.query<{ mode: string }>(`SELECT mode FROM pg_locks WHERE pid = $1 AND relation = $2::regclass AND granted`, [pid, LIVE])).map(
        (h) => h.mode,
      );
      await Promise.all([month.readAll(), whole.readAll()]);
      month.phase('held');
      whole.phase('held');
      await Promise.all([month.readAll(), whole.readAll()]);
      month.phase('released');
      whole.phase('released');
      await gate!.release();
      result = await running.result;
      month.phase('after');
      whole.phase('after');
      await Promise.all([month.readAll(), whole.readAll()]);
    } finally {
      await gate?.release();
      wf.reset();
    }
    const monthSamples = await month.close();
    const wholeSamples = await whole.close();
    return { before, expectedMonth, heldModes, result, monthSamples, wholeSamples };
  },
  { env: { PUBLISH_LOCK_WAIT_MS: '600000' } },
);

describe('replace-intervals', () => {
  describe('a backfill of February', () => {
    const wf = useFork(fixture);

    it('replaces February with readers reading: each reader sees the old month or the new one, January and March stay byte-identical', async () => {
      const { before, expectedMonth, heldModes, result, monthSamples, wholeSamples } = fixture.arranged;
      expect(expectedMonth).not.toEqual(before.month);
      expect(heldModes).toContain('RowExclusiveLock');
      expect(heldModes).not.toContain('AccessExclusiveLock');
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');

      const after = { month: await wf.fingerprint(liveDays(FROM_DAY, TO_DAY)), all: await wf.fingerprint(LIVE) };
      expect(after.month).toEqual(expectedMonth);
      expect(await wf.fingerprint(liveDays(0, FROM_DAY))).toEqual(before.earlier);
      expect(await wf.fingerprint(liveDays(TO_DAY, LAST_DAY))).toEqual(before.later);

      // Old or new, nothing else: while held, only the old states.
      const old = (f: Fingerprint) => `${f.rows}/${f.keySum}`;
      expect(states(monthSamples)).toEqual(expect.arrayContaining([old(after.month)]));
      for (const s of states(monthSamples)) expect([old(before.month), old(after.month)]).toContain(s);
      for (const s of states(wholeSamples)) expect([old(before.all), old(after.all)]).toContain(s);
      expect(states(monthSamples.filter((s) => s.phase === 'held'))).toEqual([old(before.month)]);
      expect(states(wholeSamples.filter((s) => s.phase === 'held'))).toEqual([old(before.all)]);
      expect(states(monthSamples.filter((s) => s.phase === 'after'))).toEqual([old(after.month)]);

      // The replaced rows are kept as the publication's old version; the manifest says what it wrote.
      const batchId = batchIdFor(PIPELINE, { from: sampleDay(FROM_DAY), to: sampleDay(TO_DAY) });
      const retained = `analytics.${previousVersionTableFor(PIPELINE, batchId)}`;
      expect(await wf.fingerprint(retained)).toEqual(before.month);
      const [publication] = await wf.query<Record<string, unknown>>(
        `SELECT publish_mode, interval_start, interval_end, rows_published, old_version_table FROM atomic_publish.publications WHERE batch_id = $1`,
        [batchId],
      );
      expect(publication).toEqual({
        publish_mode: 'replace-intervals',
        interval_start: sampleDay(FROM_DAY),
        interval_end: sampleDay(TO_DAY),
        rows_published: String(expectedMonth.rows),
        old_version_table: retained,
      });
      // Watched (test/support/intervals-pipeline.ts): the publication recorded the whole live table as the replace left it.
      const [recorded] = await wf.query<{ live_columns: string; live_fingerprint: string }>(
        `SELECT live_columns, live_fingerprint FROM atomic_publish.publications WHERE batch_id = $1`,
        [batchId],
      );
      const [now] = await localWarehouse(wf.wh.endpoint, wf.wh.pg.database).query(
        liveFingerprintQuery(PIPELINE, recorded!.live_columns.split(';')),
        'test-live-fingerprint',
      );
      expect(recorded!.live_columns).toMatch(/^order_id bigint;line_no integer;.*;unit_price numeric\(12,4\)$/);
      expect(recorded!.live_fingerprint).toBe(now!.fingerprint);
      expect(recorded!.live_fingerprint).toMatch(new RegExp(`^${after.all.rows}:`));
    });
  });

  describe('a replay of the backfill', () => {
    const wf = useFork(fixture);

    it('replays the backfill without changing anything', async () => {
      const before = await wf.fingerprint(LIVE);
      const publications = await wf.publications();

      const result = await wf.run(BACKFILL, 'replace-month-replay');

      expect(result.status).toBe('SUCCEEDED');
      expect((result.output as { plan?: { alreadyPublished?: boolean } }).plan?.alreadyPublished ?? true).toBe(true);
      expect(await wf.fingerprint(LIVE)).toEqual(before);
      expect(await wf.publications()).toEqual(publications);
    });
  });

  describe('an interval outside history', () => {
    const wf = useFork(fixture);

    it('refuses an interval outside history before writing anything', async () => {
      const publications = await wf.publications();
      const result = await wf.run({ pipeline: PIPELINE.name, from: '2025-12-01T00:00:00Z', to: sampleDay(3).toISOString() }, 'replace-before-history');

      expect(result.status).toBe('FAILED');
      expect(result.alerts[0]?.message).toContain('is before the history of pipeline sales_order_lines');
      expect(await wf.publications()).toEqual(publications);
    });
  });
});

describe('scheduled runs with a lookback', () => {
  const wf = useFork(fixture);

  it('publishes a row that arrives a day late exactly once over two scheduled runs', async () => {
    const first = await scheduledRunOn(wf, 36, 'scheduled-36');
    expect(first.status, `${first.error}: ${first.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(liveDays(36 - 1 - LOOKBACK, 36))).toEqual(await wf.fingerprint(sourceDays(36 - 1 - LOOKBACK, 36)));

    // Entered in the source system after the morning run, for yesterday.
    await wf.query(`INSERT INTO source.sales_order_lines VALUES (900000002, 1, $1::timestamp + interval '23 hours', 9, 9, 1, 19.99)`, [ts(35)]);
    const late = () => wf.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${LIVE} WHERE order_id = 900000002`);
    expect(await late()).toEqual([{ n: 0 }]);

    const second = await scheduledRunOn(wf, 37, 'scheduled-37');
    expect(second.status, `${second.error}: ${second.cause}`).toBe('SUCCEEDED');
    expect(await late()).toEqual([{ n: 1 }]);

    const third = await scheduledRunOn(wf, 38, 'scheduled-38');
    expect(third.status, `${third.error}: ${third.cause}`).toBe('SUCCEEDED');
    expect(await late()).toEqual([{ n: 1 }]);
    expect(await wf.fingerprint(liveDays(34, 38))).toEqual(await wf.fingerprint(sourceDays(34, 38)));

    expect(await lastIntervals(wf, 'replace-intervals', 3)).toEqual(THREE_SCHEDULED_RUNS);
  });
});

describe('rollback', () => {
  const wf = useFork(fixture);
  /** Source days 60 to 62 corrected upstream, then replaced: the publication the rollbacks undo. */
  const input = { pipeline: PIPELINE.name, from: sampleDay(60).toISOString(), to: sampleDay(63).toISOString() };
  let before: Fingerprint;
  let after: Fingerprint;
  let published: ExecutionResult;
  let publishedDays: Fingerprint;
  let replaced: number;
  /** What each step left: a rollback, a second one undoing it, a refused rollback to a named batch. */
  let first: { result: ExecutionResult; live: Fingerprint; publications: Record<string, unknown>[]; rolledBackDays: Fingerprint; retained: Fingerprint };
  let second: { result: ExecutionResult; live: Fingerprint; publications: Record<string, unknown>[]; writers: number[] };
  let named: { result: ExecutionResult; live: Fingerprint; publications: Record<string, unknown>[] };
  beforeAll(async () => {
    await wf.query(`UPDATE source.sales_order_lines SET amount = amount + 3 WHERE ordered_at >= $1 AND ordered_at < $2`, [ts(60), ts(63)]);
    before = await wf.fingerprint(LIVE);
    published = await wf.run(input, 'replace-then-rollback');
    after = await wf.fingerprint(LIVE);
    publishedDays = await wf.fingerprint(liveDays(60, 63));
    replaced = Number((await wf.publications()).at(-1)!.seq);

    const result = await wf.run({ pipeline: PIPELINE.name, rollback: {} }, 'replace-rollback');
    first = {
      result,
      live: await wf.fingerprint(LIVE),
      publications: await wf.publications(),
      rolledBackDays: await wf.fingerprint(liveDays(60, 63)),
      retained: await wf.fingerprint(`analytics.sales_order_lines__rbs_${replaced}`),
    };

    const undo = await wf.run({ pipeline: PIPELINE.name, rollback: {} }, 'replace-rollback-undo');
    const writers = await wf.query<{ seq: number }>(intervalWriters(PIPELINE.name).sql.replace(':pipeline', '$1'), [PIPELINE.name]);
    second = { result: undo, live: await wf.fingerprint(LIVE), publications: await wf.publications(), writers: writers.map((w) => w.seq) };

    const refused = await wf.run({ pipeline: PIPELINE.name, rollback: { to: String(second.publications.at(-2)!.batch_id) } }, 'replace-rollback-to');
    named = { result: refused, live: await wf.fingerprint(LIVE), publications: await wf.publications() };
  });

  it('undoes the latest replace: the rows it replaced are live again, every other row untouched, recorded as a rollback', () => {
    expect(published.status, `${published.error}: ${published.cause}`).toBe('SUCCEEDED');
    expect(after).not.toEqual(before);
    const { result } = first;
    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(first.live).toEqual(before);
    const [undone, rollback] = first.publications.slice(-2);
    expect(undone).toMatchObject({ seq: replaced, rolled_back_at: expect.any(Date), restored_at: expect.any(Date) });
    expect(rollback).toMatchObject({
      seq: replaced + 1,
      rollback_of: replaced,
      publish_mode: 'replace-intervals',
      interval_start: sampleDay(60),
      interval_end: sampleDay(63),
      old_version_table: `analytics.sales_order_lines__rbs_${replaced}`,
      rows_published: String(first.rolledBackDays.rows),
    });
    // The rows rolled away from are kept: the rollback can be undone.
    expect(first.retained).toEqual(publishedDays);
  });

  it('undoes the rollback with a second one, and then the replace is live and counted as written again', () => {
    const { result } = second;
    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(second.live).toEqual(after);
    const rows = second.publications;
    expect(rows.find((p) => Number(p.seq) === replaced)).toMatchObject({ rolled_back_at: null });
    expect(rows.at(-1)).toMatchObject({ rollback_of: replaced + 1, old_version_table: `analytics.sales_order_lines__rbs_${replaced + 1}` });
    expect(second.writers).toContain(replaced);
    expect(second.writers).not.toContain(replaced + 1);
  });

  it('refuses a rollback to a named batch, one publication at a time, before writing anything', () => {
    const { result } = named;
    expect(result.status).toBe('FAILED');
    expect(result.alerts[0]?.message).toContain('it is rolled back one publication at a time, newest first');
    expect(named.live).toEqual(after);
    expect(named.publications).toEqual(second.publications);
  });
});
