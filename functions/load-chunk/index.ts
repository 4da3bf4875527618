import type { Context } from 'aws-lambda';
import type { BatchRef } from '../../domain/batch.ts';
import { LoadStillRunningError, StatementStillRunningError } from '../../domain/errors.ts';
import { type ChunkToLoad, chunkLoaded, loadChunkSqls, loadStatementName } from '../../domain/load-chunk/sql/load-chunk.ts';
import { stepHandler } from '../commons/handler.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { logger } from '../commons/powertools.ts';
import { STILL_RUNNING, type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';
import { pauseWhileBusy } from './pause-probe.ts';

export interface LoadChunkEvent {
  readonly batch: BatchRef;
  readonly chunk: ChunkToLoad;
}

export interface LoadChunkResult {
  readonly index: number;
  readonly skipped: boolean;
  /** Rows the DELETE of a chunk that needed clearing removed (0 when there was none). */
  readonly rowsCleared: number;
  readonly statementId?: string;
  /** True when the load was an earlier attempt's, waited for instead of submitted. */
  readonly reattached: boolean;
  readonly durationMs: number;
}

/** Logged when an invocation ends while its chunk's load still runs (the workflow comes back to it). */
const STILL_RUNNING_MESSAGE = 'the load still runs; the workflow waits for it';

/** Logged when a retry waits for the load an earlier attempt submitted, instead of submitting one. */
export const REATTACHED_MESSAGE = 're-attached to the load of an earlier attempt';

/**
 * Loads one chunk in one BatchExecuteStatement transaction (clear the interval if
 * an earlier load may have left rows, insert, record the load: domain/load-chunk/sql/load-chunk.ts),
 * so the chunk is DONE exactly when its rows are in staging. Every load of a
 * generation runs under one statement name; a retry waits for one still running
 * instead of submitting, so at most one load of a chunk runs at a time and one that
 * may still commit is never cleared or loaded beside. docs/decisions/loading.md
 */
export async function loadChunk(
  event: LoadChunkEvent,
  warehouse: Warehouse = warehouseFromEnv(),
  remainingMs: () => number = () => 60_000,
): Promise<LoadChunkResult> {
  const started = Date.now();
  try {
    return await loadOnce(event, warehouse, started, remainingMs);
  } catch (error) {
    // The load outlasts this invocation: report it, never resubmit it and
    // never fail for its length; the workflow invokes this step again,
    // which re-attaches to it by name.
    if (!(error instanceof StatementStillRunningError)) throw error;
    // The workflow catches this, waits (WaitForLoad) and comes back: this step re-attaches to the load, for as long as it runs.
    logger.info(STILL_RUNNING_MESSAGE, { batchId: event.batch.batchId, chunk: event.chunk.index, statementId: error.statementId });
    throw new LoadStillRunningError(
      `chunk ${event.chunk.index}'s load ${error.statementId} still runs after ${Math.round((Date.now() - started) / 1000)} s; the workflow waits for it`,
    );
  }
}

async function loadOnce(event: LoadChunkEvent, warehouse: Warehouse, started: number, remainingMs: () => number): Promise<LoadChunkResult> {
  const { batch, chunk } = event;
  const pipeline = frozenPipeline(batch);
  const name = loadStatementName(pipeline, batch, chunk);
  const log = { batchId: batch.batchId, chunk: chunk.index, generation: chunk.generation ?? 0 };

  const earlier = await warehouse.statementsNamed(name);
  const running = earlier.find((s) => STILL_RUNNING.has(s.status));
  if (running) {
    logger.info(REATTACHED_MESSAGE, { ...log, statementId: running.id });
    await warehouse.wait(running.id, name).catch(async (error: unknown) => {
      // Only a wait that ran out propagates (the load still runs: the
      // workflow comes back and re-attaches again); a load that failed or
      // was cancelled rolled back whole, and is loaded afresh below.
      const now = await warehouse.status(running.id, name);
      if (!now || STILL_RUNNING.has(now.status)) throw error;
      logger.warn('the load re-attached to ended without loading; loading afresh', { ...log, statementId: running.id, status: now.status });
    });
  }
  if (running || earlier.some((s) => s.status === 'FINISHED')) {
    // A load that finished committed its rows and its record together: the
    // manifest says whether it was this batch's (names repeat when a
    // manifest is dropped and built again).
    const [state] = await warehouse.query(chunkLoaded(batch.batchId, chunk), `${name}:state`);
    if (Number(state?.loaded) > 0) {
      logger.info('chunk already loaded; skipped', { ...log, statementId: (running ?? earlier[0])!.id });
      return {
        index: chunk.index,
        skipped: true,
        rowsCleared: 0,
        statementId: (running ?? earlier[0])!.id,
        reattached: running !== undefined,
        durationMs: Date.now() - started,
      };
    }
  }

  // A good neighbour: wait while the warehouse's queues are full (pause-probe.ts).
  await pauseWhileBusy(warehouse, `atomic-publish:${pipeline.name}:pause-probe:${batch.batchId}:${chunk.index}`, remainingMs, log);
  const load = loadChunkSqls(pipeline, batch, chunk, new Date());
  const outcome = await warehouse.batch(load.sqls, name, load.parameters);
  const rowsCleared = chunk.clear ? Math.max(0, outcome.subStatements[0]?.resultRows ?? 0) : 0;
  logger.info('chunk loaded', { ...log, start: chunk.start, end: chunk.end, rowsCleared, statementId: outcome.id, polls: outcome.polls });
  return { index: chunk.index, skipped: false, rowsCleared, statementId: outcome.id, reattached: false, durationMs: Date.now() - started };
}

export const handler = stepHandler((event: LoadChunkEvent, context: Context) =>
  loadChunk(event, warehouseFor(context), () => context?.getRemainingTimeInMillis?.() ?? 60_000),
);
