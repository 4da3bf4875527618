import type { Context } from 'aws-lambda';
import { type BatchRef, type CheckResult, ChunkStatus } from '../../domain/batch.ts';
import { CheckFailedError } from '../../domain/errors.ts';
import { extractColumn } from '../../domain/extract-column.ts';
import { nullRateColumns } from '../../domain/gate/drift.ts';
import { quarantines } from '../../domain/gate/quarantine.ts';
import { type ChunkCount, describeFailure, duplicateKeyText, reconcile as evaluate, keyText, type NullTimeRows } from '../../domain/gate/reconcile.ts';
import { nullCountAggregates } from '../../domain/gate/sql/drift.ts';
import {
  CHECKSUM_AGGREGATE,
  type ChunkAggregate,
  chunkCounts,
  duplicateKeySamples,
  gateAggregates,
  measureAggregate,
  recordChecks,
} from '../../domain/gate/sql/reconcile.ts';
import { liveColumnsQuery } from '../../domain/live-watch/sql/out-of-band.ts';
import { nullTimeCount, quarantineRows as nullTimeQuarantineRows } from '../../domain/plan/sql/null-times.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { stepHandler } from '../commons/handler.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { logger } from '../commons/powertools.ts';
import { type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';
import { declaredCheckResults } from './declared-checks.ts';
import { driftResults } from './drift.ts';
import { located } from './locate.ts';
import { ensureQuarantine, judgeQuarantine, quarantineRows } from './quarantine.ts';

export interface ReconcileEvent {
  readonly batch: BatchRef;
}

export interface ReconcileResult {
  /** False only for a check (BatchRef.check) the gate failed: a publishing batch's failure throws CheckFailedError. */
  readonly passed: boolean;
  readonly rowsRead: number;
  readonly rowsWritten: number;
  /** A check's: every result with what was expected; another batch's: the gate's, without. */
  readonly checks: readonly (Pick<CheckResult, 'check' | 'passed' | 'observed'> & { readonly expected?: string })[];
  /** Declared checks of severity warn that failed: recorded, and the batch publishes. */
  readonly warnings: readonly Pick<CheckResult, 'check' | 'observed' | 'details'>[];
  /** A failed check's: the text a publishing batch's CheckFailedError would carry (the alert's). */
  readonly failure?: string;
}

/**
 * Runs the checks on staging against the source; a failure blocks
 * publishing and is recorded. For a check (BatchRef.check) a failure is
 * the answer asked for, not an incident: recorded the same, and returned
 * with `passed: false` instead of thrown, so nothing pages.
 */
export async function reconcile(event: ReconcileEvent, warehouse: Warehouse = warehouseFromEnv()): Promise<ReconcileResult> {
  const { batch } = event;
  const pipeline = frozenPipeline(batch);
  const name = (step: string) => `atomic-publish:${pipeline.name}:reconcile:${step}:${batch.batchId}`;

  // Rows that break a row-level rule leave staging for the quarantine first (./quarantine.ts).
  if (quarantines(pipeline)) await quarantineRows(warehouse, pipeline, batch, name);
  // One grouped pass over the source and one over staging (domain/gate/sql/reconcile.ts chunkCounts),
  // with the content checksum and the measures' sums when the spec asks for them.
  // With checks.drift.nullRate, each compared column's NULLs are more entries of the same pass.
  const nullColumns = nullRateColumns(pipeline, batch.columns);
  const aggregates = [...(await contentAggregates(warehouse, pipeline, batch, name)), ...nullCountAggregates(nullColumns)];
  const rows = await warehouse.query(chunkCounts(pipeline, batch, aggregates), name('chunk-counts'));
  const computed = new Set(aggregates.map((a) => a.name));
  const [whole] = rows;
  const problems = {
    outsideInterval: Number(whole?.outside_interval ?? 0),
    duplicateKeys: Number(whole?.duplicate_keys ?? 0),
    ...(whole?.planned_chunks === undefined || whole.planned_chunks === null ? {} : { plannedChunks: Number(whole.planned_chunks) }),
  };
  // Only when there are some: a few of them for the alert.
  const duplicates = problems.duplicateKeys > 0 ? await warehouse.query(duplicateKeySamples(pipeline, batch), name('duplicate-keys')) : [];
  const duplicateKeySampleTexts = duplicates.map((r) =>
    duplicateKeyText(
      pipeline.businessKey,
      pipeline.businessKey.map((c) => r[c]),
      Number(r.ap_rows),
    ),
  );
  const counts: ChunkCount[] = rows.map((r) => ({
    index: Number(r.chunk_index),
    start: String(r.interval_start),
    status: String(r.status),
    recordedRows: r.rows_written === null ? null : Number(r.rows_written),
    sourceRows: Number(r.source_rows),
    stagingRows: Number(r.staging_rows),
    ...(computed.has(CHECKSUM_AGGREGATE)
      ? { sourceChecksum: String(r[`source_${CHECKSUM_AGGREGATE}`]), stagingChecksum: String(r[`staging_${CHECKSUM_AGGREGATE}`]) }
      : {}),
    ...(pipeline.checks.measures.length > 0
      ? {
          sums: pipeline.checks.measures.map((column, i) => ({
            column,
            source: String(r[`source_${measureAggregate(i)}`]),
            staging: String(r[`staging_${measureAggregate(i)}`]),
          })),
        }
      : {}),
  }));
  const nullTimes = await nullTimeRows(warehouse, pipeline, batch, name);
  const declared = await declaredCheckResults(warehouse, pipeline, batch, name);
  const sourceRows = counts.reduce((sum, c) => sum + c.sourceRows, 0);
  const quarantine = quarantines(pipeline) ? await judgeQuarantine(warehouse, pipeline, batch, sourceRows, name) : undefined;
  const drift = await driftResults(warehouse, pipeline, batch, rows, nullColumns, name);
  const result = evaluate(
    counts,
    { ...problems, duplicateKeySamples: duplicateKeySampleTexts },
    pipeline.checks.allowEmpty,
    pipeline.businessKey,
    nullTimes,
    { contentChecksum: computed.has(CHECKSUM_AGGREGATE), measures: pipeline.checks.measures, tolerances: pipeline.checks.measureTolerances ?? {} },
    quarantine === undefined ? declared : [...declared, quarantine.check],
    drift,
  );
  // Only when the gate failed (a passing run pays nothing): where the difference lies, recorded beside the gate's checks.
  const location = result.passed ? undefined : await located({ warehouse, pipeline, batch, name, result, aggregates });
  const checks = [...result.checks, ...(location?.checks ?? [])];
  // The gate counts the quarantined rows with staging's; they are rejected, not written.
  const rowsRejected = quarantine?.rows ?? (nullTimes.quarantinedIn === undefined ? 0 : nullTimes.rows);
  const rowsWritten = result.rowsWritten - (quarantine?.fromStaging ?? 0);

  await warehouse.batch(
    recordChecks(
      batch.batchId,
      checks,
      { rowsRead: result.rowsRead, rowsWritten, rowsRejected },
      new Date(),
      // Chunks whose staging rows no longer match (counts or content): the re-run reloads them.
      [...new Set([...result.mismatches, ...(result.contentMismatches ?? [])].filter((c) => c.status === ChunkStatus.DONE).map((c) => c.index))].sort(
        (a, b) => a - b,
      ),
    ),
    name('record'),
  );
  logger.info('reconciled', { batchId: batch.batchId, passed: result.passed, rowsRead: result.rowsRead, rowsWritten, rowsRejected });
  const warnings = (result.warnings ?? []).map(({ check, observed, details }) => ({ check, observed, details }));
  if (warnings.length > 0) logger.warn('checks warned', { batchId: batch.batchId, warnings });

  const failure = result.passed ? undefined : [describeFailure(batch.batchId, result), ...(location === undefined ? [] : [location.text])].join('\n');
  if (batch.check !== undefined) {
    return {
      passed: result.passed,
      rowsRead: result.rowsRead,
      rowsWritten,
      checks: checks.map(({ check, passed, observed, expected }) => ({ check, passed, observed, expected })),
      warnings,
      ...(failure === undefined ? {} : { failure }),
    };
  }
  if (failure !== undefined) throw new CheckFailedError(failure);
  return {
    passed: true,
    rowsRead: result.rowsRead,
    rowsWritten,
    checks: result.checks.map(({ check, passed, observed }) => ({ check, passed, observed })),
    warnings,
  };
}

/**
 * The row count and, as the spec's checks ask, the content checksum and
 * the measures' sums, over the columns the loads insert, typed as staging's
 * catalog lists them (one catalog read; none when the spec asks for
 * neither).
 */
async function contentAggregates(warehouse: Warehouse, pipeline: Pipeline, batch: BatchRef, name: (step: string) => string): Promise<ChunkAggregate[]> {
  if (!pipeline.checks.contentChecksum && pipeline.checks.measures.length === 0) return gateAggregates(pipeline, []);
  const listed = (await warehouse.query(liveColumnsQuery(pipeline.target.schema, batch.stagingTable), name('staging-columns'))).map((r) => String(r.col));
  const loaded = batch.columns.length === 0 ? listed : listed.filter((c) => batch.columns.includes(c.split(' ')[0]!));
  return gateAggregates(pipeline, loaded);
}

/**
 * The source rows of the batch's interval with no time (no chunk loaded
 * them): counted with a few business keys; with `nullTimes: 'quarantine'`,
 * copied to the quarantine table (created when missing) in one
 * transaction that replaces what an earlier attempt put there.
 */
async function nullTimeRows(warehouse: Warehouse, pipeline: Pipeline, batch: BatchRef, name: (step: string) => string): Promise<NullTimeRows> {
  const rows = await warehouse.query(nullTimeCount(pipeline, batch), name('null-times'));
  const count = Number(rows[0]?.null_rows ?? 0);
  const sampleKeys = rows.map((r) =>
    keyText(
      pipeline.businessKey,
      pipeline.businessKey.map((k) => r[k]),
    ),
  );
  const found = { timeColumn: extractColumn(pipeline), rows: count, sampleKeys, policy: pipeline.nullTimes };
  if (pipeline.nullTimes !== 'quarantine' || count === 0) return found;
  const table = await ensureQuarantine(warehouse, pipeline, batch, name);
  const { sqls, parameters } = nullTimeQuarantineRows(pipeline, batch, new Date());
  await warehouse.batch(sqls, name('quarantine'), parameters);
  logger.warn('source rows with no time quarantined', { batchId: batch.batchId, rows: count, table });
  return { ...found, quarantinedIn: table };
}

export const handler = stepHandler((event: ReconcileEvent, context: Context) => reconcile(event, warehouseFor(context)));
