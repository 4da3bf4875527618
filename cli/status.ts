/** `status` and `history`: what the manifest, Step Functions and CloudWatch say of a pipeline. */
import { DescribeAlarmsCommand, type MetricAlarm } from '@aws-sdk/client-cloudwatch';
import { ListExecutionsCommand } from '@aws-sdk/client-sfn';
import { BatchPurpose } from '../domain/batch.ts';
import { latestEventTime } from '../domain/emit-metrics/sql/emit-metrics.ts';
import { livePublishedAt } from '../domain/freshness-monitor/sql/freshness-monitor.ts';
import { batchPurposePresent, latestCheckResults, newestInEffect, newestPublication, recentBatches } from '../domain/manifest/sql/cli.ts';
import { DimensionName } from '../domain/names.ts';
import { isIntervalRollback } from '../domain/rollback/rollback.ts';
import type { Pipeline } from '../domain/spec.ts';
import { parseWarehouseTime } from '../domain/time.ts';
import { pipelines } from '../pipelines/index.ts';
import type { Context } from './context.ts';
import { ExitCode } from './errors.ts';
import { shortTime } from './layout.ts';
import { type CliIo, manifestPresent, num, pipelineNamed, prose, query, table, text } from './shared.ts';

/** Every metric alarm (all pages); undefined, with a note on stderr, when CloudWatch does not answer: status goes on without them. */
async function metricAlarms(ctx: Context, io: CliIo): Promise<MetricAlarm[] | undefined> {
  const alarms: MetricAlarm[] = [];
  let nextToken: string | undefined;
  try {
    do {
      const page = await ctx.cloudWatch().send(new DescribeAlarmsCommand({ AlarmTypes: ['MetricAlarm'], ...(nextToken ? { NextToken: nextToken } : {}) }));
      alarms.push(...(page.MetricAlarms ?? []));
      nextToken = page.NextToken;
    } while (nextToken);
    return alarms;
  } catch (error) {
    io.stderr(prose(io, `atomic-publish: alarms not read (CloudWatch: ${(error as Error).message || (error as Error).name})`));
    return undefined;
  }
}

/** Whole minutes from a warehouse time to `now`. */
const minutesSince = (time: unknown, now: number) => Math.floor((now - parseWarehouseTime(String(time)).getTime()) / 60_000);

/**
 * The newest event time in the live table and how far behind now it is
 * (what the freshness monitor writes as LiveDataLagSeconds); null when the
 * table is empty or cannot be read (not created yet, no grant): status goes
 * on without it.
 */
async function dataLag(ctx: Context, pipeline: Pipeline, now: number): Promise<{ newestEvent: string; lagMinutes: number } | null> {
  try {
    const latest = (await query(ctx, latestEventTime(pipeline), 'status:lag'))[0]?.latest;
    return latest === null || latest === undefined ? null : { newestEvent: text(latest), lagMinutes: minutesSince(latest, now) };
  } catch {
    return null;
  }
}

/** Whether the manifest records what each batch is for (version 11 on). */
async function hasPurpose(ctx: Context): Promise<boolean> {
  return num((await query(ctx, batchPurposePresent(), 'purpose'))[0]?.present) > 0;
}

export async function status(ctx: Context, io: CliIo, name: string | undefined): Promise<number> {
  const chosen = name === undefined ? [...pipelines] : [pipelineNamed(name)];
  const manifest = await manifestPresent(ctx);
  const purpose = manifest && (await hasPurpose(ctx));
  const running =
    (await ctx.sfn().send(new ListExecutionsCommand({ stateMachineArn: ctx.stateMachineArn(), statusFilter: 'RUNNING', maxResults: 1000 }))).executions ?? [];
  const alarms = await metricAlarms(ctx, io);
  const now = Date.now();
  const rows = [];
  for (const pipeline of chosen) {
    const latest = manifest ? (await query(ctx, newestPublication(pipeline.name), 'status:publication'))[0] : undefined;
    const live =
      latest && isIntervalRollback({ rollbackOf: text(latest.rollback_of) === '' ? null : num(latest.rollback_of), mode: text(latest.publish_mode) })
        ? (await query(ctx, newestInEffect(pipeline.name), 'status:in-effect'))[0]
        : latest;
    // A check is no run of the pipeline's data: the last batch is the last that could publish.
    const batch = manifest ? (await query(ctx, recentBatches(pipeline.name, 1, purpose, false), 'status:batch'))[0] : undefined;
    const publishedAt = manifest ? (await query(ctx, livePublishedAt(pipeline.name), 'status:freshness'))[0]?.published_at : undefined;
    const ageMinutes = publishedAt ? minutesSince(publishedAt, now) : undefined;
    const sla = pipeline.freshness.slaMinutes;
    rows.push({
      pipeline: pipeline.name,
      // The publication whose batch readers see newest (none when every one was rolled back), and the latest in the manifest.
      live: live
        ? {
            seq: num(live.seq),
            batchId: text(live.batch_id),
            publishedAt: text(live.published_at),
            rows: num(live.rows_published),
            rollbackOf: live.rollback_of ?? null,
          }
        : null,
      latestPublication: latest
        ? { seq: num(latest.seq), batchId: text(latest.batch_id), publishedAt: text(latest.published_at), rollbackOf: latest.rollback_of ?? null }
        : null,
      lastBatch: batch
        ? {
            batchId: text(batch.batch_id),
            status: text(batch.status),
            from: text(batch.interval_start),
            to: text(batch.interval_end),
            finishedAt: text(batch.finished_at) || null,
            error: text(batch.error) || null,
          }
        : null,
      freshness: { ageMinutes: ageMinutes ?? null, slaMinutes: sla, withinSla: ageMinutes !== undefined && ageMinutes <= sla },
      // The data's own age, beside the publication's: runs that publish old data show here, not in the publication's age.
      dataLag: await dataLag(ctx, pipeline, now),
      running: running
        .filter((e) => e.name?.startsWith(`${pipeline.name}-`))
        .map((e) => ({ name: e.name!, executionArn: e.executionArn!, startDate: e.startDate?.toISOString() ?? null })),
      // The pipeline's own alarms (a Pipeline dimension of its name); null when CloudWatch was not read.
      alarms:
        alarms
          ?.filter((a) => a.Dimensions?.some((d) => d.Name === DimensionName.Pipeline && d.Value === pipeline.name))
          .map((a) => ({ name: a.AlarmName!, state: a.StateValue! })) ?? null,
    });
  }
  if (ctx.json) {
    // One shape with or without a pipeline named: {"pipelines": [...]}.
    io.stdout(JSON.stringify({ pipelines: rows }));
    return ExitCode.OK;
  }
  // A table of its own for each pipeline: its alarms' names alone are some 60 columns wide.
  const cards = rows.map((r) =>
    table(
      io,
      ['pipeline', r.pipeline],
      [
        ['live', liveCell(r.live, r.latestPublication)],
        [
          'last batch',
          r.lastBatch ? `${r.lastBatch.batchId} ${r.lastBatch.status}, ${shortTime(r.lastBatch.from)} .. ${shortTime(r.lastBatch.to)} (UTC)` : '-',
        ],
        [
          'freshness',
          (r.freshness.ageMinutes === null
            ? `no publication (SLA ${r.freshness.slaMinutes} min)`
            : `${r.freshness.ageMinutes} min old, SLA ${r.freshness.slaMinutes} min: ${r.freshness.withinSla ? 'within' : 'BREACHED'}`) +
            (r.dataLag === null ? '' : `\nnewest event ${r.dataLag.newestEvent} (${r.dataLag.lagMinutes} min ago)`),
        ],
        ['alarms', r.alarms === null ? 'not read' : r.alarms.map((a) => `${a.name}: ${a.state}`).join('\n') || '-'],
        ['running', r.running.map((e) => e.name).join('\n') || '-'],
      ],
    ),
  );
  io.stdout(cards.join('\n\n'));
  return ExitCode.OK;
}

type PublicationCell = { seq: number; batchId: string; publishedAt: string; rollbackOf: unknown } | null;

function liveCell(live: PublicationCell, latest: PublicationCell): string {
  if (latest === null) return 'never published';
  const rollback = (p: NonNullable<PublicationCell>) => (p.rollbackOf ? ` (rollback of #${p.rollbackOf})` : '');
  // After a rollback of some intervals, the latest publication is not the one whose batch is live.
  const after = live?.seq === latest.seq ? '' : `\nsince #${latest.seq}${rollback(latest)} at ${shortTime(latest.publishedAt)}`;
  return `${live ? `#${live.seq} ${live.batchId} ${shortTime(live.publishedAt)} (UTC)${rollback(live)}` : 'no publication in effect'}${after}`;
}

export async function history(ctx: Context, io: CliIo, name: string, opts: { limit: number }): Promise<number> {
  const pipeline = pipelineNamed(name);
  const manifest = await manifestPresent(ctx);
  const batches = manifest ? await query(ctx, recentBatches(pipeline.name, opts.limit, await hasPurpose(ctx)), 'history:batches') : [];
  const checks = manifest ? await query(ctx, latestCheckResults(pipeline.name), 'history:checks') : [];
  const rows = batches.map((b) => {
    const own = checks.filter((c) => c.batch_id === b.batch_id);
    return {
      batchId: text(b.batch_id),
      mode: text(b.mode),
      // A check ran the gate without publishing (`atomic-publish check`).
      purpose: text(b.purpose) || BatchPurpose.publish,
      from: text(b.interval_start),
      to: text(b.interval_end),
      status: text(b.status),
      attempt: num(b.attempt),
      chunks: num(b.chunk_count),
      rows: b.rows_written === null ? null : num(b.rows_written),
      startedAt: text(b.started_at),
      // From the batch's first start to its end (a resumed batch counts its earlier attempts too); null while it runs.
      tookSeconds:
        b.finished_at === null || b.finished_at === undefined
          ? null
          : Math.round((parseWarehouseTime(text(b.finished_at)).getTime() - parseWarehouseTime(text(b.started_at)).getTime()) / 1000),
      // The events of its publications: null when it has none, else 'sent' or 'unsent' (the freshness monitor sends those).
      event: num(b.publications) === 0 ? null : num(b.events_sent) === num(b.publications) ? 'sent' : 'unsent',
      checks: {
        passed: own.filter((c) => c.passed === true || c.passed === 'true').length,
        failed: own.filter((c) => !(c.passed === true || c.passed === 'true')).map((c) => text(c.check_name)),
      },
    };
  });
  if (ctx.json) {
    io.stdout(JSON.stringify({ pipeline: pipeline.name, batches: rows }));
    return ExitCode.OK;
  }
  if (rows.length === 0) {
    io.stdout(`No batches of ${pipeline.name} yet.`);
    return ExitCode.OK;
  }
  io.stdout(
    table(
      io,
      ['batch, mode', 'interval (UTC)', 'status', 'loaded', 'checks', 'started (UTC)'],
      rows.map((r) => [
        // A check ran the gate without publishing (`atomic-publish check`).
        `${r.batchId}\n${r.mode}${r.purpose === BatchPurpose.check ? ' (check)' : ''}`,
        `${shortTime(r.from)} .. ${shortTime(r.to)}`,
        [r.status, ...(r.attempt > 1 ? [`attempt ${r.attempt}`] : []), ...(r.event === null ? [] : [`event ${r.event}`])].join('\n'),
        `${r.chunks} chunk(s)${r.rows === null ? '' : `\n${r.rows} rows`}`,
        r.checks.passed + r.checks.failed.length === 0
          ? 'not run'
          : r.checks.failed.length === 0
            ? `${r.checks.passed} passed`
            : ['FAILED:', ...r.checks.failed].join('\n'),
        `${shortTime(r.startedAt)}\n${r.tookSeconds === null ? 'running' : `took ${duration(r.tookSeconds)}`}`,
      ]),
    ),
  );
  return ExitCode.OK;
}

/** `1h 02m`, `4m 05s`, `12s`. */
export function duration(seconds: number): string {
  const [h, m, s] = [Math.floor(seconds / 3600), Math.floor((seconds % 3600) / 60), seconds % 60];
  const two = (n: number) => String(n).padStart(2, '0');
  return h > 0 ? `${h}h ${two(m)}m` : m > 0 ? `${m}m ${two(s)}s` : `${s}s`;
}
