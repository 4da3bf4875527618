import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import type { BatchRef } from '../../domain/batch.ts';
import { LoadStillRunningError, StatementStillRunningError, TransientWarehouseError, WarehouseError } from '../../domain/errors.ts';
import { stillRunningMessage, stillRunningStatement } from '../../domain/load-chunk/reattach.ts';
import { type ChunkToLoad, chunkLoaded, loadChunkSqls, loadStatementName } from '../../domain/load-chunk/sql/load-chunk.ts';
import { stepHandler } from '../commons/handler.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { logger } from '../commons/powertools.ts';
import { STILL_RUNNING, type StatementOutcome, type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';
import { pauseWhileBusy } from './pause-probe.ts';

export interface LoadChunkEvent {
  readonly batch: BatchRef;
  readonly chunk: ChunkToLoad;
  /** The LoadStillRunningError an earlier attempt ended with, as the workflow's Catch keeps it: it names the load to wait for. */
  readonly stillRunning?: unknown;
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

/** Logged when a load ended without loading (failed or cancelled, rolled back whole) and is submitted afresh. */
export const RESUBMITTED_MESSAGE = 'the load ended without loading; loading afresh';

/** Submissions of one invocation after loads that failed transiently (a serialization conflict, a lost connection). */
const RESUBMISSIONS = 3;

/** Submissions of one invocation in all, earlier attempts' loads found by their tokens included. */
const MAX_SUBMISSIONS = 20;

/**
 * Loads one chunk in one BatchExecuteStatement transaction (clear the interval if
 * an earlier load may have left rows, insert, record the load: domain/load-chunk/sql/load-chunk.ts),
 * so the chunk is DONE exactly when its rows are in staging. Two requests: the
 * submission, whose ClientToken makes a resent one answer the load it first
 * created, and the wait. A load known to run (named by the workflow after an
 * attempt that outlasted its invocation, or by Plan after an ended execution) is
 * waited for instead. Why: docs/decisions/loading.md ("Two requests per chunk")
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
    // never fail for its length; the workflow invokes this step again with
    // the error, whose message names the load to wait for.
    if (!(error instanceof StatementStillRunningError)) throw error;
    logger.info(STILL_RUNNING_MESSAGE, { batchId: event.batch.batchId, chunk: event.chunk.index, statementId: error.statementId });
    throw new LoadStillRunningError(stillRunningMessage(event.chunk.index, error.statementId, Math.round((Date.now() - started) / 1000)));
  }
}

async function loadOnce(event: LoadChunkEvent, warehouse: Warehouse, started: number, remainingMs: () => number): Promise<LoadChunkResult> {
  const { batch, chunk } = event;
  const pipeline = frozenPipeline(batch);
  const name = loadStatementName(pipeline, batch, chunk);
  const log = { batchId: batch.batchId, chunk: chunk.index, generation: chunk.generation ?? 0 };
  const done = (statementId: string, reattached: boolean): LoadChunkResult => ({
    index: chunk.index,
    skipped: true,
    rowsCleared: 0,
    statementId,
    reattached,
    durationMs: Date.now() - started,
  });

  // The key of the next submission's token: '' at first; after a load that ended without loading, its id (a retry
  // finds the load that followed it by the same chain of tokens).
  let ended: string | undefined;
  const known = stillRunningStatement(event.stillRunning) ?? chunk.running;
  if (known !== undefined) {
    logger.info(REATTACHED_MESSAGE, { ...log, statementId: known });
    if (await finishedLoading(warehouse, known, name, log)) {
      logger.info('chunk already loaded; skipped', { ...log, statementId: known });
      return done(known, true);
    }
    ended = known;
  }

  // A good neighbour: wait while the warehouse's queues are full (pause-probe.ts).
  await pauseWhileBusy(warehouse, `atomic-publish:${pipeline.name}:pause-probe:${batch.batchId}:${chunk.index}`, remainingMs, log);
  const load = loadChunkSqls(pipeline, batch, chunk);
  for (let fresh = 0, link = 0; ; link++) {
    if (link >= MAX_SUBMISSIONS)
      throw new WarehouseError(`chunk ${chunk.index}'s load ended without loading ${link} times (last ${ended}); not submitted again`);
    const { id, earlier } = await warehouse.submitBatchOnce(load.sqls, name, load.parameters, ended ?? '');
    if (earlier) logger.info(REATTACHED_MESSAGE, { ...log, statementId: id });
    let outcome: StatementOutcome;
    try {
      outcome = await warehouse.wait(id, name);
    } catch (error) {
      // A load that failed or was cancelled rolled back whole: an earlier attempt's, or this one's when it failed
      // transiently, is loaded afresh under a token of its own. Anything else propagates, a load still running
      // included (the workflow waits for it): a wait can fail while its statement runs on.
      if (error instanceof StatementStillRunningError || !(earlier || (error instanceof TransientWarehouseError && fresh < RESUBMISSIONS))) throw error;
      const now = await warehouse.status(id, name);
      if (!now || !ENDED_WITHOUT_LOADING.has(now.status)) throw error;
      if (!earlier) fresh += 1;
      logger.warn(RESUBMITTED_MESSAGE, { ...log, statementId: id, status: now.status, error: (error as Error).message });
      ended = id;
      continue;
    }
    if (earlier) {
      // An earlier attempt's load committed its rows and its record together: the manifest says whether
      // it was this manifest's (a token outlives a manifest dropped and built again).
      const [state] = await warehouse.query(chunkLoaded(batch.batchId, chunk), `${name}:state`);
      if (Number(state?.loaded) > 0) {
        logger.info('chunk already loaded; skipped', { ...log, statementId: id });
        return done(id, true);
      }
      // Another manifest's load: no later attempt is that one's retry, so a key of its own ends the chain of tokens.
      ended = randomUUID();
      continue;
    }
    const rowsCleared = chunk.clear ? Math.max(0, outcome.subStatements[0]?.resultRows ?? 0) : 0;
    logger.info('chunk loaded', {
      ...log,
      start: chunk.start,
      end: chunk.end,
      rowsCleared,
      statementId: id,
      polls: outcome.polls,
      sourceReads: load.sourceReads,
    });
    return { index: chunk.index, skipped: false, rowsCleared, statementId: id, reattached: false, durationMs: Date.now() - started };
  }
}

/** A load's statuses once it ended without committing: it rolled back whole. */
const ENDED_WITHOUT_LOADING: ReadonlySet<string> = new Set(['FAILED', 'ABORTED']);

/**
 * Waits for a load submitted earlier: true when it finished (its rows and
 * record committed together), false when it failed or was cancelled (rolled
 * back whole) or is no longer known. Only a wait that ran out propagates:
 * the load still runs, and the workflow comes back to it.
 */
async function finishedLoading(warehouse: Warehouse, id: string, name: string, log: Record<string, unknown>): Promise<boolean> {
  try {
    await warehouse.wait(id, name);
    return true;
  } catch (error) {
    if (error instanceof StatementStillRunningError) throw error;
    const now = await warehouse.status(id, name);
    if (now && STILL_RUNNING.has(now.status)) throw error;
    logger.warn('the load re-attached to ended without loading; loading afresh', { ...log, statementId: id, status: now?.status ?? 'unknown' });
    return false;
  }
}

export const handler = stepHandler((event: LoadChunkEvent, context: Context) =>
  loadChunk(event, warehouseFor(context), () => context?.getRemainingTimeInMillis?.() ?? 60_000),
);
