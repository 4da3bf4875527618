/**
 * Checks a pipeline declares on its staging rows (the spec's `checks`:
 * notNull, acceptedValues, references, sql), each with a severity and a
 * tolerance: what Plan checks of them before any load, and how Reconcile
 * judges what it counted (domain/gate/sql/reconcile.ts declaredRowChecks and
 * the statements after it).
 */
import type { CheckResult } from '../batch.ts';
import { ValidationError } from '../errors.ts';
import type { LiveColumn } from '../plan/live-column.ts';
import type { Pipeline } from '../spec.ts';
import { renderTable } from '../text-table.ts';

/** What a failed check does: `block` stops the publish, `warn` is recorded and logged, and the batch publishes. */
export type Severity = 'block' | 'warn';
export const SEVERITIES: readonly Severity[] = ['block', 'warn'];

/** The most offending rows a tolerance may allow. */
export const MAX_TOLERANCE = 1_000_000_000;

/** Offending keys (or rows) a failed check records and shows. */
export const DECLARED_SAMPLES = 5;

/** The placeholder a custom check's SQL names staging by: replaced with the quoted staging table. */
export const STAGING_PLACEHOLDER = '{staging}';

interface Judged {
  /** Failed: recorded, and `block` stops the publish. @default 'block' */
  readonly severity: Severity;
  /** Offending rows allowed. @default 0 */
  readonly tolerance: number;
}

/** A row check may move the rows that break it to the quarantine (domain/gate/quarantine.ts) instead of counting them. */
interface Quarantinable {
  /** Present only as `'quarantine'` (a spec hash stays as it was without it). @default - counted and judged */
  readonly action?: 'quarantine';
}

export interface NotNullCheck extends Judged, Quarantinable {
  readonly column: string;
}

export interface AcceptedValuesCheck extends Judged, Quarantinable {
  readonly column: string;
  readonly values: readonly (string | number)[];
}

/**
 * A text column's values must match a POSIX regular expression (Redshift's
 * `~`, https://docs.aws.amazon.com/redshift/latest/dg/pattern-matching-conditions-posix.html):
 * a value that would not parse as what it stands for (a date, a code, a
 * number kept as text). It travels as a parameter, so it may hold
 * backslashes.
 */
export interface PatternCheck extends Judged, Quarantinable {
  readonly column: string;
  readonly regex: string;
}

export interface ReferencesCheck extends Judged {
  readonly columns: readonly string[];
  readonly parent: { readonly schema: string; readonly table: string; readonly columns: readonly string[] };
}

export interface SqlCheck extends Judged {
  readonly name: string;
  /** One SELECT returning the offending rows; `{staging}` names the staging table. */
  readonly sql: string;
}

export interface DeclaredChecks {
  readonly notNull: readonly NotNullCheck[];
  readonly acceptedValues: readonly AcceptedValuesCheck[];
  readonly pattern: readonly PatternCheck[];
  readonly references: readonly ReferencesCheck[];
  readonly sql: readonly SqlCheck[];
}

export const NO_DECLARED_CHECKS: DeclaredChecks = { notNull: [], acceptedValues: [], pattern: [], references: [], sql: [] };

/** The name `check_results` records a declared check under. */
export const notNullName = (c: Pick<NotNullCheck, 'column'>) => `not_null:${c.column}`;
export const acceptedValuesName = (c: Pick<AcceptedValuesCheck, 'column'>) => `accepted_values:${c.column}`;
export const patternName = (c: Pick<PatternCheck, 'column'>) => `pattern:${c.column}`;
/** The parameter pattern[i]'s regex travels as. */
export const patternParameter = (index: number) => `ap_pattern_${index}`;
export const referencesName = (c: Pick<ReferencesCheck, 'columns'>) => `references:${c.columns.join(',')}`;
export const sqlCheckName = (c: Pick<SqlCheck, 'name'>) => `sql:${c.name}`;

/** Every declared check's name, in the order Reconcile records them. */
export function declaredCheckNames(checks: DeclaredChecks): string[] {
  return [
    ...checks.notNull.map(notNullName),
    ...checks.acceptedValues.map(acceptedValuesName),
    ...checks.pattern.map(patternName),
    ...checks.references.map(referencesName),
    ...checks.sql.map(sqlCheckName),
  ];
}

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
