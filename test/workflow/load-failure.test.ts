// A run that fails while loading (an upstream order line with quantity 0
// makes the unit price a division by zero): the live table stays exactly as
// it was, the failure is recorded and paged, and a re-run after the source
// is fixed resumes the same batch, loading only the chunks not yet done.
// The failed run is arranged once; the re-run and the failed Map each act
// on a copy of what it left (test/support/workflow.ts useFork).
import { existsSync, readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionResult } from '../../local/runner.ts';
import { addBadSourceRow, sampleDay } from '../../local/sample-data.ts';
import {
  caughtError,
  caughtMessage,
  type Fingerprint,
  inputFor,
  LIVE,
  loadedChunks,
  namesFor,
  planOf,
  stateEvents,
  useFork,
  useWorkflowFixture,
  visited,
} from '../support/workflow.ts';

const ROWS_PER_DAY = 20;
const TO_DAY = 10;
const BAD_DAY = 6;

const names = namesFor(TO_DAY);

const fixture = useWorkflowFixture('wf_load_failure', async (wf) => {
  await wf.sample({ rowsPerDay: ROWS_PER_DAY, sourceDays: 12, liveDays: 7 });
  await wf.withClient((client) => addBadSourceRow(client, sampleDay(BAD_DAY)));
  const old = await wf.fingerprint(LIVE);
  const failed = await wf.run(inputFor(TO_DAY), 'bad-row');
  // Iterations already running when the Map failed finish on their own (as Lambda invocations do).
  await wf.quiesce();
  return {
    old,
    failed,
    loadsStarted: [...wf.loads.started],
    outbox: existsSync(wf.outboxFile) ? readFileSync(wf.outboxFile, 'utf8') : '',
  };
});
let old: Fingerprint;
let failed: ExecutionResult;
beforeAll(() => {
  ({ old, failed } = fixture.arranged);
});

describe('a run that fails in LoadChunk', () => {
  const wf = useFork(fixture);

  it('fails the execution through RecordFailure and Notify after the bad chunk fails without retry', () => {
    expect(failed.status).toBe('FAILED');
    expect(failed.error).toBe('AtomicPublishFailed');
    expect(visited(failed)).toEqual(expect.arrayContaining(['Plan', 'LoadChunks', 'RecordFailure', 'Notify', 'Failed']));
    expect(visited(failed)).not.toContain('Reconcile');
    expect(visited(failed)).not.toContain('Publish');
    expect(caughtError(failed)?.Error).toBe('WarehouseError');
    expect(caughtMessage(failed)).toMatch(/division by zero/);
    expect(stateEvents(failed, 'StateRetried', 'LoadChunk')).toEqual([]);
    expect(fixture.arranged.loadsStarted.filter((i) => i === BAD_DAY)).toHaveLength(1);
  });

  it('leaves the live table exactly as it was and publishes nothing', async () => {
    expect(await wf.fingerprint(LIVE)).toEqual(old);
    expect(await wf.publications()).toEqual([]);
    // RecordFailure released the pipeline's lease: the next run need not wait for it.
    expect(await wf.query('SELECT execution_id FROM atomic_publish.pipeline_leases')).toEqual([]);
    expect(await wf.tableExists(names.previous)).toBe(false);
  });

  it('keeps the staging table for diagnosis', async () => {
    expect(await wf.derivedTables()).toEqual([names.staging]);
  });

  it('marks the batch FAILED on attempt 1 with the database message, the bad chunk not DONE', async () => {
    const batch = await wf.batch(names.batchId);
    expect(batch).toMatchObject({ status: 'FAILED', attempt: 1, chunk_count: TO_DAY, rows_read: null, rows_written: null });
    expect(String(batch!.error)).toMatch(/^WarehouseError: .*division by zero/);
    expect(batch!.finished_at).not.toBeNull();
    const [bad] = await wf.query<{ status: string }>('SELECT status FROM atomic_publish.chunk_state WHERE batch_id = $1 AND chunk_index = $2', [
      names.batchId,
      BAD_DAY,
    ]);
    expect(bad!.status).not.toBe('DONE');
    expect(await wf.query('SELECT * FROM atomic_publish.check_results')).toEqual([]);
  });

  it('sends exactly one alert naming the pipeline, saying the live table is untouched and how to re-run', () => {
    expect(failed.alerts).toHaveLength(1);
    const [alert] = failed.alerts;
    expect(alert!.subject).toBe('atomic-publish: sales_order_lines failed (WarehouseError)');
    expect(alert!.message).toContain('division by zero');
    expect(alert!.message).toContain(`Live table: ${LIVE} untouched`);
    expect(alert!.message).toContain(`Batch:      ${names.batchId}`);
    expect(alert!.message).toContain(`Re-run:     start an execution with input ${JSON.stringify(inputFor(TO_DAY))}`);
    expect(alert!.message).toContain('batch and attempt marked FAILED');
    expect(alert!.executionId).toBe(failed.executionId);
    const outbox = fixture.arranged.outbox
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as unknown);
    expect(outbox).toEqual([alert]);
  });

  it('emits BatchFailed=1 for the pipeline and no Published metric', () => {
    const records = failed.metrics.filter((m) => 'BatchFailed' in m.values);
    expect(records).toHaveLength(1);
    expect(records[0]!.dimensions).toEqual({ service: 'atomic-publish', Pipeline: 'sales_order_lines' });
    expect(records[0]!.values.BatchFailed).toBe(1);
    expect(failed.metrics.filter((m) => 'Published' in m.values)).toEqual([]);
  });
});

describe('the re-run after the source is fixed', () => {
  const wf = useFork(fixture);
  let rerun: ExecutionResult;
  let notDone: number[];
  beforeAll(async () => {
    await wf.query('DELETE FROM source.sales_order_lines WHERE quantity = 0');
    notDone = (
      await wf.query<{ chunk_index: number }>(
        `SELECT chunk_index FROM atomic_publish.chunk_state WHERE batch_id = $1 AND status <> 'DONE' ORDER BY chunk_index`,
        [names.batchId],
      )
    ).map((r) => r.chunk_index);
    wf.reset();
    rerun = await wf.run(inputFor(TO_DAY), 'bad-row-fixed');
  });

  it('resumes the same batch id as attempt 2', async () => {
    expect(rerun.status, `${rerun.error}: ${rerun.cause}`).toBe('SUCCEEDED');
    expect(planOf(rerun).batch.batchId).toBe(names.batchId);
    expect(planOf(rerun).chunkCount).toBe(TO_DAY);
    expect(await wf.batch(names.batchId)).toMatchObject({ status: 'PUBLISHED', attempt: 2, error: null, execution_id: rerun.executionId });
  });

  it('loads only the chunks that were not DONE, the bad one among them', () => {
    expect(notDone).toContain(BAD_DAY);
    expect(notDone.length).toBeLessThan(TO_DAY);
    expect(planOf(rerun).chunks.map((c) => c.index)).toEqual(notDone);
    expect(loadedChunks(rerun)).toEqual(notDone);
    expect([...wf.loads.started].sort((a, b) => a - b)).toEqual(notDone);
  });

  it('publishes exactly the fixed source: live = new data, old version = the data before', async () => {
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(TO_DAY));
    expect(await wf.fingerprint(names.previous)).toEqual(old);
    expect(await wf.derivedTables()).toEqual([names.previous]);
    const publications = await wf.publications();
    expect(publications).toHaveLength(1);
    expect(publications[0]).toMatchObject({ seq: 1, batch_id: names.batchId, old_version_table: names.previous });
  });

  it('records rows read/written, every chunk DONE, and passed checks for attempt 2 only', async () => {
    const batch = await wf.batch(names.batchId);
    expect(Number(batch!.rows_read)).toBe(TO_DAY * ROWS_PER_DAY);
    expect(Number(batch!.rows_written)).toBe(TO_DAY * ROWS_PER_DAY);
    expect(await wf.chunkStatuses(names.batchId)).toEqual({ DONE: TO_DAY });
    const checks = await wf.query<{ attempt: number; passed: boolean }>('SELECT attempt, passed FROM atomic_publish.check_results WHERE batch_id = $1', [
      names.batchId,
    ]);
    expect(checks).toHaveLength(8);
    expect(checks.every((c) => c.attempt === 2 && c.passed)).toBe(true);
    expect(rerun.alerts).toEqual([]);
    expect(rerun.metrics.find((m) => 'Published' in m.values)?.values.RowsPublished).toBe(TO_DAY * ROWS_PER_DAY);
  });
});

describe('a failed Map', () => {
  // Fixed bug, kept as a regression test (local runner fidelity: aws-local-stepfunctions 3.0.0 MapStateAction,
  // used by local/runner.ts): when one iteration fails, Step Functions stops
  // the Map and starts no further iterations; locally the iterations queued
  // behind MaxConcurrency still start after the Map failed, after
  // RecordFailure marked the batch FAILED and the alert went out. Staging and
  // chunk rows then keep changing after the page, and a re-run started at
  // once races those orphan loads.
  const wf = useFork(fixture);

  it('starts no LoadChunk iteration after the run has moved on to RecordFailure', async () => {
    await wf.sample({ rowsPerDay: ROWS_PER_DAY, sourceDays: 12, liveDays: 7 });
    await wf.withClient((client) => addBadSourceRow(client, sampleDay(0)));
    wf.reset();
    const result = await wf.run(inputFor(11), 'bad-first-day');
    await wf.quiesce();
    expect(result.status).toBe('FAILED');
    const recording = wf.calls.findIndex((c) => c.state === 'RecordFailure');
    expect(recording).toBeGreaterThan(0);
    const late = wf.calls.slice(recording).filter((c) => c.state === 'LoadChunk');
    expect(late, 'chunks whose load started after the failure was recorded').toEqual([]);
  });
});
