/**
 * `npm run bench`: what atomic-publish costs on top of the bare SQL, on the
 * local engine, as ratios against baselines measured in the same run (absolute
 * seconds on shared machines do not compare between runs), and what a chunk costs
 * in requests, state transitions and dollars. Each figure, its target and its
 * module: docs/develop.md#bench. Options: --rows N (600000), --repeat N (3), --json
 * (one object on stdout, progress on stderr), --pg-dir DIR (.atomic-publish/bench-pg;
 * a server running there is shared), --database NAME (atomic_publish_bench; the long
 * batch uses NAME_long), --long-batch-hours N (87600).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { costPer1000Chunks, lambdaFunctions } from '../cli/prices.ts';
import { DEFAULT_POLL } from '../functions/commons/warehouse.ts';
import { PROJECT_ROOT, STATE_DIR } from '../lib/project.ts';
import { localHandlerEnvironment, localWarehouse, silenceSdkNodeNotice } from '../local/aws-clients.ts';
import { startLocalDataApi } from '../local/data-api/server.ts';
import { applyPipelineSetup, ensureLocalUser, LOCAL_PIPELINE_USER } from '../local/database-users.ts';
import { MAX_HISTORY_EVENTS } from '../local/history.ts';
import { newClient } from '../local/pg-clients.ts';
import { recreateDatabase, startLocalPostgres } from '../local/postgres.ts';
import { thisMachine, writeResultsSection } from '../local/results-file.ts';
import { LocalRunner } from '../local/runner.ts';
import { createSampleWarehouse, LIVE_TABLE_COLUMNS, sampleDay, samplePipeline } from '../local/sample-data.ts';
import { renderTable } from '../local/table.ts';
import { BACKFILL_DAYS, benchBackfill } from './backfill.ts';
import { prepareBaselines, timeBaseline } from './baselines.ts';
import { benchDataApi } from './data-api.ts';
import { type ExecutionFigures, ExecutionMeter, loadPhaseMap, loadPhaseStates } from './execution-meter.ts';
import { LONG_BATCH_HOURS, type LongBatchBench, MAX_PAYLOAD_BYTES } from './long-batch.ts';
import { textOption } from './options.ts';
import { benchPlanScale, PLAN_HOURS } from './plan-scale.ts';
import { benchPublishVia } from './publish-via.ts';
import { pollReads } from './reads.ts';
import { benchReconcile } from './reconcile.ts';
import { median, quantile } from './stats.ts';
import { totalWork, WarehouseWork, warehouseWorkTable } from './warehouse-work.ts';

const DAYS = 60;
const KB = 1024;

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
}

const log = (line: string) => process.stderr.write(`${line}\n`);

/** A target of the benchmark: the figure must be at most (or below) the limit, or, for a yes-or-no figure, yes. */
type Target = { readonly limit: number; readonly strict: boolean; readonly unit: string } | { readonly holds: true };

const TARGETS = {
  overheadRatio: { limit: 1.15, strict: false, unit: 'x' },
  dataApiRequestsPerChunk: { limit: 2, strict: false, unit: '' },
  transitionsPerChunk: { limit: 2, strict: false, unit: '' },
  readerWaitP99Ms: { limit: 50, strict: true, unit: ' ms' },
  readerWaitMaxMs: { limit: 50, strict: true, unit: ' ms' },
  plan87600Ms: { limit: 1000, strict: true, unit: ' ms' },
  largestStatePayloadBytes: { limit: 256 * KB, strict: true, unit: ' bytes (256 KB)' },
  reconcileRatio: { limit: 1.3, strict: false, unit: 'x' },
  commitsPerChunk: { limit: 1, strict: false, unit: '' },
  warehouseRowsReadRatio: { limit: 3, strict: false, unit: 'x the source rows' },
  backfillShare: { limit: 0.5, strict: false, unit: ' of a full run' },
  longBatchMaxHistoryEvents: { limit: MAX_HISTORY_EVENTS, strict: true, unit: ' events' },
  longBatchLargestPayloadBytes: { limit: MAX_PAYLOAD_BYTES, strict: true, unit: ' bytes (256 KB)' },
  longBatchChunksNotLoadedOnce: { limit: 0, strict: false, unit: '' },
  longBatchLiveDifferences: { limit: 0, strict: false, unit: ' rows' },
  longBatchTooLongRefused: { holds: true },
} as const satisfies Record<string, Target>;

type TargetField = keyof typeof TARGETS;

const describeTarget = (t: Target) => ('holds' in t ? 'yes' : `${t.strict ? '<' : '<='} ${t.limit.toLocaleString('en-US')}${t.unit}`);
const meets = (value: number | boolean, t: Target): boolean =>
  'holds' in t ? value === true : typeof value === 'number' && (t.strict ? value < t.limit : value <= t.limit);

/**
 * bench/long-batch.ts in a process of its own (its hourly sample replaces the daily one in its pipeline
 * registry), on the same PostgreSQL: its progress on stderr, its figures as one JSON line on stdout.
 */
function runLongBatch(opts: { hours: number; pgDir: string; database: string }): Promise<LongBatchBench> {
  const script = path.join(PROJECT_ROOT, 'bench', 'long-batch.ts');
  const args = ['--import', 'tsx', script, '--json', '--hours', String(opts.hours), '--pg-dir', opts.pgDir, '--database', opts.database];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`bench/long-batch.ts exited with ${code}`));
      try {
        resolve(JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as LongBatchBench);
      } catch (error) {
        reject(new Error(`bench/long-batch.ts printed no figures: ${String(error)}`));
      }
    });
  });
}

async function main(): Promise<void> {
  silenceSdkNodeNotice();
  const rows = option('rows', 600_000);
  const repeat = option('repeat', 3);
  const json = process.argv.includes('--json');
  const database = textOption('database', 'atomic_publish_bench');
  const pgDir = path.resolve(textOption('pg-dir', path.join(STATE_DIR, 'bench-pg')));
  const longBatchHours = option('long-batch-hours', LONG_BATCH_HOURS);
  const rowsPerDay = Math.max(1, Math.round(rows / DAYS));
  const pipeline = samplePipeline();
  const from = sampleDay(0);
  const to = sampleDay(DAYS);

  log(`bench: ${rowsPerDay * DAYS} rows over ${DAYS} days, ${repeat} repetitions of each measurement`);
  const postgres = await startLocalPostgres({ dataDir: pgDir });
  const conn = { host: postgres.host, port: postgres.port, user: postgres.user, password: postgres.password };
  await recreateDatabase(conn, database);
  await ensureLocalUser(conn);
  const api = await startLocalDataApi({ postgres: conn, defaultUser: LOCAL_PIPELINE_USER });
  const db = newClient({ ...conn, database });
  await db.connect();
  await createSampleWarehouse(db, { rowsPerDay, sourceDays: DAYS, liveDays: DAYS - 1 });
  await applyPipelineSetup(db, pipeline);

  // The baselines run as the superuser; the state machine's handlers as the pipeline's role.
  const warehouse = localWarehouse(api.endpoint, database, DEFAULT_POLL, conn.user);
  let meter: ExecutionMeter | undefined;
  let work: WarehouseWork | undefined;
  let topLevelStates = new Set<string>();
  /** Called when Reconcile is entered (the step before Publish). */
  let beforePublish: (() => void) | undefined;
  const runner = await LocalRunner.create({
    env: { ...localHandlerEnvironment(api.endpoint, database), POWERTOOLS_LOG_LEVEL: 'WARN' },
    onEvent: (event, executionId) => {
      meter?.onEvent(event, executionId);
      const topLevel = event.type === 'StateEntered' && event.index === undefined && event.state !== undefined && topLevelStates.has(event.state.name);
      if (topLevel) work?.mark(event.state!.name);
      if (topLevel && event.state?.name === 'Reconcile') beforePublish?.();
    },
  });
  topLevelStates = new Set(Object.keys(runner.workflow.definition.States));
  meter = new ExecutionMeter({
    lambdaFunctions: lambdaFunctions(runner.workflow.template),
    loadStates: loadPhaseStates(runner.workflow.definition),
    topLevelStates,
  });

  const baselineOptions = { warehouse, pipeline, columns: LIVE_TABLE_COLUMNS, from, to };
  await prepareBaselines(baselineOptions);
  // One warm-up of each baseline (cache), untimed.
  await timeBaseline('insert', baselineOptions);
  await timeBaseline('ctas', baselineOptions);

  /**
   * atomic-publish's next run loads the same rows, from a clean manifest, on an endpoint of its own, as on a
   * warehouse that has not seen this batch: the previous run's loads were the same requests (same batch id),
   * and the ClientTokens made of them would answer with the earlier statements.
   */
  const freshBatch = async (options: { flushStatistics?: boolean } = {}) => {
    await db.query(`DROP SCHEMA IF EXISTS atomic_publish CASCADE`);
    const leftovers = await db.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'analytics' AND tablename LIKE 'sales_order_lines\\_\\_%'`);
    for (const { tablename } of leftovers.rows) await db.query(`DROP TABLE analytics.${tablename}`);
    const runApi = await startLocalDataApi({ postgres: conn, defaultUser: LOCAL_PIPELINE_USER, ...options });
    Object.assign(process.env, localHandlerEnvironment(runApi.endpoint, database));
    return runApi;
  };

  /** One more run, untimed and with no reader, on an endpoint that reports each statement's reads before it ends. */
  const measureWarehouseWork = async () => {
    beforePublish = undefined;
    const runApi = await freshBatch({ flushStatistics: true });
    const sampler = newClient({ ...conn, database });
    await sampler.connect();
    try {
      // The endpoint installs its system views at its first statement: before the first sample.
      await localWarehouse(runApi.endpoint, database, DEFAULT_POLL, conn.user).query({ sql: 'SELECT 1 AS one' }, 'bench:work:warm-up');
      work = new WarehouseWork(sampler, runApi);
      const result = await runner.run({ pipeline: pipeline.name, to: to.toISOString() });
      work.mark('end');
      if (result.status !== 'SUCCEEDED') throw new Error(`atomic run failed: ${result.error}: ${result.cause}`);
      return await work.byState();
    } finally {
      work = undefined;
      await sampler.end();
      await runApi.close();
    }
  };

  const loadPrefixes = [`atomic-publish:${pipeline.name}:load-chunk:`, `atomic-publish:${pipeline.name}:pause-probe:`];
  const insertMs: number[] = [];
  const ctasMs: number[] = [];
  const runMs: number[] = [];
  const runs: (ExecutionFigures & { requests: number; loadRequests: number; loadOperations: Record<string, number> })[] = [];
  const readerWaits: number[] = [];
  for (let i = 0; i < repeat; i++) {
    insertMs.push(await timeBaseline('insert', baselineOptions));
    ctasMs.push(await timeBaseline('ctas', baselineOptions));

    const runApi = await freshBatch();
    // The dashboard reads from the step before Publish on (its reads there are the typical latency): reading
    // throughout would take a core from the load on a small machine, which the baselines do not share.
    const reader = newClient({ ...conn, database });
    await reader.connect();
    let reads: ReturnType<typeof pollReads> | undefined;
    beforePublish = () => {
      reads ??= pollReads(reader, 'analytics.sales_order_lines');
    };
    meter.reset();
    const t = performance.now();
    const result = await runner.run({ pipeline: pipeline.name, to: to.toISOString() });
    runMs.push(performance.now() - t);
    const requests = runApi.requests();
    const latencies = (await reads?.stop()) ?? [];
    await reader.end();
    await runApi.close();
    if (result.status !== 'SUCCEEDED') throw new Error(`atomic run failed: ${result.error}: ${result.cause}`);
    const figures = meter.figures();
    if (figures.chunksLoaded === 0) throw new Error('the run loaded no chunk');
    const ofLoads = requests.filter((r) => loadPrefixes.some((p) => r.statementName?.startsWith(p)));
    const loadOperations: Record<string, number> = {};
    for (const r of ofLoads) loadOperations[r.operation] = (loadOperations[r.operation] ?? 0) + 1;
    runs.push({ ...figures, requests: requests.length, loadRequests: ofLoads.length, loadOperations });

    const window = figures.publishWindow;
    if (!window) throw new Error('the run has no Publish state');
    const before = latencies.filter((l) => l.at + l.ms < window.start).map((l) => l.ms);
    const typical = before.length > 0 ? median(before) : 0;
    for (const l of latencies) if (l.at + l.ms >= window.start && l.at <= window.end) readerWaits.push(Math.max(0, l.ms - typical));
    log(
      `  repetition ${i + 1}: INSERT+rename ${s(insertMs.at(-1)!)}, CTAS+rename ${s(ctasMs.at(-1)!)}, atomic-publish ${s(runMs.at(-1)!)} ` +
        `(${figures.chunksLoaded} chunks, ${requests.length} Data API requests, ${figures.transitions} transitions)`,
    );
  }

  log('bench: the warehouse work of one more run, by state');
  const workByState = await measureWarehouseWork();
  const workTotal = totalWork(workByState);

  log(`bench: backfill of ${BACKFILL_DAYS} days by replace-intervals`);
  // On an endpoint of its own, as each full run was (the last one is closed).
  const backfillApi = await startLocalDataApi({ postgres: conn, defaultUser: LOCAL_PIPELINE_USER });
  Object.assign(process.env, localHandlerEnvironment(backfillApi.endpoint, database));
  const backfillMs = await benchBackfill({ runner, days: DAYS, repeat });
  await backfillApi.close();

  log(`bench: planning ${PLAN_HOURS.toLocaleString('en-US')} hourly chunks`);
  const planScale = await benchPlanScale({ db, warehouse, repeat });

  const dataApiTable = json ? '' : await benchDataApi({ postgres: conn, database, endpoint: api.endpoint, repeat });
  const publishViaTable = json ? '' : await benchPublishVia({ postgres: conn, rowsPerDay, days: DAYS, repeat });
  log('bench: reconcile');
  const reconcile = await benchReconcile({ warehouse, pipeline, from, to, repeat });
  log(`bench: a batch of ${longBatchHours.toLocaleString('en-US')} hourly chunks in one run`);
  const longBatch = await runLongBatch({ hours: longBatchHours, pgDir, database: `${database}_long` });

  // The runner diverts JSON lines written to stdout (the handlers' logs) while it is open: close it before printing.
  runner.close();
  await db.end();
  await api.close();
  await postgres.release();

  const perChunk = (pick: (r: (typeof runs)[number]) => number) => median(runs.map((r) => pick(r) / r.chunksLoaded));
  const chunks = median(runs.map((r) => r.chunksLoaded));
  const steps = Object.keys(runs[0]!.stepMs);
  const stepMs = Object.fromEntries(steps.map((step) => [step, median(runs.map((r) => r.stepMs[step] ?? 0))]));
  const insertRenameMs = median(insertMs);
  const ctasRenameMs = median(ctasMs);
  const fullRunMs = median(runMs);
  const costPerChunk = {
    transitions: perChunk((r) => r.transitions),
    lambdaRequests: perChunk((r) => r.lambdaRequests),
    lambdaGbSeconds: { arm64: perChunk((r) => r.lambdaGbSeconds.arm64), x86_64: perChunk((r) => r.lambdaGbSeconds.x86_64) },
  };
  const cost = costPer1000Chunks(costPerChunk);
  const largestRunStatePayloadBytes = Math.max(...runs.map((r) => r.largestPayloadBytes));
  const operations = [...new Set(runs.flatMap((r) => Object.keys(r.loadOperations)))].sort();
  const loadRequestsPerChunkByOperation = Object.fromEntries(operations.map((op) => [op, perChunk((r) => r.loadOperations[op] ?? 0)]));
  const figures = {
    rows: rowsPerDay * DAYS,
    chunks,
    repeat,
    insertRenameMs,
    ctasRenameMs,
    fullRunMs,
    stepMs,
    overheadRatio: fullRunMs / insertRenameMs,
    ctasRatio: fullRunMs / ctasRenameMs,
    dataApiRequestsPerChunk: perChunk((r) => r.loadRequests),
    loadRequestsPerChunkByOperation,
    runDataApiRequestsPerChunk: perChunk((r) => r.requests),
    transitionsPerChunk: costPerChunk.transitions,
    loadTransitionsPerChunk: perChunk((r) => r.loadTransitions),
    lambdaRequestsPerChunk: costPerChunk.lambdaRequests,
    lambdaMsPerChunk: perChunk((r) => r.lambdaMs),
    costPer1000ChunksUsd: cost.total,
    costPer1000ChunksBreakdownUsd: { stepFunctions: cost.stepFunctions, lambdaRequests: cost.lambdaRequests, lambdaDuration: cost.lambdaDuration, dataApi: 0 },
    readerWaitP99Ms: readerWaits.length > 0 ? quantile(readerWaits, 0.99) : 0,
    readerWaitMaxMs: Math.max(0, ...readerWaits),
    readsDuringPublish: readerWaits.length,
    plan87600Ms: planScale.planMs,
    planChunks: planScale.chunks,
    planWindows: planScale.windows,
    planOutputBytes: planScale.outputBytes,
    planWindowOutputBytes: planScale.windowOutputBytes,
    largestStatePayloadBytes: Math.max(planScale.outputBytes, planScale.windowOutputBytes, largestRunStatePayloadBytes),
    largestRunStatePayloadBytes,
    reconcileBaselineMs: reconcile.baselineMs,
    reconcileGateMs: reconcile.gateMs,
    reconcileRatio: reconcile.reconcileRatio,
    statementsPerRun: workTotal.statements,
    commitsPerRun: workTotal.commits,
    rowsReadPerRun: workTotal.rowsRead,
    commitsPerChunk: (workByState.find((w) => w.state === loadPhaseMap(runner.workflow.definition))?.commits ?? 0) / chunks,
    warehouseRowsReadRatio: workTotal.rowsRead / (rowsPerDay * DAYS),
    warehouseWorkByState: workByState,
    backfillDays: BACKFILL_DAYS,
    backfillRunMs: median(backfillMs),
    backfillShare: median(backfillMs) / fullRunMs,
    longBatchHours: longBatch.hours,
    longBatchRunMs: longBatch.runMs,
    longBatchWindows: longBatch.windows,
    longBatchMaxHistoryEvents: Math.max(longBatch.parentHistoryEvents, longBatch.maxWindowHistoryEvents),
    longBatchParentHistoryEvents: longBatch.parentHistoryEvents,
    longBatchLargestPayloadBytes: longBatch.largestPayloadBytes,
    longBatchChunkLoads: longBatch.chunkLoads,
    longBatchChunksNotLoadedOnce: longBatch.chunksNotLoadedOnce,
    longBatchLiveDifferences: longBatch.liveDifferences,
    longBatchTooLongRefused: longBatch.tooLongRefused,
  };
  const targets = Object.fromEntries(
    (Object.entries(TARGETS) as [TargetField, Target][]).map(([field, t]) => [field, { target: describeTarget(t), met: meets(figures[field], t) }]),
  );

  if (json) {
    process.stdout.write(`${JSON.stringify({ ...figures, targets })}\n`);
    return;
  }

  const verdict = (field: TargetField) => {
    const met = meets(figures[field], TARGETS[field]);
    return met === null ? 'n/a' : met ? 'met' : 'missed';
  };
  const row = (measure: string, value: string, field?: TargetField) => [
    measure,
    value,
    field ? describeTarget(TARGETS[field]) : '',
    field ? verdict(field) : '',
  ];
  // The tables go to stdout and, whole, into docs/results.md (local/results-file.ts).
  const written: string[] = [];
  const emit = (text: string) => {
    process.stdout.write(text);
    written.push(text);
  };
  const n = figures.rows.toLocaleString('en-US');
  const usd = (v: number) => `$${v.toFixed(4)}`;
  emit(
    `${renderTable(
      [`${n} rows in ${chunks} day chunks (median of ${repeat})`, 'time', 'rows per second'],
      [
        ['INSERT ... SELECT + rename, one transaction', s(insertRenameMs), perSecond(figures.rows, insertRenameMs)],
        ['CREATE TABLE AS + rename, one transaction', s(ctasRenameMs), perSecond(figures.rows, ctasRenameMs)],
        ['atomic-publish: full state machine run', s(fullRunMs), perSecond(figures.rows, fullRunMs)],
        ...steps.filter((step) => stepMs[step]! >= 10).map((step) => [`  of which ${step}`, s(stepMs[step]!), '']),
      ],
      ['l', 'r', 'r'],
    )}\n`,
  );
  const byOperation = operations.map((op) => `${op} ${loadRequestsPerChunkByOperation[op]!.toFixed(2)}`).join(', ');
  emit(
    `${renderTable(
      ['figure', 'value', 'target', ''],
      [
        row('full run / (INSERT ... SELECT + rename)', ratio(figures.overheadRatio), 'overheadRatio'),
        row('full run / (CREATE TABLE AS + rename)', ratio(figures.ctasRatio)),
        row('Data API requests per chunk, LoadChunk', figures.dataApiRequestsPerChunk.toFixed(2), 'dataApiRequestsPerChunk'),
        row(`  of which ${byOperation}`, ''),
        row('Data API requests per chunk, whole run', figures.runDataApiRequestsPerChunk.toFixed(2)),
        row('state transitions per chunk, whole run', figures.transitionsPerChunk.toFixed(2), 'transitionsPerChunk'),
        row('state transitions per chunk, load phase', figures.loadTransitionsPerChunk.toFixed(2)),
        row('Lambda invocations per chunk', figures.lambdaRequestsPerChunk.toFixed(2)),
        row('  their duration per chunk, locally', ms(figures.lambdaMsPerChunk)),
        row('cost per 1,000 chunks at list price', usd(cost.total)),
        row('  Step Functions state transitions', usd(cost.stepFunctions)),
        row('  Lambda requests', usd(cost.lambdaRequests)),
        row('  Lambda duration (local durations)', usd(cost.lambdaDuration)),
        row('  Data API requests: no charge of their own', usd(0)),
        row(`reader wait caused by the swap, p99 (${figures.readsDuringPublish} reads)`, ms(figures.readerWaitP99Ms), 'readerWaitP99Ms'),
        row('reader wait caused by the swap, max', ms(figures.readerWaitMaxMs), 'readerWaitMaxMs'),
        row(`planning ${PLAN_HOURS.toLocaleString('en-US')} hourly chunks (${figures.planWindows} windows)`, ms(figures.plan87600Ms), 'plan87600Ms'),
        row('largest state payload, full run and that plan', kb(figures.largestStatePayloadBytes), 'largestStatePayloadBytes'),
        row('  of the full run alone', kb(largestRunStatePayloadBytes)),
        row("  that plan's output (its windows)", kb(figures.planOutputBytes)),
        row("  a window's PlanWindow output (its 1,000 chunks)", kb(figures.planWindowOutputBytes)),
        row('Reconcile / (per-day count and sums of source + of staging)', ratio(figures.reconcileRatio), 'reconcileRatio'),
        row('commits per chunk, load phase', figures.commitsPerChunk.toFixed(2), 'commitsPerChunk'),
        row('rows read by a run / rows of the source interval', ratio(figures.warehouseRowsReadRatio), 'warehouseRowsReadRatio'),
        row(
          `backfill of ${BACKFILL_DAYS} of ${DAYS} days (replace-intervals) / full run`,
          `${figures.backfillShare.toFixed(2)} (${s(figures.backfillRunMs)})`,
          'backfillShare',
        ),
        row(
          `${longBatch.hours.toLocaleString('en-US')} hourly chunks in one run (${longBatch.windows} windows, ${s(longBatch.runMs)}): history events, largest execution`,
          figures.longBatchMaxHistoryEvents.toLocaleString('en-US'),
          'longBatchMaxHistoryEvents',
        ),
        row('  of the parent execution', figures.longBatchParentHistoryEvents.toLocaleString('en-US')),
        row('  largest state payload of any execution', kb(figures.longBatchLargestPayloadBytes), 'longBatchLargestPayloadBytes'),
        row('  chunks not loaded exactly once', String(figures.longBatchChunksNotLoadedOnce), 'longBatchChunksNotLoadedOnce'),
        row('  rows of live and source that differ', String(figures.longBatchLiveDifferences), 'longBatchLiveDifferences'),
        row('  the next batch, were this one 100 days long, refused by Plan', figures.longBatchTooLongRefused ? 'yes' : 'no', 'longBatchTooLongRefused'),
      ],
      ['l', 'r', 'l', 'l'],
    )}\n`,
  );
  emit(warehouseWorkTable(`one more run's warehouse work, by state`, workByState, figures.rows));
  emit(dataApiTable);
  emit(publishViaTable);
  emit(reconcile.table);
  const options = process.argv.slice(2).join(' ');
  writeResultsSection(
    'bench',
    'npm run bench',
    `\`npm run bench${options === '' ? '' : ` -- ${options}`}\`, ${new Date().toISOString().slice(0, 10)}, ${thisMachine()}:\n\n\`\`\`\n${written.join('')}\`\`\`\n`,
  );
}

const s = (value: number) => `${(value / 1000).toFixed(2)} s`;
const ms = (value: number) => `${value.toFixed(value < 10 ? 1 : 0)} ms`;
const ratio = (value: number) => `${value.toFixed(2)}x`;
const kb = (value: number) => `${(value / KB).toFixed(1)} KB`;
const perSecond = (rows: number, value: number) => Math.round(rows / (value / 1000)).toLocaleString('en-US');

main().catch((error: unknown) => {
  log(`bench failed: ${(error as Error)?.stack ?? String(error)}`);
  process.exit(1);
});
