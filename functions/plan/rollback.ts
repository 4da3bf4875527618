/**
 * Plan for a rollback input: validates it against the manifest and the
 * catalog before writing anything, then takes the pipeline's lease. The
 * state machine then runs Rollback (functions/rollback/index.ts) instead of
 * loading.
 */
import type { BatchRef } from '../../domain/batch.ts';
import { liveTableColumns, resolvePipeline } from '../../domain/plan.ts';
import { assertRollbackable, neverPublished, parseRollbackInput, resolveRollbackFrom } from '../../domain/rollback.ts';
import { installedManifestVersion } from '../../domain/sql/manifest.ts';
import { rollbackBatch } from '../../domain/sql/rollback.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { warehouseTimeIso } from '../../domain/time.ts';
import { logger } from '../commons/powertools.ts';
import type { Warehouse } from '../commons/warehouse.ts';
import { checkPrivileges, ensureManifest, type PlanEvent, type PlanResult, readLiveColumns } from './batch.ts';
import { takeLease } from './lease.ts';

/**
 * Resolves `{"pipeline": ..., "rollback": {...}}` to the retained version to
 * swap back in. Refused before any write: a malformed input, a pipeline
 * that never published, a batch unknown or never published, a version past
 * retention or missing from the catalog. A rollback to the batch live now
 * ends NothingToPublish, as a replay of a published batch does.
 */
export async function planRollback(event: PlanEvent, warehouse: Warehouse, registry: readonly Pipeline[]): Promise<PlanResult> {
  const pipeline = resolvePipeline(event.input, registry);
  const input = parseRollbackInput(event.input);
  assertRollbackable(pipeline);
  const name = (step: string) => `atomic-publish:${pipeline.name}:plan:rollback-${step}:${input.to ?? 'previous'}`;
  const { schema, table } = pipeline.target;

  await checkPrivileges(warehouse, pipeline, name);
  const liveColumns = liveTableColumns(pipeline, await readLiveColumns(warehouse, schema, table, name));
  const [present] = await warehouse.query(installedManifestVersion()[0]!, name('manifest'));
  if (Number(present?.present ?? 0) === 0) throw neverPublished(pipeline);
  await ensureManifest(warehouse, name('manifest'));

  const { history, resolved } = await resolveRollbackFrom((statement, step) => warehouse.query(statement, name(step)), pipeline, input.to);
  const [row] = await warehouse.query(rollbackBatch(pipeline.name, resolved.batchId), name('batch'));
  const batch: BatchRef = {
    pipeline: pipeline.name,
    batchId: resolved.batchId,
    // Today's spec: the steps after Plan check that it did not change during this execution.
    specHash: pipeline.specHash,
    liveTable: `${schema}.${table}`,
    from: row ? warehouseTimeIso(row.interval_start) : '',
    to: row ? warehouseTimeIso(row.interval_end) : '',
    stagingTable: 'alreadyLive' in resolved ? table : resolved.restoreTable,
    columns: liveColumns,
    basePublication: history.at(-1)?.seq ?? 0,
  };
  const base = { busy: false, maxConcurrency: pipeline.chunk.maxConcurrency, chunks: [], chunkCount: 0, batch };
  if ('alreadyLive' in resolved) {
    logger.info('rollback: the batch named is live already; nothing to do', { pipeline: pipeline.name, batchId: resolved.batchId });
    return { ...base, alreadyPublished: true };
  }

  // A rollback does not wait: the version it puts back is the one live when it plans.
  const skipped = await takeLease(warehouse, pipeline.name, event, name, undefined, { wait: false });
  if (skipped) {
    logger.warn('pipeline busy: another execution holds its lease; this rollback wrote nothing', { ...skipped });
    return { ...base, alreadyPublished: false, busy: true, skipped };
  }
  logger.info('rollback planned', { pipeline: pipeline.name, ...resolved });
  return { ...base, alreadyPublished: false, rollback: resolved };
}
