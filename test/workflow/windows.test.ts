// A batch of more chunks than one window holds runs in windows: Plan
// records the windows, LoadWindows (a Distributed Map) runs each as a child
// execution whose PlanWindow records its chunks, and the inline Map loads
// them. Windows of 3 chunks here (CHUNKS_PER_WINDOW) so that 8 day chunks
// make 3 windows; the 87,600-chunk run is test/workflow/long-batch.test.ts.
// The run that fails in its second window is arranged once; the re-run, the
// replay, the check and the aborted batch each act on a copy of what it
// left (test/support/workflow.ts useFork).
import { beforeAll, describe, expect, it } from 'vitest';
import { WarehouseError } from '../../domain/errors.ts';
import { CHUNKS_PER_WINDOW_ENV } from '../../domain/plan/windows.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { holdGate, type LockGate } from '../support/lock-gate.ts';
import { until } from '../support/until.ts';
import {
  caughtError,
  type Fingerprint,
  inputFor,
  LIVE,
  namesFor,
  useFork,
  useWorkflowFixture,
  visitedOutsideChunks,
  type Workflow,
} from '../support/workflow.ts';

const TO_DAY = 8;
const { batchId, staging } = namesFor(TO_DAY);

const fixture = useWorkflowFixture(
  'wf_windows',
  async (wf) => {
    await wf.sample({ rowsPerDay: 20, sourceDays: 10, liveDays: 3 });
    const before = await wf.fingerprint(LIVE);
    wf.faults.WindowLoadChunk = async (input, next) => {
      if ((input as { chunk: { index: number } }).chunk.index === 4) throw new WarehouseError('injected: chunk 4 cannot be loaded');
      return next(input);
    };
    try {
      return { before, failed: await wf.run(inputFor(TO_DAY), 'windows-fail') };
    } finally {
      await wf.quiesce();
      wf.reset();
    }
  },
  { env: { [CHUNKS_PER_WINDOW_ENV]: '3' } },
);

const windowRows = (wf: Workflow) =>
  wf.query<{ window_index: number; first_chunk: number; chunk_count: number }>(
    'SELECT window_index, first_chunk, chunk_count FROM atomic_publish.batch_windows WHERE batch_id = $1 ORDER BY window_index',
    [batchId],
  );

/** The batch's chunks the failed run left DONE. */
async function doneChunks(wf: Workflow): Promise<number[]> {
  const rows = await wf.query<{ chunk_index: number }>(
    `SELECT chunk_index FROM atomic_publish.chunk_state WHERE batch_id = $1 AND status = 'DONE' ORDER BY chunk_index`,
    [batchId],
  );
  return rows.map((r) => r.chunk_index);
}

describe('a batch longer than one window', () => {
  const wf = useFork(fixture);
  let before: Fingerprint;
  let result: ExecutionResult;
  beforeAll(() => {
    ({ before, failed: result } = fixture.arranged);
  });

  it('fails in its second window with the live table untouched, a page, and the first window kept', async () => {
    expect(result.status).toBe('FAILED');
    expect(caughtError(result)?.Error).toBe('States.ExceedToleratedFailureThreshold');
    expect(caughtError(result)?.Cause).toContain('chunk 4 cannot be loaded');
    expect(await wf.fingerprint(LIVE)).toEqual(before);
    expect(result.alerts).toHaveLength(1);
    expect(result.alerts[0]!.message).toContain("a window of the batch's chunks failed");
    expect((await wf.batch(batchId))?.status).toBe('FAILED');
    // The third window never started: the Map tolerates no failure.
    expect(result.childExecutions.map((c) => c.status)).toEqual(['SUCCEEDED', 'FAILED']);
    expect(await windowRows(wf)).toEqual([
      { window_index: 0, first_chunk: 0, chunk_count: 3 },
      { window_index: 1, first_chunk: 3, chunk_count: 3 },
      { window_index: 2, first_chunk: 6, chunk_count: 2 },
    ]);
    // The first window's chunks are done; the third's were never recorded.
    const chunks = await wf.query<{ chunk_index: number; status: string }>(
      'SELECT chunk_index, status FROM atomic_publish.chunk_state WHERE batch_id = $1 ORDER BY chunk_index',
      [batchId],
    );
    expect(chunks.filter((c) => c.chunk_index < 3).map((c) => c.status)).toEqual(['DONE', 'DONE', 'DONE']);
    expect(chunks.map((c) => c.chunk_index)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(chunks.find((c) => c.chunk_index === 4)?.status).not.toBe('DONE');
  });
});

describe('the re-run of a batch that failed in its second window', () => {
  const wf = useFork(fixture);
  /** Chunks the failed run left DONE: the re-run must not load them again. */
  let doneAfterFailure: number[];
  let result: ExecutionResult;
  beforeAll(async () => {
    doneAfterFailure = await doneChunks(wf);
    result = await wf.run(inputFor(TO_DAY), 'windows-resume');
  });

  it('resumes: the done chunks are not loaded again, and the published table is exactly the source', async () => {
    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(TO_DAY));
    expect(doneAfterFailure.length).toBeGreaterThanOrEqual(3);
    const loaded = wf.calls.filter((c) => c.state === 'WindowLoadChunk').map((c) => c.chunk);
    expect(loaded.sort()).toEqual([...Array(8).keys()].filter((i) => !doneAfterFailure.includes(i)));
    expect(wf.calls.filter((c) => c.state === 'LoadChunk')).toEqual([]);
    expect(wf.calls.filter((c) => c.state === 'PlanWindow')).toHaveLength(3);
    expect(result.childExecutions.map((c) => c.status)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    // The parent's history holds no chunk: only the Distributed Map's state.
    expect(visitedOutsideChunks(result)).toEqual([
      'Input',
      'Plan',
      'AlreadyPublished',
      'LoadWindows',
      'Reconcile',
      'CheckOnly',
      'Publish',
      'NewerDataLive',
      'EmitMetrics',
      'Cleanup',
      'Published',
    ]);
    expect(result.events.some((e) => e.state?.name === 'WindowLoadChunk')).toBe(false);
    const loads = await wf.query<{ chunk_index: number; loads: string; status: string }>(
      'SELECT chunk_index, loads, status FROM atomic_publish.chunk_state WHERE batch_id = $1 ORDER BY chunk_index',
      [batchId],
    );
    expect(loads.map((r) => [r.chunk_index, r.status, Number(r.loads)])).toEqual([...Array(8).keys()].map((i) => [i, 'DONE', 1]));
    expect(await wf.tableExists(staging)).toBe(false);
  });
});

describe('a replay after the re-run published', () => {
  const wf = useFork(fixture);
  let result: ExecutionResult;
  beforeAll(async () => {
    const rerun = await wf.run(inputFor(TO_DAY), 'windows-resume');
    expect(rerun.status, `${rerun.error}: ${rerun.cause}`).toBe('SUCCEEDED');
    result = await wf.run(inputFor(TO_DAY), 'windows-replay');
  });

  it('ends at NothingToPublish without starting a window', () => {
    expect(result.status).toBe('SUCCEEDED');
    expect(visitedOutsideChunks(result)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'NothingToPublish']);
    expect(result.childExecutions).toEqual([]);
  });
});

describe('a check of a batch in windows', () => {
  const wf = useFork(fixture);

  it('checks a batch in windows too: its windows load, then CheckOnly ends it at Checked, nothing published', async () => {
    const live = await wf.fingerprint(LIVE);

    const result = await wf.run({ ...inputFor(TO_DAY), check: true }, 'windows-check');

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(visitedOutsideChunks(result)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'LoadWindows', 'Reconcile', 'CheckOnly', 'CheckCleanup', 'Checked']);
    expect(result.childExecutions.map((c) => c.status)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    expect((result.output?.reconcile as { passed: boolean }).passed).toBe(true);
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    expect(await wf.derivedTables()).not.toContainEqual(expect.stringContaining('__stg_'));
  });
});

describe('a batch in windows whose execution is aborted', () => {
  const wf = useFork(fixture);
  const day = TO_DAY + 1;
  const names = namesFor(day);
  /** Chunk loads of this batch still running, found by their statement names. */
  const runningLoads = async () => (await wf.runningLoads(names.batchId)).map((l) => l.chunk_index);

  it('stops its window, leaves no load running, marks the batch FAILED, and a re-run resumes it', async () => {
    let gate: LockGate | undefined;
    // The second window's loads wait at a lock on staging.
    wf.faults.PlanWindow = async (input, next) => {
      const output = await next(input);
      if ((input as { window: { index: number } }).window.index === 1) gate = await holdGate(wf.wh.pg, { table: names.staging });
      return output;
    };
    try {
      const execution = await wf.start(inputFor(day), 'windows-aborted');
      await until(async () => gate !== undefined && (await runningLoads()).length > 0, 'a load of the second window held');
      execution.abort();
      const aborted = await execution.result;

      expect(aborted.status).toBe('ABORTED');
      expect(aborted.childExecutions.map((c) => c.status)).toEqual(['SUCCEEDED', 'ABORTED']);
      expect(aborted.statusChange).toHaveLength(1);
      expect(await runningLoads()).toEqual([]);
      expect(await wf.batch(names.batchId)).toMatchObject({ status: 'FAILED', error: expect.stringMatching(/^ExecutionAborted/) });
    } finally {
      await gate?.release();
      await wf.quiesce();
      wf.reset();
    }
    const done = (
      await wf.query<{ chunk_index: number }>(`SELECT chunk_index FROM atomic_publish.chunk_state WHERE batch_id = $1 AND status = 'DONE'`, [names.batchId])
    ).map((r) => r.chunk_index);
    expect(done).toEqual(expect.arrayContaining([0, 1, 2]));

    const rerun = await wf.run(inputFor(day), 'windows-aborted-rerun');

    expect(rerun.status, `${rerun.error}: ${rerun.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(day));
    const loaded = wf.calls.filter((c) => c.state === 'WindowLoadChunk').map((c) => c.chunk!);
    expect(loaded.some((chunk) => done.includes(chunk))).toBe(false);
  });
});
