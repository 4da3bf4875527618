/**
 * Plan for a rollback input: validates it against the manifest and the
 * catalog before writing anything, then takes the pipeline's lease. The
 * state machine then runs Rollback (functions/rollback/index.ts) instead of
 * loading.
 */
import type { BatchRef } from '../../domain/batch.ts';
import { ValidationError } from '../../domain/errors.ts';
import { liveTableColumns, resolvePipeline } from '../../domain/plan.ts';
import { parseRollbackInput, type PublicationRecord, resolveIntervalRollback, resolveRollback } from '../../domain/rollback.ts';
import { installedManifestVersion } from '../../domain/sql/manifest.ts';
import { tableColumns } from '../../domain/sql/plan.ts';
import { publicationHistory, rollbackBatch } from '../../domain/sql/rollback.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { parseWarehouseTime } from '../../domain/time.ts';
import { logger } from '../commons/powertools.ts';
import type { Row, Warehouse } from '../commons/warehouse.ts';
import { checkPrivileges, ensureManifest, type PlanEvent, type PlanResult, readLiveColumns } from './index.ts';
import { takeLease } from './lease.ts';

/** A manifest timestamp (`2026-01-01 00:00:00`, UTC) as an ISO instant. */
function isoInstant(value: unknown): string {
  return parseWarehouseTime(String(value)).toISOString();
}

function publicationRecord(row: Row): PublicationRecord {
  return {
    seq: Number(row.seq),
    batchId: String(row.batch_id),
    publishedAt: String(row.published_at),
    oldVersionTable: String(row.old_version_table),
    dropped: Number(row.dropped) === 1,
    restored: Number(row.restored) === 1,
    ...(row.rollback_of === null || row.rollback_of === undefined ? {} : { rollbackOf: Number(row.rollback_of) }),
    ...(row.publish_mode === null || row.publish_mode === undefined ? {} : { mode: String(row.publish_mode) }),
    ...(row.interval_start === null || row.interval_start === undefined
      ? {}
      : { interval: { from: isoInstant(row.interval_start), to: isoInstant(row.interval_end) } }),
  };
}

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
  if (pipeline.publishVia === 'view') {
    throw new ValidationError(
      `pipeline ${pipeline.name} publishes through a view, and the rollback operation swaps tables; roll it back by hand, as its functions' database user: ` +
        `CREATE OR REPLACE VIEW ${pipeline.target.schema}.${pipeline.target.table} AS SELECT <its columns> FROM <the old_version_table of its latest row in atomic_publish.publications>. Nothing was written`,
    );
  }
  const name = (step: string) => `atomic-publish:${pipeline.name}:plan:rollback-${step}:${input.to ?? 'previous'}`;
  const { schema, table } = pipeline.target;

  await checkPrivileges(warehouse, pipeline, name);
  const liveColumns = liveTableColumns(pipeline, await readLiveColumns(warehouse, schema, table, name));
  const [present] = await warehouse.query(installedManifestVersion()[0]!, name('manifest'));
  if (Number(present?.present ?? 0) === 0) throw new ValidationError(`pipeline ${pipeline.name} has never published: there is nothing to roll back`);
  await ensureManifest(warehouse, name('manifest'));

  const history = (await warehouse.query(publicationHistory(pipeline.name), name('history'))).map(publicationRecord);
  const named = input.to === undefined ? undefined : (await warehouse.query(rollbackBatch(pipeline.name, input.to), name('batch')))[0];
  // A publication that replaced some intervals is undone by putting back the rows it replaced; a whole-table one by a swap.
  const latestMode = history.at(-1)?.mode;
  const resolved =
    latestMode === undefined || latestMode === 'swap'
      ? resolveRollback(pipeline, input.to, history, named === undefined ? undefined : String(named.status))
      : resolveIntervalRollback(pipeline, input.to, history);
  const [row] = await warehouse.query(rollbackBatch(pipeline.name, resolved.batchId), name('batch'));
  const batch: BatchRef = {
    pipeline: pipeline.name,
    batchId: resolved.batchId,
    // Today's spec: the steps after Plan check that it did not change during this execution.
    specHash: pipeline.specHash,
    liveTable: `${schema}.${table}`,
    from: row ? isoInstant(row.interval_start) : '',
    to: row ? isoInstant(row.interval_end) : '',
    stagingTable: 'alreadyLive' in resolved ? table : resolved.restoreTable,
    columns: liveColumns,
    basePublication: history.at(-1)?.seq ?? 0,
  };
  const base = { busy: false, maxConcurrency: pipeline.chunk.maxConcurrency, chunks: [], chunkCount: 0, batch };
  if ('alreadyLive' in resolved) {
    logger.info('rollback: the batch named is live already; nothing to do', { pipeline: pipeline.name, batchId: resolved.batchId });
    return { ...base, alreadyPublished: true };
  }
  const restored = await warehouse.query(tableColumns(schema, resolved.restoreTable), name('restore-columns'));
  if (restored.length === 0) {
    throw new ValidationError(
      `the manifest says the rows of batch ${resolved.batchId} are in ${schema}.${resolved.restoreTable} (the old version of publication ${resolved.restoreSeq}), ` +
        `but that table does not exist: it was dropped or renamed outside atomic-publish. Roll back to another retained version, or run the batch's interval as a new run`,
    );
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
