// A clean run of the synthesized state machine, end to end on real parts:
// the live table becomes exactly the new data, the old version is kept,
// the manifest tells the truth, metrics are emitted and nobody is paged.
// Then a replay changes nothing, and retention keeps the last versions.
// The first run is arranged once; the replay and the later publications
// each act on a copy of what it left (test/support/workflow.ts useFork).
import { existsSync, readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionResult } from '../../local/runner.ts';
import {
  type Fingerprint,
  inputFor,
  LIVE,
  loadedChunks,
  namesFor,
  PIPELINE,
  stateEvents,
  useFork,
  useWorkflowFixture,
  visited,
  visitedOutsideChunks,
} from '../support/workflow.ts';

const ROWS_PER_DAY = 30;
const TO_DAY = 12;

const names = namesFor(TO_DAY);
const fixture = useWorkflowFixture('wf_success', async (wf) => {
  await wf.sample({ rowsPerDay: ROWS_PER_DAY, sourceDays: 16, liveDays: 9 });
  const before = await wf.fingerprint(LIVE);
  const first = await wf.run(inputFor(TO_DAY), 'first-publication');
  return { before, first, outbox: existsSync(wf.outboxFile) ? readFileSync(wf.outboxFile, 'utf8') : '' };
});
let before: Fingerprint;
let first: ExecutionResult;
beforeAll(() => {
  ({ before, first } = fixture.arranged);
});

describe('a successful run', () => {
  const wf = useFork(fixture);

  it('starts from a live table that differs from what the run will publish (the test can tell old from new)', async () => {
    expect(before).toEqual(await wf.expected(9));
    expect(before.rows).toBe(9 * ROWS_PER_DAY);
    expect(await wf.expected(TO_DAY)).not.toEqual(before);
  });

  it('succeeds through every step, loading each of the 12 day chunks once', () => {
    expect(first.status, `${first.error}: ${first.cause}`).toBe('SUCCEEDED');
    const steps = visitedOutsideChunks(first);
    expect(steps).toEqual([
      'Input',
      'Plan',
      'AlreadyPublished',
      'LoadChunks',
      'Reconcile',
      'CheckOnly',
      'Publish',
      'NewerDataLive',
      'EmitMetrics',
      'Cleanup',
      'Published',
    ]);
    expect(loadedChunks(first)).toEqual([...Array(TO_DAY).keys()]);
    expect(stateEvents(first, 'StateRetried', 'LoadChunk')).toEqual([]);
  });

  it('leaves the live table exactly equal to the source rows before `to`, unit price derived', async () => {
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(TO_DAY));
  });

  it('keeps the replaced live table as the old version, holding exactly the old data', async () => {
    expect(await wf.tableExists(names.previous)).toBe(true);
    expect(await wf.fingerprint(names.previous)).toEqual(before);
  });

  it('renames staging to live: no staging table is left behind', async () => {
    expect(await wf.tableExists(names.staging)).toBe(false);
    expect(await wf.derivedTables()).toEqual([names.previous]);
  });

  it('records the batch as PUBLISHED on its first attempt with the rows read and written', async () => {
    const batch = await wf.batch(names.batchId);
    expect(batch).toMatchObject({
      pipeline: 'sales_order_lines',
      mode: 'swap',
      status: 'PUBLISHED',
      attempt: 1,
      base_publication: 0,
      chunk_count: TO_DAY,
      spec_hash: PIPELINE.specHash,
      staging_table: names.staging.replace('analytics.', ''),
      error: null,
    });
    expect(Number(batch!.rows_read)).toBe(TO_DAY * ROWS_PER_DAY);
    expect(Number(batch!.rows_written)).toBe(TO_DAY * ROWS_PER_DAY);
    expect(batch!.finished_at).not.toBeNull();
    expect(batch!.execution_id).toBe(first.executionId);
  });

  it('records every chunk DONE with the rows its day holds', async () => {
    expect(await wf.chunkStatuses(names.batchId)).toEqual({ DONE: TO_DAY });
    const chunks = await wf.query<{ chunk_index: number; rows_written: string; generation: number; loads: string }>(
      'SELECT chunk_index, rows_written, generation, loads FROM atomic_publish.chunk_state WHERE batch_id = $1 ORDER BY chunk_index',
      [names.batchId],
    );
    expect(chunks.map((c) => Number(c.rows_written))).toEqual(Array(TO_DAY).fill(ROWS_PER_DAY));
    // One load per chunk, of its first generation: each recorded once, in the transaction that wrote its rows.
    expect(chunks.map((c) => [c.generation, Number(c.loads)])).toEqual(Array(TO_DAY).fill([0, 1]));
  });

  it('records the reconciliation checks, all passed, for attempt 1', async () => {
    const checks = await wf.query<{ check_name: string; passed: boolean; attempt: number; observed: string }>(
      'SELECT check_name, passed, attempt, observed FROM atomic_publish.check_results WHERE batch_id = $1 ORDER BY check_name',
      [names.batchId],
    );
    expect(checks.map((c) => c.check_name)).toEqual([
      'all_chunks_loaded',
      'business_key_unique',
      'source_time_not_null',
      'staging_content_matches_source',
      'staging_not_empty',
      'staging_rows_match_load_record',
      'staging_rows_match_source',
      'staging_within_interval',
    ]);
    expect(checks.every((c) => c.passed && c.attempt === 1)).toBe(true);
    expect(checks.find((c) => c.check_name === 'staging_not_empty')!.observed).toBe(`${TO_DAY * ROWS_PER_DAY} rows`);
  });

  it('records publication 1 naming the old version table that holds the old data', async () => {
    const publications = await wf.publications();
    expect(publications).toHaveLength(1);
    expect(publications[0]).toMatchObject({
      pipeline: 'sales_order_lines',
      seq: 1,
      batch_id: names.batchId,
      live_table: LIVE,
      old_version_table: names.previous,
      rolled_back_at: null,
      dropped_at: null,
    });
    expect(Number(publications[0]!.rows_published)).toBe(TO_DAY * ROWS_PER_DAY);
    expect(await wf.fingerprint(String(publications[0]!.old_version_table))).toEqual(before);
    expect(first.output).toMatchObject({ publish: { publication: 1, oldVersionTable: names.previous, rowsPublished: TO_DAY * ROWS_PER_DAY } });
  });

  it('emits one metric record with service and Pipeline dimensions, Published=1 and the rows published', async () => {
    const published = first.metrics.filter((m) => 'Published' in m.values);
    expect(published).toHaveLength(1);
    const [record] = published;
    expect(record!.namespace).toBe('AtomicPublish');
    expect(record!.dimensions).toEqual({ service: 'atomic-publish', Pipeline: 'sales_order_lines' });
    expect(record!.values).toMatchObject({ Published: 1, RowsPublished: TO_DAY * ROWS_PER_DAY });
    expect(record!.values.RunDurationSeconds).toBeGreaterThanOrEqual(0);
    // Data lag: now minus the newest order line published (the last second of day 11).
    const { latest } = (await wf.query<{ latest: number }>(`SELECT extract(epoch FROM max(ordered_at) AT TIME ZONE 'UTC')::float8 AS latest FROM ${LIVE}`))[0]!;
    // Measured between the step's start and the metric's timestamp, whatever the machine's speed.
    // Compared in whole milliseconds, the clocks' resolution (the epoch from the database is a float).
    const stepStarted = stateEvents(first, 'StateEntered', 'EmitMetrics')[0]!.timestamp;
    const lagMs = Math.round(record!.values.DataLagSeconds! * 1000);
    const latestMs = Math.round(latest * 1000);
    expect(lagMs).toBeGreaterThanOrEqual(stepStarted - latestMs);
    expect(lagMs).toBeLessThanOrEqual(record!.timestamp - latestMs);
    expect(first.metrics.filter((m) => 'BatchFailed' in m.values)).toEqual([]);
  });

  it('pages nobody', () => {
    expect(first.alerts).toEqual([]);
    expect(fixture.arranged.outbox).toBe('');
  });
});

describe('a replay of the same input after success', () => {
  const wf = useFork(fixture);
  let replay: ExecutionResult;
  let liveBefore: Fingerprint;
  beforeAll(async () => {
    liveBefore = await wf.fingerprint(LIVE);
    replay = await wf.run(inputFor(TO_DAY), 'replay');
  });

  it('succeeds through NothingToPublish without loading or publishing', () => {
    expect(replay.status).toBe('SUCCEEDED');
    expect(visited(replay)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'NothingToPublish']);
    expect(replay.alerts).toEqual([]);
  });

  it('changes nothing: live content, publications, batch attempt, checks, tables', async () => {
    expect(await wf.fingerprint(LIVE)).toEqual(liveBefore);
    expect(await wf.publications()).toHaveLength(1);
    expect(await wf.batch(names.batchId)).toMatchObject({ status: 'PUBLISHED', attempt: 1, execution_id: first.executionId });
    const { n } = (await wf.query<{ n: number }>('SELECT count(*)::int AS n FROM atomic_publish.check_results'))[0]!;
    expect(n).toBe(8);
    expect(await wf.derivedTables()).toEqual([names.previous]);
    expect(await wf.fingerprint(names.previous)).toEqual(before);
  });
});

describe('later publications', () => {
  const wf = useFork(fixture);
  it('each keeps the version it replaced; past retention (3 versions) the oldest is dropped', async () => {
    // Each later than the one before: the guard refuses older data over newer.
    const days = [13, 14, 15];
    const fingerprints: Fingerprint[] = [await wf.fingerprint(LIVE)];
    for (const day of days) {
      const result = await wf.run(inputFor(day));
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(day));
      fingerprints.push(await wf.fingerprint(LIVE));
    }
    const publications = await wf.publications();
    expect(publications.map((p) => [p.seq, p.batch_id])).toEqual([[1, names.batchId], ...days.map((day, i) => [i + 2, namesFor(day).batchId])]);
    // Publication n replaced what publication n-1 published: its old version holds exactly that.
    for (const [i, p] of publications.entries()) {
      if (i === 0) continue;
      expect(await wf.fingerprint(String(p.old_version_table)), `old version of publication ${p.seq}`).toEqual(fingerprints[i - 1]);
      expect(p.dropped_at).toBeNull();
    }
    // keepVersions 3: the old version of publication 1 (the table before atomic-publish) is dropped, and recorded so.
    expect(publications[0]!.dropped_at).not.toBeNull();
    expect(await wf.tableExists(names.previous)).toBe(false);
    expect(await wf.derivedTables()).toEqual(
      publications
        .slice(1)
        .map((p) => String(p.old_version_table))
        .sort(),
    );
    const batches = await wf.query<{ status: string; base_publication: number }>(
      'SELECT status, base_publication FROM atomic_publish.batches ORDER BY base_publication',
    );
    expect(batches).toEqual([0, 1, 2, 3].map((base) => ({ status: 'PUBLISHED', base_publication: base })));
  });
});
