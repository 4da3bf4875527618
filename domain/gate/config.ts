/**
 * The reconciliation gate as a pipeline spec declares it (the spec's
 * `checks`): the declared checks with their severities, tolerances and the
 * names check_results records them under, the actions of row checks, the
 * drift bounds and the measures' tolerances. Imports nothing: the spec's
 * schema (domain/spec.ts) reads it, the gate's modules judge by it.
 */

/** What a failed check does: `block` stops the publish, `warn` is recorded and logged, and the batch publishes. */
export type Severity = 'block' | 'warn';
export const SEVERITIES: readonly Severity[] = ['block', 'warn'];

/** The most offending rows a tolerance may allow. */
export const MAX_TOLERANCE = 1_000_000_000;

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

/** The name `check_results` records a declared check under. */
export const notNullName = (c: Pick<NotNullCheck, 'column'>) => `not_null:${c.column}`;
export const acceptedValuesName = (c: Pick<AcceptedValuesCheck, 'column'>) => `accepted_values:${c.column}`;
export const patternName = (c: Pick<PatternCheck, 'column'>) => `pattern:${c.column}`;
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

/** What a declared row check does with the rows that break it: counts them (`check`, the default) or moves them to the quarantine. */
export type CheckAction = 'check' | 'quarantine';
export const CHECK_ACTIONS: readonly CheckAction[] = ['check', 'quarantine'];

/** Per chunk, staging's rows against live's rows of the chunk's interval. */
export interface RowCountDrift {
  /** Largest fall allowed, in percent of live's rows (0 to 100). @default - no lower bound */
  readonly maxDecreasePct?: number;
  /** Largest rise allowed, in percent of live's rows. @default - no upper bound */
  readonly maxIncreasePct?: number;
  /** Chunks whose live rows are fewer are not compared: a percentage of a handful of rows says nothing. */
  readonly minRows: number;
  readonly severity: Severity;
}

/** Per column, staging's share of NULLs over the batch interval against live's. */
export interface NullRateDrift {
  /** The columns compared. @default - every column the loads insert */
  readonly columns?: readonly string[];
  /** Largest rise of the NULL share allowed, in percentage points (0 to 100). */
  readonly maxIncreasePoints: number;
  /** Not compared when live or staging holds fewer rows over the interval. */
  readonly minRows: number;
  readonly severity: Severity;
}

export interface DriftChecks {
  readonly rowCount?: RowCountDrift;
  readonly nullRate?: NullRateDrift;
}

/** Live rows a chunk (or the interval, for NULL shares) needs before it is compared, unless the spec says otherwise. */
export const DEFAULT_DRIFT_MIN_ROWS = 100;
/** Largest maxIncreasePct a spec may declare (a rise to 10,001 times live's rows). */
export const MAX_INCREASE_PCT = 1_000_000;

/** The names check_results records the drift checks under. */
export const ROW_COUNT_DRIFT = 'live_row_count_drift';
export const NULL_RATE_DRIFT = 'live_null_rate_drift';

/**
 * How far a measure's sums may differ between source and staging and still pass:
 * at most `absolute` (a decimal text), or at most `relative` (0 to 1) times the
 * source's sum; within either passes. A floating-point measure needs one: its SUM
 * depends on the order rows are added in
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_SUM.html).
 * Why: docs/decisions/drift-against-live-and-tolerances.md ("Measure tolerances")
 */
export interface MeasureTolerance {
  readonly absolute?: string;
  readonly relative?: number;
}
