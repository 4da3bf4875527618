/**
 * What an ended execution leaves for the next one to clear: the statements its
 * batch still runs, a batch still RUNNING or CHECKED under its attempt, and its
 * pipeline lease. Cleared by CancelOrphans on ABORTED or TIMED_OUT and by Plan on
 * taking over the lease; every write is conditional on the execution still owning
 * what it changes, so clearing twice, or after a newer run took over, changes
 * nothing (docs/decisions/leases-of-ended-executions.md).
 */
import { BatchStatus } from '../../domain/batch.ts';
import { batchOfExecution, markExecutionStopped } from '../../domain/cancel-orphans/sql/cancel-orphans.ts';
import { installedManifestVersion } from '../../domain/manifest/sql/manifest.ts';
import type { OrphanedStatements } from '../../domain/record-failure/record-failure.ts';
import { releaseExecutionLease } from './lease.ts';
import { cancelOrphans } from './orphans.ts';
import { logger } from './powertools.ts';
import type { Row, Warehouse } from './warehouse.ts';

/** What became of one batch of an ended execution. */
export interface StoppedBatch {
  readonly batchId: string;
  readonly pipeline: string;
  readonly statements: OrphanedStatements;
  /** The batch was RUNNING or CHECKED and is FAILED now. */
  readonly markedFailed: boolean;
}

export interface ClearedExecution {
  /** Its batches (a publish group's execution has one per member); none when it ended before Plan recorded one. */
  readonly batches: readonly StoppedBatch[];
  /** It held a pipeline lease, released now. */
  readonly leaseReleased: boolean;
}

/**
 * Clears what `executionArn`, ended, left: cancels its batches' running
 * statements, marks each batch and attempt FAILED with `error` (if still
 * its own and open), then releases its lease. `pipelines` receives the
 * pipelines of its batches before anything is written (CancelOrphans counts them).
 */
export async function clearEndedExecution(
  warehouse: Warehouse,
  executionArn: string,
  error: string,
  name: string,
  pipelines: (names: readonly string[]) => void = () => {},
): Promise<ClearedExecution> {
  // An execution that ended before the first Plan ever installed the manifest left nothing behind.
  const [manifest] = await warehouse.query(installedManifestVersion()[0]!, name);
  if (Number(manifest?.present ?? 0) === 0) {
    pipelines([]);
    return { batches: [], leaseReleased: false };
  }
  const rows = await warehouse.query(batchOfExecution(executionArn), name);
  pipelines(rows.map((row) => String(row.pipeline)));
  const stop = async (row: Row): Promise<StoppedBatch> => {
    const batchId = String(row.batch_id);
    const pipeline = String(row.pipeline);
    const statements = await cancelOrphans(warehouse, { batchId, pipeline }, `${name}:${batchId}`);
    let markedFailed = false;
    if (row.status === BatchStatus.RUNNING || row.status === BatchStatus.CHECKED) {
      const [attempt, batchRow] = markExecutionStopped(batchId, executionArn, error, new Date());
      await warehouse.execute(attempt!, `${name}:mark-failed`);
      markedFailed = (await warehouse.execute(batchRow!, `${name}:mark-failed`)).resultRows > 0;
    }
    logger.warn('ended execution cleared: its statements cancelled', { executionArn, batchId, ...statements, markedFailed });
    return { batchId, pipeline, statements, markedFailed };
  };
  const batches: StoppedBatch[] = [];
  for (const row of rows) batches.push(await stop(row));
  // Its statements cancelled, its lease goes: the next run need not wait for it to expire.
  const leaseReleased = await releaseExecutionLease(warehouse, executionArn, name);
  return { batches, leaseReleased };
}
