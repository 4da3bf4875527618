/**
 * Out-of-band changes: how Publish words a refusal when the live table is
 * no longer as Plan saw it (its baseline, domain/live-watch/baseline.ts)
 * at the swap. Pure: the SQL is in domain/live-watch/sql/out-of-band.ts,
 * the swap's check in the manifest's assert_live_unchanged procedure.
 */
import type { BatchRef } from '../batch.ts';
import type { LiveBaseline } from './baseline.ts';

/** The fingerprint as the swap's check compares it: `<rows>:<checksum>`. */
export function fingerprintText(rows: number | string, checksum: string): string {
  return `${rows}:${checksum}`;
}

/**
 * Start of every refusal the swap's check raises; the database prefixes
 * its own words, after the table: `<schema>.<table>: live columns now [<name type>;...]` or `live rows now [<rows>:<checksum>]`.
 */
export const OUT_OF_BAND = 'out-of-band change';

/** What the check found, parsed from a failed swap's message; undefined when the swap failed for another reason. */
export function outOfBandRefusal(message: string): { columns: string[] } | { rows: number; checksum: string } | undefined {
  const at = message.indexOf(`${OUT_OF_BAND}: `);
  if (at < 0) return undefined;
  const text = message.slice(at);
  const columns = /live columns now \[([^\]]*)\]/.exec(text);
  if (columns) return { columns: columns[1] === '' ? [] : columns[1]!.split(';') };
  const rows = /live rows now \[(\d+):([^\]]*)\]/.exec(text);
  if (rows) return { rows: Number(rows[1]), checksum: rows[2]! };
  return undefined;
}

const columnName = (column: string) => column.split(' ')[0]!;

/** Columns added, dropped, retyped and moved between `before` and `after` (`name type` lists). */
export function columnChanges(before: readonly string[], after: readonly string[]): string[] {
  const then = new Map(before.map((c) => [columnName(c), c]));
  const now = new Map(after.map((c) => [columnName(c), c]));
  const changes: string[] = [];
  const added = after.filter((c) => !then.has(columnName(c)));
  const dropped = before.filter((c) => !now.has(columnName(c)));
  const retyped = after.filter((c) => then.has(columnName(c)) && then.get(columnName(c)) !== c);
  if (added.length > 0) changes.push(`column(s) added: ${added.join(', ')}`);
  if (dropped.length > 0) changes.push(`column(s) dropped: ${dropped.join(', ')}`);
  if (retyped.length > 0) changes.push(`column(s) retyped: ${retyped.map((c) => `${then.get(columnName(c))} -> ${c}`).join(', ')}`);
  const keptOrder = (list: readonly string[], other: Map<string, string>) => list.map(columnName).filter((n) => other.has(n));
  if (changes.length === 0 && keptOrder(before, now).join(',') !== keptOrder(after, then).join(',')) {
    changes.push(`columns reordered: now ${after.map(columnName).join(', ')}`);
  }
  return changes;
}

/**
 * The refusal Publish raises (OutOfBandChangeError): what changed in the
 * live table since Plan, what readers see, what to do.
 */
export function describeOutOfBandChange(batch: BatchRef, baseline: LiveBaseline, found: NonNullable<ReturnType<typeof outOfBandRefusal>>): string {
  const scope = baseline.carryFrom ? ` (rows before ${baseline.carryFrom}; rows at or after it are carried over from expected writers)` : '';
  let what: string;
  let fix: string;
  if ('columns' in found) {
    what = `its columns changed: ${columnChanges(baseline.columns, found.columns).join('; ') || 'column list differs'}`;
    fix =
      'A column added to the live table is missing from the staging table this batch built; add it to the source query (Plan refuses a source ' +
      'that does not produce every live column), then re-run: a fresh Plan takes the table as it is now as its base.';
  } else {
    const delta = found.rows - baseline.rows;
    const counted = `${baseline.rows} row(s) at Plan, ${found.rows} now`;
    what =
      delta === 0
        ? `its rows changed: ${counted}, checksum ${baseline.checksum} then, ${found.checksum} now (rows updated, or as many deleted as inserted)${scope}`
        : `its rows changed: ${counted} (${delta > 0 ? `${delta} more` : `${-delta} fewer`}), checksum ${baseline.checksum} then, ${found.checksum} now${scope}`;
    fix =
      'Decide about the change: if the rows belong in the table, put them into the source (or declare the writer expected: outOfBand.expectedWriters ' +
      'carries rows at or after the batch end over into each new table); then re-run: a fresh Plan takes the table as it is now as its base ' +
      'and publishes what the source holds, leaving rows the source lacks only in the retained old version.';
  }
  return (
    `${OUT_OF_BAND}: ${batch.liveTable} was changed by someone else since this batch was planned: ${what}. ` +
    `Nothing was published: readers still see ${batch.liveTable} as it is, the out-of-band change included. ${fix}`
  );
}
