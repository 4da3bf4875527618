import type { BatchRef, CheckResult } from '../../domain/batch.ts';
import { acceptedValuesName, notNullName, patternName, referencesName, sqlCheckName } from '../../domain/gate/config.ts';
import { DECLARED_SAMPLES, type DeclaredObservation, declaredResult } from '../../domain/gate/declared-checks.ts';
import { keyText } from '../../domain/gate/reconcile.ts';
import {
  acceptedValuesColumn,
  customCheckRows,
  declaredRowChecks,
  declaredRowSamples,
  missingReferences,
  notNullColumn,
  patternColumn,
} from '../../domain/gate/sql/reconcile.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { clip, printable } from '../../domain/text.ts';
import type { Warehouse } from '../commons/warehouse.ts';

/**
 * The pipeline's declared checks of staging, as results to record: the
 * row checks (notNull, acceptedValues) counted in one pass over staging,
 * then the offending keys of those that failed in one more statement; each
 * references and custom check in its own statement, sampled only when it
 * failed.
 */
export async function declaredCheckResults(warehouse: Warehouse, pipeline: Pipeline, batch: BatchRef, name: (step: string) => string): Promise<CheckResult[]> {
  const { notNull, acceptedValues, pattern, references, sql } = pipeline.checks;
  const key = pipeline.businessKey;
  const observations: DeclaredObservation[] = [];

  const rowChecks = declaredRowChecks(pipeline, batch);
  if (rowChecks !== undefined) {
    const [counts] = await warehouse.query(rowChecks, name('declared-rows'));
    const found = (column: string) => Number(counts?.[column] ?? 0);
    const rows = [
      ...notNull.map((c, i) => ({ column: notNullColumn(i), value: undefined, check: notNullName(c), judged: c, what: `row(s) with NULL ${c.column}` })),
      ...acceptedValues.map((c, i) => ({
        column: acceptedValuesColumn(i),
        value: c.column,
        check: acceptedValuesName(c),
        judged: c,
        what: `row(s) whose ${c.column} is not one of ${clip(c.values.map((v) => JSON.stringify(v)).join(', '), 200)}`,
      })),
      ...pattern.map((c, i) => ({
        column: patternColumn(i),
        value: c.column,
        check: patternName(c),
        judged: c,
        what: `row(s) whose ${c.column} does not match its pattern`,
      })),
    ];
    const failing = rows.filter((r) => found(r.column) > r.judged.tolerance).map((r) => r.column);
    const samples = failing.length === 0 ? [] : await warehouse.query(declaredRowSamples(pipeline, batch, failing), name('declared-samples'));
    for (const r of rows) {
      observations.push({
        check: r.check,
        severity: r.judged.severity,
        tolerance: r.judged.tolerance,
        offending: found(r.column),
        what: r.what,
        samples: samples
          .filter((s) => s.ap_check === r.column)
          .map((s) =>
            printable(
              `${keyText(
                key,
                key.map((k) => s[k]),
              )}${r.value === undefined ? '' : `: ${r.value} ${s.ap_value === null ? 'NULL' : clip(String(s.ap_value), 60)}`}`,
            ),
          ),
      });
    }
  }

  for (const c of references) {
    const [counted] = await warehouse.query(missingReferences(pipeline, batch, c), name('declared-references'));
    const offending = Number(counted?.ap_rows ?? 0);
    const samples =
      offending > c.tolerance ? await warehouse.query(missingReferences(pipeline, batch, c, DECLARED_SAMPLES), name('declared-references-sample')) : [];
    const parent = `${c.parent.schema}.${c.parent.table}`;
    observations.push({
      check: referencesName(c),
      severity: c.severity,
      tolerance: c.tolerance,
      offending,
      what: `row(s) whose (${c.columns.join(', ')}) is not in ${parent} (${c.parent.columns.join(', ')})`,
      samples: samples.map(
        (s) =>
          `${keyText(
            c.columns,
            c.columns.map((k) => s[k]),
          )} on ${Number(s.ap_rows)} row(s)`,
      ),
    });
  }

  for (const c of sql) {
    const [counted] = await warehouse.query(customCheckRows(pipeline, batch, c), name('declared-sql'));
    const offending = Number(counted?.ap_rows ?? 0);
    const samples = offending > c.tolerance ? await warehouse.query(customCheckRows(pipeline, batch, c, DECLARED_SAMPLES), name('declared-sql-sample')) : [];
    observations.push({
      check: sqlCheckName(c),
      severity: c.severity,
      tolerance: c.tolerance,
      offending,
      what: 'row(s) returned',
      samples: samples.map((s) =>
        clip(
          Object.entries(s)
            .map(([k, v]) => `${k} = ${v === null ? 'NULL' : String(v)}`)
            .join(', '),
          200,
        ),
      ),
    });
  }
  return observations.map(declaredResult);
}
