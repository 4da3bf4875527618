/**
 * `npm run bench`: what atomic-publish costs on top of the bare SQL, on the
 * local engine, as ratios against a baseline measured in the same run
 * (machines here are shared and noisy; absolute seconds are not comparable
 * between runs, ratios mostly are).
 *
 *   load overhead   full state machine run (plan, chunked load, reconcile,
 *                   swap, metrics, cleanup) vs one bare INSERT ... SELECT of
 *                   the same rows through the same Data API endpoint
 *   reader latency  a dashboard query's latency while the swap commits vs
 *                   its median latency during the load
 *   publishVia      the publish step and the longest read during it, by
 *                   rename vs through a view, on the same data (bench/publish-via.ts)
 *   reconcile       the gate's reading vs one plain COUNT(*) pass over the
 *                   source plus one over staging (bench/reconcile.ts)
 *
 * Options: --rows N (default 600000), --repeat N (default 3).
 */
import { qualifiedName } from '../domain/identifiers.ts';
import { timestampParam } from '../domain/sql/statement.ts';
import { startLocalDataApi } from '../local/data-api/server.ts';
import { recreateDatabase, startLocalPostgres } from '../local/postgres.ts';
import { STATE_DIR } from '../lib/project.ts';
import { localHandlerEnvironment, localWarehouse, silenceSdkNodeNotice } from '../local/aws-clients.ts';
import { newClient } from '../local/pg-clients.ts';
import { LocalRunner, type ExecutionEvent } from '../local/runner.ts';
import { DEFAULT_POLL } from '../functions/commons/warehouse.ts';
import { createSampleWarehouse, LIVE_TABLE_COLUMNS, sampleDay, samplePipeline } from '../local/sample-data.ts';
import { applyPipelineSetup, ensureLocalUser, LOCAL_PIPELINE_USER } from '../local/database-users.ts';
import { renderTable } from '../local/table.ts';
import { median } from './stats.ts';
import { benchDataApi } from './data-api.ts';
import { benchPublishVia } from './publish-via.ts';
import { benchReconcile } from './reconcile.ts';
import { pollReads } from './reads.ts';

const DATABASE = 'atomic_publish_bench';
const DAYS = 60;

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
}

const log = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  silenceSdkNodeNotice();
  const rows = option('rows', 600_000);
  const repeat = option('repeat', 3);
  const rowsPerDay = Math.max(1, Math.round(rows / DAYS));
  const pipeline = samplePipeline();

  log(`bench: ${rowsPerDay * DAYS} rows over ${DAYS} days, ${repeat} repetitions of each measurement`);
  const postgres = await startLocalPostgres({ dataDir: `${STATE_DIR}/bench-pg` });
  const conn = { host: postgres.host, port: postgres.port, user: postgres.user, password: postgres.password };
  await recreateDatabase(conn, DATABASE);
  await ensureLocalUser(conn);
  const api = await startLocalDataApi({ postgres: conn, defaultUser: LOCAL_PIPELINE_USER });
  const db = newClient({ ...conn, database: DATABASE });
  await db.connect();
  await createSampleWarehouse(db, { rowsPerDay, sourceDays: DAYS, liveDays: DAYS - 1 });
  await applyPipelineSetup(db, pipeline);
  await db.query(`CREATE SCHEMA bench`);

  // The baselines run as the superuser; the state machine's handlers as the pipeline's role.
  const warehouse = localWarehouse(api.endpoint, DATABASE, DEFAULT_POLL, conn.user);
  let publishWindow: { start: number; end: number } | undefined;
  const runner = await LocalRunner.create({
    env: { ...localHandlerEnvironment(api.endpoint, DATABASE), POWERTOOLS_LOG_LEVEL: 'WARN' },
    onEvent: (event: ExecutionEvent) => {
      if (event.state?.name !== 'Publish') return;
      if (event.type === 'StateEntered') publishWindow = { start: event.timestamp, end: Infinity };
      if (event.type === 'StateExited' && publishWindow) publishWindow.end = event.timestamp;
    },
  });

  const bare = `bench.bare`;
  const columns = LIVE_TABLE_COLUMNS;
  const bareTimes: number[] = [];
  const atomicTimes: number[] = [];
  const readerRatios: number[] = [];
  for (let i = 0; i < repeat; i++) {
    // Baseline: the rows loaded by one statement, nothing else.
    await db.query(`DROP TABLE IF EXISTS ${bare}; CREATE TABLE ${bare} (${columns})`);
    let t = performance.now();
    await warehouse.execute(
      {
        sql: `INSERT INTO ${qualifiedName('bench', 'bare')} ${pipeline.sourceSql}\n`,
        parameters: { start: timestampParam(sampleDay(0)), end: timestampParam(sampleDay(DAYS)) },
      },
      'bench:bare-insert',
    );
    bareTimes.push(performance.now() - t);

    // atomic-publish: the same rows, from a clean manifest each time.
    await db.query(`DROP SCHEMA IF EXISTS atomic_publish CASCADE`);
    const leftovers = await db.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'analytics' AND tablename LIKE 'sales_order_lines\\_\\_%'`);
    for (const { tablename } of leftovers.rows) await db.query(`DROP TABLE analytics.${tablename}`);
    const reader = newClient({ ...conn, database: DATABASE });
    await reader.connect();
    const reads = pollReads(reader, 'analytics.sales_order_lines');
    publishWindow = undefined;
    t = performance.now();
    const result = await runner.run({ pipeline: pipeline.name, to: sampleDay(DAYS).toISOString() });
    atomicTimes.push(performance.now() - t);
    const latencies = await reads.stop();
    await reader.end();
    if (result.status !== 'SUCCEEDED') throw new Error(`atomic run failed: ${result.error}: ${result.cause}`);
    const window = publishWindow as { start: number; end: number } | undefined;
    if (window) {
      const during = latencies.filter((l) => l.at + l.ms >= window.start && l.at <= window.end).map((l) => l.ms);
      const before = latencies.filter((l) => l.at + l.ms < window.start).map((l) => l.ms);
      if (during.length > 0 && before.length > 0) readerRatios.push(Math.max(...during) / median(before));
    }
    log(`  repetition ${i + 1}: bare ${(bareTimes.at(-1)! / 1000).toFixed(2)} s, atomic-publish ${(atomicTimes.at(-1)! / 1000).toFixed(2)} s`);
  }

  const n = rowsPerDay * DAYS;
  const b = median(bareTimes);
  const a = median(atomicTimes);
  process.stdout.write(
    `${renderTable(
      ['measure', 'baseline', 'atomic-publish', 'ratio'],
      [
        ['load of ' + n.toLocaleString('en-US') + ' rows (median)', `${(b / 1000).toFixed(2)} s`, `${(a / 1000).toFixed(2)} s`, `${(a / b).toFixed(2)}x`],
        ['rows per second', Math.round(n / (b / 1000)).toLocaleString('en-US'), Math.round(n / (a / 1000)).toLocaleString('en-US'), `${(b / a).toFixed(2)}x`],
        ['slowest read during the swap / median read', '1.00x', readerRatios.length ? `${median(readerRatios).toFixed(2)}x` : 'n/a', ''],
      ],
      ['l', 'r', 'r', 'r'],
    )}\n`,
  );

  process.stdout.write(await benchDataApi({ postgres: conn, database: DATABASE, endpoint: api.endpoint, repeat }));
  process.stdout.write(await benchPublishVia({ postgres: conn, rowsPerDay, days: DAYS, repeat }));
  process.stdout.write((await benchReconcile({ warehouse, pipeline, from: sampleDay(0), to: sampleDay(DAYS), repeat })).table);

  runner.close();
  await db.end();
  await api.close();
  await postgres.stop();
}

main().catch((error: unknown) => {
  log(`bench failed: ${(error as Error)?.stack ?? String(error)}`);
  process.exit(1);
});
