/**
 * Publishing by rename, through a view (`publishVia`) and in place
 * (`snapshotReaders: 'in-place'`) on the same data, as ratios to the rename's: the
 * Publish step (entered to exited) and the longest dashboard read overlapping it,
 * while a reader transaction that read the live name stays open until HOLD_MS after
 * Publish began. Each repetition publishes one more day to both databases,
 * alternating which goes first. Alone: `npx tsx bench/publish-via.ts --rows N --repeat N [--hold-ms N]`.
 */
import type pg from 'pg';
import { definePipeline } from '../domain/define-pipeline.ts';
import { migrationSql } from '../domain/publish/sql/view.ts';
import type { Pipeline } from '../domain/spec.ts';
import { STATE_DIR } from '../lib/project.ts';
import { localHandlerEnvironment, silenceSdkNodeNotice } from '../local/aws-clients.ts';
import { startLocalDataApi } from '../local/data-api/server.ts';
import { applyPipelineSetup, ensureLocalUser, LOCAL_PIPELINE_USER, localUserPassword } from '../local/database-users.ts';
import { newClient } from '../local/pg-clients.ts';
import { type PgConnection, recreateDatabase, startLocalPostgres } from '../local/postgres.ts';
import { type ExecutionEvent, LocalRunner } from '../local/runner.ts';
import { createSampleWarehouse, sampleDay, samplePipeline } from '../local/sample-data.ts';
import { renderTable } from '../local/table.ts';
import { pipelines } from '../pipelines/index.ts';
import { salesOrderLines } from '../pipelines/sales-order-lines.ts';
import { pollReads } from './reads.ts';
import { median } from './stats.ts';

const LIVE = 'analytics.sales_order_lines';
/** How long the open reader transaction outlives the start of Publish, unless `--hold-ms` says. */
const HOLD_MS = 300;

export interface PublishViaBenchOptions {
  postgres: PgConnection;
  rowsPerDay: number;
  days: number;
  repeat: number;
  /** How long the open reader transaction outlives the start of Publish. @default HOLD_MS */
  holdMs?: number;
}

interface Way {
  readonly label: 'rename' | 'view' | 'in-place';
  readonly pipeline: Pipeline;
  readonly database: string;
  runner?: LocalRunner;
  readonly publishMs: number[];
  readonly longestReadMs: number[];
  publishWindow?: { start: number; end: number };
  onPublish?: () => void;
}

async function connect(conn: PgConnection, database: string, user?: string): Promise<pg.Client> {
  const client = newClient({ ...conn, database, ...(user ? { user, password: localUserPassword(conn, user) } : {}) });
  await client.connect();
  return client;
}

/** Runs the measurements and returns them as a table. */
export async function benchPublishVia(opts: PublishViaBenchOptions): Promise<string> {
  const { postgres: conn, rowsPerDay, days, repeat } = opts;
  const holdMs = opts.holdMs ?? HOLD_MS;
  const rename = samplePipeline();
  const view = definePipeline({ ...salesOrderLines, publishVia: 'view' });
  const inPlace = definePipeline({ ...salesOrderLines, snapshotReaders: 'in-place' });
  const slot = pipelines.findIndex((p) => p.name === rename.name);
  const ways: Way[] = [
    { label: 'rename', pipeline: rename, database: 'atomic_publish_bench_rename', publishMs: [], longestReadMs: [] },
    { label: 'view', pipeline: view, database: 'atomic_publish_bench_view', publishMs: [], longestReadMs: [] },
    { label: 'in-place', pipeline: inPlace, database: 'atomic_publish_bench_in_place', publishMs: [], longestReadMs: [] },
  ];
  await ensureLocalUser(conn);
  const api = await startLocalDataApi({ postgres: conn, defaultUser: LOCAL_PIPELINE_USER });
  const handlerEnv = (way: Way) => ({ ...localHandlerEnvironment(api.endpoint, way.database), POWERTOOLS_LOG_LEVEL: 'WARN' });
  try {
    for (const way of ways) {
      await recreateDatabase(conn, way.database);
      const db = await connect(conn, way.database);
      try {
        await createSampleWarehouse(db, { rowsPerDay, sourceDays: days + repeat, liveDays: days - 1 });
        await applyPipelineSetup(db, rename);
      } finally {
        await db.end();
      }
      if (way.label === 'view') {
        const owner = await connect(conn, way.database, LOCAL_PIPELINE_USER);
        try {
          const columns = await owner.query<{ c: string }>(
            `SELECT column_name AS c FROM information_schema.columns WHERE table_schema = 'analytics' AND table_name = 'sales_order_lines' ORDER BY ordinal_position`,
          );
          for (const sql of migrationSql(
            view,
            columns.rows.map((r) => r.c),
          ))
            await owner.query(sql);
        } finally {
          await owner.end();
        }
      }
      way.runner = await LocalRunner.create({
        env: handlerEnv(way),
        onEvent: (event: ExecutionEvent) => {
          if (event.state?.name !== 'Publish') return;
          if (event.type === 'StateEntered') {
            way.publishWindow = { start: event.timestamp, end: Infinity };
            way.onPublish?.();
          }
          if (event.type === 'StateExited' && way.publishWindow) way.publishWindow.end = event.timestamp;
        },
      });
    }

    for (let i = 0; i < repeat; i++) {
      // Each way first in turn.
      for (const way of [...ways.slice(i % ways.length), ...ways.slice(0, i % ways.length)]) {
        // The handlers run in this process and read process.env, which a runner sets when it is created: the last one
        // created would win. Each run gets its own database's environment and its own pipeline spec.
        Object.assign(process.env, handlerEnv(way));
        pipelines[slot] = way.pipeline;
        const reader = await connect(conn, way.database);
        const holder = await connect(conn, way.database);
        const reads = pollReads(reader, LIVE);
        await holder.query('BEGIN');
        await holder.query(`SELECT COUNT(*) FROM ${LIVE}`);
        let released!: Promise<void>;
        way.onPublish = () => {
          released = new Promise((resolve) => setTimeout(resolve, holdMs)).then(() => holder.query('COMMIT').then(() => undefined));
        };
        way.publishWindow = undefined;
        const result = await way.runner!.run({ pipeline: way.pipeline.name, to: sampleDay(days + i).toISOString() });
        await released;
        const latencies = await reads.stop();
        await reader.end();
        await holder.end();
        if (result.status !== 'SUCCEEDED') {
          const db = await connect(conn, way.database);
          const failed = await db.query(`SELECT error FROM atomic_publish.batches WHERE status = 'FAILED'`).finally(() => db.end());
          const caught = result.events.find((e) => e.type === 'StateEntered' && e.state?.name === 'RecordFailure')?.state?.input as
            | { error?: { Cause?: string } }
            | undefined;
          throw new Error(`${way.label} run failed: ${result.error}: ${caught?.error?.Cause ?? failed.rows.map((r) => String(r.error)).join('; ')}`);
        }
        const window = way.publishWindow as { start: number; end: number } | undefined;
        if (!window) throw new Error(`${way.label} run has no Publish state`);
        way.publishMs.push(window.end - window.start);
        const during = latencies.filter((l) => l.at + l.ms >= window.start && l.at <= window.end).map((l) => l.ms);
        way.longestReadMs.push(Math.max(0, ...during));
      }
    }
  } finally {
    pipelines[slot] = rename;
    for (const way of ways) way.runner?.close();
    await api.close();
  }

  const [byRename, byView, byInPlace] = ways as [Way, Way, Way];
  const row = (measure: string, of: (way: Way) => number[]) => {
    const [a, b, c] = [median(of(byRename)), median(of(byView)), median(of(byInPlace))];
    return [measure, `${a.toFixed(0)} ms`, `${b.toFixed(0)} ms`, `${c.toFixed(0)} ms`, `${(b / a).toFixed(2)}x`, `${(c / a).toFixed(2)}x`];
  };
  return `${renderTable(
    [
      'publish, reader transaction open ' + holdMs + ' ms into it (median of ' + repeat + ')',
      'rename',
      'view',
      'in-place',
      'view / rename',
      'in-place / rename',
    ],
    [row('publish step', (w) => w.publishMs), row('longest read during the publish', (w) => w.longestReadMs)],
    ['l', 'r', 'r', 'r', 'r', 'r'],
  )}\n`;
}

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
}

if (process.argv[1]?.endsWith('publish-via.ts')) {
  silenceSdkNodeNotice();
  const days = 30;
  const rows = option('rows', 300_000);
  const repeat = option('repeat', 3);
  const holdMs = option('hold-ms', HOLD_MS);
  const postgres = await startLocalPostgres({ dataDir: `${STATE_DIR}/bench-pg` });
  try {
    process.stdout.write(
      await benchPublishVia({
        postgres: { host: postgres.host, port: postgres.port, user: postgres.user, password: postgres.password },
        rowsPerDay: Math.max(1, Math.round(rows / days)),
        days,
        repeat,
        holdMs,
      }),
    );
  } finally {
    await postgres.stop();
  }
}
