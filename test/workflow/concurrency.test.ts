// Executions of the same pipeline at the same time: two executions racing
// for the pipeline's lease, a Plan overlapping another Plan's manifest DDL, and two
// executions of one batch at once (keys are not enforced on Redshift: the
// manifest's lease keeps one row per key). Two starting points are arranged
// once, the sample alone and the sample after a first run installed the
// manifest; every test acts on a copy of its own (test/support/workflow.ts
// useFork).

import { describe, expect, it } from 'vitest';
import { acquireLease } from '../../domain/lease/sql/lease.ts';
import { manifestDdl } from '../../domain/manifest/sql/manifest.ts';
import { batchIdFor, planChunks, resolveInterval, stagingTableFor } from '../../domain/plan/plan.ts';
import { startBatch } from '../../domain/plan/sql/plan.ts';
import { localWarehouse } from '../../local/aws-clients.ts';
import { newClient } from '../../local/pg-clients.ts';
import { until } from '../support/until.ts';
import {
  caughtError,
  caughtMessage,
  inputFor,
  LIVE,
  namesFor,
  PIPELINE,
  type TaskOverride,
  useFork,
  useWorkflowFixture,
  visited,
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

describe('two executions of one pipeline, of different batches, started at the same moment', () => {
  const wf = useFork(sampled);
  it("exactly one takes the pipeline's lease and publishes; the other waits for it, writing nothing meanwhile, and then publishes or is superseded: the newer data ends up live, without a page", async () => {
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
    // The holder waits at Publish until the other execution waits for the lease (or, were the lease broken, reached Publish too).
    const atPublish: string[] = [];
    const waitsForLease = (executionId: string) =>
      wf.runner
        .describe(executionId)
        ?.events()
        .some((e) => e.type === 'StateEntered' && e.state?.name === 'LeaseWait') ?? false;
    let loserWaited = false;
    wf.faults.Publish = async (input, next) => {
      const me = String((input as { executionId: string }).executionId);
      atPublish.push(me);
      if (atPublish.length === 1) {
        const other = [...planned].find((id) => id !== me)!;
        await until(() => waitsForLease(other) || atPublish.length > 1, 'the other execution waiting for the lease');
        loserWaited = waitsForLease(other);
        // While it waited it wrote nothing of its batch.
        const days = [8, 9].filter((day) => namesFor(day).batchId !== (input as { batch: { batchId: string } }).batch.batchId);
        expect(await wf.batch(namesFor(days[0]!).batchId)).toBeUndefined();
      }
      return next(input);
    };
    const days = [8, 9] as const;
    const results = await Promise.all(days.map((day) => wf.run(inputFor(day), `race-${day}`).finally(() => releasePlans())));
    wf.reset();

    expect(planned.size, 'both executions reached Plan').toBe(2);
    expect(loserWaited, 'the loser waited for the lease while the holder ran').toBe(true);
    expect(results.map((r) => r.status)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
    // The holder reached Publish first; the other took the lease only after it.
    const winner = results.findIndex((r) => r.executionId === atPublish[0]);
    const loser = 1 - winner;
    expect(visited(results[winner]!).at(-1)).toBe('Published');
    expect(visited(results[loser]!).slice(0, 6)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'LeaseHeld', 'LeaseWait', 'Plan']);
    // Newest data wins whichever won the lease: day 9 published after day 8, or day 8 superseded by day 9.
    expect(visited(results[loser]!).at(-1)).toBe(days[loser] === 9 ? 'Published' : 'Superseded');
    expect(results.flatMap((r) => r.alerts)).toEqual([]);
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(9));
    const publications = await wf.publications();
    expect(publications.map((p) => p.batch_id)).toEqual(days[winner] === 8 ? [namesFor(8).batchId, namesFor(9).batchId] : [namesFor(9).batchId]);
    expect(await wf.fingerprint(namesFor(days[winner]!).previous)).toEqual(old);
    expect(await wf.query('SELECT * FROM atomic_publish.pipeline_leases')).toEqual([]);
  });
});

describe("two executions taking one pipeline's lease at once", () => {
  const wf = useFork(installed);
  it('held together at the leases lock and released at once, they leave one lease: the first committed, which the second then sees', async () => {
    const warehouse = localWarehouse(wf.wh.endpoint, wf.wh.pg.database);
    const take = (executionId: string) =>
      warehouse.batch(
        acquireLease({ pipeline: PIPELINE.name, executionId, now: new Date(), expiresAt: new Date(Date.now() + 3_600_000) }),
        `lease ${executionId}`,
      );
    const gate = await wf.wh.gate({ table: 'atomic_publish.pipeline_leases' });
    const both = Promise.allSettled([take('execution-a'), take('execution-b')]);
    await gate.waiting(2);
    await gate.release();

    expect((await both).map((r) => (r.status === 'rejected' ? String(r.reason) : r.status))).toEqual(['fulfilled', 'fulfilled']);
    const rows = await wf.query<{ execution_id: string }>('SELECT execution_id FROM atomic_publish.pipeline_leases WHERE pipeline = $1', [PIPELINE.name]);
    expect(rows).toEqual([{ execution_id: expect.stringMatching(/^execution-[ab]$/) }]);
  });
});

// Fixed bug, kept as a regression test (domain/manifest/sql/manifest.ts manifestDdl; functions/plan): every Plan used to run the
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
  it("by the lease's holder, held together at the manifest's lock and released at once, leave one row per batch, attempt and chunk; a start by an execution without the lease writes no batch", async () => {
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
    await wf.query(
      `INSERT INTO atomic_publish.pipeline_leases (pipeline, execution_id, acquired_at, expires_at) VALUES ($1, 'execution-a', now()::timestamp, now()::timestamp + interval '1 hour')`,
      [PIPELINE.name],
    );
    // A Plan and its retry: both transactions are submitted while the manifest is locked and seen waiting for it; then they go at once.
    const gate = await wf.wh.gate({ table: 'atomic_publish.batches' });
    const both = Promise.allSettled([warehouse.batch(start('execution-a'), 'start a'), warehouse.batch(start('execution-a'), 'start a again')]);
    await gate.waiting(2);
    await gate.release();

    expect((await both).map((r) => (r.status === 'rejected' ? String(r.reason) : r.status))).toEqual(['fulfilled', 'fulfilled']);
    expect(await manifestRowsPerKey(wf, batchId)).toEqual({ batches: [1], attempts: [1], chunks: chunks.map(() => 1) });
    const batchRow = () => wf.query('SELECT attempt, execution_id FROM atomic_publish.batches WHERE batch_id = $1', [batchId]);
    expect(await batchRow()).toEqual([{ attempt: 1, execution_id: 'execution-a' }]);
    // A Plan of an execution whose lease was taken over (it was stopped meanwhile) moves no batch.
    await warehouse.batch(start('execution-b'), 'start b');
    expect(await batchRow()).toEqual([{ attempt: 1, execution_id: 'execution-a' }]);
    expect(await manifestRowsPerKey(wf, batchId)).toEqual({ batches: [1], attempts: [1], chunks: chunks.map(() => 1) });
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

    // Both planned; the one that lost the lease planned again after a LeaseWait if the holder had not recorded the batch yet.
    expect(atPlan.arrivals()).toBeGreaterThanOrEqual(2);
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
