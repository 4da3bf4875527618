import type { BatchRef } from '../../domain/batch.ts';
import { previousVersionTableFor } from '../../domain/plan/plan.ts';
import { withSourceRecheck } from '../../domain/publish/sql/swap.ts';
import { PublishWaitEnv, type PublishWaits } from '../../domain/publish/waits.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { MANIFEST_SCHEMA } from '../../domain/sql/statement.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { retryPublishTransaction } from '../commons/swap.ts';
import type { Warehouse } from '../commons/warehouse.ts';
import { liveWatchStatements } from './live-watch.ts';

/** A publish mode that changes rows of the live table in place (replace-intervals, merge). */
export interface InPlacePublish {
  /** The one transaction, keeping the replaced rows at `retainedAs`. */
  readonly statements: (pipeline: Pipeline, batch: BatchRef, retainedAs: string, now: Date, lockWaitMs: number) => string[];
  /** What it does, for the message of a lock wait given up: `the merge of <from> to <to> into <live>`. */
  readonly what: (batch: BatchRef, live: string) => string;
  /** The source re-check, placed after the guard (domain/publish/sql/swap.ts withSourceRecheck). */
  readonly recheck?: readonly string[];
}

/**
 * Staging's rows into the live table in one transaction that keeps the
 * rows it replaces as the publication's old version for rollback.
 * Nothing is renamed, so a snapshot reader keeps reading the table it
 * knows: no wait for older snapshots. A transaction that gave up its lock
 * wait is retried by Step Functions; a failure goes back to Publish's
 * recovery (an earlier attempt may have committed; the guard may refuse).
 */
export async function publishInPlace(
  event: { readonly batch: BatchRef },
  warehouse: Warehouse,
  waits: PublishWaits,
  name: (step: string) => string,
  how: InPlacePublish,
): Promise<void> {
  const { batch } = event;
  const pipeline = frozenPipeline(batch);
  const { schema, table } = pipeline.target;
  const retainedAs = previousVersionTableFor(pipeline, batch.batchId);
  const watched = pipeline.outOfBand.watch ? await liveWatchStatements(warehouse, pipeline, batch, name) : [];
  await retryPublishTransaction(
    warehouse,
    name,
    async () => ({
      statements: [
        ...withSourceRecheck(how.statements(pipeline, batch, retainedAs, new Date(), waits.lockWaitMs), pipeline, batch, how.recheck ?? []),
        ...watched,
      ],
      locks: [
        { schema, table: batch.stagingTable },
        { schema: MANIFEST_SCHEMA, table: 'publications' },
        { schema, table },
      ],
      carried: undefined,
    }),
    (holders) =>
      `${how.what(batch, `${schema}.${table}`)} gave up after waiting ${waits.lockWaitMs} ms for its locks and is retried; ` +
      `holding its staging table, the publications or writing ${schema}.${table}: ${holders}. ` +
      `Nothing was published; the live table keeps its rows. End those transactions, or raise ${PublishWaitEnv.LOCK_WAIT_MS}.`,
  );
}
