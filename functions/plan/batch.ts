// What every kind of plan shares (a pipeline run, a group, a migration, a
// rollback): the checks of the warehouse side before anything is written,
// and the start or resumption of a batch. index.ts dispatches to the
// kinds; they import this module, never index.ts.

import { BatchPurpose, type BatchRef, BatchStatus } from '../../domain/batch.ts';
import { PERMISSION_DENIED, ValidationError, WarehouseError } from '../../domain/errors.ts';
import type { LiveBaseline } from '../../domain/live-watch/baseline.ts';
import { liveColumnsQuery, liveFingerprintQuery } from '../../domain/live-watch/sql/out-of-band.ts';
import { type ChunkStateRow, chunksToLoad } from '../../domain/load-chunk/chunk-loads.ts';
import { installedManifestVersion, MANIFEST_VERSION, manifestInstall } from '../../domain/manifest/sql/manifest.ts';
import type { BatchInterval, Chunk } from '../../domain/plan/chunk.ts';
import { checkLoadFits, estimateLoad } from '../../domain/plan/duration.ts';
import { identityOf, identityText, type LiveColumn } from '../../domain/plan/live-column.ts';
import {
  checkSourceColumns,
  checkSourceTypes,
  generatedColumns,
  liveTableColumns,
  loadedColumns,
  planningTime,
  stagingTableFor,
} from '../../domain/plan/plan.ts';
import {
  attachedPoliciesProbe,
  databasePrivileges,
  doneChunks,
  findBatch,
  latestPublication,
  loadedChunkCount,
  previousLoad,
  relationPrivileges,
  rowLevelSecurityOn,
  schemaPrivileges,
  sourceShape,
  startBatch,
  tableColumns,
} from '../../domain/plan/sql/plan.ts';
import { chunksPerWindow, type WindowItem, windowItem } from '../../domain/plan/windows.ts';
import type { RollbackTarget } from '../../domain/rollback/rollback.ts';
import { isGranted, missingPrivilegeError, missingPrivileges, type PrivilegeFacts, relationKey, requiredPrivileges } from '../../domain/setup/privileges.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { parseWarehouseTime } from '../../domain/time.ts';
import { codeVersion, logger } from '../commons/powertools.ts';
import type { Warehouse } from '../commons/warehouse.ts';
import { batchChunks, sortKeyCheck, withLoadsStillRunning } from './chunks.ts';
import { checkDeclaredChecks } from './declared-checks.ts';
import { type PipelineBusy, takeLease, timeoutSecondsOf } from './lease.ts';
import { checkSourceNullTimes } from './null-times.ts';

export interface PlanEvent {
  readonly input: unknown;
  /** `$$.Execution.StartTime`: "now" for a scheduled run, fixed across retries. */
  readonly startedAt?: string;
  readonly executionId?: string;
  /**
   * The state machine's timeout: the pipeline's lease lasts from the
   * execution's start until Step Functions itself would end it.
   */
  readonly leaseSeconds?: number;
}

export type { PipelineBusy } from './lease.ts';

export interface PlanResult {
  readonly alreadyPublished: boolean;
  /** True when another execution holds the pipeline's lease (then `skipped` says which): nothing was written. */
  readonly busy: boolean;
  readonly skipped?: PipelineBusy;
  readonly maxConcurrency: number;
  /** Chunks still to load (a resumed batch skips the ones already done); none when the batch runs in `windows`. */
  readonly chunks: readonly Chunk[];
  /** A batch of more chunks than one window holds: its windows, each a child execution of LoadWindows (domain/plan/windows.ts). */
  readonly windows?: readonly WindowItem[];
  readonly chunkCount: number;
  readonly batch: BatchRef;
  /** What the operator should know about this plan (e.g. a source not sorted on the time column); also logged. */
  readonly warnings?: readonly string[];
  /** Present for a rollback (input `rollback`): the state machine runs Rollback instead of loading (functions/plan/rollback.ts). */
  readonly rollback?: RollbackTarget;
}

/** Installs the manifest's DDL when the warehouse has none or an older version; otherwise only reads. */
export async function ensureManifest(warehouse: Warehouse, name: string): Promise<void> {
  const [presence, version] = installedManifestVersion();
  const [present] = await warehouse.query(presence!, `${name}:present`);
  const installed = Number(present?.present ?? 0) > 0 ? Number((await warehouse.query(version!, `${name}:version`))[0]?.version ?? 0) : 0;
  if (installed < MANIFEST_VERSION) for (const ddl of manifestInstall(new Date())) await warehouse.batch(ddl, `${name}:install`);
}

/**
 * Fails with MissingPrivilegeError, naming every privilege missing, when the
 * database user lacks one the setup SQL grants. Schemas first: naming a
 * table in a schema the user may not use is an error, not an answer.
 */
export async function checkPrivileges(warehouse: Warehouse, pipeline: Pipeline, name: (step: string) => string): Promise<void> {
  const required = requiredPrivileges(pipeline);
  const [database] = await warehouse.query(databasePrivileges(), name('privileges'));
  if (isGranted(database?.is_superuser)) return;
  const schemas = [...new Set(required.flatMap((r) => (r.kind === 'schema' ? [r.schema] : [])))];
  const schemaRows = await warehouse.query(schemaPrivileges(schemas), name('schema-privileges'));
  let facts: PrivilegeFacts = {
    user: String(database?.db_user ?? ''),
    databaseCreate: isGranted(database?.can_create),
    schemas: new Map(schemaRows.map((r) => [String(r.schema_name), { usage: isGranted(r.can_use), create: isGranted(r.can_create) }])),
  };
  let missing = missingPrivileges(required, facts);
  if (missing.length === 0) {
    const relations = required.flatMap((r) => (r.kind === 'owner' || r.kind === 'table' ? [{ schema: r.schema, table: r.table }] : []));
    const relationRows = await warehouse.query(relationPrivileges(relations), name('table-privileges'));
    facts = {
      ...facts,
      relations: new Map(
        relationRows.map((r) => [
          relationKey({ schema: String(r.schema_name), table: String(r.table_name) }),
          { owner: String(r.owner), select: isGranted(r.can_select) },
        ]),
      ),
    };
    missing = missingPrivileges(required, facts);
  }
  if (missing.length > 0) throw missingPrivilegeError(pipeline, facts, missing);
}

/**
 * Refuses a live table whose row-level security is on when the user is
 * subject to it: on Redshift RLS applies to the table's owner too (deny-all
 * without an attached policy), to SELECT and DELETE, so every read and
 * replace of live rows would see part of them or none, and a swap could not
 * read the policies it must carry over. Superusers and sys:secadmin ignore
 * RLS (docs/decisions/security-policies-through-a-swap.md).
 */
export async function checkRowLevelSecurity(warehouse: Warehouse, pipeline: Pipeline, name: (step: string) => string): Promise<void> {
  const { schema, table } = pipeline.target;
  if ((await warehouse.query(rowLevelSecurityOn(schema, table), name('rls-on'))).length === 0) return;
  const [database] = await warehouse.query(databasePrivileges(), name('privileges'));
  if (isGranted(database?.is_superuser)) return;
  try {
    await warehouse.query(attachedPoliciesProbe(schema, table), name('rls-ignored'));
  } catch (error) {
    if (!(error instanceof WarehouseError) || !PERMISSION_DENIED.test(error.message)) throw error;
    throw new ValidationError(
      `pipeline ${pipeline.name}: ${schema}.${table} has ROW LEVEL SECURITY ON, and its database user ${String(database?.db_user ?? '')} is neither a superuser nor holds the role sys:secadmin: ` +
        "Redshift applies the table's RLS policies to it too (none attached: no rows), so it would read, replace and delete only the rows they let it see, " +
        'and could not carry the policies through a swap. Grant the role (setup-sql --security-policies prints the statement). Nothing was written',
    );
  }
}

/** The live table's columns, their types and identities, as the catalog lists them (none: it does not exist). */
export async function readLiveColumns(warehouse: Warehouse, schema: string, table: string, name: (step: string) => string): Promise<LiveColumn[]> {
  return (await warehouse.query(tableColumns(schema, table), name('live-columns'))).map((r) => {
    const identity = identityOf(r.column_default);
    return { name: String(r.column_name), dataType: String(r.data_type ?? ''), ...(identity === undefined ? {} : { identity }) };
  });
}

/**
 * Refuses, before anything is written, a batch whose loads would outlast
 * the execution's time left (domain/plan/duration.ts); a resumed batch
 * counts only the chunks still to load.
 */
export async function checkDuration(
  warehouse: Warehouse,
  pipeline: Pipeline,
  event: PlanEvent,
  chunks: number,
  resumedBatchId: string | undefined,
  name: (step: string) => string,
): Promise<void> {
  const now = new Date();
  const timeout = timeoutSecondsOf(event);
  const secondsLeft = (planningTime(event.startedAt, now).getTime() + timeout * 1000 - now.getTime()) / 1000;
  const loaded = resumedBatchId === undefined ? 0 : Number((await warehouse.query(loadedChunkCount(resumedBatchId), name('loaded-chunks')))[0]?.loaded ?? 0);
  const [row] = await warehouse.query(previousLoad(pipeline.name), name('previous-load'));
  const previous =
    row === undefined
      ? undefined
      : {
          batchId: String(row.batch_id),
          chunks: Number(row.chunk_count),
          seconds: (parseWarehouseTime(String(row.finished_at)).getTime() - parseWarehouseTime(String(row.started_at)).getTime()) / 1000,
        };
  const left = Math.max(0, chunks - loaded);
  const estimate = estimateLoad(left, pipeline, previous);
  logger.info('load duration estimated', {
    pipeline: pipeline.name,
    chunks: left,
    estimatedSeconds: Math.round(estimate.seconds),
    secondsLeft: Math.round(secondsLeft),
  });
  checkLoadFits(pipeline, left, estimate, secondsLeft, timeout);
}

/**
 * The live table as this Plan sees it: its columns and a fingerprint of
 * its rows (one scan), which the swap compares under its lock. With
 * expected writers, rows at or after the batch end are theirs and left out.
 */
export async function liveBaseline(warehouse: Warehouse, pipeline: Pipeline, to: string, name: (step: string) => string): Promise<LiveBaseline> {
  const { schema, table } = pipeline.target;
  const columns = (await warehouse.query(liveColumnsQuery(schema, table), name('live-baseline-columns'))).map((r) => String(r.col));
  const carryFrom = pipeline.outOfBand.expectedWriters ? to : undefined;
  const [row] = await warehouse.query(liveFingerprintQuery(pipeline, columns, carryFrom), name('live-baseline'));
  const [rows, checksum] = String(row?.fingerprint ?? '0:0').split(':');
  return { columns, rows: Number(rows), checksum: checksum ?? '0', rowHash: 'fnv', ...(carryFrom === undefined ? {} : { carryFrom }) };
}

/** The live columns a batch loads, and the identity columns it leaves to Redshift to number (BatchRef.columns, BatchRef.generated). */
export interface LoadedColumns {
  readonly columns: string[];
  readonly generated: string[];
  /** Every identity column of the live table, as its DDL writes it (`row_id IDENTITY(1, 1)`). */
  readonly identities: string[];
}

/**
 * The warehouse side of a run, before anything is written: the privileges,
 * the live table, the source query, its columns and their types, and the
 * identity columns (domain/plan/plan.ts loadedColumns). Returns the live
 * table's columns the loads insert, in order, and those left out.
 */
export async function checkWarehouseSide(
  warehouse: Warehouse,
  pipeline: Pipeline,
  interval: BatchInterval,
  name: (step: string) => string,
): Promise<LoadedColumns> {
  await checkPrivileges(warehouse, pipeline, name);
  await checkRowLevelSecurity(warehouse, pipeline, name);
  const live = await readLiveColumns(warehouse, pipeline.target.schema, pipeline.target.table, name);
  liveTableColumns(pipeline, live);
  await checkDeclaredChecks(warehouse, pipeline, live, name);
  const sourceColumns = await warehouse.columns(sourceShape(pipeline, interval), name('source-shape'));
  const columns = loadedColumns(
    pipeline,
    live,
    sourceColumns.map((c) => c.name),
  );
  checkSourceColumns(
    pipeline,
    columns,
    sourceColumns.map((c) => c.name),
  );
  checkSourceTypes(pipeline, live, sourceColumns);
  await checkSourceNullTimes(warehouse, pipeline, name);
  const identities = live.flatMap((c) => (c.identity === undefined ? [] : [`${c.name} ${identityText(c.identity)}`]));
  return { columns, generated: generatedColumns(live, columns), identities };
}

/** How Plan starts a batch whose checks passed: its id, statement names, the columns it loads, and what staging is created from. */
export interface BatchStart {
  readonly batchId: string;
  readonly name: (step: string) => string;
  /** The columns each chunk inserts into staging. */
  readonly columns: readonly string[];
  /** See BatchRef.generated. */
  readonly generated?: readonly string[];
  /** See BatchRecord.stagingLike. */
  readonly stagingLike?: string;
  /** See BatchRecord.stagingDdl. */
  readonly stagingDdl?: string;
  /** See BatchRef.restatement. */
  readonly restatement?: number;
  /** See BatchRef.check. */
  readonly check?: number;
}

/**
 * After the checks: installs the manifest if needed, finds an earlier run
 * of the batch (a published one: nothing to do), checks the loads fit the
 * execution's time, takes the lease, records the live baseline and starts
 * or resumes the batch; returns the chunks still to load.
 */
export async function startOrResume(
  event: PlanEvent,
  warehouse: Warehouse,
  pipeline: Pipeline,
  interval: BatchInterval,
  start: BatchStart,
): Promise<PlanResult> {
  const { batchId, name, stagingLike, stagingDdl } = start;
  const stagingTable = stagingTableFor(pipeline, batchId);
  const { schema, table } = pipeline.target;
  await ensureManifest(warehouse, name('manifest'));
  const [existing] = await warehouse.query(findBatch(batchId), name('find-batch'));
  const { chunks, windows } = await batchChunks(warehouse, pipeline, interval, batchId, existing !== undefined, name, chunksPerWindow(process.env));
  const basePublication = Number((await warehouse.query(latestPublication(pipeline.name), name('base')))[0]?.seq ?? 0);
  const batch: BatchRef = {
    pipeline: pipeline.name,
    batchId,
    specHash: pipeline.specHash,
    liveTable: `${schema}.${table}`,
    from: interval.from.toISOString(),
    to: interval.to.toISOString(),
    stagingTable,
    columns: start.columns,
    ...(start.generated === undefined || start.generated.length === 0 ? {} : { generated: start.generated }),
    basePublication,
    ...(start.restatement === undefined ? {} : { restatement: start.restatement }),
    ...(start.check === undefined ? {} : { check: start.check }),
  };
  if (existing?.status === BatchStatus.PUBLISHED) {
    logger.info('batch already published; nothing to do', { batchId, pipeline: pipeline.name });
    return { alreadyPublished: true, busy: false, maxConcurrency: pipeline.chunk.maxConcurrency, chunks: [], chunkCount: chunks.length, batch };
  }

  await checkDuration(warehouse, pipeline, event, chunks.length, existing === undefined ? undefined : batchId, name);
  const skipped = await takeLease(warehouse, pipeline.name, event, name, batchId);
  if (skipped) {
    logger.warn('pipeline busy: another execution holds its lease; this one wrote nothing', { ...skipped, batchId });
    return { alreadyPublished: false, busy: true, skipped, maxConcurrency: pipeline.chunk.maxConcurrency, chunks: [], chunkCount: chunks.length, batch };
  }

  const sortKeyWarning = await sortKeyCheck(warehouse, pipeline, name);
  // A swap replaces the whole live table: it must find it as Plan saw it. A replace of some intervals changes only those.
  // A check publishes nothing: no baseline to compare.
  const baseline = pipeline.publishMode === 'swap' && start.check === undefined ? await liveBaseline(warehouse, pipeline, batch.to, name) : undefined;
  await warehouse.batch(
    startBatch({
      batchId,
      pipeline,
      interval,
      codeVersion: codeVersion(),
      executionId: event.executionId ?? '',
      basePublication,
      stagingTable,
      ...(stagingLike !== undefined ? { stagingLike } : {}),
      ...(stagingDdl !== undefined ? { stagingDdl } : {}),
      chunks,
      windows,
      ...(start.restatement === undefined ? {} : { restatement: start.restatement }),
      ...(start.check === undefined ? {} : { purpose: BatchPurpose.check }),
      now: new Date(),
    }),
    name('start-batch'),
  );
  const attempt = existing ? Number(existing.attempt) + 1 : 1;
  const planned = {
    alreadyPublished: false,
    busy: false,
    maxConcurrency: pipeline.chunk.maxConcurrency,
    chunkCount: chunks.length,
    batch: baseline === undefined ? batch : { ...batch, live: baseline },
    ...(sortKeyWarning === undefined ? {} : { warnings: [sortKeyWarning] }),
  };
  if (windows.length > 0) {
    // Each window's first step (PlanWindow) records its chunks and finds those already done.
    logger.info('batch planned in windows', {
      batchId,
      pipeline: pipeline.name,
      from: batch.from,
      to: batch.to,
      chunks: chunks.length,
      windows: windows.length,
      attempt,
    });
    return { ...planned, chunks: [], windows: windows.map(windowItem) };
  }
  const { done, remaining } = chunksToLoad(chunks, (await warehouse.query(doneChunks(batchId), name('done-chunks'))) as unknown as ChunkStateRow[]);
  const toLoad = existing ? await withLoadsStillRunning(warehouse, pipeline, batch, remaining) : remaining;
  logger.info('batch planned', {
    batchId,
    pipeline: pipeline.name,
    from: batch.from,
    to: batch.to,
    chunks: chunks.length,
    resumedChunksDone: done.size,
    loadsStillRunning: toLoad.filter((c) => c.running !== undefined).length,
    attempt,
  });
  return { ...planned, chunks: toLoad };
}
