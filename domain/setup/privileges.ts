/**
 * What the handlers' database user needs for one pipeline: the one list the
 * setup SQL grants (domain/setup/sql/setup.ts) and Plan checks before it writes
 * anything, as Redshift's GRANT page has it
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_GRANT.html): CREATE on the
 * database, USAGE and CREATE on a schema, the live table's ownership, SELECT on
 * what is read. Why: docs/decisions/privileges-and-the-database-user.md
 */

import { MissingPrivilegeError, ValidationError } from '../errors.ts';
import { STAGING_PLACEHOLDER } from '../gate/config.ts';
import { qualifiedName, type Relation } from '../identifiers.ts';
import { sourceTables } from '../redshift-sql/source-sql.ts';
import type { Pipeline } from '../spec.ts';
import { MANIFEST_SCHEMA } from '../sql/statement.ts';

export type Requirement =
  | { readonly kind: 'database'; readonly privilege: 'CREATE'; readonly reason: string }
  | { readonly kind: 'schema'; readonly privilege: 'USAGE' | 'CREATE'; readonly schema: string; readonly reason: string }
  | { readonly kind: 'owner'; readonly schema: string; readonly table: string; readonly reason: string }
  | { readonly kind: 'table'; readonly privilege: 'SELECT'; readonly schema: string; readonly table: string; readonly reason: string }
  | { readonly kind: 'column'; readonly privilege: 'UPDATE'; readonly schema: string; readonly table: string; readonly column: string; readonly reason: string }
  | { readonly kind: 'syslog'; readonly reason: string };

/**
 * The tables and views a pipeline's source query reads. Each must name its
 * schema: the grants and the check must name the table the query reads, and
 * an unqualified name resolves through the user's search_path, which the
 * setup cannot see.
 */
export function sourceRelations(pipeline: Pipeline): Relation[] {
  return sourceTables(pipeline.sourceSql).map(({ schema, table }) => {
    if (schema === undefined) {
      throw new ValidationError(
        `pipeline ${pipeline.name}: sourceSql reads ${table} without a schema; qualify it (schema.${table}) so that the grants name the table the query reads`,
      );
    }
    return { schema, table };
  });
}

/**
 * The tables the declared checks read besides staging: each references'
 * parent, and what each custom check's SQL reads (its `{staging}` stands
 * for a table of the target schema the user creates, so needs nothing
 * more). They must name their schema, as the source's tables must.
 */
export function checkRelations(pipeline: Pipeline): Relation[] {
  const { schema, table } = pipeline.target;
  const found: Relation[] = pipeline.checks.references.map((c) => ({ schema: c.parent.schema, table: c.parent.table }));
  for (const check of pipeline.checks.sql) {
    for (const read of sourceTables(check.sql.replaceAll(STAGING_PLACEHOLDER, qualifiedName(schema, table)))) {
      if (read.schema === undefined) {
        throw new ValidationError(
          `pipeline ${pipeline.name}: check sql:${check.name} reads ${read.table} without a schema; qualify it (schema.${read.table}), or name staging as ${STAGING_PLACEHOLDER}`,
        );
      }
      if (read.schema !== schema || read.table !== table) found.push({ schema: read.schema, table: read.table });
    }
  }
  return found;
}

/** Every privilege the pipeline's database user needs, each once, in the order the setup grants them. */
export function requiredPrivileges(pipeline: Pipeline): Requirement[] {
  const { schema, table } = pipeline.target;
  const read = sourceRelations(pipeline);
  const sources = [...read];
  for (const r of checkRelations(pipeline)) if (!sources.some((s) => relationKey(s) === relationKey(r))) sources.push(r);
  const required: Requirement[] = [
    { kind: 'database', privilege: 'CREATE', reason: `to create the ${MANIFEST_SCHEMA} schema` },
    { kind: 'schema', privilege: 'USAGE', schema, reason: 'to reach the live and staging tables' },
    { kind: 'schema', privilege: 'CREATE', schema, reason: 'to create staging tables' },
    { kind: 'owner', schema, table, reason: 'to rename it in the publish and drop its old versions' },
    {
      kind: 'syslog',
      reason: `to see every grant on ${schema}.${table} in SVV_RELATION_PRIVILEGES (a regular user sees only its own), so that the publish carries them all over`,
    },
  ];
  for (const source of sources) {
    if (!required.some((r) => r.kind === 'schema' && r.privilege === 'USAGE' && r.schema === source.schema)) {
      required.push({ kind: 'schema', privilege: 'USAGE', schema: source.schema, reason: 'to reach the source tables' });
    }
  }
  for (const source of sources) {
    required.push({ kind: 'table', privilege: 'SELECT', ...source, reason: read.includes(source) ? 'to read the source' : 'to run the declared checks' });
  }
  return required;
}

/**
 * What the freshness monitor's database user needs (lib/freshness-monitor.ts):
 * to read the live table (its newest event time; with outOfBand.watch, its
 * fingerprint) and the manifest's publications (when the live data was
 * published, what it was published as) and, when watched, the leases; to
 * write one column, the publications' `event_sent_at` (an event it
 * redelivered). The manifest schema exists once the first run's Plan created it.
 */
export function monitorPrivileges(pipeline: Pipeline): Requirement[] {
  const { schema, table } = pipeline.target;
  return [
    { kind: 'schema', privilege: 'USAGE', schema, reason: 'to reach the live table' },
    { kind: 'table', privilege: 'SELECT', schema, table, reason: 'to read its newest event time (the data lag)' },
    { kind: 'schema', privilege: 'USAGE', schema: MANIFEST_SCHEMA, reason: 'to reach the manifest (it exists after the first run)' },
    {
      kind: 'table',
      privilege: 'SELECT',
      schema: MANIFEST_SCHEMA,
      table: 'publications',
      reason: 'to read when the live data was published (the publish age)',
    },
    // Column-level: the monitor can mark an event sent and change nothing else
    // (https://docs.aws.amazon.com/redshift/latest/dg/r_GRANT.html, column-level privileges).
    {
      kind: 'column',
      privilege: 'UPDATE',
      schema: MANIFEST_SCHEMA,
      table: 'publications',
      column: 'event_sent_at',
      reason: 'to mark a publication event it redelivered as sent (functions/commons/event-delivery.ts)',
    },
    // The live watch (outOfBand.watch) fingerprints the live table with the SELECT above.
    ...(pipeline.outOfBand.watch
      ? [
          {
            kind: 'table',
            privilege: 'SELECT',
            schema: MANIFEST_SCHEMA,
            table: 'pipeline_leases',
            reason: 'to leave the live table alone while a run holds the lease (the live watch)',
          } as const,
        ]
      : []),
  ];
}

/** What the warehouse says the current user holds; an object it does not list (absent, or not asked yet) is not judged. */
export interface PrivilegeFacts {
  readonly user: string;
  readonly databaseCreate: boolean;
  readonly schemas: ReadonlyMap<string, { readonly usage: boolean; readonly create: boolean }>;
  readonly relations?: ReadonlyMap<string, { readonly owner: string; readonly select: boolean }>;
}

export function relationKey(relation: Relation): string {
  return `${relation.schema}.${relation.table}`;
}

/** The requirements the facts show missing. */
export function missingPrivileges(required: readonly Requirement[], facts: PrivilegeFacts): Requirement[] {
  return required.filter((r) => {
    switch (r.kind) {
      case 'database':
        return !facts.databaseCreate;
      case 'schema': {
        const held = facts.schemas.get(r.schema);
        return held !== undefined && !(r.privilege === 'USAGE' ? held.usage : held.create);
      }
      case 'owner': {
        const held = facts.relations?.get(relationKey(r));
        return held !== undefined && held.owner !== facts.user;
      }
      case 'table': {
        const held = facts.relations?.get(relationKey(r));
        return held !== undefined && !held.select;
      }
      case 'column':
        // Not judged: only the monitor's, which Plan does not check.
        return false;
      case 'syslog':
        // Not judged: SVL_USER_INFO.syslogaccess is a superuser's only, and on a
        // provisioned cluster only (https://docs.aws.amazon.com/redshift/latest/dg/r_SVL_USER_INFO.html,
        // https://docs.aws.amazon.com/redshift/latest/dg/c_intro_system_views.html).
        return false;
    }
  });
}

/** One requirement in words: `USAGE on schema analytics`. */
export function describeRequirement(r: Requirement): string {
  switch (r.kind) {
    case 'database':
      return 'CREATE on the database';
    case 'schema':
      return `${r.privilege} on schema ${r.schema}`;
    case 'owner':
      return `ownership of table ${relationKey(r)}`;
    case 'table':
      return `SELECT on ${relationKey(r)}`;
    case 'column':
      return `${r.privilege} (${r.column}) on ${relationKey(r)}`;
    case 'syslog':
      return 'SYSLOG ACCESS UNRESTRICTED';
  }
}

/** The command that prints the setup SQL for a pipeline and user. */
export function setupCommand(pipeline: string, user: string): string {
  return `npm run setup-sql -- --pipeline ${pipeline} --user '${user}'`;
}

/** The error naming every missing privilege, the object, the user, and the setup that grants them. */
export function missingPrivilegeError(pipeline: Pipeline, facts: PrivilegeFacts, missing: readonly Requirement[]): MissingPrivilegeError {
  const items = missing.map((r) => {
    const owner = r.kind === 'owner' ? ` (owned by ${facts.relations?.get(relationKey(r))?.owner})` : '';
    return `${describeRequirement(r)}${owner}, ${r.reason}`;
  });
  return new MissingPrivilegeError(
    `pipeline ${pipeline.name}: database user "${facts.user}" lacks ${items.join('; ')}. ` +
      `Run the SQL printed by \`${setupCommand(pipeline.name, facts.user)}\` as a superuser (it is safe to run again).`,
  );
}

/** A privilege function's answer: PostgreSQL's boolean, or Redshift's 'true' / 't' as text. */
export function isGranted(value: unknown): boolean {
  return value === true || value === 't' || value === 'true';
}
