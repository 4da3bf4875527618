/**
 * Whether a batch's loads can end before the state machine's time-out: Plan
 * refuses one that cannot before writing anything, naming the ways to make it
 * fit. The estimate: the chunks still to load times the seconds per chunk of the
 * pipeline's last published batch, at its concurrency, never less than
 * MIN_CHUNK_SECONDS per chunk and concurrent load.
 * Why: docs/decisions/batches-and-identity.md ("A batch that cannot finish")
 */
import { ValidationError } from '../errors.ts';
import type { Pipeline } from '../spec.ts';

/** The least one chunk's load takes, per concurrent load (seconds). */
export const MIN_CHUNK_SECONDS = 1;

/** The pipeline's last published batch, as the manifest records it. */
export interface PreviousLoad {
  readonly batchId: string;
  readonly chunks: number;
  readonly seconds: number;
}

export interface LoadEstimate {
  readonly seconds: number;
  /** Seconds per chunk the estimate used, at the pipeline's concurrency. */
  readonly perChunkSeconds: number;
  /** Where the rate came from. */
  readonly basis: string;
}

/** The loads' estimated wall time for `chunks` chunks. */
export function estimateLoad(chunks: number, pipeline: Pipeline, previous: PreviousLoad | undefined): LoadEstimate {
  const floor = MIN_CHUNK_SECONDS / pipeline.chunk.maxConcurrency;
  const measured = previous !== undefined && previous.chunks > 0 && previous.seconds > 0 ? previous.seconds / previous.chunks : undefined;
  const perChunkSeconds = Math.max(floor, measured ?? 0);
  const basis =
    measured !== undefined && measured >= floor
      ? `as batch ${previous!.batchId} took (${previous!.chunks} chunks in ${Math.round(previous!.seconds)} s)`
      : `at the least a chunk takes (${MIN_CHUNK_SECONDS} s per chunk, ${pipeline.chunk.maxConcurrency} at a time)`;
  return { seconds: chunks * perChunkSeconds, perChunkSeconds, basis };
}

const hours = (seconds: number) => `${(seconds / 3600).toFixed(1)} h`;

/** Refuses a batch whose loads would outlast the execution's time left; nothing has been written yet. */
export function checkLoadFits(pipeline: Pipeline, chunks: number, estimate: LoadEstimate, secondsLeft: number, timeoutSeconds: number): void {
  if (estimate.seconds <= secondsLeft) return;
  throw new ValidationError(
    `pipeline ${pipeline.name}: its ${chunks} chunks still to load would take about ${hours(estimate.seconds)} ${estimate.basis}, ` +
      `longer than the ${hours(secondsLeft)} left before the state machine's time-out (${hours(timeoutSeconds)}) ends the execution; nothing was written. ` +
      `Make it fit: raise chunk.maxConcurrency (now ${pipeline.chunk.maxConcurrency}), use coarser chunks (chunk.grain, or chunk.targetRows), ` +
      `${pipeline.publishMode === 'swap' ? '' : 'load a shorter interval (input from/to) first, '}or deploy with a longer executionTimeout.`,
  );
}
