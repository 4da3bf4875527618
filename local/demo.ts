/**
 * `npm start`: a table rebuilt every morning while analysts read it, on a
 * real PostgreSQL through the local Data API and the state machine
 * `cdk synth` produces; each day runs naively in place and through
 * atomic-publish, readers polling both. Exits non-zero if a reader of the
 * atomic path saw anything but the old or the new rows. The days: docs/demo.md
 */

import type pg from 'pg';
import { definePipeline } from '../domain/define-pipeline.ts';
import type { PipelineSpec } from '../domain/spec.ts';
import { clip } from '../domain/text.ts';
import { DEFAULT_POLL, type Warehouse } from '../functions/commons/warehouse.ts';
import { isChunkLoadState } from '../lib/workflow-steps.ts';
import { pipelines } from '../pipelines/index.ts';
import { salesOrderLines } from '../pipelines/sales-order-lines.ts';
import { localHandlerEnvironment, localWarehouse, silenceSdkNodeNotice } from './aws-clients.ts';
import { startLocalDataApi } from './data-api/server.ts';
import { applyPipelineSetup, ensureLocalUser, LOCAL_PIPELINE_USER } from './database-users.ts';
import { naiveRebuild } from './naive-rebuild.ts';
import { newClient } from './pg-clients.ts';
import { type PgConnection, recreateDatabase, startLocalPostgres } from './postgres.ts';
import { ReaderPool, type ReaderSample } from './readers.ts';
import { thisMachine, writeResultsSection } from './results-file.ts';
import { type ExecutionEvent, type ExecutionResult, LocalRunner } from './runner.ts';
import { addBadSourceRow, correctAmountsInPlace, createSampleWarehouse, removeBadSourceRows, sampleDay, samplePipeline } from './sample-data.ts';
import { bar, renderTable, renderTimeline } from './table.ts';

const DATABASE = 'atomic_publish_demo';
const ROWS_PER_DAY = Number(process.env.DEMO_ROWS_PER_DAY ?? 11_560);
const MONDAY_DAYS = 90; // source data 2026-01-01 .. 2026-03-31, rebuilt Monday 2026-04-01
const LIVE_DAYS_BEFORE = 86; // the build before Monday's
const BAD_ROW_DAY = 58; // Tuesday's bad order line: chunk 58 of 91, about 60% in
const CHECKPOINTS = [0, 0.3, 0.6, 1] as const;
/** Wednesday's backfill: March, sample days 59 (2026-03-01) to 90 (2026-04-01). */
const MARCH = { firstDay: 59, days: 31 } as const;
/** Thursday's backfill: sample days 88 to 90 (2026-03-30 .. 2026-04-02); day 89 (2026-03-31) is corrected while it runs. */
const THURSDAY = { firstDay: 88, days: 3 } as const;
const CORRECTED_DAY = 89;
const CORRECTED_ROWS = 100;

const err = (line = '') => process.stderr.write(`${line}\n`);
const out = (line = '') => process.stdout.write(`${line}\n`);
const fmt = (n: number) => n.toLocaleString('en-US');

/** Progress on stderr: a redrawn bar on a terminal, a line per 10% in a log. */
function progressReporter(label: string) {
  let lastTenth = -1;
  return (done: number, total: number) => {
    const fraction = total === 0 ? 1 : done / total;
    if (process.stderr.isTTY) {
      process.stderr.write(`\r  ${label.padEnd(28)} ${bar(fraction, 30)} ${String(done).padStart(3)}/${total}`);
      if (done === total) process.stderr.write('\n');
    } else if (Math.floor(fraction * 10) > lastTenth) {
      lastTenth = Math.floor(fraction * 10);
      err(`  ${label.padEnd(28)} ${String(done).padStart(3)}/${total} (${Math.round(fraction * 100)}%)`);
    }
  };
}

interface PathRun {
  readonly label: string;
  /** Every read, labelled with the checkpoint it was taken at (see progressOf). */
  readonly samples: ReaderSample[];
  readonly failed: boolean;
  readonly message: string;
}

/** The reader phase of a checkpoint: `at 30%`, or `after the run` for 100%. */
const checkpointLabel = (checkpoint: number) => (checkpoint >= 1 ? 'after the run' : `at ${Math.round(checkpoint * 100)}%`);

/** What a read taken at a checkpoint returned (every reader reads there; they all agree on either path but the naive one mid-step). */
function seenAt(run: PathRun, checkpoint: number): string {
  const sample = run.samples.find((s) => s.phase === checkpointLabel(checkpoint));
  if (sample === undefined) return 'never got there';
  return sample.count === undefined ? 'error' : fmt(sample.count);
}

/**
 * Progress of one path, reported as it goes. When the load crosses a
 * checkpoint, the path waits until every reader has read (labelled with
 * the checkpoint), so the table shows what readers saw at that point
 * however busy the machine is. Steps run one after another.
 */
function progressOf(label: string, readers: ReaderPool): (done: number, total: number) => Promise<void> {
  const report = progressReporter(label);
  let next = 0;
  let steps = Promise.resolve();
  return (done, total) =>
    (steps = steps.then(async () => {
      const fraction = total === 0 ? 1 : done / total;
      report(done, total);
      for (; next < CHECKPOINTS.length - 1 && fraction >= CHECKPOINTS[next]!; next += 1) {
        readers.phase(checkpointLabel(CHECKPOINTS[next]!));
        await readers.readAll();
      }
      readers.phase('loading');
    }));
}

/** After a run: every reader reads the table once more, and the reads are done. */
async function readersAfter(readers: ReaderPool): Promise<ReaderSample[]> {
  readers.phase(checkpointLabel(1));
  await readers.readAll();
  return readers.stop();
}

/** What a scenario rebuilds: all days up to `days`, or (a backfill) `days` days from `firstDay` only. */
interface Rebuild {
  readonly days: number;
  readonly firstDay?: number;
}

/** The table (or view of the backfilled days) readers of a schema's copy watch. */
const watched = (schema: string, rebuild: Rebuild) => `${schema}.sales_order_lines${rebuild.firstDay === undefined ? '' : '_backfilled'}`;

async function runNaive(warehouse: Warehouse, readers: ReaderPool, rebuild: Rebuild, label: string): Promise<PathRun> {
  const step = progressOf(`${label}: naive in place`, readers);
  readers.watch(watched('naive', rebuild));
  const only = rebuild.firstDay !== undefined;
  const result = await naiveRebuild(
    warehouse,
    { table: 'naive.sales_order_lines', days: rebuild.days, firstDay: sampleDay(rebuild.firstDay ?? 0), only },
    step,
  );
  if (result.failed && process.stderr.isTTY) process.stderr.write('\n');
  const samples = await readersAfter(readers);
  return { label, samples, failed: result.failed, message: result.message };
}

async function runAtomic(runner: LocalRunner, readers: ReaderPool, rebuild: Rebuild, label: string): Promise<{ run: PathRun; execution: ExecutionResult }> {
  const step = progressOf(`${label}: atomic-publish`, readers);
  let total = 0;
  let done = 0;
  readers.watch(watched('analytics', rebuild));
  const first = rebuild.firstDay ?? 0;
  const input = {
    pipeline: 'sales_order_lines',
    ...(rebuild.firstDay === undefined ? {} : { from: sampleDay(first).toISOString() }),
    to: sampleDay(first + rebuild.days).toISOString(),
  };
  hooks.onEvent = (event: ExecutionEvent) => {
    if (event.type === 'StateExited' && event.state?.name === 'Plan') {
      total = ((event.state.output as { plan?: { chunks?: unknown[] } })?.plan?.chunks ?? []).length;
      void step(0, total);
    }
  };
  hooks.chunkLoaded = () => step(++done, total);
  const execution = await runner.run(input, { name: `demo-${label.toLowerCase().replace(/\W+/g, '-')}-${Date.now()}` });
  hooks.onEvent = undefined;
  hooks.chunkLoaded = undefined;
  if (execution.status === 'FAILED' && process.stderr.isTTY) process.stderr.write('\n');
  const samples = await readersAfter(readers);
  const message = execution.status === 'SUCCEEDED' ? 'published' : (execution.alerts[0]?.subject ?? `${execution.error}`);
  return { run: { label, samples, failed: execution.status === 'FAILED', message }, execution };
}

/**
 * What the current atomic run wants to hear about: execution events, each
 * chunk loaded (awaited before the chunk's step ends), and Reconcile about
 * to start (every chunk loaded: Thursday's upstream correction).
 */
const hooks: { onEvent?: (event: ExecutionEvent) => void; chunkLoaded?: () => Promise<void>; beforeReconcile?: () => Promise<void> } = {};

function timelineOf(execution: ExecutionResult): string {
  const steps: { name: string; start: number; end: number; failed?: boolean }[] = [];
  const open = new Map<string, number>();
  for (const event of execution.events) {
    const name = event.state?.name;
    if (!name || isChunkLoadState(name)) continue;
    if (event.type === 'StateEntered') open.set(name, event.timestamp);
    if ((event.type === 'StateExited' || event.type === 'StateFailed') && open.has(name)) {
      steps.push({ name, start: open.get(name)!, end: event.timestamp, failed: event.type === 'StateFailed' });
      open.delete(name);
    }
  }
  for (const [name, start] of open) {
    const failedAt = execution.events.find((e) => e.type === 'ExecutionFailed')?.timestamp ?? start;
    steps.push({ name, start, end: failedAt, failed: true });
  }
  return renderTimeline(steps.sort((a, b) => a.start - b.start));
}

/**
 * A manifest error as one table cell: its first line, clipped. The whole
 * text (a failed gate's tables of where the content differs) was printed
 * with the run that failed.
 */
function errorLine(error: unknown): string {
  return clip(
    String(error)
      .replace(/^.*? failed: /, '')
      .split('\n')[0]!,
    160,
  );
}

async function printManifest(warehouse: Warehouse): Promise<void> {
  const batches = await warehouse.query(
    {
      sql: `SELECT batch_id, status, attempt, interval_start, interval_end, chunk_count, rows_read, rows_written,
                   COALESCE(error, '') AS error
              FROM atomic_publish.batches ORDER BY started_at`,
    },
    'demo:manifest-batches',
  );
  out('Manifest: atomic_publish.batches');
  out(
    renderTable(
      ['batch', 'status', 'attempt', 'interval', 'chunks', 'rows read', 'rows written', 'error'],
      batches.map((b) => [
        b.batch_id,
        b.status,
        b.attempt,
        `${String(b.interval_start).slice(0, 10)} .. ${String(b.interval_end).slice(0, 10)}`,
        b.chunk_count,
        b.rows_read === null ? '' : fmt(Number(b.rows_read)),
        b.rows_written === null ? '' : fmt(Number(b.rows_written)),
        errorLine(b.error),
      ]),
      ['l', 'l', 'r', 'l', 'r', 'r', 'r', 'l'],
    ),
  );
  const attempts = await warehouse.query(
    {
      sql: `SELECT batch_id, attempt, status, execution_id, started_at, finished_at, COALESCE(error, '') AS error
              FROM atomic_publish.batch_attempts ORDER BY started_at`,
    },
    'demo:manifest-attempts',
  );
  out('Manifest: atomic_publish.batch_attempts');
  out(
    renderTable(
      ['batch', 'attempt', 'status', 'execution', 'seconds', 'error'],
      attempts.map((a) => [
        a.batch_id,
        a.attempt,
        a.status,
        String(a.execution_id).split(':').pop(),
        a.finished_at === null ? '' : ((Date.parse(`${a.finished_at}Z`) - Date.parse(`${a.started_at}Z`)) / 1000).toFixed(1),
        errorLine(a.error),
      ]),
      ['l', 'r', 'l', 'l', 'r', 'l'],
    ),
  );
  const publications = await warehouse.query(
    {
      sql: `SELECT seq, batch_id, published_at, publish_mode, interval_start, interval_end, old_version_table, rows_published
              FROM atomic_publish.publications ORDER BY seq`,
    },
    'demo:manifest-publications',
  );
  out('Manifest: atomic_publish.publications');
  out(
    renderTable(
      ['#', 'batch', 'published at', 'mode', 'interval written', 'old rows kept as', 'rows'],
      publications.map((p) => [
        p.seq,
        p.batch_id,
        String(p.published_at).slice(0, 19),
        p.publish_mode,
        `${String(p.interval_start).slice(0, 10)} .. ${String(p.interval_end).slice(0, 10)}`,
        p.old_version_table,
        fmt(Number(p.rows_published)),
      ]),
      ['r', 'l', 'l', 'l', 'l', 'l', 'r'],
    ),
  );
}

/**
 * Wednesday's deploy: the sample pipeline's spec with `publishMode:
 * 'replace-intervals'` and a lookback of two days, as a redeploy of
 * pipelines/ would ship it to the functions (they read this list);
 * Thursday's adds the sum of amount per chunk to the gate's checks.
 */
function deployReplaceIntervals(checks: PipelineSpec['checks'] = salesOrderLines.checks): void {
  const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
  pipelines[index] = definePipeline({ ...salesOrderLines, publishMode: 'replace-intervals', lookback: 2, checks });
}

/** March corrected in the order system: amounts re-priced by 5%, one line in 50 cancelled. */
async function correctMarchUpstream(db: pg.Client): Promise<void> {
  const [from, to] = [sampleDay(MARCH.firstDay), sampleDay(MARCH.firstDay + MARCH.days)];
  await db.query(`UPDATE source.sales_order_lines SET amount = ROUND(amount * 1.05, 2) WHERE ordered_at >= $1 AND ordered_at < $2`, [from, to]);
  await db.query(`DELETE FROM source.sales_order_lines WHERE ordered_at >= $1 AND ordered_at < $2 AND order_id % 50 = 0`, [from, to]);
  await watchBackfill(db, MARCH);
}

/** The views the readers of a backfill watch: the backfilled days of each copy. */
async function watchBackfill(db: pg.Client, rebuild: Required<Rebuild>): Promise<void> {
  const [from, to] = [sampleDay(rebuild.firstDay), sampleDay(rebuild.firstDay + rebuild.days)];
  const literal = (day: Date) => `'${day.toISOString().slice(0, 19)}'`;
  for (const schema of ['analytics', 'naive']) {
    await db.query(
      `CREATE OR REPLACE VIEW ${schema}.sales_order_lines_backfilled AS
       SELECT * FROM ${schema}.sales_order_lines WHERE ordered_at >= ${literal(from)} AND ordered_at < ${literal(to)}`,
    );
  }
}

/** A digest of every live row outside the backfilled days: the backfill must leave them byte-identical. */
async function fingerprintOutside(db: pg.Client, rebuild: Required<Rebuild>): Promise<string> {
  const { rows } = await db.query(
    `SELECT COUNT(*) || ':' || md5(COALESCE(string_agg(concat_ws(':', order_id, line_no, ordered_at, customer_id, product_id, quantity, amount, unit_price), ',' ORDER BY order_id, line_no), '')) AS f
       FROM analytics.sales_order_lines WHERE ordered_at < $1 OR ordered_at >= $2`,
    [sampleDay(rebuild.firstDay), sampleDay(rebuild.firstDay + rebuild.days)],
  );
  return String(rows[0].f);
}

async function main(): Promise<number> {
  silenceSdkNodeNotice();
  const t0 = Date.now();
  err('atomic-publish demo: readers see old data or new data, never a mix');
  err('');
  err('Starting the local warehouse (embedded PostgreSQL + local Redshift Data API)...');
  const postgres = await startLocalPostgres({
    ...(process.env.ATOMIC_PUBLISH_PG_DIR ? { dataDir: process.env.ATOMIC_PUBLISH_PG_DIR } : {}),
    log: (line) => err(`  ${line}`),
  });
  const conn: PgConnection = { host: postgres.host, port: postgres.port, user: postgres.user, password: postgres.password };
  await recreateDatabase(conn, DATABASE);
  await ensureLocalUser(conn);
  // The handlers run as the least-privilege role; the naive path as the superuser who owns its copy.
  const api = await startLocalDataApi({ postgres: conn, defaultUser: LOCAL_PIPELINE_USER });
  err(`  PostgreSQL on ${postgres.host}:${postgres.port}, data in ${postgres.dataDir}`);
  err(`  Redshift Data API on ${api.endpoint}`);

  const db = newClient({ ...conn, database: DATABASE }, (error) => err(`  lost the connection to PostgreSQL: ${error.message}`));
  await db.connect();
  err(`Creating the sample source: ${fmt(ROWS_PER_DAY * (MONDAY_DAYS + 1))} sales order lines over ${MONDAY_DAYS + 1} days...`);
  const sample = await createSampleWarehouse(db, {
    rowsPerDay: ROWS_PER_DAY,
    sourceDays: MONDAY_DAYS + 1,
    liveDays: LIVE_DAYS_BEFORE,
    copies: ['naive'],
  });
  await applyPipelineSetup(db, samplePipeline());
  err(`  live table before Monday: ${fmt(sample.liveRows)} rows (the previous build)`);

  const env = { ...localHandlerEnvironment(api.endpoint, DATABASE), POWERTOOLS_LOG_LEVEL: 'WARN' };
  err('Loading the state machine from the synthesized CDK template...');
  const runner = await LocalRunner.create({
    env,
    onEvent: (event) => hooks.onEvent?.(event),
    taskOverrides: {
      LoadChunk: async (input, next) => {
        const loaded = await next(input);
        await hooks.chunkLoaded?.();
        return loaded;
      },
      Reconcile: async (input, next) => {
        await hooks.beforeReconcile?.();
        return next(input);
      },
    },
  });
  const warehouse = localWarehouse(api.endpoint, DATABASE, DEFAULT_POLL, conn.user);
  const readers = new ReaderPool({ ...conn, database: DATABASE }, 2);

  const results: { day: string; old: number; expectedNew: number; naive: PathRun; atomic: PathRun; execution: ExecutionResult; watched: string }[] = [];
  const loadStarted = Date.now();
  let atomicRows = 0;
  const scenarios: readonly { day: string; rebuild: Rebuild; story: string }[] = [
    { day: 'Monday', rebuild: { days: MONDAY_DAYS }, story: 'clean source' },
    { day: 'Tuesday', rebuild: { days: MONDAY_DAYS + 1 }, story: `an upstream order line with quantity 0 sits on day ${BAD_ROW_DAY + 1}` },
    { day: 'Tuesday re-run', rebuild: { days: MONDAY_DAYS + 1 }, story: 'after the upstream fix, started with the input the alert gave' },
    {
      day: 'Wednesday',
      rebuild: MARCH,
      story: 'March re-priced upstream (amounts +5%, 1 line in 50 cancelled); the pipeline now publishes by replace-intervals and backfills March alone',
    },
    {
      day: 'Thursday',
      rebuild: THURSDAY,
      story: `the gate now also sums amount per chunk; once the chunks loaded, ${CORRECTED_ROWS} order lines of ${sampleDay(CORRECTED_DAY).toISOString().slice(0, 10)} are corrected upstream in place (+1,000.00 each, same count)`,
    },
    { day: 'Thursday re-run', rebuild: THURSDAY, story: 'started with the input the alert gave' },
  ];
  let outsideMarch: { before: string; after?: string } | undefined;
  for (const { day, rebuild, story } of scenarios) {
    if (day === 'Tuesday') await addBadSourceRow(db, sampleDay(BAD_ROW_DAY));
    if (day === 'Tuesday re-run') await removeBadSourceRows(db);
    if (day === 'Wednesday') {
      deployReplaceIntervals();
      await correctMarchUpstream(db);
      outsideMarch = { before: await fingerprintOutside(db, MARCH) };
    }
    if (day === 'Thursday') {
      deployReplaceIntervals({ ...salesOrderLines.checks, measures: ['amount'] });
      await watchBackfill(db, THURSDAY);
      hooks.beforeReconcile = async () => {
        hooks.beforeReconcile = undefined;
        await correctAmountsInPlace(db, { from: sampleDay(CORRECTED_DAY), to: sampleDay(CORRECTED_DAY + 1) }, CORRECTED_ROWS, '1000.00');
      };
    }
    const first = sampleDay(rebuild.firstDay ?? 0);
    const last = sampleDay((rebuild.firstDay ?? 0) + rebuild.days);
    const count = async (table: string) =>
      Number((await db.query(`SELECT COUNT(*) AS n FROM ${table} WHERE ordered_at >= $1 AND ordered_at < $2`, [first, last])).rows[0].n);
    const old = await count('analytics.sales_order_lines');
    const expectedNew = await count('source.sales_order_lines');
    err('');
    err(
      `${day}: ${rebuild.firstDay === undefined ? `rebuilding ${rebuild.days} days` : `backfilling ${rebuild.days} days from ${first.toISOString().slice(0, 10)}`} (${story})`,
    );
    const naive = await runNaive(warehouse, readers, rebuild, day);
    const { run: atomic, execution } = await runAtomic(runner, readers, rebuild, day);
    if (execution.status === 'SUCCEEDED') atomicRows += expectedNew;
    results.push({ day, old, expectedNew, naive, atomic, execution, watched: watched('analytics', rebuild) });
    if (day === 'Wednesday' && outsideMarch) outsideMarch.after = await fingerprintOutside(db, MARCH);
  }
  // What Thursday's gate located, as check_results records it.
  const located = (await db.query(`SELECT details FROM atomic_publish.check_results WHERE check_name = 'difference_located' ORDER BY checked_at DESC LIMIT 1`))
    .rows[0]?.details as string | undefined;
  const loadSeconds = (Date.now() - loadStarted) / 1000;
  await db.end();

  out('');
  out('What readers saw (row count of the live table; on Wednesday and Thursday, of the days backfilled) as the rebuild progressed');
  const rows: unknown[][] = [];
  const summaries: string[] = [];
  let mixed = 0;
  for (const r of results) {
    for (const run of [r.naive, r.atomic]) {
      rows.push([
        r.day,
        run === r.naive ? 'naive in place' : 'atomic-publish',
        ...CHECKPOINTS.map((c) => seenAt(run, c)),
        run.failed ? `FAILED: ${run.message}` : 'succeeded',
      ]);
    }
    const allowed = new Set([r.old, r.execution.status === 'SUCCEEDED' ? r.expectedNew : r.old]);
    const atomicCounts = r.atomic.samples.filter((s) => s.table === r.watched);
    const bad = atomicCounts.filter((s) => s.count === undefined || !allowed.has(s.count));
    mixed += bad.length;
    const distinct = [...new Set(atomicCounts.map((s) => s.count ?? -1))].map((n) => (n < 0 ? 'error' : fmt(n)));
    summaries.push(
      `${r.day} atomic readers: ${atomicCounts.length} reads, distinct counts ${distinct.join(', ')} (old ${fmt(r.old)}, new ${fmt(r.expectedNew)})`,
    );
  }
  out(renderTable(['run', 'path', 'at 0%', 'at 30%', 'at 60%', 'at 100%', 'outcome'], rows, ['l', 'l', 'r', 'r', 'r', 'r', 'l']));
  out('');
  for (const summary of summaries) out(summary);
  if (outsideMarch) {
    const same = outsideMarch.before === outsideMarch.after;
    out(
      `Wednesday: every row outside March ${same ? 'unchanged' : 'CHANGED'} by the backfill (fingerprint ${outsideMarch.before.slice(0, 12)} before, ${String(outsideMarch.after).slice(0, 12)} after)`,
    );
    if (!same) mixed += 1;
  }
  if (located !== undefined) out(`Thursday: the gate located the correction (check_results, difference_located): ${located}`);

  for (const r of results) {
    out('');
    out(`${r.day}: atomic-publish run timeline (${r.execution.status})`);
    out(timelineOf(r.execution));
    const plan = (
      r.execution.events.find((e) => e.type === 'StateExited' && e.state?.name === 'Plan')?.state?.output as
        | { plan?: { chunkCount: number; chunks: unknown[]; batch: { batchId: string } } }
        | undefined
    )?.plan;
    if (plan) {
      const done = plan.chunkCount - plan.chunks.length;
      const retries = r.execution.events.filter((e) => e.type === 'StateRetried').length;
      out(
        `Plan: batch ${plan.batch.batchId}, ${plan.chunkCount} chunks${done > 0 ? `, ${done} already loaded by an earlier attempt, ${plan.chunks.length} to load` : ''}; ` +
          `${retries} step(s) retried after a transient error`,
      );
    }
    if (r.execution.alerts.length > 0) {
      out('');
      out(`On-call alert sent (SNS topic, local outbox .atomic-publish/outbox/alerts.jsonl):`);
      out(`  Subject: ${r.execution.alerts[0]!.subject}`);
      for (const line of r.execution.alerts[0]!.message.split('\n')) out(`  ${line}`);
    }
    for (const m of r.execution.metrics) {
      out(
        `Metrics (${m.namespace}, ${Object.entries(m.dimensions)
          .map(([k, v]) => `${k}=${v}`)
          .join(', ')}): ${Object.entries(m.values)
          .map(([k, v]) => `${k}=${Math.round(v * 100) / 100}`)
          .join(', ')}`,
      );
    }
  }
  if (runner.events.length > 0) {
    out('');
    out('Publication events put on EventBridge (default bus; locally local/eventbridge-api.ts), for downstream jobs:');
    for (const event of runner.events) out(`  ${event.detailType}: ${JSON.stringify(event.detail)}`);
  }
  out('');
  await printManifest(warehouse);

  runner.close();
  await readers.close();
  await api.close();
  await postgres.stop();
  out('');
  const took = `Demo took ${((Date.now() - t0) / 1000).toFixed(1)} s; all runs took ${loadSeconds.toFixed(1)} s (atomic path: ${fmt(atomicRows)} rows published).`;
  out(took);
  // At its default scale (the README's main job), the time goes into docs/results.md; a scaled-down run (the tests') writes nothing.
  if (process.env.DEMO_ROWS_PER_DAY === undefined && mixed === 0)
    writeResultsSection('demo', 'npm start', `- ${took} (${new Date().toISOString().slice(0, 10)}; ${thisMachine()})\n`);
  if (mixed > 0) {
    out(`FAIL: readers of the atomic path saw ${mixed} row count(s) other than the old or the new table.`);
    return 1;
  }
  out('OK: readers of the atomic path only ever saw the old or the new table.');
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    err(`demo failed: ${(error as Error)?.stack ?? String(error)}`);
    process.exit(2);
  },
);
