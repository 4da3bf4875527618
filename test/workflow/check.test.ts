// A check (input `"check": true`): the reconciliation gate of an interval
// run without publishing, on the synthesized state machine. It runs as a
// batch of its own (check 1, 2, ... of the interval), ends after Reconcile
// through CheckOnly -> CheckCleanup -> Checked, leaves the live table as
// it was, and its verdict is the execution's output: a failed gate pages
// no one and writes no ReconcileFailed metric.
// A passing check (check 1) is arranged once; each describe acts on its own
// copy of what it left (test/support/workflow.ts useFork).
import { beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../domain/errors.ts';
import { batchIdFor, resolveInterval, stagingTableFor } from '../../domain/plan/plan.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { holdStep } from '../support/step-hold.ts';
import { until } from '../support/until.ts';
import {
  caughtError,
  caughtMessage,
  inputFor,
  LIVE,
  PIPELINE,
  useFork,
  useWorkflowFixture,
  visited,
  visitedOutsideChunks,
  type Workflow,
} from '../support/workflow.ts';

const DAY = 6;
const check = (day = DAY) => ({ ...inputFor(day), check: true });
const checkId = (n: number, day = DAY) => batchIdFor(PIPELINE, resolveInterval(check(day), PIPELINE, new Date()), { kind: 'check', n });
const lease = async (wf: Workflow) => wf.query('SELECT execution_id FROM atomic_publish.pipeline_leases WHERE pipeline = $1', [PIPELINE.name]);
const batchCount = async (wf: Workflow) => Number((await wf.query<{ n: string }>('SELECT COUNT(*) AS n FROM atomic_publish.batches'))[0]!.n);

// Check 1 of the interval, passed: the manifest exists, and a later check of the interval is check 2.
const fixture = useWorkflowFixture('wf_check', async (wf) => {
  await wf.sample({ rowsPerDay: 6, sourceDays: DAY + 1, liveDays: 3 });
  const liveBefore = await wf.fingerprint(LIVE);
  return { liveBefore, passed: await wf.run(check(), 'check-passes') };
});

const reconcileOutput = (result: Awaited<ReturnType<Workflow['run']>>) =>
  result.output?.reconcile as { passed: boolean; checks: { check: string; passed: boolean; observed: string; expected: string }[]; failure?: string };

describe('a check that passes', () => {
  const wf = useFork(fixture);
  let result: Awaited<ReturnType<Workflow['run']>>;
  let liveBefore: Awaited<ReturnType<Workflow['fingerprint']>>;
  beforeAll(() => {
    ({ passed: result, liveBefore } = fixture.arranged);
  });

  it('succeeds through CheckOnly, CheckCleanup and Checked, never entering Publish', () => {
    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(visitedOutsideChunks(result)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'LoadChunks', 'Reconcile', 'CheckOnly', 'CheckCleanup', 'Checked']);
    expect(reconcileOutput(result)).toMatchObject({ passed: true });
    expect(reconcileOutput(result).checks.map((c) => c.check)).toContain('staging_rows_match_source');
    expect(reconcileOutput(result).checks.every((c) => c.passed && typeof c.expected === 'string')).toBe(true);
  });

  it('leaves the live table byte for byte as it was, publishes nothing and keeps no staging', async () => {
    expect(await wf.fingerprint(LIVE)).toEqual(liveBefore);
    expect(await wf.publications()).toEqual([]);
    expect(await wf.tableExists(`analytics.${stagingTableFor(PIPELINE, checkId(1))}`)).toBe(false);
    expect(await wf.derivedTables()).toEqual([]);
  });

  it('records check 1 as a check batch ended CHECK_PASSED, with its check results, and releases the lease', async () => {
    const batch = await wf.batch(checkId(1));
    expect(batch).toMatchObject({ status: 'CHECK_PASSED', purpose: 'check' });
    expect(batch?.staging_dropped_at).not.toBeNull();
    const [attempt] = await wf.query('SELECT status FROM atomic_publish.batch_attempts WHERE batch_id = $1', [checkId(1)]);
    expect(attempt).toEqual({ status: 'CHECK_PASSED' });
    expect(
      Number((await wf.query<{ n: string }>('SELECT COUNT(*) AS n FROM atomic_publish.check_results WHERE batch_id = $1', [checkId(1)]))[0]!.n),
    ).toBeGreaterThan(0);
    // Not the interval's publishing batch.
    expect(await wf.batch(batchIdFor(PIPELINE, resolveInterval(check(), PIPELINE, new Date())))).toBeUndefined();
    expect(await lease(wf)).toEqual([]);
  });
});

describe('a check the gate fails', () => {
  const wf = useFork(fixture);
  let result: Awaited<ReturnType<Workflow['run']>>;
  let liveBefore: Awaited<ReturnType<Workflow['fingerprint']>>;
  beforeAll(async () => {
    liveBefore = await wf.fingerprint(LIVE);
    // A source row arrives after the loads: the source no longer matches staging.
    wf.faults.Reconcile = async (input, next) => {
      await wf.query(`INSERT INTO source.sales_order_lines VALUES (900000001, 1, $1::timestamp + interval '1 hour', 1, 1, 1, 5.00)`, [
        sampleDay(DAY - 1)
          .toISOString()
          .slice(0, 19),
      ]);
      return next(input);
    };
    result = await wf.run(check(), 'check-fails');
  });

  it('succeeds with the verdict in its output: passed false, the failing checks and where the content differs, the alert text as failure', () => {
    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(visited(result)).toContain('Checked');
    expect(visited(result)).not.toContain('RecordFailure');
    const verdict = reconcileOutput(result);
    expect(verdict.passed).toBe(false);
    expect(verdict.checks.find((c) => c.check === 'staging_rows_match_source')).toMatchObject({ passed: false });
    expect(verdict.checks.find((c) => c.check === 'missing_in_staging')).toMatchObject({ passed: false, observed: expect.stringMatching(/^1 key\(s\)/) });
    expect(verdict.failure).toMatch(/check\(s\) failed for batch /);
  });

  it('pages no one and writes no ReconcileFailed (nor BatchFailed) metric', () => {
    expect(result.alerts).toEqual([]);
    expect(result.metrics.filter((m) => 'ReconcileFailed' in m.values || 'BatchFailed' in m.values)).toEqual([]);
  });

  it('leaves the live table untouched and ends check 2 CHECK_FAILED: a finished check is never resumed', async () => {
    expect(await wf.fingerprint(LIVE)).toEqual(liveBefore);
    expect(await wf.publications()).toEqual([]);
    expect(await wf.batch(checkId(2))).toMatchObject({ status: 'CHECK_FAILED', purpose: 'check' });
    expect(await wf.batch(checkId(1))).toMatchObject({ status: 'CHECK_PASSED' });
    expect(await wf.derivedTables()).toEqual([]);
    expect(await lease(wf)).toEqual([]);
  });
});

describe('an interrupted check', () => {
  const wf = useFork(fixture);

  it('is resumed by the next check of the interval, keeping the chunks it loaded', async () => {
    wf.faults.Reconcile = async () => {
      throw new ValidationError('the check was interrupted');
    };
    const failed = await wf.run(check(), 'check-interrupted');
    expect(failed.status).toBe('FAILED');
    expect(caughtMessage(failed)).toBe('the check was interrupted');
    // Check 1 ended (CHECK_PASSED): this one is check 2.
    expect(await wf.batch(checkId(2))).toMatchObject({ status: 'FAILED', purpose: 'check' });
    const loaded = wf.loads.started.length;
    expect(loaded).toBeGreaterThan(0);

    wf.reset();
    const resumed = await wf.run(check(), 'check-resumed');

    expect(resumed.status, `${resumed.error}: ${resumed.cause}`).toBe('SUCCEEDED');
    expect(wf.loads.started).toEqual([]);
    expect(await wf.batch(checkId(2))).toMatchObject({ status: 'CHECK_PASSED', attempt: 2 });
    expect(await wf.batch(checkId(3))).toBeUndefined();
  });
});

describe('a check and the pipeline lease', () => {
  const wf = useFork(fixture);

  it('waits, writing nothing, while another execution holds the lease, and checks once that execution has ended', async () => {
    const hold = holdStep(wf, 'LoadChunk');
    const holder = await wf.start(inputFor(DAY), 'holds-the-lease');
    await hold.reached;
    const batches = await batchCount(wf);
    const checking = await wf.start(check(), 'check-waits');
    const entered = (state: string) =>
      wf.runner
        .describe(checking.executionId)!
        .events()
        .some((e) => e.type === 'StateEntered' && e.state?.name === state);
    await until(() => entered('LeaseWait'), 'the check waiting for the lease');
    expect(await batchCount(wf)).toBe(batches);
    hold.release();
    wf.reset();
    expect((await holder.result).status).toBe('SUCCEEDED');
    const checked = await checking.result;
    expect(checked.status, `${caughtError(checked)?.Error}: ${caughtMessage(checked)}`).toBe('SUCCEEDED');
    expect(visited(checked).slice(0, 5)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'LeaseHeld', 'LeaseWait']);
    expect(visited(checked).at(-1)).toBe('Checked');
    expect(checked.alerts).toEqual([]);
  });
});

describe('Publish and a check batch', () => {
  const wf = useFork(fixture);

  it('refuses it when a check reaches Publish anyway (its plan stripped of the flag): the manifest says it is a check; nothing is published', async () => {
    const liveBefore = await wf.fingerprint(LIVE);
    wf.faults.Plan = async (input, next) => {
      const planned = (await next(input)) as { batch: Record<string, unknown> };
      const { check: _dropped, ...batch } = planned.batch;
      return { ...planned, batch };
    };

    const result = await wf.run(check(), 'check-to-publish');

    expect(result.status).toBe('FAILED');
    expect(visited(result)).toContain('Publish');
    expect(caughtError(result)?.Error).toBe('ValidationError');
    expect(caughtMessage(result)).toMatch(
      /^batch [0-9a-f]{16} of pipeline sales_order_lines is a check \(the gate run without publishing\): Publish refuses it; nothing was published/,
    );
    expect(await wf.fingerprint(LIVE)).toEqual(liveBefore);
    expect(await wf.publications()).toEqual([]);
  });
});

describe('bad check input, refused in Plan before anything is written', () => {
  // Each refused run writes nothing (what each test proves), so they share one copy.
  const wf = useFork(fixture);
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['check not a boolean', { ...check(), check: 'yes' }, /^input\.check must be true or false, got "yes"/],
    ['check with restate', { ...check(), restate: true }, /^input\.check and input\.restate exclude each other/],
    [
      'check with rollback',
      { pipeline: PIPELINE.name, rollback: {}, check: true },
      /^input\.check runs the gate of one pipeline's interval without publishing; a rollback input takes no check/,
    ],
    ['check with a migration', { pipeline: PIPELINE.name, migrate: true, check: true }, /; a migration input takes no check/],
    ['check with a group', { group: 'sales', check: true }, /; a publish group input takes no check/],
  ];
  for (const [what, input, message] of cases) {
    it(what, async () => {
      wf.reset();
      const batches = await batchCount(wf);

      const result = await wf.run(input, `bad-${what.replace(/\W+/g, '-')}`);

      expect(result.status).toBe('FAILED');
      expect(caughtError(result)?.Error).toBe('ValidationError');
      expect(caughtMessage(result)).toMatch(message);
      expect(await batchCount(wf)).toBe(batches);
      expect(wf.loads.started).toEqual([]);
    });
  }
});
