/**
 * Row-level rules and the quarantine (the spec's `checks.quarantine` and
 * the `action: 'quarantine'` of notNull and acceptedValues checks): which
 * rows Reconcile moves out of staging into `<table>__quarantine` and why
 * (domain/gate/sql/quarantine.ts), and how the tolerance judges what it moved.
 */
import type { CheckResult } from '../batch.ts';
import { ValidationError } from '../errors.ts';
import type { LiveColumn } from '../plan/live-column.ts';
import type { Pipeline } from '../spec.ts';
import { acceptedValuesName, notNullName, patternName } from './config.ts';
import { patternParameter } from './declared-checks.ts';

/** The batch's tolerance of quarantined rows: each limit given must hold (`maxPct` of the source rows of the batch's interval). */
export interface QuarantineTolerance {
  readonly maxRows?: number;
  readonly maxPct?: number;
}

/** The reasons a quarantined row carries (a declared check's reason is its check name, e.g. `not_null:amount`). */
export const REASON = {
  nullKey: 'business key NULL',
  /** Rows of one key with different content: every one of them is quarantined. */
  conflictingDuplicate: 'duplicate (conflicting)',
  /** Rows of one key with the same content: one stays in staging, the others are quarantined. */
  identicalDuplicate: 'duplicate (identical)',
  /** Source rows with no time (nullTimes: 'quarantine'), which belong to no chunk. */
  nullTime: 'time NULL',
} as const;

/** The columns the quarantine table adds to the live table's, in order. */
export const QUARANTINE_COLUMNS = ['batch_id', 'quarantined_at', 'reason', 'chunk_index', 'generation'] as const;

/** The check that judges the batch's quarantined rows against the tolerance. */
export const QUARANTINE_CHECK = 'quarantine_within_tolerance';

/** Quarantined keys per reason an alert shows. */
export const QUARANTINE_SAMPLES = 5;

/** A declared row check that quarantines instead of counting. */
export interface RowRule {
  /** The reason its rows carry: the check's name. */
  readonly reason: string;
  /** The column it reads. */
  readonly column: string;
  /** For acceptedValues: the values allowed (a NULL is left to notNull). */
  readonly values?: readonly (string | number)[];
  /** For pattern: the regex and the parameter it travels as. */
  readonly pattern?: { readonly regex: string; readonly parameter: string };
}

/**
 * True when the pipeline quarantines: then NULL keys and duplicates are
 * quarantined too. Not a migration's batch: it copies the live table as it
 * is, into columns the quarantine table may not have.
 */
export function quarantines(pipeline: Pipeline): boolean {
  return pipeline.checks.quarantine !== undefined && pipeline.migrating === undefined;
}

/** The declared checks whose action is quarantine, in the order their rows are judged (a row takes the first reason it breaks). */
export function rowRules(pipeline: Pipeline): RowRule[] {
  return [
    ...pipeline.checks.notNull.filter((c) => c.action === 'quarantine').map((c) => ({ reason: notNullName(c), column: c.column })),
    ...pipeline.checks.acceptedValues
      .filter((c) => c.action === 'quarantine')
      .map((c) => ({ reason: acceptedValuesName(c), column: c.column, values: c.values })),
    ...pipeline.checks.pattern.flatMap((c, i) =>
      c.action === 'quarantine' ? [{ reason: patternName(c), column: c.column, pattern: { regex: c.regex, parameter: patternParameter(i) } }] : [],
    ),
  ];
}

/**
 * What Plan checks before any load: the quarantine table's own columns
 * (QUARANTINE_COLUMNS) are not columns of the live table, whose columns it
 * holds beside them.
 */
export function checkQuarantineColumns(pipeline: Pipeline, columns: readonly LiveColumn[]): void {
  if (!quarantines(pipeline) && pipeline.nullTimes !== 'quarantine') return;
  const clash = columns.filter((c) => (QUARANTINE_COLUMNS as readonly string[]).includes(c.name)).map((c) => c.name);
  if (clash.length > 0) {
    const { schema, table } = pipeline.target;
    throw new ValidationError(
      `pipeline ${pipeline.name}: checks.quarantine keeps rows in ${schema}.${table}__quarantine beside its own columns ${QUARANTINE_COLUMNS.join(', ')}, but ${schema}.${table} has column(s) ${clash.join(', ')}: rename them or remove checks.quarantine`,
    );
  }
}

/** What Reconcile found in the quarantine for the batch: rows per reason, with a few business keys of each. */
export interface Quarantined {
  /** `schema.table` of the quarantine table. */
  readonly table: string;
  readonly batchId: string;
  readonly byReason: readonly { readonly reason: string; readonly rows: number; readonly sampleKeys: readonly string[] }[];
  /** The rows the percentage is of: the source rows of the batch's interval (and those with no time). */
  readonly sourceRows: number;
}

export function quarantinedRows(q: Quarantined): number {
  return q.byReason.reduce((sum, r) => sum + r.rows, 0);
}

/** The tolerance as the check states it: `at most 10 row(s) and 0.5% of 2000 source rows`. */
function toleranceText(tolerance: QuarantineTolerance, sourceRows: number): string {
  const limits = [
    ...(tolerance.maxRows === undefined ? [] : [`${tolerance.maxRows} row(s)`]),
    ...(tolerance.maxPct === undefined ? [] : [`${tolerance.maxPct}% of ${sourceRows} source row(s)`]),
  ];
  return `at most ${limits.join(' and ')} quarantined (checks.quarantine)`;
}

/**
 * The batch's quarantined rows against the tolerance: blocking when over
 * it (then live stays as it is, and the rows stay in the quarantine for
 * diagnosis), passed otherwise; either way it records how many and why,
 * and where they are.
 */
export function quarantineCheck(q: Quarantined, tolerance: QuarantineTolerance): CheckResult {
  const rows = quarantinedRows(q);
  const pct = q.sourceRows === 0 ? (rows === 0 ? 0 : 100) : (100 * rows) / q.sourceRows;
  const within = (tolerance.maxRows === undefined || rows <= tolerance.maxRows) && (tolerance.maxPct === undefined || pct <= tolerance.maxPct);
  const reasons = q.byReason.map((r) => `${r.reason}: ${r.rows}`).join(', ');
  return {
    check: QUARANTINE_CHECK,
    passed: within,
    observed: `${rows} row(s) quarantined (${Number(pct.toFixed(4))}% of ${q.sourceRows})${rows > 0 ? ` in ${q.table} (batch_id = '${q.batchId}'): ${reasons}` : ''}`,
    expected: toleranceText(tolerance, q.sourceRows),
    details: q.byReason
      .filter((r) => r.sampleKeys.length > 0)
      .map((r) => `${r.reason}: ${r.sampleKeys.join('; ')}${r.rows > r.sampleKeys.length ? `; and ${r.rows - r.sampleKeys.length} more` : ''}`)
      .join(' | '),
  };
}
