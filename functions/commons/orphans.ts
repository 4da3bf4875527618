import { markChunkCancelled, submittedStatements } from '../../domain/sql/cancel-orphans.ts';
import type { OrphanedStatements } from '../../domain/record-failure.ts';
import { logger } from './powertools.ts';
import { retryTransient, type Warehouse } from './warehouse.ts';

/** How long a cancel waits for one statement to stop running. */
export const CANCEL_WAIT_MS = 30_000;

/**
 * Cancels every statement of the batch that the manifest records as
 * submitted and not known to have ended (the chunk INSERTs of LOADING
 * chunks), all at once, each waited for until it no longer runs (bounded).
 * A chunk whose INSERT ended ABORTED is marked CANCELLED, so a re-run clears
 * its interval before loading it; one still running stays LOADING with its
 * INSERT's id, so a re-run waits for that INSERT instead of loading beside
 * it. A statement that could not be cancelled is reported, never thrown:
 * only reading the manifest can fail this.
 */
export async function cancelOrphans(warehouse: Warehouse, batchId: string, name: string, waitMs = CANCEL_WAIT_MS): Promise<OrphanedStatements> {
  const rows = await warehouse.query(submittedStatements(batchId), `${name}:submitted`);
  const outcomes = await Promise.all(
    rows.map(async (row) => {
      const chunk = Number(row.chunk_index);
      const id = String(row.statement_id);
      try {
        const status = await warehouse.cancel(id, `${name}:insert:${chunk}`, waitMs);
        if (status === 'ABORTED') {
          await retryTransient(() => warehouse.execute(markChunkCancelled(batchId, chunk, id, new Date()), `${name}:mark-cancelled:${chunk}`));
        }
        return { chunk, id, status };
      } catch (error) {
        logger.error('could not cancel a statement of the batch', { batchId, chunk, statementId: id, error: error as Error });
        return { chunk, id, error: (error as Error).message };
      }
    }),
  );
  const report: OrphanedStatements = {
    cancelled: outcomes.filter((o) => o.status === 'ABORTED').map((o) => o.chunk),
    stillRunning: outcomes.filter((o) => o.error !== undefined || (o.status !== undefined && !['ABORTED', 'FINISHED', 'FAILED'].includes(o.status))).map((o) => o.chunk),
  };
  if (rows.length > 0) logger.info('cancelled the statements the batch left running', { batchId, ...report });
  return report;
}
