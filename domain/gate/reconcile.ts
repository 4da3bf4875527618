import { type CheckResult, ChunkStatus } from '../batch.ts';
import type { NullTimes } from '../spec.ts';
import { renderTable } from '../text-table.ts';
import type { MeasureTolerance } from './config.ts';
import { decimalDifference, decimalEqual, decimalSum } from './decimal.ts';
import { declaredTable, isBlocking, isWarning } from './declared-checks.ts';
import { type DriftOutcome, driftFailureText, isDriftCheck, NO_DRIFT } from './drift.ts';
import { QUARANTINE_CHECK } from './quarantine.ts';
import { toleranceText, withinTolerance } from './tolerances.ts';

/** One row of the per-chunk count comparison (sql.chunkCounts). */
export interface ChunkCount {
  readonly index: number;
  readonly start: string;
  readonly status: string;
  readonly recordedRows: number | null;
  readonly sourceRows: number;
  readonly stagingRows: number;
  /** The content checksums of both sides, as decimal texts (sql/reconcile.ts gateAggregates), when the gate computes them. */
  readonly sourceChecksum?: string;
  readonly stagingChecksum?: string;
  /** The sums of `checks.measures`, in their order, when the spec declares some. */
  readonly sums?: readonly MeasureSum[];
}

/** One measure's sum over a chunk on both sides, as decimal texts. */
export interface MeasureSum {
  readonly column: string;
  readonly source: string;
  readonly staging: string;
}

/** What the gate compares beyond counts (the spec's `checks`). */
export interface ContentChecks {
  readonly contentChecksum: boolean;
  readonly measures: readonly string[];
  /** The measures' tolerances, by column (checks.measureTolerances). @default none */
  readonly tolerances?: Readonly<Record<string, MeasureTolerance>>;
}

export interface Reconciliation {
  readonly passed: boolean;
  readonly checks: readonly CheckResult[];
  readonly rowsRead: number;
  readonly rowsWritten: number;
  /** Chunks whose counts disagree, for the operator's diff table. */
  readonly mismatches: readonly ChunkCount[];
  /** Chunks whose content checksum or a measure's sum disagrees, for the second table. @default none */
  readonly contentMismatches?: readonly ChunkCount[];
  /** Declared checks of severity warn that failed: recorded and shown, not blocking. @default none */
  readonly warnings?: readonly CheckResult[];
  /** The drift checks against live (domain/gate/drift.ts), for the alert's tables. @default none */
  readonly drift?: DriftOutcome;
}

const MAX_LISTED = 20;

function listChunks(chunks: readonly ChunkCount[]): string {
  const shown = chunks
    .slice(0, MAX_LISTED)
    .map((c) => `#${c.index} ${c.start}: source ${c.sourceRows}, staging ${c.stagingRows}, recorded ${c.recordedRows ?? '-'}`);
  if (chunks.length > MAX_LISTED) shown.push(`... and ${chunks.length - MAX_LISTED} more`);
  return shown.join('; ');
}

/**
 * The foundation's gate: every chunk loaded, staging matches the source
 * chunk by chunk (and what each load recorded), nothing outside the
 * interval, the business key unique, and not empty unless the pipeline
 * allows it.
 */
/** Whole-table facts about staging (sql.stagingProblems). */
export interface StagingProblems {
  /** Rows outside the batch interval or without a time. */
  readonly outsideInterval: number;
  /** Business-key values held by more than one row. */
  readonly duplicateKeys: number;
  /** A few of them, as `(a, b) = (1, 2) on 2 rows` (sql.duplicateKeySamples). @default none */
  readonly duplicateKeySamples?: readonly string[];
  /** Chunks the batch was planned with (batches.chunk_count); a chunk never recorded (a window that never ran) is not done. @default counts.length */
  readonly plannedChunks?: number;
}

/** Source rows of the batch's interval whose time column is NULL (sql/null-times.ts), and what became of them. */
export interface NullTimeRows {
  readonly timeColumn: string;
  readonly rows: number;
  /** A few of their business keys, e.g. `(order_id, line_no) = (17, 1)`. */
  readonly sampleKeys: readonly string[];
  readonly policy: NullTimes;
  /** With policy 'quarantine': where they were copied (`schema.table`). */
  readonly quarantinedIn?: string;
}

/** The check of rows no chunk loads because their time is NULL: failed under 'fail', passed (and counted) under 'quarantine'. */
export function nullTimeCheck(nulls: NullTimeRows): CheckResult {
  const sample = nulls.sampleKeys.length === 0 ? '' : `business keys of the first ${nulls.sampleKeys.length}: ${nulls.sampleKeys.join('; ')}`;
  if (nulls.policy === 'quarantine') {
    return {
      check: 'source_time_not_null',
      passed: true,
      observed: `${nulls.rows} source row(s) with no ${nulls.timeColumn}${nulls.rows > 0 ? `, quarantined in ${nulls.quarantinedIn}` : ''}`,
      expected: `rows with no ${nulls.timeColumn} quarantined (nullTimes: quarantine), the rest published`,
      details: sample,
    };
  }
  return {
    check: 'source_time_not_null',
    passed: nulls.rows === 0,
    observed: `${nulls.rows} source row(s) with no ${nulls.timeColumn}: they belong to no interval and would not be published`,
    expected: `0 rows (or nullTimes: 'quarantine' in the spec, to publish the rest and keep them aside)`,
    details: sample,
  };
}

export function reconcile(
  counts: readonly ChunkCount[],
  staging: StagingProblems,
  allowEmpty: boolean,
  businessKey: readonly string[] = [],
  nullTimes?: NullTimeRows,
  content: ContentChecks = { contentChecksum: false, measures: [] },
  declared: readonly CheckResult[] = [],
  drift: DriftOutcome = NO_DRIFT,
): Reconciliation {
  const { outsideInterval, duplicateKeys } = staging;
  const rowsRead = counts.reduce((sum, c) => sum + c.sourceRows, 0);
  const rowsWritten = counts.reduce((sum, c) => sum + c.stagingRows, 0) + outsideInterval;
  const notDone = counts.filter((c) => c.status !== ChunkStatus.DONE);
  const planned = Math.max(staging.plannedChunks ?? counts.length, counts.length);
  const unrecorded = planned - counts.length;
  const sourceMismatch = counts.filter((c) => c.sourceRows !== c.stagingRows);
  const recordMismatch = counts.filter((c) => c.recordedRows !== c.stagingRows);
  const mismatches = counts.filter((c) => c.sourceRows !== c.stagingRows || c.recordedRows !== c.stagingRows || c.status !== ChunkStatus.DONE);

  const checks: CheckResult[] = [
    {
      check: 'all_chunks_loaded',
      passed: notDone.length === 0 && unrecorded === 0,
      observed: `${counts.length - notDone.length} of ${planned} chunks done`,
      expected: `${planned} of ${planned} chunks done`,
      details: [listChunks(notDone), unrecorded > 0 ? `${unrecorded} planned chunk(s) never recorded (a window of chunks that did not run)` : '']
        .filter(Boolean)
        .join('; '),
    },
    {
      check: 'staging_rows_match_source',
      passed: sourceMismatch.length === 0,
      observed: `${rowsWritten} staging rows; ${sourceMismatch.length} chunk(s) differ`,
      expected: `${rowsRead} source rows; 0 chunks differ`,
      details: listChunks(sourceMismatch),
    },
    {
      check: 'staging_rows_match_load_record',
      passed: recordMismatch.length === 0,
      observed: `${recordMismatch.length} chunk(s) differ from the rows their load recorded`,
      expected: '0 chunks differ',
      details: listChunks(recordMismatch),
    },
    {
      check: 'staging_within_interval',
      passed: outsideInterval === 0,
      observed: `${outsideInterval} row(s) outside the batch interval or with no time`,
      expected: '0 rows',
      details: '',
    },
    {
      check: 'business_key_unique',
      passed: duplicateKeys === 0,
      observed: `${duplicateKeys} key value(s) on more than one row`,
      expected: `each (${businessKey.join(', ') || 'business key'}) on one row`,
      details: sampleKeysText(duplicateKeys, staging.duplicateKeySamples ?? []),
    },
    {
      check: 'staging_not_empty',
      passed: allowEmpty || rowsWritten > 0,
      observed: `${rowsWritten} rows`,
      expected: allowEmpty ? 'any number of rows (allowEmpty)' : 'at least 1 row',
      details: '',
    },
    ...(nullTimes === undefined ? [] : [nullTimeCheck(nullTimes)]),
    ...contentChecks(counts, content),
    ...declared,
    ...drift.checks,
  ];
  const contentMismatches = counts.filter((c) => checksumDiffers(c) || sumsDiffering(c, content.tolerances).length > 0);
  // A failed check of severity warn does not block (domain/gate/declared-checks.ts).
  return { passed: !checks.some(isBlocking), checks, rowsRead, rowsWritten, mismatches, contentMismatches, warnings: checks.filter(isWarning), drift };
}

/** True when the chunk's content checksums were computed and differ. */
function checksumDiffers(c: ChunkCount): boolean {
  return c.sourceChecksum !== undefined && c.stagingChecksum !== undefined && !decimalEqual(c.sourceChecksum, c.stagingChecksum);
}

/** The chunk's measure sums that differ (beyond the measure's tolerance, where it has one). */
function sumsDiffering(c: ChunkCount, tolerances: Readonly<Record<string, MeasureTolerance>> = {}): MeasureSum[] {
  return (c.sums ?? []).filter((m) => {
    const tolerance = tolerances[m.column];
    return tolerance === undefined ? !decimalEqual(m.source, m.staging) : !withinTolerance(m.source, m.staging, tolerance);
  });
}

/** `amount: source 45176850.00, staging 45076850.00, source - staging 100000.00`. */
function sumText(m: MeasureSum): string {
  return `${m.column}: source ${m.source}, staging ${m.staging}, source - staging ${decimalDifference(m.source, m.staging) ?? '?'}`;
}

function listed<T>(items: readonly T[], text: (item: T) => string): string {
  const shown = items.slice(0, MAX_LISTED).map(text);
  if (items.length > MAX_LISTED) shown.push(`... and ${items.length - MAX_LISTED} more`);
  return shown.join('; ');
}

/**
 * The gate's content checks, per chunk, source against staging: the
 * checksum over every published column of each row (a corrected value, a
 * swapped key, duplicates and omissions that cancel out in the count),
 * and the sums of the declared measures, with the difference per chunk.
 */
function contentChecks(counts: readonly ChunkCount[], content: ContentChecks): CheckResult[] {
  const checks: CheckResult[] = [];
  if (content.contentChecksum) {
    const differing = counts.filter(checksumDiffers);
    checks.push({
      check: 'staging_content_matches_source',
      passed: differing.length === 0,
      observed: `${differing.length} chunk(s) whose rows differ from the source's`,
      expected: '0 chunks differ (a checksum over every published column of each row, per chunk)',
      details: listed(differing, (c) => `#${c.index} ${c.start}: checksum differs (source ${c.sourceRows} rows, staging ${c.stagingRows} rows)`),
    });
  }
  if (content.measures.length > 0) {
    const tolerances = content.tolerances ?? {};
    const differing = counts.filter((c) => sumsDiffering(c, tolerances).length > 0);
    const totals = content.measures.map((column, i) => {
      const total = (side: 'source' | 'staging') => counts.reduce((sum, c) => decimalSum(sum, c.sums?.[i]?.[side] ?? '0') ?? sum, '0');
      return { column, source: total('source'), staging: total('staging') };
    });
    checks.push({
      check: 'staging_sums_match_source',
      passed: differing.length === 0,
      observed: `${differing.length} chunk(s) whose sums differ; ${totals.map(sumText).join('; ')}`,
      expected: `sums of ${content.measures.map((m) => (tolerances[m] === undefined ? m : `${m} (tolerance ${toleranceText(tolerances[m])})`)).join(', ')} equal in every chunk`,
      details: listed(differing, (c) => `#${c.index} ${c.start}: ${sumsDiffering(c, tolerances).map(sumText).join('; ')}`),
    });
  }
  return checks;
}

/** `sample keys: ...; ... and 3 more`: the duplicate keys an alert shows. */
function sampleKeysText(duplicateKeys: number, samples: readonly string[]): string {
  if (samples.length === 0) return '';
  const more = duplicateKeys - samples.length;
  return `sample keys: ${samples.join('; ')}${more > 0 ? `; and ${more} more` : ''}`;
}

/** One duplicate key value as the alert lists it: `(order_id, line_no) = (5, 1) on 2 rows`. */
export function duplicateKeyText(businessKey: readonly string[], values: readonly unknown[], rows: number): string {
  return `${keyText(businessKey, values)} on ${rows} rows`;
}

/** A business key's value as an alert names it: `(order_id, line_no) = (17, 1)`. */
export function keyText(businessKey: readonly string[], values: readonly unknown[]): string {
  const shown = values.map((v) => (v === null || v === undefined ? 'NULL' : String(v)));
  return `(${businessKey.join(', ')}) = (${shown.join(', ')})`;
}

/**
 * The failed checks and, where counts differ, a table of the chunks that
 * differ: what the on-call engineer reads first in the alert.
 */
export function describeFailure(batchId: string, result: Reconciliation): string {
  const failed = result.checks.filter(isBlocking);
  const lines = [`${failed.length} check(s) failed for batch ${batchId}:`];
  for (const c of failed) {
    lines.push(`  ${c.check}: observed ${c.observed}; expected ${c.expected}`);
    if (c.severity !== undefined && c.details !== '') lines.push(`    ${c.details}`);
    // Chunk lists are in the table below; the duplicate keys are not.
    if ((c.check === 'business_key_unique' || c.check === QUARANTINE_CHECK) && c.details !== '') lines.push(`    ${c.details}`);
  }
  // The declared checks that failed, blocking or not: what each found and a few offending keys.
  const declared = result.checks.filter((c) => c.severity !== undefined && !c.passed && !isDriftCheck(c));
  if (declared.length > 0) {
    lines.push(`Declared checks that failed (${declared.length}):`);
    lines.push(declaredTable(declared));
  }
  lines.push(...driftFailureText(result.drift ?? NO_DRIFT));
  if (result.mismatches.length > 0) {
    const shown = result.mismatches.slice(0, MAX_LISTED);
    lines.push(`Chunks that differ (${shown.length} of ${result.mismatches.length}):`);
    lines.push(
      renderTable(
        ['chunk', 'starts', 'status', 'source', 'staging', 'recorded', 'staging - source'],
        shown.map((c) => [c.index, c.start, c.status, c.sourceRows, c.stagingRows, c.recordedRows ?? '-', c.stagingRows - c.sourceRows]),
        ['r', 'l', 'l', 'r', 'r', 'r', 'r'],
      ),
    );
  }
  const content = result.contentMismatches ?? [];
  if (content.length > 0) {
    const shown = content.slice(0, MAX_LISTED);
    const measures = shown[0]?.sums?.map((m) => m.column) ?? [];
    lines.push(`Chunks whose content differs from the source (${shown.length} of ${content.length}):`);
    lines.push(
      renderTable(
        ['chunk', 'starts', 'source rows', 'staging rows', 'checksum', ...measures.flatMap((m) => [`${m} source`, `${m} staging`, `${m} source - staging`])],
        shown.map((c) => [
          c.index,
          c.start,
          c.sourceRows,
          c.stagingRows,
          c.sourceChecksum === undefined ? '-' : checksumDiffers(c) ? 'differs' : 'same',
          ...(c.sums ?? []).flatMap((m) => [m.source, m.staging, decimalDifference(m.source, m.staging) ?? '?']),
        ]),
        ['r', 'l', 'r', 'r', 'l', ...measures.flatMap((): ('r' | 'l')[] => ['r', 'r', 'r'])],
      ),
    );
  }
  return lines.join('\n');
}
