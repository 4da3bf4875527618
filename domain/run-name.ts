/**
 * Execution names. Step Functions refuses a second execution of a name it
 * has seen in the last 90 days (unless the first is still open with the
 * same input, when StartExecution returns the first), so a run named after
 * what it publishes cannot start twice.
 * https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html
 */
import { ValidationError } from './errors.ts';
import { echo } from './text.ts';

/** Longest execution name StartExecution accepts. */
export const MAX_EXECUTION_NAME_LENGTH = 80;

/**
 * What a name must not contain: whitespace, brackets, wildcards,
 * `" # % \ ^ | ~ ` $ & , ; : /`, control characters (U+0000-001F,
 * U+007F-009F), U+FFFE-FFFF and lone surrogates.
 */
const FORBIDDEN = /[\s<>{}[\]?*"#%\\^|~`$&,;:/\u0000-\u001f\u007f-\u009f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/u;

/** What is wrong with `name` as an execution name (StartExecution's rules), or undefined. */
export function executionNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return 'must be a non-empty string';
  if (name.length > MAX_EXECUTION_NAME_LENGTH) return `must be at most ${MAX_EXECUTION_NAME_LENGTH} characters, got ${name.length}`;
  const bad = FORBIDDEN.exec(name);
  if (bad) return `must not contain ${JSON.stringify(bad[0])} (no whitespace, brackets, wildcards, " # % \\ ^ | ~ \` $ & , ; : / or control characters)`;
  return undefined;
}

/**
 * The word between a scheduled run's pipeline and its time, so an operator
 * tells a scheduled run from a manual one in the execution list.
 */
const SCHEDULED = 'scheduled';

/** `-scheduled-20260401T060000Z`: what a scheduled run's name adds to the pipeline's. */
export const SCHEDULED_SUFFIX_LENGTH = `-${SCHEDULED}-`.length + '20260401T060000Z'.length;

/**
 * Longest name of a pipeline with a schedule: its runs' names must fit
 * StartExecution's 80 characters.
 */
export const MAX_SCHEDULED_PIPELINE_NAME_LENGTH = MAX_EXECUTION_NAME_LENGTH - SCHEDULED_SUFFIX_LENGTH;

/**
 * EventBridge Scheduler's `<aws.scheduler.scheduled-time>`: the time the
 * schedule was due, in UTC with seconds, e.g. `2022-03-22T18:59:43Z`.
 * https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-context-attributes.html
 */
const SCHEDULED_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?Z$/;

/** Parses the Scheduler's scheduled time; anything else is refused. */
export function parseScheduledTime(value: unknown): Date {
  const match = typeof value === 'string' ? SCHEDULED_TIME.exec(value) : null;
  const instant = match ? new Date(value as string) : undefined;
  if (!instant || Number.isNaN(instant.getTime()) || instant.toISOString().slice(0, 19) !== (value as string).slice(0, 19)) {
    throw new ValidationError(
      `scheduledTime must be a UTC time like 2026-04-01T06:00:00Z (the Scheduler's <aws.scheduler.scheduled-time>), got ${echo(value)}`,
    );
  }
  return instant;
}

/**
 * The name of a pipeline's run scheduled for `scheduledTime`, e.g.
 * `sales_order_lines-scheduled-20260401T060000Z`: the same for every
 * delivery of one scheduled invocation (the Scheduler retries, and
 * delivers at least once), different for every other. Letters, digits,
 * `-` and `_` only, which Step Functions asks of names when the state
 * machine logs to CloudWatch Logs.
 */
export function scheduledRunName(pipeline: string, scheduledTime: Date): string {
  const name = `${pipeline}-${SCHEDULED}-${nameStamp(scheduledTime)}`;
  const problem = executionNameProblem(name);
  if (problem) throw new ValidationError(`the scheduled run's execution name ${echo(name)} ${problem}`);
  return name;
}

/** `20260301T000000Z`: an instant as a run's name carries it. */
function nameStamp(instant: Date): string {
  return instant
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replace(/[-:]/g, '');
}

/**
 * The name of an operator's run of `pipeline` over `[from, to)` (the CLI's `run`
 * and `backfill`), attempt `attempt` (1 first): e.g.
 * `sales_order_lines-20260301T000000Z-20260401T000000Z`, then `...-2`. A name too
 * long for Step Functions keeps the pipeline's first characters.
 * Why: docs/decisions/command-line.md ("Names make a command idempotent")
 */
export function manualRunName(pipeline: string, interval: { from: Date; to: Date }, attempt: number): string {
  const suffix = `-${nameStamp(interval.from)}-${nameStamp(interval.to)}${attempt > 1 ? `-${attempt}` : ''}`;
  const name = `${pipeline.slice(0, MAX_EXECUTION_NAME_LENGTH - suffix.length)}${suffix}`;
  const problem = executionNameProblem(name);
  if (problem) throw new ValidationError(`the run's execution name ${echo(name)} ${problem}`);
  return name;
}

/**
 * The name of an operator's check of `pipeline` over `[from, to)` (the CLI's
 * `check`), check `check` (domain/plan/plan.ts nextRerun), attempt `attempt`:
 * e.g. `sales_order_lines-check1-20260301T000000Z-20260401T000000Z`, then `...-2`;
 * `-check<n>-` never matches a run's name (a pipeline's name holds no `-`).
 * Why: docs/decisions/command-line.md ("`check` runs the state machine")
 */
export function checkRunName(pipeline: string, interval: { from: Date; to: Date }, check: number, attempt: number): string {
  const suffix = `-check${check}-${nameStamp(interval.from)}-${nameStamp(interval.to)}${attempt > 1 ? `-${attempt}` : ''}`;
  const name = `${pipeline.slice(0, MAX_EXECUTION_NAME_LENGTH - suffix.length)}${suffix}`;
  const problem = executionNameProblem(name);
  if (problem) throw new ValidationError(`the check's execution name ${echo(name)} ${problem}`);
  return name;
}
