/**
 * The SQL of a publish through a view (`publishVia: 'view'`): the live name
 * is a bound view over one version table, `<table>__v_<batch id>`, and a
 * publish points it at the next version with one CREATE OR REPLACE VIEW.
 * Nothing a reader reads is renamed.
 */
import type { BatchRef } from '../../batch.ts';
import { qualifiedName, quoteIdent, quoteUser, sqlLiteral } from '../../identifiers.ts';
import type { Pipeline } from '../../spec.ts';
import { MANIFEST as M, type Statement } from '../../sql/statement.ts';
import { factsFingerprint } from '../dependents.ts';
import { boundLockWaits, LOCKS_HELD } from './lock-waits.ts';
import { recordPublished } from './swap.ts';

/** The name of the version table a fresh view starts from (migrationSql). */
export const INITIAL_VERSION_SUFFIX = '__v_initial';

/**
 * What the live name is, as (kind, name, fact) rows in `fact` order: `user`,
 * `relkind` (`r`, `v`; none when nothing has the name), `column`
 * (`<position>:<name>`, zero-padded) and a view's `reads` (pg_depend from its
 * pg_rewrite rule, as amazon-redshift-utils' v_view_dependency reads it). Only
 * catalog tables Redshift has (https://docs.aws.amazon.com/redshift/latest/dg/c_join_PG.html).
 * One line with literals: assert_catalog_unchanged re-runs it. Why: docs/decisions/publishing-through-a-view.md
 */
export function liveRelation(schema: string, table: string): Statement {
  const S = sqlLiteral(schema);
  const T = sqlLiteral(table);
  const text = (expression: string) => `CAST(${expression} AS varchar(65535))`;
  const sql = `SELECT kind, name, kind || '|' || name AS fact FROM (
      SELECT CAST('user' AS varchar(16)) AS kind, ${text('current_user')} AS name
      UNION ALL
      SELECT 'relkind', ${text('c.relkind')}
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = ${S} AND c.relname = ${T}
      UNION ALL
      SELECT 'column', ${text("LPAD(CAST(ordinal_position AS varchar(8)), 5, '0') || ':' || column_name")}
        FROM information_schema.columns WHERE table_schema = ${S} AND table_name = ${T}
      UNION ALL
      SELECT DISTINCT 'reads', ${text("tn.nspname || '.' || t.relname")}
        FROM pg_class v
        JOIN pg_namespace vn ON vn.oid = v.relnamespace
        JOIN pg_rewrite r ON r.ev_class = v.oid
        JOIN pg_depend d ON d.objid = r.oid
        JOIN pg_class t ON t.oid = d.refobjid AND t.oid <> v.oid
        JOIN pg_namespace tn ON tn.oid = t.relnamespace
       WHERE vn.nspname = ${S} AND v.relname = ${T} AND v.relkind = 'v'
         AND d.refclassid = (SELECT k.oid FROM pg_class k JOIN pg_namespace kn ON kn.oid = k.relnamespace WHERE k.relname = 'pg_class' AND kn.nspname = 'pg_catalog')
    ) facts ORDER BY fact`;
  return { sql: sql.replace(/\s+/g, ' ').trim() };
}

/** liveRelation's rows, read. */
export interface LiveRelation {
  readonly user: string;
  /** 'r' table, 'v' view, undefined when nothing has the name. */
  readonly relkind?: string;
  readonly columns: readonly string[];
  /** `schema.table` of each relation a view reads. */
  readonly reads: readonly string[];
  readonly fingerprint: string;
}

export function readLiveRelation(rows: readonly Record<string, unknown>[]): LiveRelation {
  const of = (kind: string) => rows.filter((r) => r.kind === kind).map((r) => String(r.name));
  return {
    user: of('user')[0] ?? '',
    ...(of('relkind')[0] !== undefined ? { relkind: of('relkind')[0] } : {}),
    columns: of('column').map((c) => c.slice(c.indexOf(':') + 1)),
    reads: of('reads'),
    fingerprint: factsFingerprint(rows.map((r) => String(r.fact ?? ''))),
  };
}

/**
 * The version table a live view reads, or why the live name cannot be
 * published through a view: it is a table (then the SQL that turns it into
 * one), or a view over something else than one version table of its own.
 */
export function viewVersionProblem(pipeline: Pipeline, live: LiveRelation): { version: string } | { problem: string } {
  const { schema, table } = pipeline.target;
  const name = `${schema}.${table}`;
  if (live.relkind === 'v') {
    const versions = live.reads.filter((r) => r.startsWith(`${schema}.${table}__v_`));
    if (live.reads.length === 1 && versions.length === 1) return { version: versions[0]!.slice(schema.length + 1) };
    return {
      problem:
        `pipeline ${pipeline.name} publishes through a view, and ${name} is a view that reads ${live.reads.join(', ') || 'no table'}, ` +
        `not exactly one version table ${name}__v_<batch id>: publishing would replace what it shows. Point it at one version table first.`,
    };
  }
  if (live.relkind === 'r') {
    return {
      problem:
        `pipeline ${pipeline.name} publishes through a view (publishVia: 'view'), and ${name} is a table. ` +
        `Turn it into a view over its first version once, as ${quoteUser(live.user)}, in one transaction (readers wait for it for a moment, ` +
        `and need SELECT on the view only afterwards): ${migrationSql(pipeline, live.columns).join('; ')}; ` +
        `then re-grant on the view what was granted on the table (SVV_RELATION_PRIVILEGES), or leave publishVia at 'rename'.`,
    };
  }
  return { problem: `pipeline ${pipeline.name}: ${name} does not exist; create it (a view over ${name}${INITIAL_VERSION_SUFFIX}) before the first run` };
}

/** The one-time SQL that turns the live table into a view over its first version table. */
export function migrationSql(pipeline: Pipeline, columns: readonly string[]): string[] {
  const { schema, table } = pipeline.target;
  const initial = `${table}${INITIAL_VERSION_SUFFIX}`;
  return [
    'BEGIN',
    `ALTER TABLE ${qualifiedName(schema, table)} RENAME TO ${quoteIdent(initial)}`,
    `CREATE VIEW ${qualifiedName(schema, table)} AS ${viewQuery(schema, initial, columns)}`,
    'COMMIT',
  ];
}

/** The live view's query: the columns, in order, of one version table. */
function viewQuery(schema: string, version: string, columns: readonly string[]): string {
  return `SELECT ${columns.map(quoteIdent).join(', ')} FROM ${qualifiedName(schema, version)}`;
}

/**
 * The publish as ONE transaction: staging, the view and the publications locked;
 * the guard and the check that the view is still what Publish read; staging
 * renamed to its version name; `CREATE OR REPLACE VIEW` onto it (keeps owner and
 * grants; same column names and types, as a version LIKE the one before has:
 * https://docs.aws.amazon.com/redshift/latest/dg/r_CREATE_VIEW.html); the
 * publication recorded. Why: docs/decisions/publishing-through-a-view.md
 */
export interface ViewSwitch {
  /** What Publish read of the live view (liveRelation), with the query the transaction re-checks it by. */
  readonly live: LiveRelation;
  readonly factsQuery: Statement;
  /** The version table the view reads until now (recorded as the publication's old version). */
  readonly previousVersion: string;
  /** The name staging takes, which the view reads from now on. */
  readonly versionTable: string;
  readonly now: Date;
  readonly lockWaitMs: number;
}

export function switchView(pipeline: Pipeline, batch: BatchRef, change: ViewSwitch): string[] {
  const { live, factsQuery, previousVersion, versionTable, now, lockWaitMs } = change;
  const { schema, table } = pipeline.target;
  const id = sqlLiteral(batch.batchId);
  const name = sqlLiteral(pipeline.name);
  return [
    // As in the rename swap (publish.ts swapLockStatements): each lock wait bounded, then the work unbounded.
    boundLockWaits(lockWaitMs),
    `LOCK ${qualifiedName(schema, batch.stagingTable)}`,
    // Redshift's LOCK takes no views (https://docs.aws.amazon.com/redshift/latest/dg/r_LOCK.html):
    // an OWNER TO the owner it has takes the view's exclusive lock and
    // changes nothing (Plan checked that the handlers' user owns it).
    `ALTER TABLE ${qualifiedName(schema, table)} OWNER TO ${quoteUser(live.user)}`,
    `LOCK ${M}.publications`,
    LOCKS_HELD,
    `CALL ${M}.assert_publishable(${name}, ${id}, ${sqlLiteral(batch.basePublication)}, ${sqlLiteral(schema)}, ${sqlLiteral(batch.stagingTable)})`,
    `CALL ${M}.assert_catalog_unchanged(${sqlLiteral(factsQuery.sql)}, ${sqlLiteral(live.fingerprint)}, ${sqlLiteral(`the view ${schema}.${table} (the version it reads, its columns)`)})`,
    `ALTER TABLE ${qualifiedName(schema, batch.stagingTable)} RENAME TO ${quoteIdent(versionTable)}`,
    `CREATE OR REPLACE VIEW ${qualifiedName(schema, table)} AS ${viewQuery(schema, versionTable, live.columns)}`,
    ...recordPublished(pipeline, batch.batchId, previousVersion, now),
  ];
}
