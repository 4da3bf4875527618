/** The chunks a batch is cut into and the interval they cover: what Plan, LoadChunk and Reconcile share. */

/** The unit chunk boundaries fall on, in the pipeline's zone (domain/time.ts). */
export type ChunkGrain = 'hour' | 'day' | 'month';

/** One half-open interval `[start, end)` of a batch; ISO 8601 UTC instants. */
export interface Chunk {
  readonly index: number;
  readonly start: string;
  readonly end: string;
}

export interface BatchInterval {
  readonly from: Date;
  readonly to: Date;
}
