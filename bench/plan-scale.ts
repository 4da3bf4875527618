/**
 * Planning at scale: Plan's `plan()` called directly against the bench database
 * for an hourly pipeline over 87,600 hours of a tiny source: how long it takes,
 * and the size as JSON of its output (the windows) and of the first window's
 * PlanWindow output (its chunks, the largest state a window carries).
 */
import type pg from 'pg';
import { definePipeline } from '../domain/define-pipeline.ts';
import type { Pipeline } from '../domain/spec.ts';
import type { Warehouse } from '../functions/commons/warehouse.ts';
import { plan } from '../functions/plan/index.ts';
import { planWindow } from '../functions/plan/window.ts';
import { median } from './stats.ts';

export const PLAN_HOURS = 87_600;
const HISTORY_START = new Date('2016-01-01T00:00:00Z');
const SCHEMA = 'bench_hourly';

/** An hourly pipeline of its own: one row per day in the source, published by swap. */
export function hourlyPipeline(): Pipeline {
  return definePipeline({
    name: 'bench_hourly',
    target: { schema: SCHEMA, table: 'readings' },
    sourceSql: `
      SELECT read_at, meter_id, reading
        FROM ${SCHEMA}.source_readings
       WHERE read_at >= :start AND read_at < :end`,
    timeColumn: 'read_at',
    chunk: { grain: 'hour', timezone: 'UTC', maxConcurrency: 4 },
    historyStart: HISTORY_START.toISOString(),
    businessKey: ['read_at', 'meter_id'],
    publishMode: 'swap',
    checks: { allowEmpty: true },
    freshness: { slaMinutes: 120 },
    retention: { keepVersions: 1 },
  });
}

export interface PlanScale {
  /** Median duration of plan(), ms. */
  readonly planMs: number;
  /** JSON bytes of plan()'s output. */
  readonly outputBytes: number;
  /** JSON bytes of the first window's PlanWindow output (its chunks); 0 when the batch fits one window. */
  readonly windowOutputBytes: number;
  readonly chunks: number;
  readonly windows: number;
}

/** Creates the pipeline's source (indexed on its time column) and live table, directly in PostgreSQL. */
async function createTables(db: pg.ClientBase): Promise<void> {
  await db.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await db.query(`CREATE SCHEMA ${SCHEMA}`);
  const columns = `read_at timestamp NOT NULL, meter_id int NOT NULL, reading numeric(12, 3) NOT NULL`;
  await db.query(`CREATE TABLE ${SCHEMA}.source_readings (${columns})`);
  await db.query(
    `INSERT INTO ${SCHEMA}.source_readings
     SELECT $1::timestamp + d * interval '1 day' + interval '30 minutes', 1, d / 10.0
       FROM generate_series(0, $2::int - 1) AS d`,
    [HISTORY_START.toISOString().slice(0, 19), PLAN_HOURS / 24],
  );
  await db.query(`CREATE INDEX source_readings_read_at ON ${SCHEMA}.source_readings (read_at)`);
  await db.query(`CREATE TABLE ${SCHEMA}.readings (${columns})`);
  await db.query(`ANALYZE ${SCHEMA}.source_readings`);
}

/** Drops what a plan wrote (the manifest and the staging table), so each repetition plans afresh. */
async function dropPlanned(db: pg.ClientBase): Promise<void> {
  await db.query(`DROP SCHEMA IF EXISTS atomic_publish CASCADE`);
  const staging = await db.query<{ tablename: string }>(`SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'readings\\_\\_%'`, [SCHEMA]);
  for (const { tablename } of staging.rows) await db.query(`DROP TABLE ${SCHEMA}.${tablename}`);
}

export async function benchPlanScale(opts: { db: pg.ClientBase; warehouse: Warehouse; repeat: number; hours?: number }): Promise<PlanScale> {
  const pipeline = hourlyPipeline();
  const to = new Date(HISTORY_START.getTime() + (opts.hours ?? PLAN_HOURS) * 3_600_000);
  await createTables(opts.db);
  const times: number[] = [];
  let outputBytes = 0;
  let chunks = 0;
  let windowOutputBytes = 0;
  let windows = 0;
  try {
    for (let i = 0; i < opts.repeat; i++) {
      await dropPlanned(opts.db);
      const started = performance.now();
      const result = await plan({ input: { pipeline: pipeline.name, to: to.toISOString() } }, opts.warehouse, [pipeline]);
      times.push(performance.now() - started);
      outputBytes = Buffer.byteLength(JSON.stringify(result));
      chunks = result.chunkCount;
      windows = result.windows?.length ?? 0;
      const first = result.windows?.[0];
      if (first !== undefined)
        windowOutputBytes = Buffer.byteLength(JSON.stringify(await planWindow({ batch: result.batch, window: first }, opts.warehouse, [pipeline])));
    }
  } finally {
    await dropPlanned(opts.db);
    await opts.db.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  }
  return { planMs: median(times), outputBytes, windowOutputBytes, chunks, windows };
}
