/**
 * Judges drift against the live table (`checks.drift`, declared in config.ts):
 * staging's figures from the gate's one grouped pass (sql/drift.ts
 * nullCountAggregates) against one grouped pass over the interval's live rows
 * (liveDriftCounts). Why: docs/decisions/drift-against-live-and-tolerances.md
 */
import type { CheckResult } from '../batch.ts';
import { ValidationError } from '../errors.ts';
import type { LiveColumn } from '../plan/live-column.ts';
import type { Pipeline } from '../spec.ts';
import { renderTable } from '../text-table.ts';
import { type DriftChecks, NULL_RATE_DRIFT, type NullRateDrift, ROW_COUNT_DRIFT, type RowCountDrift } from './config.ts';

export function isDriftCheck(c: Pick<CheckResult, 'check'>): boolean {
  return c.check === ROW_COUNT_DRIFT || c.check === NULL_RATE_DRIFT;
}

/** One chunk's rows on both sides. */
export interface ChunkRows {
  readonly index: number;
  readonly start: string;
  readonly stagingRows: number;
  readonly liveRows: number;
}

/** One column's NULLs over the batch interval on both sides. */
export interface ColumnNulls {
  readonly column: string;
  readonly stagingNulls: number;
  readonly stagingRows: number;
  readonly liveNulls: number;
  readonly liveRows: number;
}

/** A chunk outside its row-count bounds, with the change in percent of live's rows. */
export interface ChunkRowDrift extends ChunkRows {
  readonly changePct: number;
}

/** A column whose NULL share rose too much, shares in percent. */
export interface ColumnNullDrift extends ColumnNulls {
  readonly stagingPct: number;
  readonly livePct: number;
}

/** The drift checks' results and, for the alert, the chunks and columns that failed. */
export interface DriftOutcome {
  readonly checks: readonly CheckResult[];
  readonly chunks: readonly ChunkRowDrift[];
  readonly columns: readonly ColumnNullDrift[];
}

export const NO_DRIFT: DriftOutcome = { checks: [], chunks: [], columns: [] };

const MAX_LISTED = 20;

/** `-70.0%`, `+12.5%`: one decimal, always signed. */
const signed = (n: number, unit: string) => `${n >= 0 ? '+' : ''}${n.toFixed(1)}${unit}`;
const percentOf = (part: number, whole: number) => (whole === 0 ? 0 : (100 * part) / whole);

function listed<T>(items: readonly T[], text: (item: T) => string): string {
  const shown = items.slice(0, MAX_LISTED).map(text);
  if (items.length > MAX_LISTED) shown.push(`... and ${items.length - MAX_LISTED} more`);
  return shown.join('; ');
}

/** `-50% / +100%`, `no lower bound / +100%`: the bounds as the check's text names them. */
export function boundsText(rowCount: Pick<RowCountDrift, 'maxDecreasePct' | 'maxIncreasePct'>): string {
  const down = rowCount.maxDecreasePct === undefined ? 'any fall' : `-${rowCount.maxDecreasePct}%`;
  const up = rowCount.maxIncreasePct === undefined ? 'any rise' : `+${rowCount.maxIncreasePct}%`;
  return `${down} / ${up}`;
}

/**
 * Per chunk: staging's rows against live's of the same interval. A chunk
 * live holds no rows of (the first publication, or an interval never
 * published) passes with nothing to compare, as does one with fewer than
 * `minRows` live rows, where a percentage says little; both are counted in
 * the observed text.
 */
export function rowCountDrift(rule: RowCountDrift, chunks: readonly ChunkRows[]): { check: CheckResult; failing: ChunkRowDrift[] } {
  const noLive = chunks.filter((c) => c.liveRows === 0).length;
  const compared = chunks.filter((c) => c.liveRows > 0 && c.liveRows >= rule.minRows);
  const small = chunks.length - noLive - compared.length;
  const failing = compared
    .map((c) => ({ ...c, changePct: percentOf(c.stagingRows - c.liveRows, c.liveRows) }))
    .filter(
      (c) =>
        (rule.maxDecreasePct !== undefined && -c.changePct > rule.maxDecreasePct) || (rule.maxIncreasePct !== undefined && c.changePct > rule.maxIncreasePct),
    );
  const skipped = [
    noLive > 0 ? `${noLive} with no live rows to compare` : '',
    small > 0 ? `${small} with fewer than ${rule.minRows} live rows, not compared` : '',
  ].filter(Boolean);
  return {
    check: {
      check: ROW_COUNT_DRIFT,
      passed: failing.length === 0,
      severity: rule.severity,
      observed: `${failing.length} of ${compared.length} chunk(s) compared outside the bounds${skipped.length > 0 ? `; ${skipped.join('; ')}` : ''}`,
      expected: `staging rows per chunk within ${boundsText(rule)} of live's rows of the same interval (tolerance), chunks with at least ${rule.minRows} live rows; severity ${rule.severity}`,
      details: listed(failing, (c) => `#${c.index} ${c.start}: live ${c.liveRows}, staging ${c.stagingRows}, ${signed(c.changePct, '%')}`),
    },
    failing,
  };
}

/**
 * Per column: staging's share of NULLs over the batch interval against
 * live's; fails when it rose by more than `maxIncreasePoints` percentage
 * points. Not compared while either side holds fewer than `minRows` rows
 * (the first publication has none live).
 */
export function nullRateDrift(rule: NullRateDrift, columns: readonly ColumnNulls[]): { check: CheckResult; failing: ColumnNullDrift[] } {
  const compared = columns.filter((c) => c.liveRows > 0 && c.liveRows >= rule.minRows && c.stagingRows >= rule.minRows);
  const shares = compared.map((c) => ({ ...c, stagingPct: percentOf(c.stagingNulls, c.stagingRows), livePct: percentOf(c.liveNulls, c.liveRows) }));
  const failing = shares.filter((c) => c.stagingPct - c.livePct > rule.maxIncreasePoints);
  const rows = columns[0];
  const skipped =
    compared.length < columns.length && rows !== undefined
      ? `; not compared: live ${rows.liveRows}, staging ${rows.stagingRows} rows over the interval, fewer than ${rule.minRows}`
      : '';
  return {
    check: {
      check: NULL_RATE_DRIFT,
      passed: failing.length === 0,
      severity: rule.severity,
      observed: `${failing.length} of ${compared.length} column(s) compared whose NULL share rose by more than ${rule.maxIncreasePoints} points${skipped}`,
      expected: `each column's NULL share in staging at most ${rule.maxIncreasePoints} percentage points (tolerance) above live's over the batch interval; severity ${rule.severity}`,
      details: listed(
        failing,
        (c) => `${c.column}: live ${c.livePct.toFixed(1)}% NULL, staging ${c.stagingPct.toFixed(1)}% NULL (${signed(c.stagingPct - c.livePct, ' points')})`,
      ),
    },
    failing,
  };
}

/** The declared drift checks' results (none declared: none). */
export function driftChecks(drift: DriftChecks | undefined, chunks: readonly ChunkRows[], nulls: readonly ColumnNulls[]): DriftOutcome {
  if (drift === undefined) return NO_DRIFT;
  const rows = drift.rowCount === undefined ? undefined : rowCountDrift(drift.rowCount, chunks);
  const shares = drift.nullRate === undefined ? undefined : nullRateDrift(drift.nullRate, nulls);
  return {
    checks: [...(rows ? [rows.check] : []), ...(shares ? [shares.check] : [])],
    chunks: rows?.failing ?? [],
    columns: shares?.failing ?? [],
  };
}

/**
 * The drift checks a batch of the pipeline runs: none for a migration
 * batch (domain/migration/migration.ts), which copies the live table itself into its
 * new DDL (columns live does not have yet included).
 */
export function driftOf(pipeline: Pipeline): DriftChecks | undefined {
  return pipeline.migrating === undefined ? pipeline.checks.drift : undefined;
}

/** The columns whose NULL shares are compared: the declared ones, else every column the loads insert. */
export function nullRateColumns(pipeline: Pipeline, loaded: readonly string[]): string[] {
  const rule = driftOf(pipeline)?.nullRate;
  if (rule === undefined) return [];
  return [...(rule.columns ?? loaded)];
}

/** What Plan checks before any load: the NULL-rate columns are columns of the live table. */
export function checkDriftColumns(pipeline: Pipeline, columns: readonly LiveColumn[]): void {
  const { schema, table } = pipeline.target;
  for (const column of pipeline.checks.drift?.nullRate?.columns ?? []) {
    if (!columns.some((c) => c.name === column)) {
      throw new ValidationError(
        `pipeline ${pipeline.name}: check ${NULL_RATE_DRIFT} (checks.drift.nullRate.columns) names ${column}, which is not a column of ${schema}.${table}: name a column of the live table or remove it`,
      );
    }
  }
}

/** The failed drift checks as the alert shows them: per chunk the rows on both sides, per column the NULL shares. */
export function driftFailureText(drift: DriftOutcome): string[] {
  const lines: string[] = [];
  if (drift.chunks.length > 0) {
    const shown = drift.chunks.slice(0, MAX_LISTED);
    const check = drift.checks.find((c) => c.check === ROW_COUNT_DRIFT);
    lines.push(`Chunks whose row count drifted from live (${shown.length} of ${drift.chunks.length}, severity ${check?.severity ?? 'block'}):`);
    lines.push(
      renderTable(
        ['chunk', 'starts', 'live rows', 'staging rows', 'change'],
        shown.map((c) => [c.index, c.start, c.liveRows, c.stagingRows, signed(c.changePct, '%')]),
        ['r', 'l', 'r', 'r', 'r'],
      ),
    );
  }
  if (drift.columns.length > 0) {
    const check = drift.checks.find((c) => c.check === NULL_RATE_DRIFT);
    lines.push(`Columns whose NULL share rose against live (${drift.columns.length}, severity ${check?.severity ?? 'block'}):`);
    lines.push(
      renderTable(
        ['column', 'live NULL', 'staging NULL', 'change'],
        drift.columns
          .slice(0, MAX_LISTED)
          .map((c) => [c.column, `${c.livePct.toFixed(1)}%`, `${c.stagingPct.toFixed(1)}%`, signed(c.stagingPct - c.livePct, ' points')]),
        ['l', 'r', 'r', 'r'],
      ),
    );
  }
  return lines;
}
