// `npm run -s bench -- --json` at a tiny size, as a script would run it: one
// JSON object on stdout with every figure the issue names, finite, and the
// ratios exactly the quotients of the medians printed beside them. The
// figures' values are the bench's business, not this test's.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { STATE_DIR } from '../../lib/project.ts';
import { dropDatabase } from '../../local/postgres.ts';
import { SAFETY_NET_MS } from '../support/safety-net.ts';

const run = promisify(execFile);
const DATABASE = `bench_json_${process.pid}`;

const NUMBERS = [
  'rows',
  'chunks',
  'repeat',
  'insertRenameMs',
  'ctasRenameMs',
  'fullRunMs',
  'overheadRatio',
  'ctasRatio',
  'dataApiRequestsPerChunk',
  'runDataApiRequestsPerChunk',
  'transitionsPerChunk',
  'loadTransitionsPerChunk',
  'costPer1000ChunksUsd',
  'readerWaitP99Ms',
  'readerWaitMaxMs',
  'largestRunStatePayloadBytes',
  'reconcileBaselineMs',
  'reconcileGateMs',
  'reconcileRatio',
  'statementsPerRun',
  'commitsPerRun',
  'rowsReadPerRun',
  'commitsPerChunk',
  'warehouseRowsReadRatio',
  'backfillRunMs',
  'backfillShare',
  'plan87600Ms',
  'planOutputBytes',
  'planWindowOutputBytes',
  'largestStatePayloadBytes',
  'longBatchHours',
  'longBatchRunMs',
  'longBatchMaxHistoryEvents',
  'longBatchLargestPayloadBytes',
  'longBatchChunksNotLoadedOnce',
  'longBatchLiveDifferences',
];
const TARGETED = [
  'overheadRatio',
  'dataApiRequestsPerChunk',
  'transitionsPerChunk',
  'readerWaitP99Ms',
  'readerWaitMaxMs',
  'plan87600Ms',
  'largestStatePayloadBytes',
  'reconcileRatio',
  'commitsPerChunk',
  'warehouseRowsReadRatio',
  'backfillShare',
  'longBatchMaxHistoryEvents',
  'longBatchLargestPayloadBytes',
  'longBatchChunksNotLoadedOnce',
  'longBatchLiveDifferences',
  'longBatchTooLongRefused',
];
/** The long batch at a day of hours: its figures' plumbing, not its scale. */
const LONG_BATCH_HOURS = 24;

afterAll(async () => {
  await dropDatabase(inject('pg'), DATABASE);
  await dropDatabase(inject('pg'), `${DATABASE}_long`);
});

describe('npm run bench -- --json', () => {
  it('prints one JSON object with every figure, finite, and ratios that are the quotients of their medians', async () => {
    const { stdout } = await run(
      'npm',
      [
        'run',
        '-s',
        'bench',
        '--',
        '--rows',
        '2000',
        '--repeat',
        '1',
        '--long-batch-hours',
        String(LONG_BATCH_HOURS),
        '--json',
        '--pg-dir',
        path.join(STATE_DIR, 'test-pg'),
        '--database',
        DATABASE,
      ],
      { maxBuffer: 16 * 1024 * 1024, timeout: SAFETY_NET_MS },
    );
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const figures = JSON.parse(lines[0]!) as Record<string, unknown> & { targets: Record<string, { target: string; met: boolean | null }> };

    for (const field of NUMBERS) {
      expect(typeof figures[field], field).toBe('number');
      expect(Number.isFinite(figures[field]), field).toBe(true);
    }
    // Ten years of hours: 88 windows of 1,000 chunks; the largest state is a window's chunks, not the plan.
    expect(figures).toMatchObject({ planChunks: 87_600, planWindows: 88 });
    expect(figures.largestStatePayloadBytes).toBe(
      Math.max(figures.planOutputBytes as number, figures.planWindowOutputBytes as number, figures.largestRunStatePayloadBytes as number),
    );
    expect(figures.planWindowOutputBytes as number).toBeGreaterThan(figures.planOutputBytes as number);
    expect(figures).toMatchObject({ rows: 1980, chunks: 60, repeat: 1 });
    // The long batch published every hour once, and the next batch was refused as too long.
    expect(figures).toMatchObject({
      longBatchHours: LONG_BATCH_HOURS,
      longBatchChunkLoads: LONG_BATCH_HOURS,
      longBatchChunksNotLoadedOnce: 0,
      longBatchLiveDifferences: 0,
      longBatchTooLongRefused: true,
    });
    expect(figures.overheadRatio).toBe((figures.fullRunMs as number) / (figures.insertRenameMs as number));
    expect(figures.ctasRatio).toBe((figures.fullRunMs as number) / (figures.ctasRenameMs as number));
    expect(figures.reconcileRatio).toBe((figures.reconcileGateMs as number) / (figures.reconcileBaselineMs as number));
    expect(figures.backfillShare).toBe((figures.backfillRunMs as number) / (figures.fullRunMs as number));
    // The warehouse work by state adds up to the run's, and the load read every source row (its reads reached the statistics).
    const work = figures.warehouseWorkByState as { state: string; statements: number; rowsRead: number }[];
    expect(work.reduce((sum, w) => sum + w.rowsRead, 0)).toBe(figures.rowsReadPerRun);
    expect(work.reduce((sum, w) => sum + w.statements, 0)).toBe(figures.statementsPerRun);
    expect(work.find((w) => w.state === 'LoadChunks')?.rowsRead).toBeGreaterThanOrEqual(figures.rows as number);
    expect(figures.warehouseRowsReadRatio).toBe((figures.rowsReadPerRun as number) / (figures.rows as number));
    // Each target beside its figure: met or missed.
    for (const field of TARGETED) {
      expect(figures.targets[field]?.target, field).toMatch(/^(<=? |yes$)/);
      expect(typeof figures.targets[field]?.met, field).toBe('boolean');
    }
  });
});
