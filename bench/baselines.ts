/**
 * The hand-written rebuilds a full run is measured against, each one
 * BatchExecuteStatement transaction through the same Data API endpoint, loading
 * the same rows into a fresh table and renaming it over a copy of the live table:
 *   insert   CREATE TABLE fresh (...); INSERT INTO fresh <source query>; two renames
 *   ctas     CREATE TABLE fresh AS <source query>; the same two renames
 * Dropping the old copy is not timed: atomic-publish keeps old versions too.
 */
import { qualifiedName, quoteIdent } from '../domain/identifiers.ts';
import type { Pipeline } from '../domain/spec.ts';
import { timestampParam } from '../domain/sql/statement.ts';
import type { Warehouse } from '../functions/commons/warehouse.ts';

export const BASELINE_SCHEMA = 'bench';
/** The copy of the live table the baselines rename over. */
const COPY = 'live_copy';
const FRESH = 'live_fresh';
const OLD = 'live_old';

export type BaselineKind = 'insert' | 'ctas';

export interface BaselineOptions {
  /** The bench database as a superuser. */
  readonly warehouse: Warehouse;
  readonly pipeline: Pipeline;
  /** The live table's column DDL. */
  readonly columns: string;
  readonly from: Date;
  readonly to: Date;
}

const name = (table: string) => qualifiedName(BASELINE_SCHEMA, table);

/** Creates the schema and the copy of the live table (its rows as they are now), untimed. */
export async function prepareBaselines(opts: BaselineOptions): Promise<void> {
  const { warehouse, pipeline } = opts;
  const live = qualifiedName(pipeline.target.schema, pipeline.target.table);
  await warehouse.batch(
    [
      `CREATE SCHEMA IF NOT EXISTS ${quoteIdent(BASELINE_SCHEMA)}`,
      `DROP TABLE IF EXISTS ${name(COPY)}`,
      `CREATE TABLE ${name(COPY)} (${opts.columns})`,
      `INSERT INTO ${name(COPY)} SELECT * FROM ${live}`,
    ],
    'bench:baseline:prepare',
  );
}

/** One hand-written rebuild and swap, timed from submit to FINISHED; then the old copy is dropped (untimed). */
export async function timeBaseline(kind: BaselineKind, opts: BaselineOptions): Promise<number> {
  const { warehouse, pipeline } = opts;
  const parameters = { start: timestampParam(opts.from), end: timestampParam(opts.to) };
  const fill =
    kind === 'insert'
      ? [`CREATE TABLE ${name(FRESH)} (${opts.columns})`, `INSERT INTO ${name(FRESH)} ${pipeline.sourceSql}\n`]
      : [`CREATE TABLE ${name(FRESH)} AS ${pipeline.sourceSql}\n`];
  const started = performance.now();
  await warehouse.batch(
    [...fill, `ALTER TABLE ${name(COPY)} RENAME TO ${quoteIdent(OLD)}`, `ALTER TABLE ${name(FRESH)} RENAME TO ${quoteIdent(COPY)}`],
    `bench:baseline:${kind}`,
    parameters,
  );
  const ms = performance.now() - started;
  await warehouse.execute({ sql: `DROP TABLE ${name(OLD)}` }, `bench:baseline:${kind}:drop-old`);
  return ms;
}
