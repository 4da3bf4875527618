/**
 * Starting and following executions: the name a command's run takes
 * (domain/run-name.ts), the attempt to start or to follow again, and the
 * reason a run failed as its alert gives it (RecordFailure's message, which
 * the Notify state publishes, read from the execution's history).
 */
import {
  DescribeExecutionCommand,
  type DescribeExecutionCommandOutput,
  ExecutionDoesNotExist,
  GetExecutionHistoryCommand,
  type HistoryEvent,
  StartExecutionCommand,
} from '@aws-sdk/client-sfn';
import type { Context } from './context.ts';
import { CliError, ExitCode } from './errors.ts';

/** The Task state that publishes RecordFailure's alert: its input carries `failure.message`. */
const NOTIFY_STATE = 'Notify';
const MAX_ATTEMPTS = 100;

export function executionArnOf(stateMachineArn: string, name: string): string {
  return `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`;
}

export async function describe(ctx: Context, executionArn: string): Promise<DescribeExecutionCommandOutput | undefined> {
  try {
    return await ctx.sfn().send(new DescribeExecutionCommand({ executionArn }));
  } catch (error) {
    if (error instanceof ExecutionDoesNotExist) return undefined;
    throw error;
  }
}

/**
 * How a SUCCEEDED execution ended, from its output: published, rolled back
 * (Plan resolved a rollback), nothing to publish (the batch was published
 * already, or a rollback's batch is live), superseded (newer data live), or
 * busy: another execution held the pipeline's lease and this one wrote
 * nothing (PipelineBusy; the run has not happened).
 */
export type Outcome =
  | { readonly kind: 'published' | 'rolled-back' | 'nothing-to-publish' | 'superseded' }
  | { readonly kind: 'busy'; readonly message: string };

export function outcomeOf(output: string | undefined): Outcome {
  let parsed: {
    plan?: { busy?: unknown; alreadyPublished?: unknown; rollback?: unknown; skipped?: { message?: unknown } };
    publish?: { superseded?: unknown };
  } = {};
  try {
    parsed = output ? JSON.parse(output) : {};
  } catch {
    parsed = {};
  }
  if (parsed.plan?.busy === true) return { kind: 'busy', message: String(parsed.plan.skipped?.message ?? "another execution holds the pipeline's lease") };
  if (parsed.plan?.alreadyPublished === true) return { kind: 'nothing-to-publish' };
  if (parsed.publish?.superseded === true) return { kind: 'superseded' };
  if (parsed.plan?.rollback !== undefined) return { kind: 'rolled-back' };
  return { kind: 'published' };
}

export type Started =
  | { readonly kind: 'started' | 'following'; readonly executionArn: string; readonly name: string }
  | { readonly kind: 'done'; readonly executionArn: string; readonly name: string; readonly output: string | undefined };

/**
 * Starts the run named `nameOf(1)`, or follows it while it runs (a
 * StartExecution of the same name and input returns it); after an attempt
 * that ended without succeeding, the next attempt's name. An attempt that
 * succeeded is the run done: nothing starts.
 */
export async function startOrFollow(ctx: Context, nameOf: (attempt: number) => string, input: Record<string, unknown>): Promise<Started> {
  const stateMachineArn = ctx.stateMachineArn();
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt += 1) {
    const name = nameOf(attempt);
    const executionArn = executionArnOf(stateMachineArn, name);
    const found = await describe(ctx, executionArn);
    // An attempt that ended busy ran nothing: the next one runs.
    if (found?.status === 'SUCCEEDED' && outcomeOf(found.output).kind !== 'busy') return { kind: 'done', executionArn, name, output: found.output };
    if (found && found.status !== 'RUNNING') continue;
    const out = await ctx.sfn().send(new StartExecutionCommand({ stateMachineArn, name, input: JSON.stringify(input) }));
    return { kind: found ? 'following' : 'started', executionArn: out.executionArn!, name };
  }
  throw new CliError(
    `${MAX_ATTEMPTS} attempts of this run ended without succeeding; look at the latest (${nameOf(MAX_ATTEMPTS)}) before starting another`,
    ExitCode.USAGE,
  );
}

/** Polls the execution until it ends, calling `tick` between polls; undefined once `interrupted` resolves (Ctrl-C). */
export async function follow(
  ctx: Context,
  executionArn: string,
  pollMs: number,
  tick: () => Promise<void>,
  interrupted: Promise<void> = new Promise(() => undefined),
): Promise<DescribeExecutionCommandOutput | undefined> {
  let stop = false;
  const stopped = interrupted.then(() => {
    stop = true;
  });
  const poll = async () => {
    for (;;) {
      const described = await ctx.sfn().send(new DescribeExecutionCommand({ executionArn }));
      if (stop) return undefined;
      await tick();
      if (described.status !== 'RUNNING') return described;
      await Promise.race([new Promise((resolve) => setTimeout(resolve, pollMs)), stopped]);
      if (stop) return undefined;
    }
  };
  // Not waiting for a request in flight: Ctrl-C answers at once.
  return Promise.race([poll(), stopped.then(() => undefined)]);
}

/** The alert's text of a failed run (subject and message), or undefined when the run published none. */
export async function failureAlert(ctx: Context, executionArn: string): Promise<{ subject?: string; message: string } | undefined> {
  let nextToken: string | undefined;
  let alert: { subject?: string; message: string } | undefined;
  do {
    const page = await ctx.sfn().send(new GetExecutionHistoryCommand({ executionArn, maxResults: 1000, ...(nextToken ? { nextToken } : {}) }));
    for (const event of page.events ?? []) alert = alertOf(event) ?? alert;
    nextToken = page.nextToken;
  } while (nextToken);
  return alert;
}

function alertOf(event: HistoryEvent): { subject?: string; message: string } | undefined {
  const details = event.stateEnteredEventDetails;
  if (details?.name !== NOTIFY_STATE || !details.input) return undefined;
  try {
    const failure = (JSON.parse(details.input) as { failure?: { subject?: unknown; message?: unknown } }).failure;
    if (typeof failure?.message !== 'string') return undefined;
    return { ...(typeof failure.subject === 'string' ? { subject: failure.subject } : {}), message: failure.message };
  } catch {
    return undefined;
  }
}
