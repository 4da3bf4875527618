// Executions of the same pipeline at the same time: two publishers racing
// for the swap, a Plan overlapping another Plan's manifest DDL, and two
// executions of one batch at once (keys are not enforced on Redshift: the
// manifest's lease keeps one row per key).
import { newClient } from '../../local/pg-clients.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchIdFor, planChunks, resolveInterval, stagingTableFor } from '../../domain/plan.ts';
import { manifestDdl } from '../../domain/sql/manifest.ts';
import { startBatch } from '../../domain/sql/plan.ts';
import { localWarehouse } from '../../local/aws-clients.ts';
import {
  caughtError,
  caughtMessage,
  inputFor,
  LIVE,
  namesFor,
  PIPELINE,
  useWorkflow,
  visited,
  type TaskOverride,
  type Workflow,
} from '../support/workflow.ts';

let wf: Workflow;
beforeAll(async () => {
  wf = await useWorkflow('wf_concurrency');
  await wf.sample({ rowsPerDay: 20, sourceDays: 12, liveDays: 5 });
});
afterAll(() => wf?.close());

describe('two executions publishing at the same moment', () => {
  it('exactly one wins; the other fails with PublishConflictError; live is exactly the winner', async () => {
    wf.reset();
    const old = await wf.fingerprint(LIVE);
    // Plans one after the other (see the next test for overlapping Plans), then both held at
    // Publish until both got there and released together: the swap transactions race.
    let planning = Promise.resolve();
    wf.faults.Plan = (input, next) => {
      const run = planning.then(() => next(input));
      planning = run.then(
        () => undefined,
        () => undefined,
      );
      return run;
    };
    let arrived = 0;
    let release!: () => void;
    const bothThere = new Promise<void>((resolve) => (release = resolve));
    const barrier: TaskOverride = async (input, next) => {
      arrived += 1;
      if (arrived === 2) release();
      await bothThere;
      return next(input);
    };
    wf.faults.Publish = barrier;
    const days = [8, 9] as const;
    // An execution that ends without reaching Publish releases the other one (and fails the test below).
    const results = await Promise.all(days.map((day) => wf.run(inputFor(day), `race-${day}`).finally(release)));
    wf.reset();

    expect(arrived, 'both executions reached Publish').toBe(2);
    expect(results.map((r) => r.status).sort()).toEqual(['FAILED', 'SUCCEEDED']);
    const winner = results.findIndex((r) => r.status === 'SUCCEEDED');
    const loser = 1 - winner;
    const loserResult = results[loser]!;
    expect(visited(loserResult).filter((s) => s !== 'LoadChunk').slice(-4)).toEqual(['Publish', 'RecordFailure', 'Notify', 'Failed']);
    expect(caughtError(loserResult)?.Error).toBe('PublishConflictError');
    expect(caughtMessage(loserResult)).toMatch(/^publish guard: pipeline sales_order_lines is at publication 1 but batch \w+ was planned on publication 0$/);

    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(days[winner]!));
    const publications = await wf.publications();
    expect(publications).toHaveLength(1);
    expect(publications[0]).toMatchObject({ seq: 1, batch_id: namesFor(days[winner]!).batchId });
    expect(await wf.fingerprint(namesFor(days[winner]!).previous)).toEqual(old);
    const lost = await wf.batch(namesFor(days[loser]!).batchId);
    expect(lost).toMatchObject({ status: 'FAILED' });
    expect(String(lost!.error)).toMatch(/^PublishConflictError: publish guard/);
    expect(await wf.tableExists(namesFor(days[loser]!).previous)).toBe(false);
    // The loser's staging is kept, unless the winner's Cleanup (after the loser failed) dropped it, and then the manifest says so.
    expect(await wf.tableExists(namesFor(days[loser]!).staging)).toBe(lost!.staging_dropped_at === null);
  });
});

// Fixed bug, kept as a regression test (domain/sql/manifest.ts manifestDdl; functions/plan): every Plan used to run the
// manifest DDL (`CREATE OR REPLACE PROCEDURE ...`), and two Plans doing so at once collided in the catalog
// ("tuple concurrently updated"), failing a run only because another execution was planning at the same
// moment. Plan now reads the installed manifest version and runs the DDL only when it is older.
describe('a Plan overlapping another session that holds the manifest DDL open', () => {
  it('neither waits for it nor fails: an installed manifest is only read', async () => {
    wf.reset();
    const other = newClient(wf.wh.pg);
    await other.connect();
    let open = true;
    const commit = async () => {
      if (open) await other.query('COMMIT');
      open = false;
    };
    try {
      await other.query('BEGIN');
      for (const statement of manifestDdl(new Date())) await other.query(statement);
      // Held past Plan, LoadChunk and Reconcile; ended before Publish, which
      // waits, by design, for transactions older than the new rows
      // (test/workflow/waits.test.ts).
      wf.faults.Publish = async (input, next) => {
        expect(open, 'the session was still open when the run reached Publish').toBe(true);
        await commit();
        return next(input);
      };
      const result = await wf.run(inputFor(10), 'overlapping-plan');
      expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(10));
    } finally {
      wf.reset();
      await commit();
      await other.end();
    }
  });
});

/** Rows per key of the manifest tables for one batch: every count must be 1. */
async function manifestRowsPerKey(batchId: string) {
  const counts = async (sql: string) => (await wf.query<{ n: number }>(sql, [batchId])).map((r) => r.n);
  return {
    batches: await counts('SELECT count(*)::int AS n FROM atomic_publish.batches WHERE batch_id = $1'),
    attempts: await counts('SELECT count(*)::int AS n FROM atomic_publish.batch_attempts WHERE batch_id = $1 GROUP BY attempt ORDER BY attempt'),
    chunks: await counts('SELECT count(*)::int AS n FROM atomic_publish.chunks WHERE batch_id = $1 GROUP BY chunk_index ORDER BY chunk_index'),
  };
}

describe('two executions of one batch at once', () => {
  it("their batch starts, held together at the manifest's lease and released at once, leave one row per batch, attempt and chunk", async () => {
    wf.reset();
    await wf.run(inputFor(6), 'installs-the-manifest');
    const interval = resolveInterval(inputFor(11), PIPELINE, new Date());
    const batchId = batchIdFor(PIPELINE, interval);
    const chunks = planChunks(interval, PIPELINE);
    const start = (executionId: string) =>
      startBatch({
        batchId,
        pipeline: PIPELINE,
        interval,
        codeVersion: 'test',
        executionId,
        basePublication: 0,
        stagingTable: stagingTableFor(PIPELINE, batchId),
        chunks,
        now: new Date(),
      });
    const warehouse = localWarehouse(wf.wh.endpoint, wf.wh.pg.database);
    // Both transactions are submitted while the manifest is locked and seen waiting for it; then they go at once.
    const gate = await wf.wh.gate({ table: 'atomic_publish.batches' });
    const both = Promise.allSettled([warehouse.batch(start('execution-a'), 'start a'), warehouse.batch(start('execution-b'), 'start b')]);
    await gate.waiting(2);
    await gate.release();

    expect((await both).map((r) => (r.status === 'rejected' ? String(r.reason) : r.status))).toEqual(['fulfilled', 'fulfilled']);
    expect(await manifestRowsPerKey(batchId)).toEqual({ batches: [1], attempts: [1, 1], chunks: chunks.map(() => 1) });
    expect(await wf.query('SELECT attempt, execution_id FROM atomic_publish.batches WHERE batch_id = $1', [batchId])).toEqual([
      { attempt: 2, execution_id: expect.stringMatching(/^execution-[ab]$/) },
    ]);
  });

  it('two whole executions of one batch started together leave one row per key, and the next execution publishes it', async () => {
    wf.reset();
    const day = 12;
    const { batchId } = namesFor(day);
    // Both Plans start only when both executions have reached Plan.
    let arrived = 0;
    let release!: () => void;
    const bothThere = new Promise<void>((resolve) => (release = resolve));
    wf.faults.Plan = async (input, next) => {
      arrived += 1;
      if (arrived === 2) release();
      await bothThere;
      return next(input);
    };
    const results = await Promise.all(['twin-a', 'twin-b'].map((name) => wf.run(inputFor(day), name).finally(release)));
    wf.reset();

    expect(arrived).toBe(2);
    // Whichever published, the other found the batch published or its staging changed: never two publications.
    expect(results).toHaveLength(2);
    expect((await wf.publications()).filter((p) => p.batch_id === batchId).length).toBeLessThanOrEqual(1);
    const rows = await manifestRowsPerKey(batchId);
    expect(rows.batches).toEqual([1]);
    expect(rows.attempts.every((n) => n === 1)).toBe(true);
    expect(rows.chunks.every((n) => n === 1)).toBe(true);

    const after = await wf.run(inputFor(day), 'after-twins');
    expect(after.status, `${caughtError(after)?.Error}: ${caughtMessage(after)}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(day));
    expect((await wf.publications()).filter((p) => p.batch_id === batchId)).toHaveLength(1);
    expect(await manifestRowsPerKey(batchId)).toMatchObject({ batches: [1] });
  });
});
