import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from 'aws-lambda';
import { DependentViewError, OutOfBandChangeError, PublishConflictError, TransientWarehouseError, WarehouseError } from '../../domain/errors.ts';
import { type PublishWaits, PublishWaitEnv, publishWaitsFromEnv } from '../../domain/publish-waits.ts';
import { carryOverCorrections, dependentViewProblems, type FactRow, type LiveTableFacts, liveTableFacts } from '../../domain/dependents.ts';
import { previousVersionTableFor } from '../../domain/plan.ts';
import { BatchStatus, type BatchRef } from '../../domain/batch.ts';
import { CATALOG_CHANGED, isOlderDataRefusal, publishGuardRefusal } from '../../domain/sql/manifest.ts';
import { batchState, carryOverStatements, dependentsFacts, markSuperseded, openTransactions, swapPublish } from '../../domain/sql/publish.ts';
import type { Relation } from '../../domain/identifiers.ts';
import { describeOutOfBandChange, outOfBandRefusal } from '../../domain/out-of-band.ts';
import { MANIFEST_SCHEMA } from '../../domain/sql/statement.ts';
import { releaseExecutionLease } from '../commons/lease.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { logger } from '../commons/powertools.ts';
import { stepHandler } from '../commons/handler.ts';
import { type Row, type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';

export interface PublishEvent {
  readonly batch: BatchRef;
  /** `$$.Execution.Id`: a superseded batch ends the execution, so Publish then releases its pipeline lease. */
  readonly executionId?: string;
}

export interface PublishResult {
  readonly publication: number;
  readonly publishedAt: string;
  readonly liveTable: string;
  readonly oldVersionTable: string;
  readonly rowsPublished: number;
  /** True when an earlier attempt had already published (a retry after a lost response). */
  readonly alreadyPublished: boolean;
  /**
   * The pipeline already publishes newer data than this batch holds: nothing
   * was published, the batch is SUPERSEDED, and the execution ends there
   * (state Superseded) without a page. `reason` is the guard's refusal.
   */
  readonly superseded: boolean;
  readonly reason?: string;
}

function toResult(row: Row, liveTable: string, alreadyPublished: boolean): PublishResult {
  return {
    publication: Number(row.seq),
    publishedAt: String(row.published_at),
    liveTable,
    oldVersionTable: String(row.old_version_table),
    rowsPublished: Number(row.rows_published ?? 0),
    alreadyPublished,
    superseded: false,
  };
}

/**
 * Newest data wins: a batch older than what the pipeline publishes ends
 * SUPERSEDED, logged, not paged (nothing is wrong: newer data is live). Its
 * staging table is left to the next Cleanup, which drops it.
 */
async function superseded(
  event: PublishEvent,
  warehouse: Warehouse,
  reason: string,
  liveTable: string,
  name: (step: string) => string,
  marked = false,
): Promise<PublishResult> {
  const { batch } = event;
  if (!marked) await warehouse.batch(markSuperseded(batch.batchId, reason, new Date()), name('superseded'));
  await releaseExecutionLease(warehouse, event.executionId ?? '', name('superseded'));
  logger.warn('batch superseded: the pipeline already publishes newer data; nothing published', { batchId: batch.batchId, reason });
  return { publication: 0, publishedAt: '', liveTable, oldVersionTable: '', rowsPublished: 0, alreadyPublished: false, superseded: true, reason };
}

/** The transactions of openTransactions() as an alert names them: user, start, what they run. */
export function describeTransactions(rows: readonly Row[]): string {
  if (rows.length === 0) return 'none any more';
  return rows
    .map((r) => {
      const text = r.query === null || r.query === undefined || String(r.query).trim() === '' ? undefined : String(r.query).trim().replace(/\s+/g, ' ');
      const running = text === undefined ? 'no statement running (idle in its transaction)' : `running "${text.length > 120 ? `${text.slice(0, 120)}...` : text}"`;
      return `user ${String(r.txn_owner)} (session ${String(r.pid)}, transaction started ${String(r.txn_start)} UTC, ${running})`;
    })
    .join('; ');
}

/**
 * Waits until every transaction of another user that was open when Publish
 * began (so possibly with a snapshot older than staging's last write) and
 * holds no lock on a table the swap locks has ended: such a transaction, reading
 * the live table for the first time after the rename, would find a table
 * whose rows its snapshot cannot see (0 rows, or part of them). Newer
 * transactions are not waited for: they began after the load had
 * committed. Gives up with a TransientWarehouseError naming them.
 */
async function waitForOlderSnapshots(warehouse: Warehouse, liveTable: string, swapLocks: readonly Relation[], waitMs: number, name: string): Promise<void> {
  const statement = openTransactions({ snapshotHolders: swapLocks });
  const key = (r: Row) => `${String(r.pid)}|${String(r.txn_start)}`;
  let remaining = await warehouse.query(statement, name);
  const older = new Set(remaining.map(key));
  const deadline = Date.now() + waitMs;
  for (let delay = 50; remaining.length > 0; delay = Math.min(1_000, delay * 2)) {
    if (Date.now() + delay > deadline) {
      throw new TransientWarehouseError(
        `Publish of ${liveTable} waited ${waitMs} ms for the transactions older than the new rows to end ` +
          `(a snapshot reader reading the live table after the swap would see none or part of them), and these are still open: ` +
          `${describeTransactions(remaining)}. Nothing was published; the live table keeps its rows. End or commit them, or raise ${PublishWaitEnv.SNAPSHOT_WAIT_MS}.`,
      );
    }
    await sleep(delay);
    remaining = (await warehouse.query(statement, name)).filter((r) => older.has(key(r)));
  }
}

/** Redshift's and PostgreSQL's words for a statement ended by statement_timeout. */
const STATEMENT_TIMEOUT = /statement timeout|canceled on user's request|cancelled on user's request/i;

/** How often the swap is rebuilt when the live table's grants, defaults, comments or views changed between the read and the swap. */
export const CATALOG_CHANGE_ATTEMPTS = 3;

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
  if (before?.status === BatchStatus.PUBLISHED) {
    logger.info('batch already published; nothing to do', { batchId: batch.batchId });
    return toResult(before, liveTable, true);
  }
  // A retry after an attempt that found the batch superseded but failed before answering (e.g. releasing the lease).
  if (before?.status === BatchStatus.SUPERSEDED) {
    return superseded(event, warehouse, 'an earlier attempt of Publish found newer data live (see batches.error)', liveTable, name, true);
  }

  const previous = previousVersionTableFor(pipeline, batch.batchId);
  const swapLocks = [pipeline.target, { schema: pipeline.target.schema, table: batch.stagingTable }, { schema: MANIFEST_SCHEMA, table: 'publications' }];
  await waitForOlderSnapshots(warehouse, liveTable, swapLocks, waits.snapshotWaitMs, name('snapshots'));
  let carried: LiveTableFacts;
  try {
    for (let attempt = 1; ; attempt += 1) {
      const factsQuery = dependentsFacts(pipeline.target.schema, pipeline.target.table, batch.stagingTable);
      const facts = liveTableFacts((await warehouse.query(factsQuery, name('dependents'))) as unknown as FactRow[]);
      const refusal = dependentViewProblems(liveTable, facts);
      if (refusal !== undefined) throw new DependentViewError(refusal);
      try {
        try {
          await warehouse.batch(swapPublish(pipeline, batch, previous, new Date(), facts, factsQuery, waits.lockWaitMs), name('swap'));
        } catch (error) {
          if (!(error instanceof WarehouseError) || !STATEMENT_TIMEOUT.test(error.message)) throw error;
          // The swap gave up its lock wait and rolled back; readers queued
          // behind it go on. Who held what it waited for, for the alert if
          // the retries (Step Functions: backoff with full jitter) all fail.
          const tables = [...swapLocks, ...facts.views.map((v) => ({ schema: v.schema, table: v.view }))];
          const holders = await warehouse.query(openTransactions({ lockHolders: tables }), name('lock-holders'));
          throw new TransientWarehouseError(
            `the swap of ${liveTable} gave up after waiting ${waits.lockWaitMs} ms for its locks (no reader waited behind it longer) and is retried; ` +
              `holding ${liveTable}, its staging table, its views or the publications: ${describeTransactions(holders)}. ` +
              `Nothing was published; the live table keeps its rows. End those transactions, or raise ${PublishWaitEnv.LOCK_WAIT_MS}.`,
            { cause: error },
          );
        }
        carried = facts;
        break;
      } catch (error) {
        if (!(error instanceof WarehouseError) || !error.message.includes(`${CATALOG_CHANGED}: `) || attempt >= CATALOG_CHANGE_ATTEMPTS) throw error;
        logger.warn('the live table changed between reading its dependents and the swap; reading them again', { attempt, error: error.message });
      }
    }
  } catch (error) {
    if (!(error instanceof WarehouseError)) throw error;
    // An earlier attempt whose response was lost (or whose wait was
    // abandoned) may have committed meanwhile: then the guard, or the
    // staging table already renamed away, fails this one. That publish is
    // this batch's own.
    const [now] = await warehouse.query(batchState(batch.batchId), name('state'));
    if (now?.status === BatchStatus.PUBLISHED) return toResult(now, liveTable, true);
    const refusal = publishGuardRefusal(error.message);
    if (refusal !== undefined && isOlderDataRefusal(refusal)) return superseded(event, warehouse, refusal, liveTable, name);
    if (refusal !== undefined) throw new PublishConflictError(refusal, { cause: error });
    const outOfBand = batch.live === undefined ? undefined : outOfBandRefusal(error.message);
    if (outOfBand !== undefined) throw new OutOfBandChangeError(describeOutOfBandChange(batch, batch.live!, outOfBand), { cause: error });
    throw error;
  }
  // A GRANT, REVOKE, default or comment issued on the live table while the
  // swap waited for its locks reached the old version: carry it over now.
  const oldVersion = liveTableFacts(
    (await warehouse.query(dependentsFacts(pipeline.target.schema, previous, previous), name('old-version'))) as unknown as FactRow[],
  );
  const corrections = carryOverCorrections(carried, oldVersion);
  if (corrections !== undefined) {
    const statements = carryOverStatements(pipeline, corrections);
    logger.warn('the live table changed while the swap waited; carrying the change over to the new live table', { statements });
    await warehouse.batch(statements, name('carry-over'));
  }
  const [after] = await warehouse.query(batchState(batch.batchId), name('state'));
  const result = toResult(after!, liveTable, false);
  logger.info('published', { batchId: batch.batchId, ...result });
  return result;
}

export const handler = stepHandler((event: PublishEvent, context: Context) => publish(event, warehouseFor(context)));
