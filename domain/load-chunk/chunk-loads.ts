/** What Plan hands each LoadChunk, from what the manifest says of the chunk's earlier loads. */
import { ChunkStatus } from '../batch.ts';
import type { Chunk } from '../plan/chunk.ts';
import type { ChunkToLoad } from './sql/load-chunk.ts';

/** A row of sql.doneChunks: a chunk that is not fresh. */
export interface ChunkStateRow {
  readonly chunk_index: unknown;
  readonly status: unknown;
  readonly generation: unknown;
}

/** Statuses of a chunk whose interval may hold rows of a load that did not count. */
const MAY_HOLD_ROWS: ReadonlySet<string> = new Set([ChunkStatus.LOADING, ChunkStatus.STALE, ChunkStatus.CANCELLED]);

/**
 * The chunks still to load, each with its generation and whether its
 * interval must be cleared first (only when not 0 and true: a fresh
 * batch's items are the planned chunks as they are).
 */
export function chunksToLoad(chunks: readonly Chunk[], rows: readonly ChunkStateRow[]): { done: Set<number>; remaining: ChunkToLoad[] } {
  const state = new Map(rows.map((r) => [Number(r.chunk_index), { status: String(r.status), generation: Number(r.generation) }]));
  const done = new Set([...state].filter(([, s]) => s.status === ChunkStatus.DONE).map(([index]) => index));
  const remaining = chunks
    .filter((c) => !done.has(c.index))
    .map((c): ChunkToLoad => {
      const s = state.get(c.index);
      if (!s) return c;
      return { ...c, ...(s.generation !== 0 ? { generation: s.generation } : {}), ...(MAY_HOLD_ROWS.has(s.status) ? { clear: true } : {}) };
    });
  return { done, remaining };
}
