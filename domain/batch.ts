/**
 * What a batch is between the steps: the facts each step receives in the
 * state payload, and the statuses the manifest records. The status values
 * are the words the generated SQL writes and compares, so the SQL takes
 * them from here.
 */

import type { LiveBaseline } from './live-watch/baseline.ts';

/** Batch facts each step after Plan receives in the state payload. */
export interface BatchRef {
  readonly pipeline: string;
  readonly batchId: string;
  readonly specHash: string;
  /** `schema.table` readers query. */
  readonly liveTable: string;
  readonly from: string;
  readonly to: string;
  readonly stagingTable: string;
  /** The live columns the loads insert and the publish writes into the live table. */
  readonly columns: readonly string[];
  /**
   * The live table's identity columns left out of `columns`, which Redshift
   * numbers as rows are written (domain/plan/plan.ts loadedColumns). A copy of
   * live rows into a retained old version keeps them. @default none
   */
  readonly generated?: readonly string[];
  readonly basePublication: number;
  /**
   * The live table's columns and fingerprint as this execution's Plan saw
   * them: the swap refuses if anyone else changed them since. Absent in a
   * BatchRef from before the check existed (then nothing is compared).
   */
  readonly live?: LiveBaseline;
  /**
   * Present for a restatement (input `"restate": true`): its number, 1 for
   * the first of the interval. Publish then publishes only if staging
   * differs from the live rows of the interval.
   */
  readonly restatement?: number;
  /**
   * Present for a check (input `"check": true`): its number, 1 for the
   * first of the interval. The execution ends after Reconcile; Publish
   * refuses the batch.
   */
  readonly check?: number;
}

/** One reconciliation check as `check_results` records it. */
export interface CheckResult {
  readonly check: string;
  readonly passed: boolean;
  readonly observed: string;
  readonly expected: string;
  readonly details: string;
  /** A declared check's (domain/gate/declared-checks.ts): a failed `warn` does not block. @default 'block' */
  readonly severity?: 'block' | 'warn';
  /** A declared check's offending rows allowed. */
  readonly tolerance?: number;
  /** A failed declared check's offending keys (at most DECLARED_SAMPLES). */
  readonly samples?: readonly string[];
}

/** `batches.purpose`: a batch that publishes (NULL in rows from before checks) or a check, which never does. */
export const BatchPurpose = { publish: 'publish', check: 'check' } as const;
export type BatchPurpose = (typeof BatchPurpose)[keyof typeof BatchPurpose];

/** Batch statuses a check ends with. */
export const CHECK_ENDED: readonly BatchStatus[] = ['CHECK_PASSED', 'CHECK_FAILED'];

/** Status words as constants named by themselves: `ChunkStatus.DONE` is `'DONE'`. */
function statuses<const T extends string>(...words: T[]): { readonly [K in T]: K } {
  return Object.freeze(Object.fromEntries(words.map((w) => [w, w]))) as { readonly [K in T]: K };
}

/**
 * `batches.status`: RUNNING while loading, CHECKED once Reconcile passed,
 * then PUBLISHED or FAILED, or SUPERSEDED when the pipeline already
 * published newer data (an end, not a failure: nothing pages). A check
 * (`batches.purpose` 'check') ends CHECK_PASSED or CHECK_FAILED, the
 * gate's verdict, instead of being published.
 */
export const BatchStatus = statuses('RUNNING', 'CHECKED', 'PUBLISHED', 'FAILED', 'SUPERSEDED', 'CHECK_PASSED', 'CHECK_FAILED');
export type BatchStatus = (typeof BatchStatus)[keyof typeof BatchStatus];

/**
 * `batch_attempts.status`: one row per execution of a batch. ABANDONED: the
 * attempt was still RUNNING when a later attempt of the batch started (its
 * execution ended without a trace).
 */
export const AttemptStatus = statuses('RUNNING', 'PUBLISHED', 'FAILED', 'SUPERSEDED', 'ABANDONED', 'CHECK_PASSED', 'CHECK_FAILED');
export type AttemptStatus = (typeof AttemptStatus)[keyof typeof AttemptStatus];

/**
 * `chunks.status`. PENDING: never loaded (staging holds none of its rows).
 * LOADING: an INSERT may have run. DONE: loaded and counted. STALE: its staging
 * rows no longer match the source (Reconcile). CANCELLED: its INSERT was cancelled
 * and has ended. The next run clears and reloads a STALE or CANCELLED chunk.
 * Why: docs/decisions/loading.md, docs/decisions/failure-handling.md
 */
export const ChunkStatus = statuses('PENDING', 'LOADING', 'DONE', 'STALE', 'CANCELLED');
export type ChunkStatus = (typeof ChunkStatus)[keyof typeof ChunkStatus];
