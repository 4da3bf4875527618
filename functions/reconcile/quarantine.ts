import type { BatchRef, CheckResult } from '../../domain/batch.ts';
import { type Quarantined, quarantineCheck, quarantinedRows, REASON } from '../../domain/gate/quarantine.ts';
import { keyText } from '../../domain/gate/reconcile.ts';
import { moveToQuarantine, quarantineSummary } from '../../domain/gate/sql/quarantine.ts';
import { liveColumnsQuery } from '../../domain/live-watch/sql/out-of-band.ts';
import { addQuarantineColumns, createQuarantine, quarantineTableFor } from '../../domain/plan/sql/null-times.ts';
import { tableColumns } from '../../domain/plan/sql/plan.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { printable } from '../../domain/text.ts';
import { logger } from '../commons/powertools.ts';
import type { Warehouse } from '../commons/warehouse.ts';

/**
 * The quarantine table, created when missing from the loaded columns, or
 * given the columns row-level rules added when it predates them: returns
 * its `schema.table`.
 */
export async function ensureQuarantine(warehouse: Warehouse, pipeline: Pipeline, batch: BatchRef, name: (step: string) => string): Promise<string> {
  const { schema } = pipeline.target;
  const table = quarantineTableFor(pipeline);
  const existing = (await warehouse.query(tableColumns(schema, table), name('quarantine-columns'))).map((r) => String(r.column_name));
  if (existing.length === 0) {
    await warehouse.execute({ sql: createQuarantine(pipeline, batch.columns) }, name('quarantine-create'));
  } else {
    for (const sql of addQuarantineColumns(pipeline, existing)) await warehouse.execute({ sql }, name('quarantine-add-column'));
  }
  return `${schema}.${table}`;
}

/**
 * Moves the rows of the batch's interval that break a row-level rule out
 * of staging into the quarantine table, in one transaction
 * (domain/gate/sql/quarantine.ts moveToQuarantine), before the gate counts:
 * the gate then reads staging with them (chunkCounts), and the declared
 * checks read staging without them.
 */
export async function quarantineRows(warehouse: Warehouse, pipeline: Pipeline, batch: BatchRef, name: (step: string) => string): Promise<void> {
  await ensureQuarantine(warehouse, pipeline, batch, name);
  const columns = (await warehouse.query(liveColumnsQuery(pipeline.target.schema, batch.stagingTable), name('quarantine-staging-columns'))).map((r) =>
    String(r.col),
  );
  const { sqls, parameters } = moveToQuarantine(pipeline, batch, columns, new Date());
  await warehouse.batch(sqls, name('quarantine-move'), parameters);
}

/** The batch's quarantined rows, judged against checks.quarantine. */
export interface QuarantineJudgement {
  readonly check: CheckResult;
  /** Every quarantined row of the batch: its rows rejected. */
  readonly rows: number;
  /** Those a row-level rule took from staging (NULL-time rows were never there). */
  readonly fromStaging: number;
}

/**
 * Reads what the batch has in the quarantine (rows per reason, a few keys
 * each, NULL-time rows included) and judges it against the tolerance; the
 * log names where the rows are.
 */
export async function judgeQuarantine(
  warehouse: Warehouse,
  pipeline: Pipeline,
  batch: BatchRef,
  sourceRows: number,
  name: (step: string) => string,
): Promise<QuarantineJudgement> {
  const rows = await warehouse.query(quarantineSummary(pipeline, batch), name('quarantine-summary'));
  const reasons = new Map<string, { reason: string; rows: number; chunked: number; sampleKeys: string[] }>();
  for (const r of rows) {
    const reason = String(r.ap_reason);
    const entry = reasons.get(reason) ?? { reason, rows: Number(r.ap_rows), chunked: Number(r.ap_chunked), sampleKeys: [] };
    entry.sampleKeys.push(
      printable(
        keyText(
          pipeline.businessKey,
          pipeline.businessKey.map((k) => r[k]),
        ),
      ),
    );
    reasons.set(reason, entry);
  }
  const byReason = [...reasons.values()];
  const nullTimeRows = reasons.get(REASON.nullTime)?.rows ?? 0;
  const table = `${pipeline.target.schema}.${quarantineTableFor(pipeline)}`;
  const found: Quarantined = { table, batchId: batch.batchId, byReason, sourceRows: sourceRows + nullTimeRows };
  const check = quarantineCheck(found, pipeline.checks.quarantine ?? {});
  const total = quarantinedRows(found);
  if (total > 0) {
    logger.warn('rows quarantined', {
      batchId: batch.batchId,
      table,
      rows: total,
      reasons: Object.fromEntries(byReason.map((r) => [r.reason, r.rows])),
      withinTolerance: check.passed,
    });
  }
  return { check, rows: total, fromStaging: byReason.reduce((sum, r) => sum + r.chunked, 0) };
}
