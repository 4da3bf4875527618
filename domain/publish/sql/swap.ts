/** The SQL of Publish: the swap transaction and the batch state it is judged by. */
import { AttemptStatus, type BatchRef, BatchStatus, ChunkStatus } from '../../batch.ts';
import { ValidationError } from '../../errors.ts';
import { extractColumn } from '../../extract-column.ts';
import { quarantines } from '../../gate/quarantine.ts';
import { stagingWithQuarantinedLiteral } from '../../gate/sql/quarantine.ts';
import { qualifiedCatalogName, qualifiedName, quoteCatalogName, quoteIdent, quoteUser, type Relation, sqlLiteral } from '../../identifiers.ts';
import { recordPublishedFingerprint } from '../../live-watch/sql/live-watch.ts';
import { assertLiveUnchanged, carryOverRows } from '../../live-watch/sql/out-of-band.ts';
import { LOCK_MANIFEST } from '../../manifest/sql/manifest.ts';
import { migrationFacts } from '../../migration/migration.ts';
import { inlineParameters } from '../../redshift-sql/parameters.ts';
import type { Pipeline } from '../../spec.ts';
import { hashedColumns, rowHashValue } from '../../sql/row-hash.ts';
import { MANIFEST as M, MAX_BATCH_STATEMENTS, MAX_SQL_BYTES, type Statement } from '../../sql/statement.ts';
import type { CarryOverCorrections, Grant, LiveTableFacts, MaskingAttachment, RlsAttachment } from '../dependents.ts';
import { boundLockWaits, LOCKS_HELD } from './lock-waits.ts';
import { fitsOneBatch, withinOneBatch } from './one-transaction.ts';

/**
 * The batch (every column: with manifest version 11, `purpose`; a batch
 * planned before it, which Publish may meet right after a deploy, has none
 * and is no check) and its publication, if any.
 */
export function batchState(batchId: string): Statement {
  return {
    sql: `SELECT b.*, p.seq, p.published_at, p.old_version_table, p.rows_published
            FROM ${M}.batches b LEFT JOIN ${M}.publications p ON p.batch_id = b.batch_id
           WHERE b.batch_id = :batch_id`,
    parameters: { batch_id: batchId },
  };
}

/**
 * The views that depend on a table, as amazon-redshift-utils' v_view_dependency
 * finds them: pg_depend rows from a view's rewrite rule (pg_rewrite.ev_class) to
 * the table, `refobjsubid` the column read (0: the whole table); a late-binding
 * view records none. Catalog tables Redshift has
 * (https://docs.aws.amazon.com/redshift/latest/dg/c_join_PG.html).
 * Why: docs/decisions/publishing.md ("Bound views are re-pointed")
 */
function dependentViewsFrom(schema: string, table: string): string {
  return `FROM pg_class t
    JOIN pg_namespace tn ON tn.oid = t.relnamespace
    JOIN pg_depend d ON d.refobjid = t.oid
    JOIN pg_rewrite r ON r.oid = d.objid
    JOIN pg_class v ON v.oid = r.ev_class AND v.oid <> t.oid AND v.relkind = 'v'
    JOIN pg_namespace vn ON vn.oid = v.relnamespace
   WHERE tn.nspname = ${sqlLiteral(schema)} AND t.relname = ${sqlLiteral(table)}`;
}

/** The views that read a table (a retired version, before Cleanup drops it): `view_schema`, `view_name`. */
export function dependentViews(schema: string, table: string): Statement {
  return {
    sql: `SELECT DISTINCT vn.nspname AS view_schema, v.relname AS view_name ${dependentViewsFrom(schema, table)} ORDER BY 1, 2`,
  };
}

/**
 * The tables other than `table` whose FOREIGN KEY references it, with the
 * key, its definition and the referencing table's owner, from pg_constraint
 * (a foreign key follows its referenced table through a rename, and
 * Redshift refuses to drop a table one references:
 * https://docs.aws.amazon.com/redshift/latest/dg/r_DROP_TABLE.html).
 */
function referencingKeysFrom(schema: string, table: string): string {
  return `FROM pg_constraint con
    JOIN pg_class t ON t.oid = con.confrelid
    JOIN pg_namespace tn ON tn.oid = t.relnamespace
    JOIN pg_class r ON r.oid = con.conrelid
    JOIN pg_namespace rn ON rn.oid = r.relnamespace
   WHERE tn.nspname = ${sqlLiteral(schema)} AND t.relname = ${sqlLiteral(table)} AND con.contype = 'f' AND con.conrelid <> con.confrelid`;
}

/** The tables whose foreign key references a table (a retired version, before Cleanup drops it): `table_schema`, `table_name`. */
export function referencingTables(schema: string, table: string): Statement {
  return { sql: `SELECT DISTINCT rn.nspname AS table_schema, r.relname AS table_name ${referencingKeysFrom(schema, table)} ORDER BY 1, 2` };
}

/**
 * What of the live table a new table does not inherit, as (kind, name, detail,
 * extra, fact) rows in `fact` order: `user`, `grant` (SVV_RELATION_PRIVILEGES,
 * https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_RELATION_PRIVILEGES.html),
 * `column_grant`, `default`, `comment`/`view`/`view_column` (digests, never texts),
 * `key`, `incoming_key`, `referencing_key`/`_owner`, `staging_column`. One line with
 * literals: assert_catalog_unchanged re-runs it. Why: docs/decisions/security-policies-through-a-swap.md
 */
export function dependentsFacts(schema: string, table: string, staging: string): Statement {
  const S = sqlLiteral(schema);
  const T = sqlLiteral(table);
  const text = (expression: string) => `CAST(${expression} AS varchar(65535))`;
  const sql = `SELECT kind, name, detail, extra, kind || '|' || name || '|' || detail || '|' || extra AS fact FROM (
      SELECT CAST('user' AS varchar(16)) AS kind, ${text('current_user')} AS name, ${text("''")} AS detail, ${text("''")} AS extra
      UNION ALL
      SELECT 'grant', ${text("identity_type || ':' || identity_name")}, ${text('privilege_type')}, ${text("CASE WHEN admin_option THEN 'admin' ELSE '' END")}
        FROM svv_relation_privileges WHERE namespace_name = ${S} AND relation_name = ${T}
      UNION ALL
      SELECT 'column_grant', ${text("identity_type || ':' || identity_name")}, ${text('privilege_type')}, ${text('column_name')}
        FROM svv_column_privileges WHERE namespace_name = ${S} AND relation_name = ${T}
      UNION ALL
      SELECT 'default', ${text('column_name')}, ${text('column_default')}, ''
        FROM information_schema.columns WHERE table_schema = ${S} AND table_name = ${T} AND column_default IS NOT NULL
      UNION ALL
      SELECT 'comment', ${text("COALESCE(a.attname, '')")}, ${text('md5(d.description)')}, ''
        FROM pg_description d
        JOIN pg_class c ON c.oid = d.objoid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = d.objsubid AND d.objsubid > 0
       WHERE n.nspname = ${S} AND c.relname = ${T}
         AND d.classoid = (SELECT k.oid FROM pg_class k JOIN pg_namespace kn ON kn.oid = k.relnamespace WHERE k.relname = 'pg_class' AND kn.nspname = 'pg_catalog')
      UNION ALL
      SELECT 'view', name, ${text("md5(definition) || ':' || CAST(octet_length(definition) AS varchar(16))")}, owner FROM (
        SELECT DISTINCT ${text("vn.nspname || '.' || v.relname")} AS name, ${text('pg_get_viewdef(v.oid)')} AS definition,
               ${text("COALESCE((SELECT u.usename FROM pg_user u WHERE u.usesysid = v.relowner), '')")} AS owner
          ${dependentViewsFrom(schema, table)}) views
      UNION ALL
      SELECT DISTINCT 'view_column', ${text("vn.nspname || '.' || v.relname")},
             ${text('(SELECT a.attname FROM pg_attribute a WHERE a.attrelid = t.oid AND a.attnum = d.refobjsubid)')}, ''
        ${dependentViewsFrom(schema, table)} AND d.refobjsubid > 0
      UNION ALL
      SELECT 'key', ${text('con.conname')}, ${text('pg_get_constraintdef(con.oid)')}, ${text('con.contype')}
        FROM pg_constraint con
        JOIN pg_class c ON c.oid = con.conrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = ${S} AND c.relname = ${T} AND con.contype IN ('p', 'u', 'f')
      UNION ALL
      SELECT 'incoming_key', ${text('con.conname')}, '', ''
        FROM pg_constraint con
        JOIN pg_class c ON c.oid = con.conrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = ${S} AND c.relname = ${sqlLiteral(staging)} AND con.contype IN ('p', 'u', 'f')
      UNION ALL
      SELECT 'referencing_key', ${text("rn.nspname || '.' || r.relname")}, ${text('con.conname')}, ${text('pg_get_constraintdef(con.oid)')}
        ${referencingKeysFrom(schema, table)}
      UNION ALL
      SELECT DISTINCT 'referencing_owner', ${text("rn.nspname || '.' || r.relname")},
             ${text("COALESCE((SELECT u.usename FROM pg_user u WHERE u.usesysid = r.relowner), '')")}, ''
        ${referencingKeysFrom(schema, table)}
      UNION ALL
      SELECT 'staging_column', ${text('column_name')}, '', ''
        FROM information_schema.columns WHERE table_schema = ${S} AND table_name = ${sqlLiteral(staging)}
    ) facts ORDER BY fact`;
  return { sql: sql.replace(/\s+/g, ' ').trim() };
}

/**
 * The RLS and masking policies attached to the live table, as dependentsFacts
 * rows but read apart, since only superusers and sys:secadmin may read their views
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_RLS_ATTACHED_POLICY.html):
 * `rls` (policy and grantee, `role:analyst`, `user:bob`, `public:`), `rls_on`, and
 * `masking` (policy, grantee, `priority|input columns|output columns`).
 * Why: docs/decisions/security-policies-through-a-swap.md
 */
export function policyFacts(schema: string, table: string, incoming: string): Statement {
  const S = sqlLiteral(schema);
  const text = (expression: string) => `CAST(${expression} AS varchar(65535))`;
  // The incoming table's own (a restored version keeps its policies through the renames): `incoming_` rows.
  const of = (relation: string, prefix: string) => {
    const T = sqlLiteral(relation);
    const kind = (k: string) => `CAST('${prefix}${k}' AS varchar(32))`;
    return `SELECT ${kind('rls')} AS kind, ${text('polname')} AS name, ${text("granteekind || ':' || COALESCE(grantee, '')")} AS detail, ${text("''")} AS extra
        FROM svv_rls_attached_policy WHERE relschema = ${S} AND relname = ${T}
      UNION ALL
      SELECT ${kind('rls_on')}, ${text("''")}, ${text("''")}, ${text("''")}
        FROM svv_rls_relation WHERE relschema = ${S} AND relname = ${T} AND is_rls_on
      UNION ALL
      SELECT ${kind('masking')}, ${text('policy_name')}, ${text("grantee_type || ':' || COALESCE(grantee, '')")},
             ${text("CAST(priority AS varchar(16)) || '|' || input_columns || '|' || output_columns")}
        FROM svv_attached_masking_policy WHERE schema_name = ${S} AND table_name = ${T}`;
  };
  const sql = `SELECT kind, name, detail, extra, kind || '|' || name || '|' || detail || '|' || extra AS fact FROM (
      ${of(table, '')}
      UNION ALL
      ${of(incoming, 'incoming_')}
    ) facts ORDER BY fact`;
  return { sql: sql.replace(/\s+/g, ' ').trim() };
}

/** `GRANT ... TO` a grantee, in Redshift's words (https://docs.aws.amazon.com/redshift/latest/dg/r_GRANT.html). */
function grantee(grant: Pick<Grant, 'identityType' | 'identity'>): string {
  switch (grant.identityType) {
    case 'public':
      return 'PUBLIC';
    case 'group':
      return `GROUP ${quoteCatalogName(grant.identity)}`;
    case 'role':
      return `ROLE ${quoteCatalogName(grant.identity)}`;
    case 'user':
      return quoteCatalogName(grant.identity);
  }
}

/**
 * Grantees in as few statements as `render` allows: one per `key` (a
 * privilege, with or without its grant option, a column set), the
 * grantees listed (GRANT's TO takes a list:
 * https://docs.aws.amazon.com/redshift/latest/dg/r_GRANT.html), a list
 * split where one statement would pass GRANT_LIST_BYTES.
 */
function listedGrants<T>(items: readonly T[], key: (item: T) => string, who: (item: T) => string, render: (first: T, grantees: string) => string): string[] {
  const byKey = new Map<string, { first: T; grantees: string[] }>();
  for (const item of items) {
    const k = key(item);
    const entry = byKey.get(k) ?? { first: item, grantees: [] };
    const g = who(item);
    if (!entry.grantees.includes(g)) entry.grantees.push(g);
    byKey.set(k, entry);
  }
  const statements: string[] = [];
  for (const { first, grantees } of byKey.values()) {
    let list: string[] = [];
    for (const g of grantees) {
      if (list.length > 0 && Buffer.byteLength(list.join(', ') + g, 'utf8') > GRANT_LIST_BYTES) {
        statements.push(render(first, list.join(', ')));
        list = [];
      }
      list.push(g);
    }
    if (list.length > 0) statements.push(render(first, list.join(', ')));
  }
  return statements;
}

/** The most bytes of grantees one GRANT lists (the swap's SQL stays within MAX_SQL_BYTES with room for the rest). */
export const GRANT_LIST_BYTES = 16_384;

/**
 * The swap's statements after the renames that carry what is not a row: one GRANT
 * per privilege listing every grantee, one per privilege and column set, declared
 * keys, other tables' keys re-pointed, the policies attached again (a rename leaves
 * them behind: https://docs.aws.amazon.com/redshift/latest/dg/t_rls_object_dependency.html).
 * Comments and views are swapRenames'; defaults and owner need nothing.
 * Why: docs/decisions/security-policies-through-a-swap.md
 */
export function reapplyStatements(pipeline: Pipeline, facts: LiveTableFacts): string[] {
  const live = qualifiedName(pipeline.target.schema, pipeline.target.table);
  // Only for columns the incoming table has: a migration's new table, or
  // the version from before one that a rollback restores, may lack some.
  const has = (column: string) => facts.stagingColumns.size === 0 || facts.stagingColumns.has(column);
  const own = (g: Pick<Grant, 'identityType' | 'identity'>) => g.identityType === 'user' && g.identity === facts.user;
  const tableGrants = facts.grants.filter((g) => !own(g)).flatMap((g) => g.privileges.map((privilege) => ({ ...g, privilege })));
  const option = (g: Grant) => g.withGrantOption && g.identityType === 'user';
  const statements = listedGrants(
    tableGrants,
    (g) => `${g.privilege}|${option(g)}`,
    grantee,
    (g, list) => `GRANT ${g.privilege} ON TABLE ${live} TO ${list}${option(g) ? ' WITH GRANT OPTION' : ''}`,
  );
  const columnGrants = facts.columnGrants.filter((g) => !own(g) && g.columns.every(has));
  statements.push(
    ...listedGrants(
      columnGrants,
      (g) => `${g.privilege}|${g.columns.join(',')}`,
      grantee,
      (g, list) => `GRANT ${g.privilege} (${g.columns.map(quoteCatalogName).join(', ')}) ON TABLE ${live} TO ${list}`,
    ),
  );
  // Under the constraint's own name: it is the old version's too (a name is
  // unique per table), and tools that name it keep working.
  for (const key of facts.incomingKeys) statements.push(`ALTER TABLE ${live} DROP CONSTRAINT ${quoteCatalogName(key)}`);
  for (const key of facts.keys) {
    statements.push(`ALTER TABLE ${live} ADD CONSTRAINT ${quoteCatalogName(key.name)} ${key.definition}`);
  }
  // A foreign key of another table follows the table it references through
  // the rename: dropped and declared again, its definition (which names the
  // live table) now resolves to the new table.
  for (const key of facts.referencingKeys) {
    const referencing = qualifiedCatalogName(key.schema, key.table);
    statements.push(`ALTER TABLE ${referencing} DROP CONSTRAINT ${quoteCatalogName(key.name)}`);
    statements.push(`ALTER TABLE ${referencing} ADD CONSTRAINT ${quoteCatalogName(key.name)} ${key.definition}`);
  }
  statements.push(...policyStatements(live, facts));
  return statements;
}

/**
 * The policies attached again to the new live table: each RLS policy to all its
 * grantees in one ATTACH (https://docs.aws.amazon.com/redshift/latest/dg/r_ATTACH_RLS_POLICY.html),
 * the RLS switch as live's, each masking policy with its columns and priority.
 * The incoming table's own are kept, those live lacks detached first; a masking
 * policy on columns the incoming table lacks is not attached.
 */
export function policyStatements(live: string, facts: LiveTableFacts): string[] {
  const key = (p: RlsAttachment | MaskingAttachment) => JSON.stringify(p);
  const incoming = new Set([...facts.incoming.rlsPolicies, ...facts.incoming.maskingPolicies].map(key));
  const wanted = new Set([...facts.rlsPolicies, ...facts.maskingPolicies].map(key));
  const columns = (names: readonly string[]) => names.map(quoteCatalogName).join(', ');
  // What the incoming table has of its own and the live table has not, detached first.
  const statements = [
    ...facts.incoming.rlsPolicies
      .filter((p) => !wanted.has(key(p)))
      .map((p) => `DETACH RLS POLICY ${quoteCatalogName(p.policy)} ON TABLE ${live} FROM ${grantee(p)}`),
    ...facts.incoming.maskingPolicies
      .filter((m) => !wanted.has(key(m)))
      .map((m) => `DETACH MASKING POLICY ${quoteCatalogName(m.policy)} ON ${live} (${columns(m.outputColumns)}) FROM ${grantee(m)}`),
  ];
  statements.push(
    ...listedGrants(
      facts.rlsPolicies.filter((p) => !incoming.has(key(p))),
      (p) => p.policy,
      grantee,
      (p, list) => `ATTACH RLS POLICY ${quoteCatalogName(p.policy)} ON TABLE ${live} TO ${list}`,
    ),
  );
  if (facts.rlsOn !== facts.incoming.rlsOn && facts.policiesRead) statements.push(`ALTER TABLE ${live} ROW LEVEL SECURITY ${facts.rlsOn ? 'ON' : 'OFF'}`);
  const has = (column: string) => facts.stagingColumns.size === 0 || facts.stagingColumns.has(column);
  for (const m of facts.maskingPolicies) {
    if (incoming.has(key(m)) || ![...m.outputColumns, ...m.inputColumns].every(has)) continue;
    const using = m.inputColumns.length > 0 ? ` USING (${columns(m.inputColumns)})` : '';
    statements.push(
      `ATTACH MASKING POLICY ${quoteCatalogName(m.policy)} ON ${live} (${columns(m.outputColumns)})${using} TO ${grantee(m)} PRIORITY ${m.priority}`,
    );
  }
  return statements;
}

/**
 * The corrections of the new live table after the swap (domain/publish/dependents.ts
 * carryOverCorrections), as one transaction: the grants revoked and
 * granted, and the comments copied again from the old version.
 */
export function carryOverStatements(pipeline: Pipeline, corrections: CarryOverCorrections, oldVersion: string): string[] {
  const { schema, table } = pipeline.target;
  const live = qualifiedName(schema, table);
  return fitSwap(pipeline, [
    ...corrections.revoke.map((g) => `REVOKE ${g.privileges.join(', ')} ON TABLE ${live} FROM ${grantee(g)}`),
    ...corrections.revokeColumns.map((g) => `REVOKE ${g.privilege} (${g.columns.map(quoteCatalogName).join(', ')}) ON TABLE ${live} FROM ${grantee(g)}`),
    ...reapplyStatements(pipeline, corrections.apply),
    ...(corrections.comments ? [copyComments(schema, oldVersion, table)] : []),
  ]);
}

/** The manifest's copy of every table and column comment of `from` onto `to` (manifest.ts copy_comments). */
export function copyComments(schema: string, from: string, to: string): string {
  return `CALL ${M}.copy_comments(${sqlLiteral(schema)}, ${sqlLiteral(from)}, ${sqlLiteral(to)})`;
}

/** `schema.table` as a pg_class oid, for SVV_TRANSACTIONS.relation (the table id). */
function relationId(schema: string, table: string): string {
  return `SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = ${sqlLiteral(schema)} AND c.relname = ${sqlLiteral(table)}`;
}

/**
 * Other users' open transactions in this database, one row per session: `pid`,
 * `txn_owner`, `txn_start`, `query` (NULL when idle), from SVV_TRANSACTIONS
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_TRANSACTIONS.html) and
 * SYS_QUERY_HISTORY. `snapshotHolders`: those holding no lock on `tables`, whom
 * the swap waits for; `lockHolders`: those holding one, whom a swap that gave up
 * waited for. Why: docs/decisions/publishing.md ("Snapshot readers never see ...")
 */
export function openTransactions(which: { snapshotHolders: readonly Relation[] } | { lockHolders: readonly Relation[] }): Statement {
  const ids = (tables: readonly Relation[]) => tables.map((r) => relationId(r.schema, r.table)).join(' UNION ALL ');
  const filter =
    'snapshotHolders' in which
      ? `t.pid NOT IN (SELECT l.pid FROM svv_transactions l WHERE l.relation IN (${ids(which.snapshotHolders)}))`
      : `t.granted AND t.relation IN (${ids(which.lockHolders)})`;
  const sql = `SELECT t.pid, MAX(t.txn_owner) AS txn_owner, MIN(t.txn_start) AS txn_start, MAX(TRIM(r.query_text)) AS query
      FROM svv_transactions t
      LEFT JOIN sys_query_history r ON r.session_id = t.pid AND r.status IN ('planning', 'queued', 'running', 'returning')
     WHERE t.txn_db = current_database() AND t.pid <> pg_backend_pid() AND t.txn_owner <> current_user AND ${filter}
     GROUP BY t.pid ORDER BY 3, 1`;
  return { sql: sql.replace(/\s+/g, ' ').trim() };
}

/**
 * The locks of what depends on the live table, taken before the live
 * table's (swapLockStatements says why): each bound view (an ALTER TABLE
 * ... OWNER TO its owner) and each table whose foreign keys the swap
 * re-points (their readers may lock them before the live table).
 */
export function dependentLockStatements(facts: LiveTableFacts): string[] {
  return [
    ...facts.views.map((v) => `ALTER TABLE ${qualifiedCatalogName(v.schema, v.view)} OWNER TO ${quoteUser(facts.user)}`),
    ...[...new Set(facts.referencingKeys.map((k) => qualifiedCatalogName(k.schema, k.table)))].map((t) => `LOCK ${t}`),
  ];
}

/**
 * The locks every swap takes first, in this order (Publish's and a
 * rollback's): the statement timeout bounding each lock wait, the table
 * about to become live (`incoming`: staging, or the restored version; no
 * late writer), the views, the live table, the publications; then the
 * bound off.
 */
export function swapLockStatements(pipeline: Pipeline, incoming: string, facts: LiveTableFacts, lockWaitMs: number): string[] {
  const { schema, table } = pipeline.target;
  return [
    // Readers queued behind a lock request wait no longer than this.
    boundLockWaits(lockWaitMs),
    `LOCK ${qualifiedName(schema, incoming)}`,
    // The views before the table, in the order their readers lock them, so no
    // reader deadlocks with the swap. Redshift's LOCK takes no views
    // (https://docs.aws.amazon.com/redshift/latest/dg/r_LOCK.html): an ALTER TABLE
    // ... OWNER TO its own owner takes the view's lock and changes nothing, but
    // takes the snapshot, so carryOverCorrections covers what commits after it.
    // Why: docs/decisions/publishing.md ("Views are locked before the table")
    ...dependentLockStatements(facts),
    // Under the live table's lock, nobody changes its grants, defaults,
    // comments or views until the commit: the catalog check below then
    // compares what the statements were generated from with what is.
    `LOCK ${qualifiedName(schema, table)}`,
    // The manifest last: it is shared by every pipeline, and held only from
    // here to the commit (no reader of this pipeline is waited for while
    // holding it), so the swaps of different pipelines never wait for each
    // other's readers. Publishers of one pipeline are kept one at a time by
    // the live table's lock above.
    `LOCK ${M}.publications`,
    LOCKS_HELD,
  ];
}

/**
 * The heart of every swap, after its locks and its guard: the catalog
 * check, `checks` (Publish's out-of-band check and carry-over), the bound
 * views' definitions captured, live renamed to `retainedAs`, `incoming`
 * renamed to live, the views re-created over it, the comments copied, and
 * the grants, keys and policies re-applied.
 */
export function swapRenames(
  pipeline: Pipeline,
  incoming: string,
  retainedAs: string,
  facts: LiveTableFacts,
  factsQuery: Statement,
  checks: readonly string[] = [],
): string[] {
  const { schema, table } = pipeline.target;
  return [
    catalogCheck(pipeline, facts, factsQuery),
    ...checks,
    ...captureViews(pipeline, facts),
    ...renameStatements(pipeline, incoming, retainedAs),
    ...recreateViews(facts),
    ...(facts.commented ? [copyComments(schema, retainedAs, table)] : []),
    ...reapplyStatements(pipeline, facts),
  ];
}

/**
 * The bound views' definitions, kept (manifest.ts capture_views) before
 * the renames: each view is re-created from its own text after them
 * (recreateViews), which names the live table and then resolves to the
 * new one. None when the table has no bound view.
 */
export function captureViews(pipeline: Pipeline, facts: LiveTableFacts): string[] {
  const { schema, table } = pipeline.target;
  return facts.views.length === 0 ? [] : [`CALL ${M}.capture_views(${sqlLiteral(schema)}, ${sqlLiteral(table)})`];
}

/** Every view captured in this transaction re-created by CREATE OR REPLACE VIEW (manifest.ts recreate_views): the same view, its grants, owner and comment kept. */
export function recreateViews(facts: LiveTableFacts | readonly LiveTableFacts[]): string[] {
  const all = Array.isArray(facts) ? facts : [facts as LiveTableFacts];
  return all.some((f) => f.views.length > 0) ? [`CALL ${M}.recreate_views()`] : [];
}

/** The swap's catalog check: the live table's dependents are still what `facts` were read as (else CATALOG_CHANGED). */
export function catalogCheck(pipeline: Pipeline, facts: LiveTableFacts, factsQuery: Statement): string {
  const { schema, table } = pipeline.target;
  return `CALL ${M}.assert_catalog_unchanged(${sqlLiteral(factsQuery.sql)}, ${sqlLiteral(facts.fingerprint)}, ${sqlLiteral(`the grants, defaults, comments or views of ${schema}.${table}`)})`;
}

/** The two renames: live to `retainedAs`, `incoming` to live. */
export function renameStatements(pipeline: Pipeline, incoming: string, retainedAs: string): string[] {
  const { schema, table } = pipeline.target;
  return [
    `ALTER TABLE ${qualifiedName(schema, table)} RENAME TO ${quoteIdent(retainedAs)}`,
    `ALTER TABLE ${qualifiedName(schema, incoming)} RENAME TO ${quoteIdent(table)}`,
  ];
}

/**
 * The publications row of a swap: the next seq of the pipeline, the batch
 * now live, where the old version went, the rows Reconcile checked (or,
 * `countLive`, the rows of the new live table: expected writers' rows were
 * carried into it; `rowsOf`, the rows of that table: what a rollback of
 * some intervals put back), and for a rollback the publication it rolled
 * back.
 */
export function recordPublication(
  pipeline: Pipeline,
  batchId: string,
  retainedAs: string,
  now: Date,
  options: { readonly rollbackOf?: number; readonly countLive?: boolean; readonly rowsOf?: Relation } = {},
): string {
  const { schema, table } = pipeline.target;
  const name = sqlLiteral(pipeline.name);
  const id = sqlLiteral(batchId);
  const { rollbackOf, countLive = false, rowsOf } = options;
  const rollback = rollbackOf === undefined ? { column: '', value: '' } : { column: ', rollback_of', value: `, ${sqlLiteral(rollbackOf)}` };
  const rows = rowsOf
    ? `(SELECT COUNT(*) FROM ${qualifiedName(rowsOf.schema, rowsOf.table)})`
    : countLive
      ? `(SELECT COUNT(*) FROM ${qualifiedName(schema, table)})`
      : `(SELECT rows_written FROM ${M}.batches WHERE batch_id = ${id})`;
  const ofBatch = (column: string) => `(SELECT ${column} FROM ${M}.batches WHERE batch_id = ${id})`;
  // A restatement's number, which its event tells (version 11); a rollback is none.
  const restatement = rollbackOf === undefined ? ofBatch('restatement') : 'NULL';
  return `INSERT INTO ${M}.publications (pipeline, seq, batch_id, published_at, live_table, old_version_table, rows_published,
                                          publish_mode, interval_start, interval_end, restatement${rollback.column})
     SELECT ${name}, COALESCE(MAX(seq), 0) + 1, ${id}, ${sqlLiteral(now)}, ${sqlLiteral(`${schema}.${table}`)},
            ${sqlLiteral(`${schema}.${retainedAs}`)},
            ${rows}, ${ofBatch('mode')}, ${ofBatch('interval_start')}, ${ofBatch('interval_end')}, ${restatement}${rollback.value}
       FROM ${M}.publications WHERE pipeline = ${name}`;
}

/**
 * A swap transaction as it goes (one-transaction.ts withinOneBatch: its
 * carry-over statements packed when there are too many), refused when it
 * is still over the Data API's limits for one BatchExecuteStatement.
 */
export function fitSwap(pipeline: Pipeline, statements: readonly string[]): string[] {
  const fitted = withinOneBatch(statements);
  if (!fitsOneBatch(fitted)) {
    const { schema, table } = pipeline.target;
    const bytes = fitted.reduce((sum, sql) => sum + Buffer.byteLength(sql, 'utf8'), 0);
    throw new ValidationError(
      `the swap of ${schema}.${table} would be ${fitted.length} statements and ${bytes} bytes of SQL, over the Data API's ` +
        `${MAX_BATCH_STATEMENTS} statements / ${MAX_SQL_BYTES} bytes for one transaction: too many grantees, keys or policies to carry over`,
    );
  }
  return fitted;
}

/**
 * The last statements of a publish transaction: the publication (its old
 * version `schema.retainedAs`), the attempt and the batch PUBLISHED.
 */
export function recordPublished(pipeline: Pipeline, batchId: string, retainedAs: string, now: Date, countLive = false): string[] {
  const id = sqlLiteral(batchId);
  return [
    recordPublication(pipeline, batchId, retainedAs, now, { countLive }),
    `UPDATE ${M}.batch_attempts SET status = ${sqlLiteral(AttemptStatus.PUBLISHED)}, finished_at = ${sqlLiteral(now)}
      WHERE batch_id = ${id} AND attempt = (SELECT attempt FROM ${M}.batches WHERE batch_id = ${id})`,
    `UPDATE ${M}.batches SET status = ${sqlLiteral(BatchStatus.PUBLISHED)}, finished_at = ${sqlLiteral(now)} WHERE batch_id = ${id}`,
  ];
}

/**
 * The swap, as ONE transaction: lock staging (no late writer); check nothing was published since
 * this batch was planned, nothing newer is live, and staging still holds
 * the rows Reconcile checked; rename live to its retained old version and
 * staging to live; record it all.
 */
export function swapPublish(
  pipeline: Pipeline,
  batch: BatchRef,
  previousVersionTable: string,
  now: Date,
  facts: LiveTableFacts,
  factsQuery: Statement,
  lockWaitMs: number,
  /** A watched pipeline's: staging's fingerprint, read before the transaction (domain/live-watch/sql/live-watch.ts stagingFingerprintQuery). */
  stagingFingerprint?: string,
): string[] {
  const statements = [
    ...swapLockStatements(pipeline, batch.stagingTable, facts, lockWaitMs),
    publishGuard(pipeline, batch),
    ...swapRenames(
      pipeline,
      batch.stagingTable,
      previousVersionTable,
      pipeline.migrating ? migrationFacts(facts) : facts,
      factsQuery,
      liveCheckStatements(pipeline, batch),
    ),
    ...recordPublished(pipeline, batch.batchId, previousVersionTable, now, batch.live?.carryFrom !== undefined),
    // Staging, now live, was created like the live table Plan fingerprinted: its columns are the baseline's.
    ...(stagingFingerprint !== undefined && batch.live
      ? [recordPublishedFingerprint(pipeline, batch.live.columns, stagingFingerprint, batch.live.carryFrom)]
      : []),
  ];
  return fitSwap(pipeline, statements);
}

/** The publish guard of a batch (manifest.ts assert_publishable), run under the swap's locks. */
export function publishGuard(pipeline: Pipeline, batch: BatchRef): string {
  return `CALL ${M}.assert_publishable(${sqlLiteral(pipeline.name)}, ${sqlLiteral(batch.batchId)}, ${sqlLiteral(batch.basePublication)}, ${sqlLiteral(pipeline.target.schema)}, ${sqlLiteral(batch.stagingTable)})`;
}

/**
 * A batch's out-of-band check and expected writers' carry-over (none for a
 * batch planned without a baseline), after the guard and before the
 * renames, under the live table's lock: the live table's columns and
 * fingerprint must be what this batch's Plan saw (domain/live-watch/out-of-band.ts);
 * with expected writers, their rows at or after the batch end are then
 * carried into staging.
 */
export function liveCheckStatements(pipeline: Pipeline, batch: BatchRef): string[] {
  const { live } = batch;
  if (live === undefined) return [];
  return [
    assertLiveUnchanged(pipeline, live),
    // A migration copies the columns both tables have; new ones take their DEFAULT.
    ...(live.carryFrom === undefined
      ? []
      : [carryOverRows(pipeline, batch.stagingTable, pipeline.migrating?.columns ?? live.columns, live.carryFrom, pipeline.migrating?.from ?? live.columns)]),
  ];
}

/**
 * Ends a batch whose data is older than what its pipeline already
 * publishes: the batch and its current attempt SUPERSEDED, with the guard's
 * words (never a published batch).
 */
export function markSuperseded(batchId: string, reason: string, now: Date): string[] {
  const id = sqlLiteral(batchId);
  const PUBLISHED = sqlLiteral(BatchStatus.PUBLISHED);
  return [
    LOCK_MANIFEST,
    `UPDATE ${M}.batch_attempts SET status = ${sqlLiteral(AttemptStatus.SUPERSEDED)}, finished_at = ${sqlLiteral(now)}, error = ${sqlLiteral(reason)}
      WHERE batch_id = ${id} AND attempt = (SELECT attempt FROM ${M}.batches WHERE batch_id = ${id} AND status <> ${PUBLISHED})`,
    `UPDATE ${M}.batches SET status = ${sqlLiteral(BatchStatus.SUPERSEDED)}, finished_at = ${sqlLiteral(now)}, error = ${sqlLiteral(reason)}
      WHERE batch_id = ${id} AND status <> ${PUBLISHED}`,
  ];
}

/**
 * A restatement's comparison, in one read: `<rows>:<checksum>` of staging
 * and of the live rows it would replace, with the gate's row hash
 * (domain/sql/row-hash.ts rowHashValue) over `columns`
 * (`name type` texts of the live table). A swap replaces the whole table
 * (with expected writers, only the rows before the batch end); a replace
 * of intervals or a merge, the rows of the batch's interval.
 */
export function restatementFingerprints(pipeline: Pipeline, batch: BatchRef, columns: readonly string[]): Statement {
  const { schema, table } = pipeline.target;
  const t = quoteIdent(pipeline.timeColumn);
  const carryFrom = batch.live?.carryFrom;
  const where =
    pipeline.publishMode !== 'swap'
      ? ` WHERE ${t} >= ${sqlLiteral(new Date(batch.from))} AND ${t} < ${sqlLiteral(new Date(batch.to))}`
      : carryFrom === undefined
        ? ''
        : ` WHERE ${t} IS NULL OR ${t} < ${sqlLiteral(new Date(carryFrom))}`;
  const fingerprint = (from: string) =>
    `(SELECT CAST(COUNT(*) AS varchar(32)) || ':' || CAST(COALESCE(SUM(v), 0) AS varchar(64)) FROM (SELECT ${rowHashValue(columns)} AS v FROM ${from}) AS r)`;
  const sql = `SELECT ${fingerprint(qualifiedName(schema, batch.stagingTable))} AS staged, ${fingerprint(`${qualifiedName(schema, table)}${where}`)} AS live`;
  return { sql: sql.replace(/\s+/g, ' ').trim() };
}

/** A batch's newest chunk, where late source changes land: its index and bounds (chunk_state). */
export function newestChunk(batchId: string): Statement {
  return {
    sql: `SELECT chunk_index, interval_start, interval_end FROM ${M}.chunk_state WHERE batch_id = :batch_id ORDER BY chunk_index DESC LIMIT 1`,
    parameters: { batch_id: batchId },
  };
}

/** A chunk of a batch: its index and bounds. */
export interface ChunkBounds {
  readonly index: number;
  readonly start: Date;
  readonly end: Date;
}

/**
 * `<rows>:<checksum>` of `rows` (a table or a subquery) placed in the chunk
 * by the column chunks are placed by, with Reconcile's per-row digest
 * (domain/gate/sql/reconcile.ts gateAggregates: each value cast to the staging
 * column's type); rows only, with `checks.contentChecksum` off.
 */
function chunkFingerprintSql(pipeline: Pipeline, rows: string, columns: readonly string[], chunk: ChunkBounds): string {
  const t = quoteIdent(extractColumn(pipeline));
  const hashed = pipeline.checks.contentChecksum ? hashedColumns(columns) : [];
  const value = hashed.length > 0 ? rowHashValue(hashed, 's', true) : '0';
  return `SELECT CAST(COUNT(*) AS varchar(32)) || ':' || CAST(COALESCE(SUM(r.v), 0) AS varchar(64)) AS fp FROM (SELECT ${value} AS v FROM ${rows} AS s WHERE s.${t} >= ${sqlLiteral(chunk.start)} AND s.${t} < ${sqlLiteral(chunk.end)}) AS r`;
}

/**
 * Staging's fingerprint of the chunk, which the publish transaction's
 * re-check expects of the source: with the quarantine, of staging and the
 * chunk's quarantined rows together (the source still holds those).
 */
export function stagingChunkFingerprint(pipeline: Pipeline, batch: BatchRef, columns: readonly string[], chunk: ChunkBounds): Statement {
  const rows = quarantines(pipeline)
    ? stagingWithQuarantinedLiteral(
        pipeline,
        batch,
        columns.map((c) => c.split(' ')[0]!),
      )
    : qualifiedName(pipeline.target.schema, batch.stagingTable);
  return { sql: chunkFingerprintSql(pipeline, rows, columns, chunk) };
}

/**
 * The re-check of the source inside the publish transaction, after the guard:
 * assert_source_unchanged raises `source changed: ...` unless the chunk's source
 * fingerprint is `expected` (staging's). `:start`/`:end` become literals (EXECUTE
 * binds none). Undefined, and nothing re-checked, when inlineParameters cannot
 * write the query so or it outgrows the procedure's argument.
 * Why: docs/decisions/re-checking-the-source-in-the-publish-transaction.md
 */
export function sourceRecheck(pipeline: Pipeline, batch: BatchRef, columns: readonly string[], chunk: ChunkBounds, expected: string): string[] | undefined {
  const source = inlineParameters(pipeline.sourceSql, { start: sqlLiteral(chunk.start), end: sqlLiteral(chunk.end) });
  if (source === undefined) return undefined;
  const query = chunkFingerprintSql(pipeline, `(${source} )`, columns, chunk);
  if (Buffer.byteLength(query) > 65535) return undefined;
  const what = `chunk #${chunk.index} (${chunk.start.toISOString()} to ${chunk.end.toISOString()}) of batch ${batch.batchId}`;
  return [`CALL ${M}.assert_source_unchanged(${sqlLiteral(what)}, ${sqlLiteral(query)}, ${sqlLiteral(expected)})`];
}

/** A publish transaction's statements with the source re-check right after the batch's guard. */
export function withSourceRecheck(statements: readonly string[], pipeline: Pipeline, batch: BatchRef, recheck: readonly string[]): string[] {
  if (recheck.length === 0) return [...statements];
  const at = statements.indexOf(publishGuard(pipeline, batch));
  if (at < 0) throw new Error(`the publish transaction of batch ${batch.batchId} has no guard to re-check the source after`);
  return [...statements.slice(0, at + 1), ...recheck, ...statements.slice(at + 1)];
}

/** The source's newest chunk changed under Publish: a new generation, STALE, so the next run reloads it (as Reconcile marks a chunk). */
export function markNewestChunkStale(batchId: string): string[] {
  const id = sqlLiteral(batchId);
  return [
    LOCK_MANIFEST,
    `UPDATE ${M}.chunks SET status = ${sqlLiteral(ChunkStatus.STALE)}, attempt = attempt + 1
      WHERE batch_id = ${id} AND chunk_index = (SELECT MAX(chunk_index) FROM ${M}.chunks WHERE batch_id = ${id})`,
  ];
}
