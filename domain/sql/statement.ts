/**
 * What every SQL module shares. SQL is generated only in the sql/ folder of
 * its capability (domain/<capability>/sql/). Identifiers go through
 * quoteIdent/qualifiedName; values are `:name` parameters, except in
 * the multi-statement batches, where the tool's own values go through
 * sqlLiteral.
 */
import { formatTimestamp, quoteIdent } from '../identifiers.ts';

/** One statement for ExecuteStatement. Parameter values are strings, as the Data API takes them. */
export interface Statement {
  readonly sql: string;
  readonly parameters?: Readonly<Record<string, string>>;
  /**
   * A LOCK run first, in the same transaction (the statement then goes as a
   * two-statement BatchExecuteStatement): on Redshift the way to keep
   * concurrent writers of one table from failing each other with error 1023.
   */
  readonly lock?: string;
}

/** Timestamps travel as `2026-01-02 03:04:05.000` (UTC), which Redshift and PostgreSQL both read. */
export function timestampParam(instant: Date | string): string {
  return formatTimestamp(typeof instant === 'string' ? new Date(instant) : instant);
}

/** Schema of the manifest (batches, chunks, check results, publications) in the target database. */
export const MANIFEST_SCHEMA = 'atomic_publish';
/** The manifest schema as SQL: `"atomic_publish"`. */
export const MANIFEST = quoteIdent(MANIFEST_SCHEMA);

/** Data API batches hold at most 40 statements and 100 KB of SQL each. */
export const MAX_BATCH_STATEMENTS = 40;
export const MAX_SQL_BYTES = 100_000;
