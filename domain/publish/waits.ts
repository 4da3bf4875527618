/**
 * How long Publish waits for others: one contract between the stack, which
 * writes these variables into the Publish function's environment
 * (publishWaitsEnvironment), and the handler, which reads them back
 * (publishWaitsFromEnv). Defaults apply when a variable is unset.
 */
import { ValidationError } from '../errors.ts';

export interface PublishWaits {
  /**
   * How long each swap attempt waits for its locks (statement_timeout of
   * the swap transaction); readers queued behind it wait no longer.
   */
  readonly lockWaitMs: number;
  /** How long one Publish attempt waits for the transactions older than the new rows to end before the swap. */
  readonly snapshotWaitMs: number;
}

export const PublishWaitEnv = { LOCK_WAIT_MS: 'PUBLISH_LOCK_WAIT_MS', SNAPSHOT_WAIT_MS: 'PUBLISH_SNAPSHOT_WAIT_MS' } as const;

export const DEFAULT_PUBLISH_WAITS: PublishWaits = { lockWaitMs: 5_000, snapshotWaitMs: 60_000 };

/** The longest either wait may be: well within a Publish invocation. */
export const MAX_PUBLISH_WAIT_MS = 10 * 60_000;

function checked(variable: string, value: number): number {
  if (!Number.isInteger(value) || value < 1 || value > MAX_PUBLISH_WAIT_MS) {
    throw new ValidationError(`${variable} must be a whole number of milliseconds from 1 to ${MAX_PUBLISH_WAIT_MS}, got ${JSON.stringify(value)}`);
  }
  return value;
}

export function publishWaitsFromEnv(env: NodeJS.ProcessEnv = process.env): PublishWaits {
  const read = (variable: string, fallback: number): number => {
    const text = env[variable];
    return text === undefined || text === '' ? fallback : checked(variable, Number(text));
  };
  return {
    lockWaitMs: read(PublishWaitEnv.LOCK_WAIT_MS, DEFAULT_PUBLISH_WAITS.lockWaitMs),
    snapshotWaitMs: read(PublishWaitEnv.SNAPSHOT_WAIT_MS, DEFAULT_PUBLISH_WAITS.snapshotWaitMs),
  };
}

/** The Publish function's environment for `waits` (only what is given; the rest takes the defaults). */
export function publishWaitsEnvironment(waits: Partial<PublishWaits> = {}): Record<string, string> {
  return {
    ...(waits.lockWaitMs !== undefined ? { [PublishWaitEnv.LOCK_WAIT_MS]: String(checked(PublishWaitEnv.LOCK_WAIT_MS, waits.lockWaitMs)) } : {}),
    ...(waits.snapshotWaitMs !== undefined
      ? { [PublishWaitEnv.SNAPSHOT_WAIT_MS]: String(checked(PublishWaitEnv.SNAPSHOT_WAIT_MS, waits.snapshotWaitMs)) }
      : {}),
  };
}
