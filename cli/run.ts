/** `run`, `backfill` and `rollback`: start (or follow again) the execution a command names, follow it, say how it ended. */
import cliProgress from 'cli-progress';
import { CLI_NAME, shellWord } from '../domain/cli-command.ts';
import { batchProgress } from '../domain/manifest/sql/cli.ts';
import { batchIdFor } from '../domain/plan/plan.ts';
import { assertRollbackable, neverPublished, parseRollbackInput, resolveRollbackFrom } from '../domain/rollback/rollback.ts';
import { manualRunName } from '../domain/run-name.ts';
import type { Pipeline } from '../domain/spec.ts';
import type { Context } from './context.ts';
import { CliError, ExitCode } from './errors.ts';
import { failureAlert, follow, type Outcome, outcomeOf, startOrFollow } from './executions.ts';
import { Interrupt, RESTORE_TERMINAL } from './interrupt.ts';
import { type CliIo, intervalOf, manifestPresent, num, pipelineNamed, prose, query } from './shared.ts';

export interface FollowOptions {
  readonly pollMs: number;
}

/** How a command that follows an execution ended (RunResult.outcome). */
export type RunOutcome =
  | Outcome['kind']
  /** The execution FAILED or TIMED_OUT. */
  | 'execution-failed'
  /** The execution was stopped (ABORTED). */
  | 'stopped'
  /** Ctrl-C: the command stopped following; the execution goes on. */
  | 'interrupted'
  /** check: the gate's verdict. */
  | 'passed'
  | 'failed';

/**
 * What run, backfill, rollback and check print under --json: one object,
 * every field present (null where it does not apply); check adds its own.
 */
export interface RunResult {
  readonly pipeline: string;
  /** The execution's name and ARN; null when nothing was started (a rollback to the batch live). */
  readonly execution: string | null;
  readonly executionArn: string | null;
  /** The execution's status when the command ended. */
  readonly status: string | null;
  /** This command started the execution (false: it followed a running one, or found it done). */
  readonly started: boolean;
  readonly outcome: RunOutcome;
  readonly batchId: string | null;
  readonly chunks: number | null;
  readonly chunksLoaded: number | null;
  readonly rows: number | null;
  /** The execution's output, when it succeeded. */
  readonly output: Record<string, unknown> | null;
  readonly error: string | null;
  readonly cause: string | null;
  /** Why it did not publish: the failure's alert message, the lease holder, what is live already. */
  readonly reason: string | null;
  /** What to do next, with the command to run (null: nothing to do). */
  readonly next: string | null;
}

/** A result with nothing known yet but the pipeline and how it ended. */
export function runResult(pipeline: Pipeline, outcome: RunOutcome, fields: Partial<RunResult> = {}): RunResult {
  return {
    pipeline: pipeline.name,
    execution: null,
    executionArn: null,
    status: null,
    started: false,
    outcome,
    batchId: null,
    chunks: null,
    chunksLoaded: null,
    rows: null,
    output: null,
    error: null,
    cause: null,
    reason: null,
    next: null,
    ...fields,
  };
}

/**
 * How a command reports an execution that SUCCEEDED (and ran: not busy):
 * given the result so far and the execution's output, it prints and
 * returns the exit code. @default - run's: published, nothing to publish or superseded
 */
export type Succeeded = (result: RunResult, output: Record<string, unknown>) => Promise<number>;

export interface Follow {
  readonly pipeline: Pipeline;
  /** The execution's name for an attempt (domain/run-name.ts). */
  readonly nameOf: (attempt: number) => string;
  readonly input: Record<string, unknown>;
  /** The batch whose progress to show; absent for a rollback. */
  readonly batchId?: string;
  readonly opts: FollowOptions;
  /** The command's own fields, in every result it prints (check's). @default - none */
  readonly fields?: Record<string, unknown>;
  readonly succeeded?: Succeeded;
}

/**
 * Starts (or follows) the execution, follows it to its end and says how it
 * ended. It owns Ctrl-C (cli/interrupt.ts): before the start, nothing
 * starts; after it, the command stops following and says so.
 */
export async function startAndFollow(ctx: Context, io: CliIo, f: Follow): Promise<number> {
  const interrupt = io.interrupt ?? new Interrupt(undefined);
  return interrupt.owning(() => followExecution(ctx, io, f, interrupt));
}

async function followExecution(ctx: Context, io: CliIo, f: Follow, interrupt: Interrupt): Promise<number> {
  const { pipeline, input, batchId, opts } = f;
  const print = (result: RunResult) => io.stdout(JSON.stringify({ ...result, ...f.fields }));
  // The warehouse and Step Functions answer before anything starts.
  const manifest = await manifestPresent(ctx);
  const again = ctx.commandFor(input);
  if (interrupt.interrupted) throw new CliError('interrupted (Ctrl-C) before anything was started', ExitCode.INTERRUPTED, 'interrupted');
  const started = await startOrFollow(ctx, f.nameOf, input);
  const base = { execution: started.name, executionArn: started.executionArn, started: started.kind === 'started', batchId: batchId ?? null };
  if (started.kind === 'done') {
    const reason = `execution ${started.name} of this command already succeeded`;
    if (ctx.json) print(runResult(pipeline, outcomeOf(started.output).kind, { ...base, status: 'SUCCEEDED', reason }));
    else io.stdout(prose(io, `Nothing started: ${reason}.`));
    return ExitCode.OK;
  }
  // On stderr, --json or not: a script reads the result from stdout.
  io.stderr(`${started.kind === 'started' ? 'Started' : 'Following the running'} execution ${started.name}`);
  const bar =
    !ctx.json && io.tty
      ? new cliProgress.SingleBar(
          { format: ' {bar} {value}/{total} chunks loaded | {rows} rows', hideCursor: true, stream: process.stderr },
          cliProgress.Presets.shades_classic,
        )
      : undefined;
  let progress = { chunks: 0, done: 0, rows: 0 };
  const readProgress = async () => {
    if (interrupt.interrupted || !batchId || !(manifest || (await manifestPresent(ctx)))) return;
    const [row] = await query(ctx, batchProgress(batchId), 'progress');
    progress = { chunks: num(row?.chunks), done: num(row?.done), rows: num(row?.rows) };
    if (bar && progress.chunks > 0) {
      if (bar.getTotal() !== progress.chunks) bar.start(progress.chunks, 0, { rows: 0 });
      bar.update(progress.done, { rows: progress.rows });
    }
  };
  let ended;
  try {
    ended = await follow(ctx, started.executionArn, opts.pollMs, readProgress, interrupt.whenInterrupted());
  } finally {
    bar?.stop();
  }
  const loaded = batchId ? { chunks: progress.chunks, chunksLoaded: progress.done, rows: progress.rows } : {};
  if (ended === undefined) {
    // Ctrl-C: the bar is stopped (it showed the cursor and turned wrapping back on); this says so again, whatever it drew.
    if (io.tty) process.stderr.write(RESTORE_TERMINAL);
    const followIt = [`${CLI_NAME} status ${shellWord(pipeline.name)}`, `${CLI_NAME} history ${shellWord(pipeline.name)}`];
    const stopIt = `aws stepfunctions stop-execution --execution-arn ${shellWord(started.executionArn)}`;
    const next =
      `the execution goes on in Step Functions: follow it with ${followIt.map((c) => `\`${c}\``).join(' or ')}, or \`${again}\` to follow it to its end again; ` +
      `stop it, if it should not go on, with \`${stopIt}\`.`;
    if (ctx.json) {
      print(runResult(pipeline, 'interrupted', { ...base, ...loaded, status: 'RUNNING', next }));
    } else {
      // The commands on lines of their own, whole, to paste.
      io.stderr(
        [
          prose(io, `Stopped following (interrupted). Execution ${started.name} goes on in Step Functions: ${started.executionArn}`),
          'Follow it:',
          ...followIt.map((c) => `  ${c}`),
          `  ${again}   (follows it to its end again)`,
          'Stop it, if it should not go on:',
          `  ${stopIt}`,
        ].join('\n'),
      );
    }
    return ExitCode.INTERRUPTED;
  }
  const status = ended.status!;
  const so = { ...base, status, ...loaded };
  if (status === 'SUCCEEDED') {
    const outcome = outcomeOf(ended.output);
    const output = ended.output ? (JSON.parse(ended.output) as Record<string, unknown>) : {};
    if (outcome.kind === 'busy') {
      const result = runResult(pipeline, 'busy', {
        ...so,
        output,
        reason: outcome.message,
        next: `run \`${again}\` again once that execution has ended: the next attempt runs.`,
      });
      if (ctx.json) print(result);
      else io.stderr(prose(io, `Execution ${started.name} ran nothing: ${outcome.message}\nNext step: ${result.next}`));
      return ExitCode.RUN_FAILED;
    }
    const result = runResult(pipeline, outcome.kind, { ...so, output });
    if (f.succeeded) return f.succeeded(result, output);
    const said = {
      published: batchId ? `published batch ${batchId}, ${progress.done} of ${progress.chunks} chunk(s) loaded, ${progress.rows} rows` : 'done',
      'rolled-back': 'rolled back',
      'nothing-to-publish': batchId ? `nothing to publish: batch ${batchId} is published already` : 'nothing to do: the batch named is live already',
      superseded: 'superseded: the pipeline already publishes newer data; nothing was published',
    }[outcome.kind];
    if (ctx.json) print(result);
    else io.stdout(prose(io, `Execution ${started.name} SUCCEEDED: ${said}.`));
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
  const result = runResult(pipeline, status === 'ABORTED' ? 'stopped' : 'execution-failed', {
    ...so,
    error: ended.error ?? null,
    cause: ended.cause ?? null,
    reason: alert?.message ?? null,
    next,
  });
  if (ctx.json) {
    print(result);
  } else {
    const lines = [`Execution ${started.name} ${status}${ended.error ? ` (${ended.error})` : ''}.`];
    // The alert as on-call got it (its next steps name execution inputs); the command line's own follows.
    if (alert) lines.push('', 'The alert sent:', alert.subject ?? '', alert.message);
    lines.push('', `Next step: ${next}`);
    io.stderr(prose(io, lines.join('\n')));
  }
  return ExitCode.RUN_FAILED;
}

export async function run(ctx: Context, io: CliIo, name: string, opts: { from?: string; to?: string } & FollowOptions, backfill: boolean): Promise<number> {
  const pipeline = pipelineNamed(name);
  if (backfill && (opts.from === undefined || opts.to === undefined)) throw new CliError("backfill needs --from and --to (on the pipeline's grain)");
  const interval = intervalOf(pipeline, opts.from, opts.to);
  const input = { pipeline: pipeline.name, ...(backfill ? { from: interval.from.toISOString() } : {}), to: interval.to.toISOString() };
  return startAndFollow(ctx, io, {
    pipeline,
    nameOf: (attempt) => manualRunName(pipeline.name, interval, attempt),
    input,
    batchId: batchIdFor(pipeline, interval),
    opts,
  });
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
    const result = runResult(pipeline, 'nothing-to-publish', { batchId: resolved.batchId, reason: `batch ${resolved.batchId} is live already` });
    if (ctx.json) io.stdout(JSON.stringify(result));
    else io.stdout(prose(io, `Nothing started: ${result.reason}.`));
    return ExitCode.OK;
  }
  const latest = Math.max(...history.map((p) => p.seq));
  // One rollback of a publication: repeating the command follows it, never rolls back twice.
  const base = `${pipeline.name.slice(0, 40)}-rollback-p${latest}${opts.to ? `-${opts.to}` : ''}`;
  return startAndFollow(ctx, io, { pipeline, nameOf: (attempt) => (attempt > 1 ? `${base}-${attempt}` : base), input, opts });
}
