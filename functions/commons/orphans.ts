import { markChunkCancelled, submittedStatements } from '../../domain/cancel-orphans/sql/cancel-orphans.ts';
import { chunkOfLoadStatement, loadStatementPrefix } from '../../domain/load-chunk/sql/load-chunk.ts';
import type { OrphanedStatements } from '../../domain/record-failure/record-failure.ts';
import { logger } from './powertools.ts';
import { retryTransient, type Warehouse } from './warehouse.ts';

/** How long a cancel waits for one statement to stop running. */
export const CANCEL_WAIT_MS = 30_000;

/**
 * Cancels every chunk load of the batch that still runs, found by name
 * (ListStatements, domain/load-chunk/sql/load-chunk.ts), all at once, each waited for
 * (bounded) until it no longer runs; a pre-version-6 LOADING chunk's INSERT too,
 * its chunk marked CANCELLED. A statement that could not be cancelled is
 * reported, never thrown: only finding the statements can fail this.
 * Why it is safe: docs/decisions/failure-handling.md ("No statement outlives its execution")
 */
export async function cancelOrphans(
  warehouse: Warehouse,
  batch: { readonly batchId: string; readonly pipeline: string },
  name: string,
  waitMs = CANCEL_WAIT_MS,
): Promise<OrphanedStatements> {
  const { batchId } = batch;
  const prefix = loadStatementPrefix(batch.pipeline, batchId);
  const loads = (await warehouse.runningStatements(prefix))
    .map((s) => ({ chunk: chunkOfLoadStatement(prefix, s.name), id: s.id, recorded: false }))
    .filter((s): s is { chunk: number; id: string; recorded: boolean } => s.chunk !== undefined);
  const recorded = (await warehouse.query(submittedStatements(batchId), `${name}:submitted`)).map((row) => ({
    chunk: Number(row.chunk_index),
    id: String(row.statement_id),
    recorded: true,
  }));
  const rows = [...loads, ...recorded.filter((r) => !loads.some((l) => l.id === r.id))];
  const outcomes = await Promise.all(
    rows.map(async ({ chunk, id, recorded: inManifest }) => {
      try {
        const status = await warehouse.cancel(id, `${name}:insert:${chunk}`, waitMs);
        if (status === 'ABORTED' && inManifest) {
          await retryTransient(() => warehouse.execute(markChunkCancelled(batchId, chunk, id, new Date()), `${name}:mark-cancelled:${chunk}`));
        }
        return { chunk, id, status };
      } catch (error) {
        logger.error('could not cancel a statement of the batch', { batchId, chunk, statementId: id, error: error as Error });
        return { chunk, id, error: (error as Error).message };
      }
    }),
  );
  outcomes.sort((a, b) => a.chunk - b.chunk);
  const report: OrphanedStatements = {
    cancelled: outcomes.filter((o) => o.status === 'ABORTED').map((o) => o.chunk),
    stillRunning: outcomes
      .filter((o) => o.error !== undefined || (o.status !== undefined && !['ABORTED', 'FINISHED', 'FAILED'].includes(o.status)))
      .map((o) => o.chunk),
  };
  if (rows.length > 0) logger.info('cancelled the statements the batch left running', { batchId, ...report });
  return report;
}
