/**
 * The command line, `atomic-publish` (bin/atomic-publish.ts): plan, run,
 * backfill, status, history, check, rollback and `local up`, against the
 * deployed stack or the local engine. Human-readable tables by default,
 * `--json` for scripts. Exit codes: cli/errors.ts.
 */
import { DescribeAlarmsCommand, type MetricAlarm } from '@aws-sdk/client-cloudwatch';
import { ListExecutionsCommand } from '@aws-sdk/client-sfn';
import cliProgress from 'cli-progress';
import Table from 'cli-table3';
import { Command, CommanderError, Option } from 'commander';
import { MEASURED_PER_CHUNK, costPer1000Chunks } from '../bench/prices.ts';
import { AtomicPublishError, ValidationError } from '../domain/errors.ts';
import { batchIdFor, type BatchInterval, liveTableColumns, planChunks, resolveInterval, resolvePipeline, stagingTableFor } from '../domain/plan.ts';
import { type PublicationRecord, resolveRollback } from '../domain/rollback.ts';
import { DimensionName } from '../domain/names.ts';
import { manualRunName } from '../domain/run-name.ts';
import type { Pipeline } from '../domain/spec.ts';
import { batchProgress, latestCheckResults, newestPublication, publishedIntervals, recentBatches } from '../domain/sql/cli.ts';
import { insertIntervalSql } from '../domain/sql/load-chunk.ts';
import { manifestTablePresent } from '../domain/sql/manifest.ts';
import { liveColumnsQuery } from '../domain/sql/out-of-band.ts';
import { doneChunks, findBatch, tableColumns } from '../domain/sql/plan.ts';
import { chunkCounts, gateAggregates } from '../domain/sql/reconcile.ts';
import { publicationHistory, rollbackBatch } from '../domain/sql/rollback.ts';
import { livePublishedAt } from '../domain/sql/freshness-monitor.ts';
import type { Row } from '../functions/commons/warehouse.ts';
import { pipelines } from '../pipelines/index.ts';
import { type Context, contextFrom, type GlobalOptions, isUnreachable } from './context.ts';
import { CliError, ExitCode } from './errors.ts';
import { failureAlert, follow, outcomeOf, startOrFollow } from './runs.ts';

export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: NodeJS.ProcessEnv;
  /** Draw a progress bar (a terminal). */
  readonly tty?: boolean;
  /** `local up` runs until this aborts (Ctrl-C in bin/atomic-publish.ts). */
  readonly signal?: AbortSignal;
}

const STATEMENT = (command: string) => `atomic-publish:cli:${command}`;

function table(head: string[], rows: (string | number)[][]): string {
  const t = new Table({ head, style: { head: [], border: [], compact: true } });
  t.push(...rows.map((r) => r.map((c) => String(c))));
  return t.toString();
}

const text = (value: unknown) => (value === null || value === undefined ? '' : String(value));
const num = (value: unknown) => Number(value ?? 0);

function pipelineNamed(name: string): Pipeline {
  return resolvePipeline({ pipeline: name }, pipelines);
}

function intervalOf(pipeline: Pipeline, from: string | undefined, to: string | undefined): BatchInterval {
  return resolveInterval({ pipeline: pipeline.name, ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) }, pipeline, new Date());
}

async function query(ctx: Context, statement: Parameters<ReturnType<Context['warehouse']>['query']>[0], what: string): Promise<Row[]> {
  return ctx.warehouse().query(statement, STATEMENT(what));
}

/** Whether the manifest exists (a warehouse no run has touched has none). Reaches the warehouse: unreachable fails here. */
async function manifestPresent(ctx: Context): Promise<boolean> {
  const [row] = await query(ctx, manifestTablePresent('publications'), 'manifest');
  return num(row?.present) > 0;
}

// --- plan ---------------------------------------------------------------

async function plan(ctx: Context, io: CliIo, name: string, opts: { from?: string; to?: string }): Promise<number> {
  const pipeline = pipelineNamed(name);
  const interval = intervalOf(pipeline, opts.from, opts.to);
  const chunks = planChunks(interval, pipeline);
  const batchId = batchIdFor(pipeline, interval);
  const { schema, table: liveTable } = pipeline.target;
  const columns = liveTableColumns(
    pipeline,
    (await query(ctx, tableColumns(schema, liveTable), 'plan:columns')).map((r) => ({ name: String(r.column_name), dataType: String(r.data_type) })),
  );
  const batch = {
    pipeline: pipeline.name,
    batchId,
    specHash: pipeline.specHash,
    liveTable: `${schema}.${liveTable}`,
    from: interval.from.toISOString(),
    to: interval.to.toISOString(),
    stagingTable: stagingTableFor(pipeline, batchId),
    columns,
    basePublication: 0,
  };
  const typed = (await query(ctx, liveColumnsQuery(schema, liveTable), 'plan:typed-columns')).map((r) => String(r.col));
  const gate = chunkCounts(pipeline, batch, gateAggregates(pipeline, typed));
  const manifest = await manifestPresent(ctx);
  const published = manifest ? await query(ctx, publishedIntervals(pipeline.name, interval), 'plan:published') : [];
  const existing = manifest ? (await query(ctx, findBatch(batchId), 'plan:batch'))[0] : undefined;
  const progress = existing ? (await query(ctx, batchProgress(batchId), 'plan:progress'))[0] : undefined;
  const loaded = new Set(existing ? (await query(ctx, doneChunks(batchId), 'plan:chunks')).filter((r) => r.status === 'DONE').map((r) => num(r.chunk_index)) : []);
  const toLoad = chunks.length - num(progress?.done);
  const cost = costPer1000Chunks(MEASURED_PER_CHUNK);
  const estimate = {
    chunksToLoad: toLoad,
    stateTransitions: Math.ceil(toLoad * MEASURED_PER_CHUNK.transitions),
    dataApiRequests: Math.ceil(toLoad * MEASURED_PER_CHUNK.dataApiRequests),
    lambdaInvocations: Math.ceil(toLoad * MEASURED_PER_CHUNK.lambdaRequests),
    costUsd: Number(((toLoad * cost.total) / 1000).toFixed(6)),
  };
  const result = {
    pipeline: pipeline.name,
    mode: pipeline.publishMode,
    interval: { from: batch.from, to: batch.to },
    batchId,
    batchStatus: existing ? String(existing.status) : null,
    chunks: chunks.map((c) => ({ ...c, loaded: loaded.has(c.index) })),
    ...(pipeline.chunk.targetRows ? { mergedByTargetRows: true } : {}),
    sql: {
      load: { sql: insertIntervalSql(pipeline, batch), parameters: { start: chunks[0]!.start, end: chunks[0]!.end } },
      gate: { sql: gate.sql, parameters: gate.parameters ?? {} },
    },
    published: published.map((p) => ({
      seq: num(p.seq),
      batchId: text(p.batch_id),
      publishedAt: text(p.published_at),
      mode: text(p.publish_mode),
      from: text(p.interval_start),
      to: text(p.interval_end),
      rows: num(p.rows_published),
    })),
    estimate,
  };
  if (ctx.json) {
    io.stdout(JSON.stringify(result, null, 2));
    return ExitCode.OK;
  }
  const out: string[] = [];
  out.push(`Plan (dry run, nothing started): ${pipeline.name}, ${pipeline.publishMode}, ${batch.from} .. ${batch.to}`);
  out.push(`Batch ${batchId}${existing ? ` (already in the manifest: ${text(existing.status)}, ${num(progress?.done)} of ${chunks.length} chunk(s) loaded)` : ' (new)'}`);
  out.push(`${chunks.length} chunk(s) of one ${pipeline.chunk.grain} in ${pipeline.chunk.timezone}${pipeline.chunk.targetRows ? ' (Plan merges adjacent ones up to chunk.targetRows)' : ''}:`);
  const shown = chunks.length > 12 ? [...chunks.slice(0, 6), undefined, ...chunks.slice(-5)] : chunks;
  out.push(table(['#', 'start', 'end', 'loaded'], shown.map((c) => (c ? [c.index, c.start, c.end, loaded.has(c.index) ? 'yes' : ''] : ['...', `${chunks.length - 11} more`, '', '']))));
  out.push('', `The load of a chunk (LoadChunk; :start and :end, the first chunk's: ${chunks[0]!.start}, ${chunks[0]!.end}):`, result.sql.load.sql);
  out.push('', `The gate's statement (Reconcile; :start ${batch.from}, :end ${batch.to}):`, gate.sql);
  out.push('', published.length === 0 ? 'Published already: nothing of this interval.' : 'Published already (publications that wrote some of this interval):');
  if (published.length > 0) {
    out.push(table(['#', 'batch', 'published at', 'mode', 'interval', 'rows'], result.published.map((p) => [p.seq, p.batchId, p.publishedAt, p.mode, `${p.from} .. ${p.to}`, p.rows])));
  }
  out.push(
    '',
    `Estimate (per-chunk figures of npm run bench): ${toLoad} chunk(s) to load, about ${estimate.stateTransitions} state transitions, ${estimate.dataApiRequests} Data API requests, ${estimate.lambdaInvocations} Lambda invocations, $${estimate.costUsd.toFixed(6)} at list price (warehouse time not included).`,
  );
  io.stdout(out.join('\n'));
  return ExitCode.OK;
}

// --- run, backfill, rollback: start and follow --------------------------

interface FollowOptions {
  readonly pollMs: number;
}

async function startAndFollow(
  ctx: Context,
  io: CliIo,
  pipeline: Pipeline,
  nameOf: (attempt: number) => string,
  input: Record<string, unknown>,
  batchId: string | undefined,
  opts: FollowOptions,
): Promise<number> {
  // The warehouse and Step Functions answer before anything starts.
  const manifest = await manifestPresent(ctx);
  const started = await startOrFollow(ctx, nameOf, input);
  if (started.kind === 'done') {
    const result = { pipeline: pipeline.name, execution: started.name, executionArn: started.executionArn, status: 'SUCCEEDED', started: false };
    if (ctx.json) io.stdout(JSON.stringify(result));
    else io.stdout(`Nothing started: execution ${started.name} of this run already succeeded.`);
    return ExitCode.OK;
  }
  // On stderr, --json or not: a script reads the result from stdout.
  io.stderr(`${started.kind === 'started' ? 'Started' : 'Following the running'} execution ${started.name}`);
  const bar =
    !ctx.json && io.tty
      ? new cliProgress.SingleBar({ format: ' {bar} {value}/{total} chunks loaded | {rows} rows', hideCursor: true, stream: process.stderr }, cliProgress.Presets.shades_classic)
      : undefined;
  let progress = { chunks: 0, done: 0, rows: 0 };
  const readProgress = async () => {
    if (!batchId || !(manifest || (await manifestPresent(ctx)))) return;
    const [row] = await query(ctx, batchProgress(batchId), 'progress');
    progress = { chunks: num(row?.chunks), done: num(row?.done), rows: num(row?.rows) };
    if (bar && progress.chunks > 0) {
      if (bar.getTotal() !== progress.chunks) bar.start(progress.chunks, 0, { rows: 0 });
      bar.update(progress.done, { rows: progress.rows });
    }
  };
  let ended;
  try {
    ended = await follow(ctx, started.executionArn, opts.pollMs, readProgress);
  } finally {
    bar?.stop();
  }
  const status = ended.status!;
  const result: Record<string, unknown> = {
    pipeline: pipeline.name,
    execution: started.name,
    executionArn: started.executionArn,
    status,
    started: started.kind === 'started',
    ...(batchId ? { batchId, chunks: progress.chunks, chunksLoaded: progress.done, rows: progress.rows } : {}),
  };
  if (status === 'SUCCEEDED') {
    const outcome = outcomeOf(ended.output);
    result.outcome = outcome.kind;
    result.output = ended.output ? (JSON.parse(ended.output) as Record<string, unknown>) : {};
    if (outcome.kind === 'busy') {
      result.next = 'repeat this command once that execution has ended: the next attempt runs.';
      if (ctx.json) io.stdout(JSON.stringify(result));
      else io.stderr(`Execution ${started.name} ran nothing: ${outcome.message}\nNext step: ${String(result.next)}`);
      return ExitCode.RUN_FAILED;
    }
    const said = {
      published: batchId ? `published batch ${batchId}, ${progress.done} of ${progress.chunks} chunk(s) loaded, ${progress.rows} rows` : 'done',
      'nothing-to-publish': `nothing to publish: batch ${batchId ?? ''} is published already`,
      superseded: 'superseded: the pipeline already publishes newer data; nothing was published',
    }[outcome.kind];
    if (ctx.json) io.stdout(JSON.stringify(result));
    else io.stdout(`Execution ${started.name} SUCCEEDED: ${said}.`);
    return ExitCode.OK;
  }
  const alert = await failureAlert(ctx, started.executionArn);
  const next =
    status === 'ABORTED'
      ? 'the execution was stopped; repeat this command to resume: a new execution resumes the same batch, loading only the chunks not loaded yet.'
      : alert
        ? (/^Next: +(.*)$/m.exec(alert.message)?.[1] ?? 'see the alert above.')
        : `see the execution's history (${started.executionArn}); repeat this command to resume the batch.`;
  result.error = ended.error ?? null;
  result.cause = ended.cause ?? null;
  result.reason = alert?.message ?? null;
  result.next = next;
  if (ctx.json) {
    io.stdout(JSON.stringify(result));
  } else {
    const lines = [`Execution ${started.name} ${status}${ended.error ? ` (${ended.error})` : ''}.`];
    if (alert) lines.push('', alert.subject ?? '', alert.message);
    lines.push('', `Next step: ${next}`);
    io.stderr(lines.join('\n'));
  }
  return ExitCode.RUN_FAILED;
}

async function run(ctx: Context, io: CliIo, name: string, opts: { from?: string; to?: string } & FollowOptions, backfill: boolean): Promise<number> {
  const pipeline = pipelineNamed(name);
  if (backfill && (opts.from === undefined || opts.to === undefined)) throw new CliError('backfill needs --from and --to (on the pipeline\'s grain)');
  const interval = intervalOf(pipeline, opts.from, opts.to);
  const input = { pipeline: pipeline.name, ...(backfill ? { from: interval.from.toISOString() } : {}), to: interval.to.toISOString() };
  return startAndFollow(ctx, io, pipeline, (attempt) => manualRunName(pipeline.name, interval, attempt), input, batchIdFor(pipeline, interval), opts);
}

async function rollback(ctx: Context, io: CliIo, name: string, opts: { to?: string } & FollowOptions): Promise<number> {
  const pipeline = pipelineNamed(name);
  const history: PublicationRecord[] = (await manifestPresent(ctx) ? await query(ctx, publicationHistory(pipeline.name), 'rollback:history') : []).map((r) => ({
    seq: num(r.seq),
    batchId: text(r.batch_id),
    publishedAt: text(r.published_at),
    oldVersionTable: text(r.old_version_table),
    dropped: num(r.dropped) > 0,
    restored: num(r.restored) > 0,
    ...(r.rollback_of !== null && r.rollback_of !== undefined ? { rollbackOf: num(r.rollback_of) } : {}),
  }));
  const batchStatus = opts.to && history.length > 0 ? (await query(ctx, rollbackBatch(pipeline.name, opts.to), 'rollback:batch'))[0]?.status : undefined;
  const target = resolveRollback(pipeline, opts.to, history, batchStatus === undefined ? undefined : String(batchStatus));
  if ('alreadyLive' in target || !('batchId' in target)) {
    const result = { pipeline: pipeline.name, started: false, reason: `batch ${opts.to} is live already` };
    if (ctx.json) io.stdout(JSON.stringify(result));
    else io.stdout(`Nothing started: ${result.reason}.`);
    return ExitCode.OK;
  }
  const latest = Math.max(...history.map((p) => p.seq));
  const input = { pipeline: pipeline.name, rollback: opts.to ? { to: opts.to } : {} };
  // One rollback of a publication: repeating the command follows it, never rolls back twice.
  const base = `${pipeline.name.slice(0, 40)}-rollback-p${latest}${opts.to ? `-${opts.to}` : ''}`;
  return startAndFollow(ctx, io, pipeline, (attempt) => (attempt > 1 ? `${base}-${attempt}` : base), input, undefined, opts);
}

// --- status and history --------------------------------------------------

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
    io.stderr(`atomic-publish: alarms not read (CloudWatch: ${(error as Error).message || (error as Error).name})`);
    return undefined;
  }
}

async function status(ctx: Context, io: CliIo, name: string | undefined): Promise<number> {
  const chosen = name === undefined ? [...pipelines] : [pipelineNamed(name)];
  const manifest = await manifestPresent(ctx);
  const running = (await ctx.sfn().send(new ListExecutionsCommand({ stateMachineArn: ctx.stateMachineArn(), statusFilter: 'RUNNING', maxResults: 1000 }))).executions ?? [];
  const alarms = await metricAlarms(ctx, io);
  const now = Date.now();
  const rows = [];
  for (const pipeline of chosen) {
    const live = manifest ? (await query(ctx, newestPublication(pipeline.name), 'status:publication'))[0] : undefined;
    const batch = manifest ? (await query(ctx, recentBatches(pipeline.name, 1), 'status:batch'))[0] : undefined;
    const publishedAt = manifest ? (await query(ctx, livePublishedAt(pipeline.name), 'status:freshness'))[0]?.published_at : undefined;
    const ageMinutes = publishedAt ? Math.floor((now - Date.parse(`${String(publishedAt).replace(' ', 'T')}Z`)) / 60_000) : undefined;
    const sla = pipeline.freshness.slaMinutes;
    rows.push({
      pipeline: pipeline.name,
      live: live ? { seq: num(live.seq), batchId: text(live.batch_id), publishedAt: text(live.published_at), rows: num(live.rows_published), rollbackOf: live.rollback_of ?? null } : null,
      lastBatch: batch
        ? { batchId: text(batch.batch_id), status: text(batch.status), from: text(batch.interval_start), to: text(batch.interval_end), finishedAt: text(batch.finished_at) || null, error: text(batch.error) || null }
        : null,
      freshness: { ageMinutes: ageMinutes ?? null, slaMinutes: sla, withinSla: ageMinutes !== undefined && ageMinutes <= sla },
      running: running.filter((e) => e.name?.startsWith(`${pipeline.name}-`)).map((e) => ({ name: e.name!, executionArn: e.executionArn!, startDate: e.startDate?.toISOString() ?? null })),
      // The pipeline's own alarms (a Pipeline dimension of its name); null when CloudWatch was not read.
      alarms:
        alarms
          ?.filter((a) => a.Dimensions?.some((d) => d.Name === DimensionName.Pipeline && d.Value === pipeline.name))
          .map((a) => ({ name: a.AlarmName!, state: a.StateValue! })) ?? null,
    });
  }
  if (ctx.json) {
    io.stdout(JSON.stringify(name === undefined ? rows : rows[0]));
    return ExitCode.OK;
  }
  io.stdout(
    table(
      ['pipeline', 'live (publication, batch, published at)', 'last batch', 'freshness', 'alarms', 'running'],
      rows.map((r) => [
        r.pipeline,
        r.live ? `#${r.live.seq} ${r.live.batchId} ${r.live.publishedAt}${r.live.rollbackOf ? ` (rollback of #${r.live.rollbackOf})` : ''}` : 'never published',
        r.lastBatch ? `${r.lastBatch.batchId} ${r.lastBatch.status} ${r.lastBatch.from} .. ${r.lastBatch.to}` : '-',
        r.freshness.ageMinutes === null ? `no publication (SLA ${r.freshness.slaMinutes} min)` : `${r.freshness.ageMinutes} min old, SLA ${r.freshness.slaMinutes} min: ${r.freshness.withinSla ? 'within' : 'BREACHED'}`,
        r.alarms === null ? 'not read' : r.alarms.map((a) => `${a.name}: ${a.state}`).join('\n') || '-',
        r.running.map((e) => e.name).join('\n') || '-',
      ]),
    ),
  );
  return ExitCode.OK;
}

async function history(ctx: Context, io: CliIo, name: string, opts: { limit: number }): Promise<number> {
  const pipeline = pipelineNamed(name);
  const manifest = await manifestPresent(ctx);
  const batches = manifest ? await query(ctx, recentBatches(pipeline.name, opts.limit), 'history:batches') : [];
  const checks = manifest ? await query(ctx, latestCheckResults(pipeline.name), 'history:checks') : [];
  const rows = batches.map((b) => {
    const own = checks.filter((c) => c.batch_id === b.batch_id);
    return {
      batchId: text(b.batch_id),
      mode: text(b.mode),
      from: text(b.interval_start),
      to: text(b.interval_end),
      status: text(b.status),
      attempt: num(b.attempt),
      chunks: num(b.chunk_count),
      rows: b.rows_written === null ? null : num(b.rows_written),
      startedAt: text(b.started_at),
      checks: { passed: own.filter((c) => c.passed === true || c.passed === 'true').length, failed: own.filter((c) => !(c.passed === true || c.passed === 'true')).map((c) => text(c.check_name)) },
    };
  });
  if (ctx.json) {
    io.stdout(JSON.stringify(rows));
    return ExitCode.OK;
  }
  if (rows.length === 0) {
    io.stdout(`No batches of ${pipeline.name} yet.`);
    return ExitCode.OK;
  }
  io.stdout(
    table(
      ['batch', 'mode', 'interval', 'status', 'attempt', 'chunks', 'rows', 'checks', 'started at'],
      rows.map((r) => [
        r.batchId,
        r.mode,
        `${r.from} .. ${r.to}`,
        r.status,
        r.attempt,
        r.chunks,
        r.rows ?? '',
        r.checks.passed + r.checks.failed.length === 0 ? 'not run' : r.checks.failed.length === 0 ? `${r.checks.passed} passed` : `FAILED: ${r.checks.failed.join(', ')}`,
        r.startedAt,
      ]),
    ),
  );
  return ExitCode.OK;
}

// --- the program -----------------------------------------------------------

function parsePositive(value: string, name: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`${name} must be a whole number above 0, got ${JSON.stringify(value)}`);
  return n;
}

export function program(io: CliIo, exit: { code: number }): Command {
  const root = new Command('atomic-publish')
    .description('Plan, run, backfill, check and roll back atomic-publish pipelines.')
    .option('--json', 'machine-readable output')
    .option('--state-machine-arn <arn>', 'the state machine (env ATOMIC_PUBLISH_STATE_MACHINE_ARN)')
    .option('--sfn-endpoint <url>', 'Step Functions endpoint (env ATOMIC_PUBLISH_SFN_ENDPOINT; default AWS)')
    .option('--data-api-endpoint <url>', 'Redshift Data API endpoint (env REDSHIFT_DATA_ENDPOINT; default AWS)')
    .option('--cloudwatch-endpoint <url>', 'CloudWatch endpoint (env ATOMIC_PUBLISH_CLOUDWATCH_ENDPOINT; default AWS)')
    .option('--region <region>', 'AWS region (env AWS_REGION)')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout(s.trimEnd()), writeErr: (s) => io.stderr(s.trimEnd()) })
    .showHelpAfterError();
  const ctx = () => contextFrom(root.opts<GlobalOptions>(), io.env);
  const done = (action: () => Promise<number>) => async () => {
    exit.code = await action();
  };
  const pollOption = () => new Option('--poll-ms <ms>', 'how often to look at the execution').default('1000');
  root
    .command('plan')
    .description('dry run: chunks, SQL, what is published already, estimate; starts nothing')
    .argument('<pipeline>')
    .option('--from <time>', 'interval start (ISO, on the grain)')
    .option('--to <time>', 'interval end (ISO, on the grain)')
    .action((name: string, o: { from?: string; to?: string }) => done(() => plan(ctx(), io, name, o))());
  root
    .command('run')
    .description('start the pipeline\'s run up to --to (default: now, on the grain) and follow it')
    .argument('<pipeline>')
    .option('--to <time>', 'interval end (ISO, on the grain)')
    .addOption(pollOption())
    .action((name: string, o: { to?: string; pollMs: string }) => done(() => run(ctx(), io, name, { ...o, pollMs: parsePositive(o.pollMs, '--poll-ms') }, false))());
  root
    .command('backfill')
    .description('start a backfill of [--from, --to) and follow it; repeating the command resumes it')
    .argument('<pipeline>')
    .option('--from <time>', 'interval start (ISO, on the grain)')
    .option('--to <time>', 'interval end (ISO, on the grain)')
    .addOption(pollOption())
    .action((name: string, o: { from?: string; to?: string; pollMs: string }) => done(() => run(ctx(), io, name, { ...o, pollMs: parsePositive(o.pollMs, '--poll-ms') }, true))());
  root
    .command('status')
    .description('live version, last batch, freshness against the SLA, running executions')
    .argument('[pipeline]')
    .action((name: string | undefined) => done(() => status(ctx(), io, name))());
  root
    .command('history')
    .description('batches with their intervals, rows and check outcomes, newest first')
    .argument('<pipeline>')
    .option('--limit <n>', 'how many batches', '20')
    .action((name: string, o: { limit: string }) => done(() => history(ctx(), io, name, { limit: parsePositive(o.limit, '--limit') }))());
  root
    .command('check')
    .description('the reconciliation gate without publishing (not available: see the README)')
    .argument('<pipeline>')
    .option('--from <time>')
    .option('--to <time>')
    .action((name: string, o: { from?: string; to?: string }) =>
      done(async () => {
        const pipeline = pipelineNamed(name);
        intervalOf(pipeline, o.from, o.to);
        throw new CliError(
          'check is not available: the gate runs inside a run, between the loads and the publish, and the state machine has no mode that stops after it. ' +
            `Nothing was started. \`atomic-publish plan ${pipeline.name}\` prints the gate's statement; a run publishes only when every check passes.`,
        );
      })(),
    );
  root
    .command('rollback')
    .description('put back the version live before the latest publication, or the retained version of --to BATCH')
    .argument('<pipeline>')
    .option('--to <batch>', 'the batch whose rows to put back (atomic_publish.publications batch_id)')
    .addOption(pollOption())
    .action((name: string, o: { to?: string; pollMs: string }) => done(() => rollback(ctx(), io, name, { ...o, pollMs: parsePositive(o.pollMs, '--poll-ms') }))());
  const local = root.command('local').description('the local engine');
  local
    .command('up')
    .description('start PostgreSQL, the Data API, Step Functions and CloudWatch endpoints; print them; run until Ctrl-C')
    .option('--database <name>', 'the warehouse database', 'atomic_publish_local')
    .option('--sample-days <n>', 'days of sample source data, created with the database', '10')
    .option('--rows-per-day <n>', 'sample rows per day', '200')
    .action((o: { database: string; sampleDays: string; rowsPerDay: string }) =>
      done(async () => {
        const { localUp } = await import('./local-up.ts');
        return localUp(io, { database: o.database, sampleDays: parsePositive(o.sampleDays, '--sample-days'), rowsPerDay: parsePositive(o.rowsPerDay, '--rows-per-day') });
      })(),
    );
  return root;
}

/** Runs the command line on `argv` (without node and the script); returns the exit code. */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const exit = { code: ExitCode.OK as number };
  try {
    await program(io, exit).parseAsync([...argv], { from: 'user' });
    return exit.code;
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help' ? ExitCode.OK : ExitCode.USAGE;
    }
    if (error instanceof CliError) {
      io.stderr(`atomic-publish: ${error.message}`);
      return error.exitCode;
    }
    if (error instanceof ValidationError) {
      io.stderr(`atomic-publish: ${error.message}\nNothing was started.`);
      return ExitCode.USAGE;
    }
    if (io.env.ATOMIC_PUBLISH_DEBUG) io.stderr(String((error as Error)?.stack ?? error));
    if (isUnreachable(error)) {
      io.stderr(`atomic-publish: cannot reach an endpoint (${(error as Error).message || (error as Error).name}). Check --sfn-endpoint, --data-api-endpoint and the environment; nothing was started.`);
      return ExitCode.USAGE;
    }
    const e = error as Error;
    io.stderr(`atomic-publish: ${e instanceof AtomicPublishError ? '' : `${e?.name ?? 'Error'}: `}${e?.message ?? String(error)}`);
    return ExitCode.USAGE;
  }
}
