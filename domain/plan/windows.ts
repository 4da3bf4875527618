/**
 * Windows of chunks: a batch of any length within Step Functions' quotas
 * (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html): one of
 * more than `chunksPerWindow` chunks is cut into windows of that many, each a child
 * execution whose PlanWindow records its chunks. A window recorded by its interval
 * (and grain units per chunk sized by data) cuts back into exactly the chunks Plan
 * planned, so a resumed batch keeps its boundaries. Why: docs/decisions/batches-and-identity.md
 */
import { ValidationError } from '../errors.ts';
import type { Pipeline } from '../spec.ts';
import { nextBoundary } from '../time.ts';
import type { BatchInterval, Chunk } from './chunk.ts';

/**
 * Chunks per window, and the most a batch loads inline. Per chunk an
 * execution's history gets about 7 events (a Map iteration, the LoadChunk
 * task with its invocation), so 1,000 chunks leave more than two thirds of
 * the 25,000 events for retries and re-checks of long loads; their items
 * are about 100 KB of the 256 KB a state may carry.
 */
export const DEFAULT_CHUNKS_PER_WINDOW = 1000;

/** Where the handlers find a smaller window (tests, tuning): a whole number from 1 to DEFAULT_CHUNKS_PER_WINDOW. */
export const CHUNKS_PER_WINDOW_ENV = 'CHUNKS_PER_WINDOW';

/**
 * Windows per batch: Plan's output lists them, so the list must fit in a
 * state payload (about 40 bytes each). 4,000 windows of 1,000 chunks are
 * 4,000,000 chunks: 456 years of hours.
 */
export const MAX_WINDOWS_PER_BATCH = 4000;

/** A window as the manifest records it (atomic_publish.batch_windows) and PlanWindow reads it. */
export interface ChunkWindow {
  readonly index: number;
  /** Index of its first chunk in the batch. */
  readonly firstChunk: number;
  readonly chunkCount: number;
  /** `[start, end)`: from its first chunk's start to its last chunk's end. */
  readonly start: string;
  readonly end: string;
  /**
   * Grain units per chunk, comma-separated ("3,1,2"): chunks sized by data.
   * Absent: one unit per chunk (calendar chunks).
   */
  readonly unitCounts?: string;
}

/** What a window item of the Distributed Map carries: enough to name it in the console; PlanWindow reads the rest from the manifest. */
export interface WindowItem {
  readonly index: number;
  readonly firstChunk: number;
  readonly chunkCount: number;
}

/** The window size from the handlers' environment; a bad value is a configuration error. */
export function chunksPerWindow(env: Readonly<Record<string, string | undefined>>): number {
  const raw = env[CHUNKS_PER_WINDOW_ENV];
  if (raw === undefined || raw === '') return DEFAULT_CHUNKS_PER_WINDOW;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > DEFAULT_CHUNKS_PER_WINDOW) {
    throw new ValidationError(`${CHUNKS_PER_WINDOW_ENV} must be a whole number from 1 to ${DEFAULT_CHUNKS_PER_WINDOW}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** Grain units from `start` up to `end` (both on the grain). */
function unitsBetween(start: Date, end: Date, pipeline: Pipeline): number {
  const { grain, timezone } = pipeline.chunk;
  let units = 0;
  for (let at = start; at.getTime() < end.getTime(); units++) at = nextBoundary(at, grain, timezone);
  return units;
}

/** The chunks cut into windows of `size` consecutive chunks (none when they fit in one inline Map). */
export function chunkWindows(chunks: readonly Chunk[], pipeline: Pipeline, size: number): ChunkWindow[] {
  if (chunks.length <= size) return [];
  const sized = pipeline.chunk.targetRows !== undefined;
  const windows: ChunkWindow[] = [];
  for (let first = 0; first < chunks.length; first += size) {
    const members = chunks.slice(first, first + size);
    const counts = sized ? members.map((c) => unitsBetween(new Date(c.start), new Date(c.end), pipeline)) : [];
    windows.push({
      index: windows.length,
      firstChunk: first,
      chunkCount: members.length,
      start: members[0]!.start,
      end: members.at(-1)!.end,
      ...(counts.some((n) => n !== 1) ? { unitCounts: counts.join(',') } : {}),
    });
  }
  return windows;
}

/** A window's Distributed Map item. */
export function windowItem(window: ChunkWindow): WindowItem {
  return { index: window.index, firstChunk: window.firstChunk, chunkCount: window.chunkCount };
}

/**
 * The window's chunks, as Plan planned them: its interval walked on the
 * pipeline's grain, the units grouped by `unitCounts`. A window that does
 * not come out as recorded (another spec, a corrupted row) is an error,
 * never a silent re-cut.
 */
export function windowChunks(window: ChunkWindow, pipeline: Pipeline): Chunk[] {
  const { grain, timezone } = pipeline.chunk;
  const counts = window.unitCounts === undefined ? undefined : window.unitCounts.split(',').map(Number);
  const end = new Date(window.end);
  const chunks: Chunk[] = [];
  let start = new Date(window.start);
  while (start.getTime() < end.getTime()) {
    const units = counts === undefined ? 1 : counts[chunks.length];
    if (units === undefined || !Number.isInteger(units) || units < 1) break;
    let chunkEnd = start;
    for (let i = 0; i < units; i++) chunkEnd = nextBoundary(chunkEnd, grain, timezone);
    chunks.push({ index: window.firstChunk + chunks.length, start: start.toISOString(), end: chunkEnd.toISOString() });
    start = chunkEnd;
  }
  if (chunks.length !== window.chunkCount || start.getTime() !== end.getTime() || (counts !== undefined && counts.length !== chunks.length)) {
    throw new ValidationError(
      `window ${window.index} (${window.start} to ${window.end}, ${window.chunkCount} chunks from chunk ${window.firstChunk}) does not cut into the chunks it was planned with on ${grain}s in ${timezone}`,
    );
  }
  return chunks;
}

/** The interval of a batch's windows, checked to cover it exactly (no gap, no overlap). */
export function checkWindowsCover(windows: readonly ChunkWindow[], interval: BatchInterval, chunkCount: number): void {
  let at = interval.from.toISOString();
  let next = 0;
  for (const window of windows) {
    if (window.start !== at || window.firstChunk !== next) {
      throw new ValidationError(`window ${window.index} starts at ${window.start} (chunk ${window.firstChunk}); expected ${at} (chunk ${next})`);
    }
    at = window.end;
    next += window.chunkCount;
  }
  if (at !== interval.to.toISOString() || next !== chunkCount) {
    throw new ValidationError(`the windows end at ${at} after ${next} chunks; the batch ends at ${interval.to.toISOString()} after ${chunkCount}`);
  }
}
