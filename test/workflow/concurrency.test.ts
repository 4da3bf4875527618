// Executions of the same pipeline at the same time: two executions racing
// for the pipeline's lease, a Plan overlapping another Plan's manifest DDL, and two
// executions of one batch at once (keys are not enforced on Redshift: the
// manifest's lease keeps one row per key). Two starting points are arranged
// once, the sample alone and the sample after a first run installed the
// manifest; every test acts on a copy of its own (test/support/workflow.ts
// useFork).
import { newClient } from '../../local/pg-clients.ts';
import { describe, expect, it } from 'vitest';
import { batchIdFor, planChunks, resolveInterval, stagingTableFor } from '../../domain/plan.ts';
import { acquireLease } from '../../domain/sql/lease.ts';
import { manifestDdl } from '../../domain/sql/manifest.ts';
import { startBatch } from '../../domain/sql/plan.ts';
import { localWarehouse } from '../../local/aws-clients.ts';
import {
  caughtError,
  planOf,
  caughtMessage,
  inputFor,
  LIVE,
  namesFor,
  PIPELINE,
  useFork,
  useWorkflowFixture,
  visited,
  type TaskOverride,
  type Workflow,
} from '../support/workflow.ts';

const SAMPLE = { rowsPerDay: 20, sourceDays: 12, liveDays: 5 };
/** The sample, nothing run yet. */
const sampled = useWorkflowFixture('wf_concurrency', (wf) => wf.sample(SAMPLE));
/** The sample after a first run (day 6) installed the manifest and published. */
const installed = useWorkflowFixture('wf_concurrency_installed', async (wf) => {
  await wf.sample(SAMPLE);
  const first = await wf.run(inputFor(6), 'installs-the-manifest');
  if (first.status !== 'SUCCEEDED') throw new Error(`the first run failed: ${first.error}: ${first.cause}`);
});

/** A task override holding every invocation until `count` have arrived, or until `open()` is called. */
function meetingPoint(count: number): { override: TaskOverride; open: () => void; arrivals: () => number } {
  let arrived = 0;
  let open!: () => void;
  const met = new Promise<void>((resolve) => (open = resolve));
  const override: TaskOverride = async (input, next) => {
    arrived += 1;
    if (arrived === count) open();
    await met;
    return next(input);
  };
  return { override, open, arrivals: () => arrived };
}

describe('two executions of one pipeline started at the same moment', () => {
  const wf = useFork(sampled);
  it("exactly one takes the pipeline's lease and publishes; the other ends PipelineBusy naming it, having written nothing, without a page", async () => {
    wf.reset();
    const old = await wf.fingerprint(LIVE);
    // Both Plans start only when both executions have reached Plan: they race for the lease.
    // (A Plan may be retried: both installing the manifest at once can collide in the catalog; executions are counted, not attempts.)
    const planned = new Set<string>();
    let releasePlans!: () => void;
    const bothAtPlan = new Promise<void>((resolve) => (releasePlans = resolve));
    wf.faults.Plan = async (input, next) => {
      planned.add(String((input as { executionId: string }).executionId));
      if (planned.size === 2) releasePlans();
      await bothAtPlan;
      return next(input);
    };
    // The holder waits at Publish until the other execution has ended (or, were the lease broken, until both got there).
    const atPublish = meetingPoint(2);
    wf.faults.Publish = atPublish.override;
    const releasePublish = atPublish.open;
    const days = [8, 9] as const;
    const ended = () => {
      releasePlans();
      releasePublish();
    };
    const results = await Promise.all(days.map((day) => wf.run(inputFor(day), `race-${day}`).finally(ended)));
    wf.reset();

    expect(planned.size, 'both executions reached Plan').toBe(2);
    expect(atPublish.arrivals(), 'only the holder reached Publish').toBe(1);
    expect(results.map((r) => r.status)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
    const winner = results.findIndex((r) => visited(r).at(-1) === 'Published');
    expect(winner).toBeGreaterThanOrEqual(0);
    const loser = 1 - winner;
    const loserResult = results[loser]!;
    expect(visited(loserResult)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'PipelineBusy']);
    expect(planOf(loserResult)).toMatchObject({ busy: true, skipped: { pipeline: PIPELINE.name, heldBy: results[winner]!.executionId } });
    const skipped = (planOf(loserResult) as unknown as { skipped: { message: string } }).skipped;
    expect(skipped.message).toContain(`pipeline ${PIPELINE.name} is being run by execution ${results[winner]!.executionId}`);
    expect(results.flatMap((r) => r.alerts)).toEqual([]);

    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(days[winner]!));
    const publications = await wf.publications();
    expect(publications).toHaveLength(1);
    expect(publications[0]).toMatchObject({ seq: 1, batch_id: namesFor(days[winner]!).batchId });
    expect(await wf.fingerprint(namesFor(days[winner]!).previous)).toEqual(old);
    // The loser refused before writing anything of its batch.
    expect(await wf.batch(namesFor(days[loser]!).batchId)).toBeUndefined();
    expect(await wf.tableExists(namesFor(days[loser]!).staging)).toBe(false);
    // The holder's Cleanup released the lease.
    expect(await wf.query('SELECT * FROM atomic_publish.pipeline_leases')).toEqual([]);
  });
});

describe("two executions taking one pipeline's lease at once", () => {
  const wf = useFork(installed);
  it('held together at the leases lock and released at once, they leave one lease: the first committed, which the second then sees', async () => {
    const warehouse = localWarehouse(wf.wh.endpoint, wf.wh.pg.database);
    const take = (executionId: string) =>
      warehouse.batch(acquireLease({ pipeline: PIPELINE.name, executionId, now: new Date(), expiresAt: new Date(Date.now() + 3_600_000) }), `lease ${executionId}`);
    const gate = await wf.wh.gate({ table: 'atomic_publish.pipeline_leases' });
    const both = Promise.allSettled([take('execution-a'), take('execution-b')]);
    await gate.waiting(2);
    await gate.release();

    expect((await both).map((r) => (r.status === 'rejected' ? String(r.reason) : r.status))).toEqual(['fulfilled', 'fulfilled']);
    const rows = await wf.query<{ execution_id: string }>('SELECT execution_id FROM atomic_publish.pipeline_leases WHERE pipeline = $1', [PIPELINE.name]);
    expect(rows).toEqual([{ execution_id: expect.stringMatching(/^execution-[ab]$/) }]);
  });
});

// Fixed bug, kept as a regression test (domain/sql/manifest.ts manifestDdl; functions/plan): every Plan used to run the
// manifest DDL (`CREATE OR REPLACE PROCEDURE ...`), and two Plans doing so at once collided in the catalog
// ("tuple concurrently updated"), failing a run only because another execution was planning at the same
// moment. Plan now reads the installed manifest version and runs the DDL only when it is older.
describe('a Plan overlapping another session that holds the manifest DDL open', () => {
  const wf = useFork(installed);
  it('neither waits for it nor fails: an installed manifest is only read', async () => {
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
async function manifestRowsPerKey(wf: Workflow, batchId: string) {
  const counts = async (sql: string) => (await wf.query<{ n: number }>(sql, [batchId])).map((r) => r.n);
  return {
    batches: await counts('SELECT count(*)::int AS n FROM atomic_publish.batches WHERE batch_id = $1'),
    attempts: await counts('SELECT count(*)::int AS n FROM atomic_publish.batch_attempts WHERE batch_id = $1 GROUP BY attempt ORDER BY attempt'),
    chunks: await counts('SELECT count(*)::int AS n FROM atomic_publish.chunks WHERE batch_id = $1 GROUP BY chunk_index ORDER BY chunk_index'),
  };
}

describe('two batch starts of one batch at once', () => {
  const wf = useFork(installed);
  it("held together at the manifest's lease and released at once, leave one row per batch, attempt and chunk", async () => {
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
    expect(await manifestRowsPerKey(wf, batchId)).toEqual({ batches: [1], attempts: [1, 1], chunks: chunks.map(() => 1) });
    expect(await wf.query('SELECT attempt, execution_id FROM atomic_publish.batches WHERE batch_id = $1', [batchId])).toEqual([
      { attempt: 2, execution_id: expect.stringMatching(/^execution-[ab]$/) },
    ]);
  });

});

describe('two executions of one batch at once', () => {
  const wf = useFork(installed);
  it('started together leave one row per key, and the next execution publishes it', async () => {
    const day = 12;
    const { batchId } = namesFor(day);
    // Both Plans start only when both executions have reached Plan.
    const atPlan = meetingPoint(2);
    wf.faults.Plan = atPlan.override;
    const results = await Promise.all(['twin-a', 'twin-b'].map((name) => wf.run(inputFor(day), name).finally(atPlan.open)));
    wf.reset();

    expect(atPlan.arrivals()).toBe(2);
    // One holds the pipeline's lease; the other ends PipelineBusy (or, after the first ended, finds the batch published): never two publications.
    expect(results).toHaveLength(2);
    expect((await wf.publications()).filter((p) => p.batch_id === batchId).length).toBeLessThanOrEqual(1);
    const rows = await manifestRowsPerKey(wf, batchId);
    expect(rows.batches).toEqual([1]);
    expect(rows.attempts.every((n) => n === 1)).toBe(true);
    expect(rows.chunks.every((n) => n === 1)).toBe(true);

    const after = await wf.run(inputFor(day), 'after-twins');
    expect(after.status, `${caughtError(after)?.Error}: ${caughtMessage(after)}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(day));
    expect((await wf.publications()).filter((p) => p.batch_id === batchId)).toHaveLength(1);
    expect(await manifestRowsPerKey(wf, batchId)).toMatchObject({ batches: [1] });
  });
});
