/**
 * A batch of any length in one run: ten years of hourly chunks (87,600) through the
 * synthesized state machine in windows of 1,000, measured against Step Functions'
 * limits (history events, payloads), each chunk loaded once, live equal to the
 * source, then a too-long batch refused by Plan (docs/decisions/scale-proofs-in-the-bench.md).
 * In a process of its own, as its hourly sample replaces the daily one in the registry:
 *   npx tsx bench/long-batch.ts [--hours 87600] [--json] [--pg-dir DIR] [--database NAME]
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { batchIdFor, resolveInterval } from '../domain/plan/plan.ts';
import type { Pipeline } from '../domain/spec.ts';
import { STATE_DIR } from '../lib/project.ts';
import { isChunkLoadState } from '../lib/workflow-steps.ts';
import { localHandlerEnvironment, silenceSdkNodeNotice } from '../local/aws-clients.ts';
import { startLocalDataApi } from '../local/data-api/server.ts';
import { applyPipelineSetup, ensureLocalUser, LOCAL_PIPELINE_USER } from '../local/database-users.ts';
import { MAX_HISTORY_EVENTS } from '../local/history.ts';
import { newClient } from '../local/pg-clients.ts';
import { recreateDatabase, startLocalPostgres } from '../local/postgres.ts';
import { type ExecutionEvent, type ExecutionResult, LocalRunner } from '../local/runner.ts';
import { createSampleWarehouse, SAMPLE_EXPECTED_ROWS_SQL, sampleDay, useHourlySample } from '../local/sample-data.ts';
import { renderTable } from '../local/table.ts';
import { textOption } from './options.ts';

/** Ten years of hours. */
export const LONG_BATCH_HOURS = 87_600;
/** The batch ends at the start of this sample day; the sample's rows fill the days before it. */
export const LONG_BATCH_TO_DAY = 2;
/** Chunks loaded at once: tiny loads, so more than the sample's 4 keep the machine busy. */
export const LONG_BATCH_CONCURRENCY = 16;
/** Step Functions' limit on a state's input or output (and the execution's), in bytes. */
export const MAX_PAYLOAD_BYTES = 256 * 1024;
const LIVE = 'analytics.sales_order_lines';

export type Query = <T = Record<string, unknown>>(sql: string, params?: unknown[]) => Promise<T[]>;

/** The largest state input or output of every execution it sees, parent or child (a runner's onEvent). */
export class PayloadMeter {
  largestBytes = 0;
  readonly onEvent = (event: ExecutionEvent): void => {
    if (!event.state) return;
    for (const value of [event.state.input, event.state.output]) {
      if (value !== undefined) this.largestBytes = Math.max(this.largestBytes, Buffer.byteLength(JSON.stringify(value)));
    }
  };
}

export interface LongBatchFigures {
  /** Chunks Plan planned, and the windows it cut them into. */
  readonly chunks: number;
  readonly windows: number;
  /** Chunks in Plan's own output: 0 when the batch runs in windows. */
  readonly plannedInline: number;
  readonly recordedWindows: number;
  readonly childExecutions: number;
  readonly childrenSucceeded: number;
  /** History events of the parent execution, and of the longest window's. */
  readonly parentHistoryEvents: number;
  readonly maxWindowHistoryEvents: number;
  readonly largestPayloadBytes: number;
  /** Chunks recorded, DONE, and loads recorded: each chunk loaded exactly once when all three equal `chunks`. */
  readonly chunksRecorded: number;
  readonly chunksDone: number;
  readonly chunkLoads: number;
  /** Planned chunks not recorded, not DONE, or loaded other than once: 0 when each was loaded exactly once. */
  readonly chunksNotLoadedOnce: number;
  /** Rows in live and not in the source before the batch's end, and the other way round: 0 when live is the source. */
  readonly liveDifferences: number;
}

/** Rows of the live table and of the source from `from` to `to` that have no equal on the other side (0: live is exactly the source). */
export async function liveDifferences(query: Query, from: Date, to: Date): Promise<number> {
  const [row] = await query<{ n: number }>(
    `WITH expected AS (SELECT * FROM (${SAMPLE_EXPECTED_ROWS_SQL}) rows WHERE ordered_at >= $2::timestamp)
     SELECT ((SELECT count(*) FROM (SELECT * FROM ${LIVE} EXCEPT ALL SELECT * FROM expected) a)
           + (SELECT count(*) FROM (SELECT * FROM expected EXCEPT ALL SELECT * FROM ${LIVE}) b))::int AS n`,
    [to.toISOString().slice(0, 19), from.toISOString().slice(0, 19)],
  );
  return row!.n;
}

/** What a long batch's run left, from its result, the payloads seen and the manifest. */
export async function measureLongBatch(opts: {
  result: ExecutionResult;
  payloads: PayloadMeter;
  query: Query;
  batchId: string;
  from: Date;
  to: Date;
}): Promise<LongBatchFigures> {
  const { result, query, batchId } = opts;
  const planned = result.events.find((e) => e.type === 'StateExited' && e.state?.name === 'Plan')?.state?.output as
    | { plan: { windows?: unknown[]; chunks: unknown[]; chunkCount: number } }
    | undefined;
  const [chunks] = await query<{ recorded: number; done: number; loads: number; other: number }>(
    `SELECT count(*)::int AS recorded, count(*) FILTER (WHERE status = 'DONE')::int AS done, COALESCE(sum(loads), 0)::int AS loads,
            count(*) FILTER (WHERE status <> 'DONE' OR loads <> 1)::int AS other
       FROM atomic_publish.chunk_state WHERE batch_id = $1`,
    [batchId],
  );
  const [windows] = await query<{ n: number }>('SELECT count(*)::int AS n FROM atomic_publish.batch_windows WHERE batch_id = $1', [batchId]);
  return {
    chunks: planned?.plan.chunkCount ?? 0,
    windows: planned?.plan.windows?.length ?? 0,
    plannedInline: planned?.plan.chunks.length ?? 0,
    recordedWindows: windows!.n,
    childExecutions: result.childExecutions.length,
    childrenSucceeded: result.childExecutions.filter((c) => c.status === 'SUCCEEDED').length,
    parentHistoryEvents: result.historyEvents,
    maxWindowHistoryEvents: Math.max(0, ...result.childExecutions.map((c) => c.historyEvents)),
    largestPayloadBytes: opts.payloads.largestBytes,
    chunksRecorded: chunks!.recorded,
    chunksDone: chunks!.done,
    chunkLoads: chunks!.loads,
    chunksNotLoadedOnce: Math.max(0, (planned?.plan.chunkCount ?? 0) - chunks!.recorded) + chunks!.other,
    liveDifferences: await liveDifferences(query, opts.from, opts.to),
  };
}

/** The error the Catch handed to RecordFailure, and the state that raised it. */
function caught(result: ExecutionResult): { error?: string; caughtIn?: string } {
  const entered = result.events.find((e) => e.type === 'StateEntered' && e.state?.name === 'RecordFailure');
  const raised = result.events.find((e) => e.type === 'StateCaught');
  return { error: (entered?.state?.input as { error?: { Error?: string } } | undefined)?.error?.Error, caughtIn: raised?.state?.name };
}

/** The bench's figures: the run's, its duration, and whether the batch that would outlast the execution was refused. */
export interface LongBatchBench extends LongBatchFigures {
  readonly hours: number;
  readonly runMs: number;
  /** The next batch, with the published one recorded as having taken 100 days: refused by Plan with a ValidationError, no batch, no lease, live unchanged. */
  readonly tooLongRefused: boolean;
}

const log = (line: string) => process.stderr.write(`${line}\n`);

function batchIdOf(pipeline: Pipeline, to: Date): string {
  return batchIdFor(pipeline, resolveInterval({ pipeline: pipeline.name, to: to.toISOString() }, pipeline, new Date()));
}

export async function benchLongBatch(opts: { hours: number; pgDir: string; database: string }): Promise<LongBatchBench> {
  silenceSdkNodeNotice();
  const pipeline = useHourlySample({ hours: opts.hours, toDay: LONG_BATCH_TO_DAY, maxConcurrency: LONG_BATCH_CONCURRENCY });
  const postgres = await startLocalPostgres({ dataDir: opts.pgDir });
  const conn = { host: postgres.host, port: postgres.port, user: postgres.user, password: postgres.password };
  await recreateDatabase(conn, opts.database);
  await ensureLocalUser(conn);
  const api = await startLocalDataApi({ postgres: conn, defaultUser: LOCAL_PIPELINE_USER });
  const db = newClient({ ...conn, database: opts.database });
  await db.connect();
  const query: Query = async (sql, params) => (await db.query(sql, params)).rows;
  const payloads = new PayloadMeter();
  let loaded = 0;
  let reported = 0;
  const runner = await LocalRunner.create({
    env: { ...localHandlerEnvironment(api.endpoint, opts.database), POWERTOOLS_LOG_LEVEL: 'WARN' },
    onEvent: (event) => {
      payloads.onEvent(event);
      if (event.type !== 'StateExited' || !event.state || !isChunkLoadState(event.state.name)) return;
      loaded += 1;
      // Progress every tenth of the batch.
      if (loaded * 10 >= (reported + 1) * opts.hours) {
        reported = Math.floor((loaded * 10) / opts.hours);
        log(`  long batch: ${loaded.toLocaleString('en-US')} of ${opts.hours.toLocaleString('en-US')} chunks loaded`);
      }
    },
  });
  try {
    await createSampleWarehouse(db, { rowsPerDay: 48, sourceDays: LONG_BATCH_TO_DAY + 1, liveDays: 1 });
    await applyPipelineSetup(db, pipeline);
    const to = sampleDay(LONG_BATCH_TO_DAY);
    const batchId = batchIdOf(pipeline, to);
    const started = performance.now();
    const result = await runner.run({ pipeline: pipeline.name, to: to.toISOString() }, { name: 'long-batch' });
    const runMs = performance.now() - started;
    if (result.status !== 'SUCCEEDED') throw new Error(`the long batch ended ${result.status}: ${result.error}: ${result.cause}`);
    const from = new Date(pipeline.historyStart);
    const figures = await measureLongBatch({ result, payloads, query, batchId, from, to });

    // As if the published batch had taken 100 days: the next one (a day more) would outlast the execution.
    await query(`UPDATE atomic_publish.batches SET finished_at = started_at + interval '100 days' WHERE batch_id = $1`, [batchId]);
    const next = sampleDay(LONG_BATCH_TO_DAY + 1);
    const refused = await runner.run({ pipeline: pipeline.name, to: next.toISOString() }, { name: 'long-batch-too-long' });
    const [written] = await query<{ batches: number; leases: number }>(
      `SELECT (SELECT count(*) FROM atomic_publish.batches WHERE batch_id = $1)::int AS batches,
              (SELECT count(*) FROM atomic_publish.pipeline_leases WHERE execution_id = $2)::int AS leases`,
      [batchIdOf(pipeline, next), refused.executionId],
    );
    const { error, caughtIn } = caught(refused);
    const tooLongRefused =
      refused.status === 'FAILED' &&
      error === 'ValidationError' &&
      caughtIn === 'Plan' &&
      written!.batches === 0 &&
      written!.leases === 0 &&
      (await liveDifferences(query, from, to)) === 0;
    return { hours: opts.hours, runMs, ...figures, tooLongRefused };
  } finally {
    runner.close();
    await db.end();
    await api.close();
    await postgres.release();
  }
}

/** The table of the figures a long batch must meet, as `npx tsx bench/long-batch.ts` prints it. */
function table(f: LongBatchBench): string {
  const rows = [
    [
      'history events, largest execution',
      Math.max(f.parentHistoryEvents, f.maxWindowHistoryEvents).toLocaleString('en-US'),
      `< ${MAX_HISTORY_EVENTS.toLocaleString('en-US')}`,
    ],
    ['largest state payload', `${(f.largestPayloadBytes / 1024).toFixed(1)} KB`, '< 256 KB'],
    ['windows (child executions succeeded)', `${f.windows} (${f.childrenSucceeded})`, ''],
    ['chunks not loaded exactly once', f.chunksNotLoadedOnce.toLocaleString('en-US'), '0'],
    ['rows of live and source that differ', f.liveDifferences.toLocaleString('en-US'), '0'],
    ['a batch that would outlast the execution', f.tooLongRefused ? 'refused by Plan' : 'NOT refused', 'refused'],
  ];
  return renderTable([`${f.hours.toLocaleString('en-US')} hourly chunks in one run (${(f.runMs / 1000).toFixed(0)} s)`, 'value', 'target'], rows, [
    'l',
    'r',
    'l',
  ]);
}

async function main(): Promise<void> {
  const hours = Number(textOption('hours', String(LONG_BATCH_HOURS)));
  if (!Number.isInteger(hours) || hours < 1) throw new Error('--hours must be a whole number of at least 1');
  const figures = await benchLongBatch({
    hours,
    pgDir: path.resolve(textOption('pg-dir', path.join(STATE_DIR, 'bench-pg'))),
    database: textOption('database', 'atomic_publish_bench_long'),
  });
  if (process.argv.includes('--json')) {
    process.stdout.write(`${JSON.stringify(figures)}\n`);
    return;
  }
  process.stdout.write(`${table(figures)}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error: unknown) => {
    log(`long batch failed: ${(error as Error)?.stack ?? String(error)}`);
    process.exit(1);
  });
}
