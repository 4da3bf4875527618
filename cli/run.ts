/** `run`, `backfill` and `rollback`: start (or follow again) the execution a command names, follow it, say how it ended. */
import cliProgress from 'cli-progress';
import { batchIdFor } from '../domain/plan.ts';
import { assertRollbackable, neverPublished, parseRollbackInput, resolveRollbackFrom } from '../domain/rollback.ts';
import { manualRunName } from '../domain/run-name.ts';
import type { Pipeline } from '../domain/spec.ts';
import { batchProgress } from '../domain/sql/cli.ts';
import type { Context } from './context.ts';
import { CliError, ExitCode } from './errors.ts';
import { failureAlert, follow, outcomeOf, startOrFollow } from './executions.ts';
import { type CliIo, intervalOf, manifestPresent, num, pipelineNamed, query } from './shared.ts';

export interface FollowOptions {
  readonly pollMs: number;
}

/**
 * How a command reports an execution that SUCCEEDED (and ran: not busy):
 * given the result so far and the execution's output, it prints and
 * returns the exit code. @default - run's: published, nothing to publish or superseded
 */
export type Succeeded = (result: Record<string, unknown>, output: Record<string, unknown>) => Promise<number>;

export async function startAndFollow(
  ctx: Context,
  io: CliIo,
  pipeline: Pipeline,
  nameOf: (attempt: number) => string,
  input: Record<string, unknown>,
  batchId: string | undefined,
  opts: FollowOptions,
  succeeded?: Succeeded,
): Promise<number> {
  // The warehouse and Step Functions answer before anything starts.
  const manifest = await manifestPresent(ctx);
  const again = ctx.commandFor(input);
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
      result.next = `run \`${again}\` again once that execution has ended: the next attempt runs.`;
      if (ctx.json) io.stdout(JSON.stringify(result));
      else io.stderr(`Execution ${started.name} ran nothing: ${outcome.message}\nNext step: ${String(result.next)}`);
      return ExitCode.RUN_FAILED;
    }
    if (succeeded) return succeeded(result, result.output as Record<string, unknown>);
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
  // A new execution of a run resumes its batch; a rollback is resolved anew against what is live then.
  const resume = batchId
    ? `run \`${again}\` to resume: a new execution resumes the same batch, loading only the chunks not loaded yet.`
    : `run \`${again}\` to try again: Plan resolves the rollback against what is live then.`;
  const next =
    status === 'ABORTED'
      ? `the execution was stopped; ${resume}`
      : alert
        ? ctx.terms(/^Next: +(.*)$/m.exec(alert.message)?.[1] ?? 'see the alert above.')
        : `see the execution's history (${started.executionArn}); ${resume}`;
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

export async function run(ctx: Context, io: CliIo, name: string, opts: { from?: string; to?: string } & FollowOptions, backfill: boolean): Promise<number> {
  const pipeline = pipelineNamed(name);
  if (backfill && (opts.from === undefined || opts.to === undefined)) throw new CliError('backfill needs --from and --to (on the pipeline\'s grain)');
  const interval = intervalOf(pipeline, opts.from, opts.to);
  const input = { pipeline: pipeline.name, ...(backfill ? { from: interval.from.toISOString() } : {}), to: interval.to.toISOString() };
  return startAndFollow(ctx, io, pipeline, (attempt) => manualRunName(pipeline.name, interval, attempt), input, batchIdFor(pipeline, interval), opts);
}

export async function rollback(ctx: Context, io: CliIo, name: string, opts: { to?: string } & FollowOptions): Promise<number> {
  const pipeline = pipelineNamed(name);
  const input = { pipeline: pipeline.name, rollback: opts.to === undefined ? {} : { to: opts.to } };
  // Plan's own refusals, against the manifest as it is, before anything starts.
  parseRollbackInput(input);
  assertRollbackable(pipeline);
  if (!(await manifestPresent(ctx))) throw neverPublished(pipeline);
  const { history, resolved } = await resolveRollbackFrom((statement, step) => query(ctx, statement, `rollback:${step}`), pipeline, opts.to);
  if ('alreadyLive' in resolved) {
    const result = { pipeline: pipeline.name, started: false, reason: `batch ${resolved.batchId} is live already` };
    if (ctx.json) io.stdout(JSON.stringify(result));
    else io.stdout(`Nothing started: ${result.reason}.`);
    return ExitCode.OK;
  }
  const latest = Math.max(...history.map((p) => p.seq));
  // One rollback of a publication: repeating the command follows it, never rolls back twice.
  const base = `${pipeline.name.slice(0, 40)}-rollback-p${latest}${opts.to ? `-${opts.to}` : ''}`;
  return startAndFollow(ctx, io, pipeline, (attempt) => (attempt > 1 ? `${base}-${attempt}` : base), input, undefined, opts);
}
