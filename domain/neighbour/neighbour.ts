/**
 * A good neighbour on a shared warehouse: LoadChunk's pause probe and the circuit
 * breaker Plan consults, as environment variables the stack writes
 * (neighbourEnvironment) and the handlers read (pauseProbeFromEnv, breakerFromEnv).
 * Unset turns a feature off; the stack sets the breaker by default (DEFAULT_BREAKER).
 * Why: docs/decisions/good-neighbour.md
 */
import { TRANSIENT_ERROR_NAMES, ValidationError } from '../errors.ts';
import { echo } from '../text.ts';
import { parseWarehouseTime } from '../time.ts';

export interface PauseProbeSettings {
  /** LoadChunk pauses while the warehouse's queues hold at least this many queries. */
  readonly whenQueued: number;
  /** Between two looks at the queues while paused, in milliseconds. */
  readonly intervalMs: number;
}

export interface BreakerSettings {
  /** Consecutive transient failures, across executions, that open the breaker. */
  readonly failures: number;
  /** How long the breaker stays open before one execution may run as the half-open probe, in seconds. */
  readonly coolDownSeconds: number;
}

export const NeighbourEnv = {
  PAUSE_WHEN_QUEUED: 'PAUSE_WHEN_QUEUED',
  PAUSE_PROBE_INTERVAL_MS: 'PAUSE_PROBE_INTERVAL_MS',
  BREAKER_FAILURES: 'BREAKER_FAILURES',
  BREAKER_COOL_DOWN_SECONDS: 'BREAKER_COOL_DOWN_SECONDS',
} as const;

export const DEFAULT_PAUSE_PROBE_INTERVAL_MS = 10_000;
/** What the stack deploys unless told otherwise: five transient failures in a row open it for 15 minutes. */
export const DEFAULT_BREAKER: BreakerSettings = { failures: 5, coolDownSeconds: 900 };

/** A positive whole number, or a ValidationError naming the setting and the value. */
export function positiveInteger(value: unknown, where: string): number {
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < 1) {
    throw new ValidationError(`${where} must be a positive whole number, got ${echo(value)}`);
  }
  return number;
}

const read = (env: NodeJS.ProcessEnv, name: string): string | undefined => (env[name] === undefined || env[name] === '' ? undefined : env[name]);

/**
 * A setting of two variables, `primary` required for `secondary`: undefined
 * when neither is set, both as positive whole numbers (the secondary's
 * default when unset) otherwise.
 */
function pairFromEnv(env: NodeJS.ProcessEnv, primary: string, secondary: string, secondaryDefault: number): [number, number] | undefined {
  const first = read(env, primary);
  const second = read(env, secondary);
  if (first === undefined) {
    if (second !== undefined) throw new ValidationError(`${secondary} is set but ${primary} is not: set both or neither`);
    return undefined;
  }
  return [positiveInteger(first, primary), second === undefined ? secondaryDefault : positiveInteger(second, secondary)];
}

/** The pause probe a handler runs, or undefined when PAUSE_WHEN_QUEUED is unset (no probe). */
export function pauseProbeFromEnv(env: NodeJS.ProcessEnv = process.env): PauseProbeSettings | undefined {
  const pair = pairFromEnv(env, NeighbourEnv.PAUSE_WHEN_QUEUED, NeighbourEnv.PAUSE_PROBE_INTERVAL_MS, DEFAULT_PAUSE_PROBE_INTERVAL_MS);
  return pair && { whenQueued: pair[0], intervalMs: pair[1] };
}

/** The breaker a handler keeps, or undefined when BREAKER_FAILURES is unset (no breaker). */
export function breakerFromEnv(env: NodeJS.ProcessEnv = process.env): BreakerSettings | undefined {
  const pair = pairFromEnv(env, NeighbourEnv.BREAKER_FAILURES, NeighbourEnv.BREAKER_COOL_DOWN_SECONDS, DEFAULT_BREAKER.coolDownSeconds);
  return pair && { failures: pair[0], coolDownSeconds: pair[1] };
}

/** The handlers' environment for these settings (validated: a bad value fails the synth with its name). */
export function neighbourEnvironment(pause: PauseProbeSettings | undefined, breaker: BreakerSettings | undefined): Record<string, string> {
  return {
    ...(pause
      ? {
          [NeighbourEnv.PAUSE_WHEN_QUEUED]: String(positiveInteger(pause.whenQueued, 'pauseProbe.whenQueued')),
          [NeighbourEnv.PAUSE_PROBE_INTERVAL_MS]: String(positiveInteger(pause.intervalMs, 'pauseProbe.interval (milliseconds)')),
        }
      : {}),
    ...(breaker
      ? {
          [NeighbourEnv.BREAKER_FAILURES]: String(positiveInteger(breaker.failures, 'circuitBreaker.failures')),
          [NeighbourEnv.BREAKER_COOL_DOWN_SECONDS]: String(positiveInteger(breaker.coolDownSeconds, 'circuitBreaker.coolDown (seconds)')),
        }
      : {}),
  };
}

/**
 * Failures that count towards opening the breaker, as RecordFailure sees
 * them: the retried warehouse errors after their last retry, and a step that
 * outran its time limit (a Lambda's time-out reaches the Catch as
 * Sandbox.Timedout, a Task's TimeoutSeconds as States.Timeout).
 */
export const BREAKER_FAILURE_NAMES: ReadonlySet<string> = new Set([...TRANSIENT_ERROR_NAMES, 'States.Timeout', 'Sandbox.Timedout']);

export const BreakerState = { CLOSED: 'closed', OPEN: 'open', HALF_OPEN: 'half_open' } as const;

/** The breaker's row as the manifest holds it (circuit_breaker), times as Date. */
export interface BreakerRow {
  readonly state: string;
  readonly consecutiveFailures: number;
  readonly openedAt?: Date;
  readonly lastError?: string;
  readonly lastFailureAt?: Date;
  readonly probeExecution?: string;
  readonly probeStartedAt?: Date;
}

/** A manifest timestamp (UTC, `YYYY-MM-DD HH:MM:SS[.ffffff]`) as a Date; undefined for none. */
export function manifestTime(value: unknown): Date | undefined {
  if (value === null || value === undefined || value === '') return undefined;
  const date = parseWarehouseTime(String(value));
  return Number.isNaN(date.getTime()) ? undefined : date;
}

export function readBreakerRow(row: Record<string, unknown> | undefined): BreakerRow | undefined {
  if (!row) return undefined;
  const text = (v: unknown) => (v === null || v === undefined || v === '' ? undefined : String(v));
  const optional = <K extends keyof BreakerRow>(key: K, value: BreakerRow[K] | undefined) => (value === undefined ? {} : { [key]: value });
  return {
    state: String(row.state),
    consecutiveFailures: Number(row.consecutive_failures ?? 0),
    ...optional('openedAt', manifestTime(row.opened_at)),
    ...optional('lastError', text(row.last_error)),
    ...optional('lastFailureAt', manifestTime(row.last_failure_at)),
    ...optional('probeExecution', text(row.probe_execution)),
    ...optional('probeStartedAt', manifestTime(row.probe_started_at)),
  };
}

/** What Plan does with the breaker it read: run, try to become the half-open probe, or end at once. */
export type BreakerDecision = { readonly action: 'run' } | { readonly action: 'probe' } | { readonly action: 'refuse'; readonly nextProbeAt: Date };

export function breakerDecision(row: BreakerRow | undefined, executionId: string, now: Date, settings: BreakerSettings): BreakerDecision {
  if (!row || row.state === BreakerState.CLOSED) return { action: 'run' };
  const halfOpen = row.state === BreakerState.HALF_OPEN;
  if (halfOpen && executionId !== '' && row.probeExecution === executionId) return { action: 'run' };
  // Open: a cool-down from when it opened. Half-open: a probe that never
  // reported (its execution was stopped) is taken over after a cool-down.
  const since = (halfOpen ? row.probeStartedAt : row.openedAt) ?? now;
  const until = new Date(since.getTime() + settings.coolDownSeconds * 1000);
  return now >= until ? { action: 'probe' } : { action: 'refuse', nextProbeAt: until };
}

/** The page of an execution the open breaker ended in Plan: what the breaker says and when the next probe may run. */
export function breakerOpenMessage(row: BreakerRow, nextProbeAt: Date, settings: BreakerSettings): string {
  const iso = (d: Date | undefined) => (d ? d.toISOString() : 'unknown');
  const probing =
    row.state === BreakerState.HALF_OPEN ? ` Execution ${row.probeExecution ?? '?'} is running as the half-open probe since ${iso(row.probeStartedAt)}.` : '';
  return (
    `circuit breaker open: the warehouse failed ${row.consecutiveFailures} consecutive run(s) with transient errors ` +
    `(opens at ${settings.failures}); open since ${iso(row.openedAt)}; last error: ${(row.lastError ?? 'unknown').slice(0, 1024)}.${probing} ` +
    `This execution ended in Plan without touching the warehouse's tables. The next probe may run from ${nextProbeAt.toISOString()}: ` +
    `the first execution starting then runs as the half-open probe; its success closes the breaker, its failure opens it again.`
  );
}
