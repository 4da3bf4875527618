/**
 * Migrating a live table writers keep appending to: a batch whose staging is
 * created from `migration.ddl`, whose chunks copy the live table's own rows (new
 * columns take their DEFAULT), and whose swap carries over the rows at or after
 * the watermark `to`, as expected writers' are; the old table is retained, so
 * Rollback restores it. Pure: Plan (functions/plan/migration.ts) reads the catalog.
 * Why: docs/decisions/migrating-a-live-table.md
 */

import { ValidationError } from '../errors.ts';
import { qualifiedName, quoteIdent } from '../identifiers.ts';
import type { BatchInterval } from '../plan/chunk.ts';
import { resolveInterval, typeFamily } from '../plan/plan.ts';
import type { DependentView, LiveTableFacts } from '../publish/dependents.ts';
import type { Pipeline } from '../spec.ts';
import { canonicalJson, sha256 } from '../spec.ts';
import { echo } from '../text.ts';

/** `{"pipeline": "x", "migrate": true}`, optionally with `to` (the watermark; default: the start of the current grain unit). */
export interface MigrationInput {
  readonly pipeline: string;
  readonly migrate: true;
  readonly to?: string;
}

/** An execution input that asks for a migration (a `migrate` field, whatever its value: a wrong one is refused by migrationInterval). */
export function isMigrationInput(input: unknown): boolean {
  return typeof input === 'object' && input !== null && !Array.isArray(input) && 'migrate' in input;
}

/**
 * The interval a migration copies: all of history up to `to` (the
 * watermark); the rows at or after it are carried over in the swap.
 */
export function migrationInterval(input: Record<string, unknown>, pipeline: Pipeline, now: Date): BatchInterval {
  const extra = Object.keys(input).filter((key) => !['pipeline', 'migrate', 'to'].includes(key));
  if (extra.length > 0) {
    throw new ValidationError(
      `a migration input has unknown field(s): ${extra.join(', ')} (allowed: pipeline, migrate, to; a migration copies all history from historyStart)`,
    );
  }
  if (input.migrate !== true) throw new ValidationError(`input.migrate must be true, got ${echo(input.migrate)}`);
  if (!pipeline.migration) {
    throw new ValidationError(
      `pipeline ${pipeline.name} declares no migration: add migration.ddl (the new CREATE TABLE body) to its spec, deploy, and run this again`,
    );
  }
  return resolveInterval({ pipeline: pipeline.name, ...(input.to === undefined ? {} : { to: input.to as string }) }, pipeline, now);
}

/** The spec hash of a pipeline's migration batches: its own hash, the DDL, the renames and a mode marker, so a migration never shares a batch id with a normal run. */
export function migrationSpecHash(pipeline: Pipeline): string {
  return sha256(['migrate', pipeline.specHash, pipeline.migration?.ddl ?? '', canonicalJson(pipeline.migration?.renames ?? {})].join('\n'));
}

/** The live column a column of the new table is copied from: its own name unless migration.renames names another. */
export function sourceColumnOf(pipeline: Pipeline, column: string): string {
  return pipeline.migration?.renames[column] ?? column;
}

/** The new table's columns that are copied from a live column (by name, or by migration.renames), in the new table's order. */
export function copiedColumns(pipeline: Pipeline, liveColumns: readonly string[]): string[] {
  return (pipeline.migration?.table.columns ?? []).map((c) => c.name).filter((c) => liveColumns.includes(sourceColumnOf(pipeline, c)));
}

/**
 * The pipeline as a migration batch runs it: the live table's copied columns of
 * `[:start, :end)` as the source (the INSERT converting each to its new type:
 * https://docs.aws.amazon.com/redshift/latest/dg/c_Supported_data_types.html#r_Type_conversion),
 * a swap whatever the publish mode, writers expected, the migration's hash.
 * `liveColumns`: the live table's column names as Plan read them (BatchRef.live.columns).
 */
export function migrationPipeline(pipeline: Pipeline, liveColumns: readonly string[]): Pipeline {
  const columns = copiedColumns(pipeline, liveColumns);
  const from = columns.map((c) => sourceColumnOf(pipeline, c));
  const t = quoteIdent(pipeline.timeColumn);
  const list = columns.map((c, i) => (from[i] === c ? quoteIdent(c) : `${quoteIdent(from[i]!)} AS ${quoteIdent(c)}`)).join(', ');
  // A migration is a swap of the whole table whatever the pipeline's mode, its chunks placed by the time column.
  const { modifiedColumn: _extractedBy, merge: _merged, ...rest } = pipeline;
  return {
    ...rest,
    publishMode: 'swap',
    lookback: 0,
    sourceSql: `SELECT ${list} FROM ${qualifiedName(pipeline.target.schema, pipeline.target.table)} WHERE ${t} >= :start AND ${t} < :end`,
    // The migration's staging has the new DDL's columns, not the baseline's: it records no fingerprint (the next publication does).
    outOfBand: { expectedWriters: true, watch: false },
    migrating: { columns, from },
    specHash: migrationSpecHash(pipeline),
  };
}

/** A live column as Plan reads it: its name and `name type` text (domain/live-watch/sql/out-of-band.ts liveColumnsQuery). */
const nameOf = (column: string) => column.split(' ')[0]!;
const typeOf = (column: string) => column.slice(column.indexOf(' ') + 1);

/** True when the live table already has exactly the DDL's columns and types: the migration ran. */
export function isMigrated(pipeline: Pipeline, liveColumns: readonly string[]): boolean {
  const wanted = (pipeline.migration?.table.columns ?? []).map((c) => `${c.name} ${c.type}`);
  return wanted.length > 0 && wanted.join(';') === liveColumns.join(';');
}

/** Types of one family that differ only in length or precision (a family without parentheses: the name itself). */
const baseType = (type: string) => type.replace(/\(.*$/, '');

/**
 * What stops the migration before anything is written, given the live table's
 * columns (`name type`) and the bound views reading it: the time column missing; a
 * copied column changing type family; a new NOT NULL column without a DEFAULT; a
 * bound view reading a column the DDL drops or retypes (the swap re-creates it,
 * and CREATE OR REPLACE VIEW cannot change a column's type). Each names what to
 * change. Why: docs/decisions/migrating-a-live-table.md
 */
export function migrationProblems(pipeline: Pipeline, liveColumns: readonly string[], views: readonly DependentView[]): string[] {
  const { schema, table } = pipeline.target;
  const live = new Map(liveColumns.map((c) => [nameOf(c), typeOf(c)]));
  const ddl = pipeline.migration?.table.columns ?? [];
  const problems: string[] = [];
  if (!live.has(pipeline.timeColumn)) problems.push(`the live table ${schema}.${table} has no column ${pipeline.timeColumn} (timeColumn) to copy its rows by`);
  const source = (column: string) => sourceColumnOf(pipeline, column);
  for (const [to, from] of Object.entries(pipeline.migration?.renames ?? {})) {
    if (!live.has(from)) problems.push(`migration.renames copies ${from} into ${to}, but the live table ${schema}.${table} has no column ${from}`);
  }
  for (const column of ddl) {
    const type = live.get(source(column.name));
    if (type !== undefined && typeFamily(baseType(type)) !== typeFamily(baseType(column.type))) {
      problems.push(
        `migration.ddl changes column ${column.name} from ${type} to ${column.type}, another kind of value; copy it into a new column instead (add the new column, keep or drop the old one)`,
      );
    }
  }
  const unfilled = ddl.filter((c) => !live.has(source(c.name)) && c.name !== pipeline.timeColumn && c.notNull && !c.hasDefault).map((c) => c.name);
  if (unfilled.length > 0) {
    problems.push(
      `migration.ddl adds column${unfilled.length > 1 ? 's' : ''} ${unfilled.join(', ')} as NOT NULL without a DEFAULT, and the copied rows have no value for ${unfilled.length > 1 ? 'them' : 'it'}; give ${unfilled.length > 1 ? 'them' : 'it'} a DEFAULT or let ${unfilled.length > 1 ? 'them' : 'it'} be NULL`,
    );
  }
  const kept = new Map(ddl.map((c) => [c.name, c.type]));
  const renamedTo = new Map(Object.entries(pipeline.migration?.renames ?? {}).map(([to, from]) => [from, to]));
  for (const view of views) {
    const renamed = view.columns.filter((c) => !kept.has(c) && renamedTo.has(c));
    if (renamed.length > 0) {
      problems.push(
        `view ${view.schema}.${view.view} reads column${renamed.length > 1 ? 's' : ''} ${renamed.map((c) => `${c} (renamed to ${renamedTo.get(c)} by migration.renames)`).join(', ')} of ${schema}.${table}, ` +
          `and a bound view's text names the old column; drop the view and re-create it on the new name after the migration, or re-create it WITH NO SCHEMA BINDING, and run the migration again`,
      );
    }
    const dropped = view.columns.filter((c) => !kept.has(c) && !renamedTo.has(c));
    const retyped = view.columns.filter((c) => kept.has(c) && live.has(c) && kept.get(c) !== live.get(c));
    if (dropped.length > 0) {
      problems.push(
        `view ${view.schema}.${view.view} reads column${dropped.length > 1 ? 's' : ''} ${dropped.join(', ')} of ${schema}.${table}, which migration.ddl drops; ` +
          `keep the column in migration.ddl, or change the view so it no longer reads it (or re-create it WITH NO SCHEMA BINDING, a late-binding view the swap does not touch) and run the migration again`,
      );
    }
    if (retyped.length > 0) {
      problems.push(
        `view ${view.schema}.${view.view} reads column${retyped.length > 1 ? 's' : ''} ${retyped.map((c) => `${c} (${live.get(c)} now, ${kept.get(c)} in migration.ddl)`).join(', ')} of ${schema}.${table}, ` +
          `whose type migration.ddl changes, and a bound view's column types cannot change; keep the type, or re-create the view WITH NO SCHEMA BINDING and run the migration again`,
      );
    }
  }
  return problems;
}

/** The refusal of a migration, naming every problem. */
export function migrationRefusal(pipeline: Pipeline, problems: readonly string[]): ValidationError {
  return new ValidationError(`pipeline ${pipeline.name}: migration refused before anything was written: ${problems.join('; ')}`);
}

/**
 * A normal run of a pipeline whose migration has not run yet is refused:
 * its sourceSql produces the new table's columns.
 */
export function unmigratedRefusal(pipeline: Pipeline): ValidationError {
  const { schema, table } = pipeline.target;
  return new ValidationError(
    `pipeline ${pipeline.name}: ${schema}.${table} does not have the columns of migration.ddl yet, and the source query produces those; ` +
      `run the migration first: start an execution with input ${JSON.stringify({ pipeline: pipeline.name, migrate: true })}`,
  );
}

/**
 * What the swap of a migration carries over from the old table: the
 * grants, the comments (of the columns it copies: reapplyStatements), the
 * views and other tables' foreign keys. Not the defaults and the table's own keys:
 * migration.ddl declares the new table's.
 */
export function migrationFacts(facts: LiveTableFacts): LiveTableFacts {
  return {
    ...facts,
    defaults: new Map(),
    keys: [],
    incomingKeys: [],
  };
}
