/**
 * Checks a pipeline declares on its staging rows (the spec's `checks`:
 * notNull, acceptedValues, references, sql, as domain/gate/config.ts
 * declares them), each with a severity and a tolerance: what Plan checks of
 * them before any load, and how Reconcile judges what it counted
 * (domain/gate/sql/reconcile.ts declaredRowChecks and the statements after it).
 */
import type { CheckResult } from '../batch.ts';
import { ValidationError } from '../errors.ts';
import type { LiveColumn } from '../plan/live-column.ts';
import type { Pipeline } from '../spec.ts';
import { renderTable } from '../text-table.ts';
import { acceptedValuesName, type DeclaredChecks, notNullName, patternName, referencesName, type Severity } from './config.ts';

/** Offending keys (or rows) a failed check records and shows. */
export const DECLARED_SAMPLES = 5;

export const NO_DECLARED_CHECKS: DeclaredChecks = { notNull: [], acceptedValues: [], pattern: [], references: [], sql: [] };

/** The parameter pattern[i]'s regex travels as. */
export const patternParameter = (index: number) => `ap_pattern_${index}`;

const NUMERIC = /^(smallint|integer|bigint|numeric|real|double precision)$/;
const CHARACTER = /^(character varying|character|text)$/;

/** A column type's family, for comparing a child key column with its parent's. */
function family(type: string): string {
  if (NUMERIC.test(type)) return 'number';
  if (CHARACTER.test(type)) return 'text';
  return type;
}

/**
 * What Plan checks of the declared checks before any load: their columns
 * are columns of the live table (staging has its columns), accepted values
 * fit the column's type, a referenced parent exists with columns of the
 * same kinds. `parentColumns` are the parents' catalog columns, by
 * `schema.table` (none listed: the table does not exist).
 */
export function checkDeclaredColumns(pipeline: Pipeline, columns: readonly LiveColumn[], parentColumns: ReadonlyMap<string, readonly LiveColumn[]>): void {
  const { schema, table } = pipeline.target;
  const live = `${schema}.${table}`;
  const refuse = (check: string, problem: string) => new ValidationError(`pipeline ${pipeline.name}: check ${check} ${problem}`);
  const typeOf = (check: string, column: string) => {
    const type = columns.find((c) => c.name === column)?.dataType;
    if (type === undefined) throw refuse(check, `names ${column}, which is not a column of ${live}: name a column of the live table or remove the check`);
    return type;
  };
  for (const c of pipeline.checks.notNull) typeOf(notNullName(c), c.column);
  for (const c of pipeline.checks.acceptedValues) {
    const type = typeOf(acceptedValuesName(c), c.column);
    const numeric = NUMERIC.test(type);
    const wrong = c.values.filter((v) => (numeric ? typeof v !== 'number' : typeof v !== 'string'));
    if (wrong.length > 0 && (numeric || CHARACTER.test(type))) {
      throw refuse(
        acceptedValuesName(c),
        `lists ${wrong.map((v) => JSON.stringify(v)).join(', ')} for ${c.column} of ${live}, which is ${type}: list ${numeric ? 'numbers' : 'strings'}`,
      );
    }
  }
  for (const c of pipeline.checks.pattern) {
    const type = typeOf(patternName(c), c.column);
    if (!CHARACTER.test(type))
      throw refuse(patternName(c), `matches ${c.column} of ${live}, which is ${type}: a pattern reads a text column (character varying, character)`);
  }
  for (const c of pipeline.checks.references) {
    const name = referencesName(c);
    const parent = `${c.parent.schema}.${c.parent.table}`;
    const parentCols = parentColumns.get(parent) ?? [];
    if (parentCols.length === 0) throw refuse(name, `references ${parent}, which does not exist (or this user cannot see it)`);
    c.columns.forEach((column, i) => {
      const type = typeOf(name, column);
      const parentColumn = c.parent.columns[i]!;
      const parentType = parentCols.find((p) => p.name === parentColumn)?.dataType;
      if (parentType === undefined) throw refuse(name, `references ${parentColumn}, which is not a column of ${parent}`);
      if (family(type) !== family(parentType)) {
        throw refuse(name, `compares ${column} (${type}) with ${parent}.${parentColumn} (${parentType}): the types must be of one kind`);
      }
    });
  }
}

/** What Reconcile counted for one declared check, with a few offending keys when it found some. */
export interface DeclaredObservation {
  readonly check: string;
  readonly severity: Severity;
  readonly tolerance: number;
  readonly offending: number;
  /** What an offending row is, e.g. `row(s) with NULL amount`. */
  readonly what: string;
  readonly samples: readonly string[];
}

/** A declared check's result: passed when its offending rows are within its tolerance. */
export function declaredResult(o: DeclaredObservation): CheckResult {
  const more = o.offending - o.samples.length;
  return {
    check: o.check,
    passed: o.offending <= o.tolerance,
    severity: o.severity,
    tolerance: o.tolerance,
    observed: `${o.offending} ${o.what}`,
    expected: `at most ${o.tolerance} (tolerance), severity ${o.severity}`,
    details: o.samples.length === 0 || o.offending <= o.tolerance ? '' : `sample: ${o.samples.join('; ')}${more > 0 ? `; and ${more} more` : ''}`,
    samples: o.offending <= o.tolerance ? [] : o.samples,
  };
}

/** A failed check whose severity is warn: recorded and shown, the batch still publishes. */
export function isWarning(c: CheckResult): boolean {
  return !c.passed && c.severity === 'warn';
}

/** A failed check that stops the publish (every gate check, and declared checks of severity block). */
export function isBlocking(c: CheckResult): boolean {
  return !c.passed && c.severity !== 'warn';
}

/** The failed declared checks as the alert shows them: check, severity, observed, tolerance, sample offending keys. */
export function declaredTable(results: readonly CheckResult[]): string {
  return renderTable(
    ['check', 'severity', 'observed', 'tolerance', 'sample offending keys'],
    results.map((c) => [c.check, c.severity ?? 'block', c.observed, c.tolerance ?? 0, (c.samples ?? []).join('; ') || '-']),
    ['l', 'l', 'l', 'r', 'l'],
  );
}
