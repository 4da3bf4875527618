import type { Context } from 'aws-lambda';
import { type BatchRef, BatchStatus } from '../../domain/batch.ts';
import {
  OutOfBandChangeError,
  PublishConflictError,
  SourceChangedError,
  TransientWarehouseError,
  ValidationError,
  WarehouseError,
} from '../../domain/errors.ts';
import { catchUpRows, liveColumnsQuery } from '../../domain/live-watch/sql/out-of-band.ts';
import { warehouseInstant } from '../../domain/plan/chunk-sizing.ts';
import { previousVersionTableFor, viewVersionTableFor } from '../../domain/plan/plan.ts';
import { tableColumns } from '../../domain/plan/sql/plan.ts';
import { catchUpOf, failedPublish, publishRoute } from '../../domain/publish/route.ts';
import {
  batchState,
  markNewestChunkStale,
  markSuperseded,
  newestChunk,
  restatementFingerprints,
  sourceRecheck,
  stagingChunkFingerprint,
  swapPublish,
  withSourceRecheck,
} from '../../domain/publish/sql/swap.ts';
import { liveRelation, readLiveRelation, switchView, viewVersionProblem } from '../../domain/publish/sql/view.ts';
import { PublishWaitEnv, type PublishWaits, publishWaitsFromEnv } from '../../domain/publish/waits.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { stepHandler } from '../commons/handler.ts';
import { releaseExecutionLease } from '../commons/lease.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { logger } from '../commons/powertools.ts';
import { retryPublishTransaction, type Swap, swapAndCarryOver, swapLocks, waitForOlderSnapshots } from '../commons/swap.ts';
import { type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';
import { publishRewrite } from './in-place-swap.ts';
import { publishIntervals } from './intervals.ts';
import { stagingFingerprint } from './live-watch.ts';
import { publishMerge } from './merge.ts';
import { type PublishResult, toResult } from './result.ts';

export interface PublishEvent {
  readonly batch: BatchRef;
  /** `$$.Execution.Id`: a superseded batch ends the execution, so Publish then releases its pipeline lease. */
  readonly executionId?: string;
}

/**
 * Newest data wins: a batch older than what the pipeline publishes ends
 * SUPERSEDED, logged, not paged (nothing is wrong: newer data is live). So
 * does a restatement equal to the live rows (`unchanged`: they already hold
 * its data). Its staging table is left to the next Cleanup, which drops it.
 */
async function superseded(
  event: PublishEvent,
  warehouse: Warehouse,
  reason: string,
  liveTable: string,
  name: (step: string) => string,
  marked = false,
  unchanged = false,
): Promise<PublishResult> {
  const { batch } = event;
  if (!marked) await warehouse.batch(markSuperseded(batch.batchId, reason, new Date()), name('superseded'));
  await releaseExecutionLease(warehouse, event.executionId ?? '', name('superseded'));
  if (unchanged) logger.info('restatement equals the live rows; nothing published', { batchId: batch.batchId, reason });
  else logger.warn('batch superseded: the pipeline already publishes newer data; nothing published', { batchId: batch.batchId, reason });
  return {
    publication: 0,
    publishedAt: '',
    liveTable,
    oldVersionTable: '',
    rowsPublished: 0,
    alreadyPublished: false,
    superseded: true,
    reason,
    ...(unchanged ? { unchanged } : {}),
  };
}

/** The batch's publication, when another attempt of this Publish has made it since this one read the batch. */
async function publishedMeanwhile(
  warehouse: Warehouse,
  batch: BatchRef,
  liveTable: string,
  name: (step: string) => string,
): Promise<PublishResult | undefined> {
  const [now] = await warehouse.query(batchState(batch.batchId), name('state'));
  return now?.status === BatchStatus.PUBLISHED ? toResult(now, liveTable, true) : undefined;
}

/**
 * Reads of staging before the swap, which an attempt of this Publish
 * running at the same time may rename into live meanwhile: then that
 * attempt's publish is this one's, as after a failed swap.
 */
async function beforeTheSwap<T>(
  read: () => Promise<T>,
  warehouse: Warehouse,
  batch: BatchRef,
  liveTable: string,
  name: (step: string) => string,
): Promise<T | PublishResult> {
  try {
    return await read();
  } catch (error) {
    if (!(error instanceof WarehouseError)) throw error;
    const published = await publishedMeanwhile(warehouse, batch, liveTable, name);
    if (published) return published;
    throw error;
  }
}

const isResult = (value: unknown): value is PublishResult => typeof value === 'object' && value !== null && 'alreadyPublished' in value;

/**
 * After the publish transaction failed: an earlier attempt whose response
 * was lost (or whose wait was abandoned) may have committed meanwhile: then
 * the guard, or the staging table already renamed away, fails this one.
 * That publish is this batch's own. Otherwise the refusal is acted on as
 * domain/publish/route.ts failedPublish names it.
 */
async function afterFailedPublish(
  error: unknown,
  event: PublishEvent,
  warehouse: Warehouse,
  liveTable: string,
  name: (step: string) => string,
): Promise<PublishResult> {
  if (!(error instanceof WarehouseError)) throw error;
  const published = await publishedMeanwhile(warehouse, event.batch, liveTable, name);
  if (published) return published;
  const failed = failedPublish(error.message, event.batch);
  switch (failed.kind) {
    case 'source-changed':
      await warehouse.batch(markNewestChunkStale(event.batch.batchId), name('source-changed'));
      throw new SourceChangedError(`${failed.refusal}. Nothing was published; the chunk is marked STALE, so the next run of the batch reloads it`, {
        cause: error,
      });
    case 'superseded':
      return superseded(event, warehouse, failed.refusal, liveTable, name);
    case 'conflict':
      throw new PublishConflictError(failed.refusal, { cause: error });
    case 'out-of-band':
      throw new OutOfBandChangeError(failed.description, { cause: error });
    case 'rethrow':
      throw error;
  }
}

/**
 * The swap, in one BatchExecuteStatement transaction. Readers see the old
 * table until the commit and the new one after it; if anything in the
 * transaction fails, nothing of it happened. The live table's grants,
 * defaults, comments and bound views are read just before and carried over
 * in the same transaction, which re-checks them under its locks (a change
 * in between makes it read again and rebuild the swap).
 */
export async function publish(
  event: PublishEvent,
  warehouse: Warehouse = warehouseFromEnv(),
  waits: PublishWaits = publishWaitsFromEnv(),
): Promise<PublishResult> {
  const { batch } = event;
  const pipeline = frozenPipeline(batch);
  const liveTable = `${pipeline.target.schema}.${pipeline.target.table}`;
  const name = (step: string) => `atomic-publish:${pipeline.name}:publish:${step}:${batch.batchId}`;

  const [before] = await warehouse.query(batchState(batch.batchId), name('state'));
  const route = publishRoute(batch, pipeline, before === undefined ? undefined : { status: String(before.status), purpose: String(before.purpose) });
  switch (route.kind) {
    case 'refuse-check':
      throw new ValidationError(route.message);
    case 'already-published':
      logger.info('batch already published; nothing to do', { batchId: batch.batchId });
      await catchUp(warehouse, pipeline, batch, previousVersionTableFor(pipeline, batch.batchId), waits, name, true);
      return toResult(before!, liveTable, true);
    case 'already-superseded':
      return superseded(event, warehouse, route.reason, liveTable, name, true);
    case 'publish':
      break;
  }

  if (route.compareRestatement) {
    const same = await beforeTheSwap(() => restatementUnchanged(warehouse, pipeline, batch, name), warehouse, batch, liveTable, name);
    if (isResult(same)) return same;
    if (same !== undefined) return superseded(event, warehouse, same, liveTable, name, false, true);
  }

  const recheck = route.recheckSource
    ? await beforeTheSwap(() => sourceRecheckOf(warehouse, pipeline, batch, waits, name), warehouse, batch, liveTable, name)
    : [];
  if (isResult(recheck)) return recheck;

  switch (route.method) {
    case 'view':
      return publishThroughView(event, warehouse, waits, name);
    case 'intervals':
      return publishChangingRows(event, warehouse, waits, liveTable, name, publishIntervals, 'published: intervals replaced', recheck);
    case 'merge':
      return publishChangingRows(event, warehouse, waits, liveTable, name, publishMerge, 'published: merged', recheck);
    case 'rewrite':
      return publishChangingRows(event, warehouse, waits, liveTable, name, publishRewrite, 'published: live rows replaced in place', recheck);
    case 'swap':
      break;
  }
  if (route.renamesDespiteInPlace) {
    logger.warn('a migration changes the columns of the live table: published by the rename swap, which waits only for transactions holding a lock', {
      batchId: batch.batchId,
    });
  }

  const previous = previousVersionTableFor(pipeline, batch.batchId);
  const fingerprint = await beforeTheSwap(() => stagingFingerprint(warehouse, pipeline, batch, name), warehouse, batch, liveTable, name);
  if (isResult(fingerprint)) return fingerprint;
  const swap: Swap = {
    pipeline,
    step: 'Publish',
    incoming: batch.stagingTable,
    incomingLabel: 'its staging table',
    retainedAs: previous,
    waits,
    name,
    statements: (facts, factsQuery) =>
      withSourceRecheck(swapPublish(pipeline, batch, previous, new Date(), facts, factsQuery, waits.lockWaitMs, fingerprint), pipeline, batch, recheck),
  };
  const recovered = await swapAndCarryOver(warehouse, swap, (error) => afterFailedPublish(error, event, warehouse, liveTable, name));
  if (recovered) return recovered;
  await catchUp(warehouse, pipeline, batch, previous, waits, name);
  const [after] = await warehouse.query(batchState(batch.batchId), name('state'));
  const result = toResult(after!, liveTable, false);
  logger.info('published', { batchId: batch.batchId, ...result });
  return result;
}

/**
 * A restatement publishes only if its rows differ from the live rows it
 * would replace (domain/publish/sql/swap.ts restatementFingerprints): the reason
 * it ends without publishing, or undefined when they differ.
 */
async function restatementUnchanged(warehouse: Warehouse, pipeline: Pipeline, batch: BatchRef, name: (step: string) => string): Promise<string | undefined> {
  const listed = (await warehouse.query(liveColumnsQuery(pipeline.target.schema, pipeline.target.table), name('restatement-columns'))).map((r) =>
    String(r.col),
  );
  // The columns the loads wrote: an identity column Redshift numbers differs between staging and live by nature (docs/decisions/identity-columns.md).
  const columns = batch.columns.length === 0 ? listed : listed.filter((c) => batch.columns.includes(c.split(' ')[0]!));
  const [row] = await warehouse.query(restatementFingerprints(pipeline, batch, columns), name('restatement-compare'));
  const staged = String(row?.staged ?? '');
  const live = String(row?.live ?? '');
  logger.info('restatement compared with the live rows', { batchId: batch.batchId, restatement: batch.restatement, staged, live });
  if (staged !== live) return undefined;
  return `restatement ${batch.restatement} of ${batch.from} to ${batch.to}: staging equals the live rows it would replace (rows:checksum ${staged}); nothing to publish`;
}

/**
 * The publish transaction's re-check of the source's newest chunk
 * (domain/publish/sql/swap.ts sourceRecheck), with staging's fingerprint of it
 * read now as what the source must still hold. None when the source query
 * cannot be re-run inside the transaction: then logged, as the source may
 * move between Reconcile and the publish unseen.
 */
async function sourceRecheckOf(
  warehouse: Warehouse,
  pipeline: Pipeline,
  batch: BatchRef,
  waits: PublishWaits,
  name: (step: string) => string,
): Promise<string[]> {
  const [row] = await warehouse.query(newestChunk(batch.batchId), name('newest-chunk'));
  if (row === undefined) return [];
  const chunk = { index: Number(row.chunk_index), start: warehouseInstant(String(row.interval_start)), end: warehouseInstant(String(row.interval_end)) };
  const listed = (await warehouse.query(liveColumnsQuery(pipeline.target.schema, batch.stagingTable), name('staging-columns'))).map((r) => String(r.col));
  const columns = batch.columns.length === 0 ? listed : listed.filter((c) => batch.columns.includes(c.split(' ')[0]!));
  const [staged] = await warehouse.query(stagingChunkFingerprint(pipeline, batch, columns, chunk), name('newest-chunk-staging'));
  const recheck = sourceRecheck(pipeline, batch, columns, chunk, String(staged?.fp ?? ''));
  if (recheck === undefined) {
    logger.warn('the source query cannot be re-run inside the publish transaction: a change to the source after Reconcile is not caught', {
      batchId: batch.batchId,
      chunk: chunk.index,
    });
    return [];
  }
  return recheck;
}

/**
 * The catch-up domain/publish/route.ts catchUpOf names, copied from the old
 * version into the new live table (domain/live-watch/sql/out-of-band.ts
 * catchUpRows). `ifRetained`: only when the old version still exists (a
 * replay long after may find it dropped by Cleanup).
 */
async function catchUp(
  warehouse: Warehouse,
  pipeline: Pipeline,
  batch: BatchRef,
  previous: string,
  waits: PublishWaits,
  name: (step: string) => string,
  ifRetained = false,
): Promise<void> {
  const caughtUp = catchUpOf(pipeline, batch);
  if (caughtUp === undefined) return;
  if (ifRetained && (await warehouse.query(tableColumns(pipeline.target.schema, previous), name('old-version-columns'))).length === 0) return;
  const { carryFrom, columns } = caughtUp;
  try {
    await warehouse.batch(catchUpRows(pipeline, previous, columns, carryFrom, waits.lockWaitMs, pipeline.migrating?.from ?? columns), name('catch-up'));
  } catch (error) {
    if (!(error instanceof WarehouseError) || error instanceof TransientWarehouseError) throw error;
    // Retried: the retry finds the batch published and runs the catch-up again.
    throw new TransientWarehouseError(
      `the swap of ${batch.liveTable} committed (readers see the new table), but the catch-up of rows at or after ${carryFrom} that reached ` +
        `${pipeline.target.schema}.${previous} while the swap waited failed and is retried: ${error.message}`,
      { cause: error },
    );
  }
}

/**
 * publishVia 'view': one transaction that points the live view at staging,
 * renamed to its version name (publish-view.ts switchView). Readers read the
 * view: nothing they read is renamed, and they see the old version until
 * the commit and the new one after it. Snapshot readers are waited for as
 * in the rename swap: the view's new definition is read with the latest
 * catalog, and an older snapshot would see none of the new version's rows.
 */
async function publishThroughView(event: PublishEvent, warehouse: Warehouse, waits: PublishWaits, name: (step: string) => string): Promise<PublishResult> {
  const { batch } = event;
  const pipeline = frozenPipeline(batch);
  const { schema, table } = pipeline.target;
  const liveTable = `${schema}.${table}`;
  const versionTable = viewVersionTableFor(pipeline, batch.batchId);
  const swap = { pipeline, step: 'Publish', incoming: batch.stagingTable, waits, name };
  await waitForOlderSnapshots(warehouse, swap);
  try {
    await retryPublishTransaction(
      warehouse,
      name,
      async () => {
        const factsQuery = liveRelation(schema, table);
        const live = readLiveRelation(await warehouse.query(factsQuery, name('live-view')));
        const found = viewVersionProblem(pipeline, live);
        if ('problem' in found) throw new WarehouseError(found.problem);
        const switching = { live, factsQuery, previousVersion: found.version, versionTable, now: new Date(), lockWaitMs: waits.lockWaitMs };
        return { statements: switchView(pipeline, batch, switching), locks: swapLocks(swap), carried: undefined };
      },
      (holders) =>
        `the switch of the view ${liveTable} gave up after waiting ${waits.lockWaitMs} ms for its locks and is retried; ` +
        `holding the view, its staging table or the publications: ${holders}. ` +
        `Nothing was published; the view shows its current version. End those transactions, or raise ${PublishWaitEnv.LOCK_WAIT_MS}.`,
    );
  } catch (error) {
    return afterFailedPublish(error, event, warehouse, liveTable, name);
  }
  const [after] = await warehouse.query(batchState(batch.batchId), name('state'));
  const result = toResult(after!, liveTable, false);
  logger.info('published through the view', { batchId: batch.batchId, versionTable, ...result });
  return result;
}

/**
 * A publish mode that changes rows of the live table in place
 * (replace-intervals: functions/publish/intervals.ts; merge:
 * functions/publish/merge.ts), with Publish's recovery and answer.
 */
async function publishChangingRows(
  event: PublishEvent,
  warehouse: Warehouse,
  waits: PublishWaits,
  liveTable: string,
  name: (step: string) => string,
  run: typeof publishIntervals,
  logged: string,
  recheck: readonly string[],
): Promise<PublishResult> {
  const { batch } = event;
  try {
    await run(event, warehouse, waits, name, recheck);
  } catch (error) {
    return afterFailedPublish(error, event, warehouse, liveTable, name);
  }
  const [after] = await warehouse.query(batchState(batch.batchId), name('state'));
  const result = toResult(after!, liveTable, false);
  logger.info(logged, { batchId: batch.batchId, from: batch.from, to: batch.to, ...result });
  return result;
}

export const handler = stepHandler((event: PublishEvent, context: Context) => publish(event, warehouseFor(context)));
