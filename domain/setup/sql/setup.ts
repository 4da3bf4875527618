/**
 * The setup SQL of a pipeline: the grants and ownership transfer its database
 * user needs (domain/setup/privileges.ts), run by a superuser before the first run
 * and safe to run again. Syntax as in GRANT
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_GRANT.html), ALTER TABLE's
 * `OWNER TO` and ALTER USER's `SYSLOG ACCESS UNRESTRICTED`
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_ALTER_USER.html).
 */
import { qualifiedName, quoteIdent, quoteUser } from '../../identifiers.ts';
import type { Pipeline } from '../../spec.ts';
import { describeRequirement, monitorPrivileges, type Requirement, requiredPrivileges } from '../privileges.ts';

export interface SetupTarget {
  /** The database holding the target schema, the sources and the manifest. */
  readonly database: string;
  /** The database user the step functions run as, e.g. `IAMR:<role name>` on Serverless. */
  readonly user: string;
}

/** The statement that grants one requirement. */
export function grantStatement(r: Requirement, target: SetupTarget): string {
  const user = quoteUser(target.user);
  switch (r.kind) {
    case 'database':
      return `GRANT CREATE ON DATABASE ${quoteIdent(target.database)} TO ${user}`;
    case 'schema':
      return `GRANT ${r.privilege} ON SCHEMA ${quoteIdent(r.schema)} TO ${user}`;
    case 'owner':
      return `ALTER TABLE ${qualifiedName(r.schema, r.table)} OWNER TO ${user}`;
    case 'table':
      return `GRANT SELECT ON TABLE ${qualifiedName(r.schema, r.table)} TO ${user}`;
    case 'column':
      return `GRANT ${r.privilege} (${quoteIdent(r.column)}) ON TABLE ${qualifiedName(r.schema, r.table)} TO ${user}`;
    case 'syslog':
      return `ALTER USER ${user} SYSLOG ACCESS UNRESTRICTED`;
  }
}

/** The setup statements, in order, without comments: what the local engine runs. */
export function setupStatements(pipeline: Pipeline, target: SetupTarget): string[] {
  return requiredPrivileges(pipeline).map((r) => grantStatement(r, target));
}

/** The freshness monitor's grants for one pipeline (domain/setup/privileges.ts monitorPrivileges), without comments. */
export function monitorSetupStatements(pipeline: Pipeline, target: SetupTarget): string[] {
  return monitorPrivileges(pipeline).map((r) => grantStatement(r, target));
}

function script(header: readonly string[], requirements: readonly Requirement[], target: SetupTarget): string {
  const lines = [...header];
  for (const r of requirements) lines.push('', `-- ${describeRequirement(r)}: ${r.reason}`, `${grantStatement(r, target)};`);
  return `${lines.join('\n')}\n`;
}

/**
 * The user itself, before any grant: a Data API identity (`IAMR:<role>`,
 * `IAM:<user>`) may have no database user until it first connects, so the
 * grants would fail on a fresh warehouse. PASSWORD DISABLE: it logs on only
 * with IAM credentials (https://docs.aws.amazon.com/redshift/latest/dg/r_CREATE_USER.html).
 * Redshift has no CREATE USER IF NOT EXISTS: on a re-run the "already
 * exists" error is harmless (docs/decisions/database-user-created-by-setup.md).
 */
export function createUserLines(target: SetupTarget): string[] {
  return [
    '',
    '-- The database user, before its grants (a Data API identity may have none until it first connects).',
    '-- Run it on its own: if the user already exists, the error it raises is harmless; run the rest.',
    "-- PASSWORD DISABLE: it logs on with IAM credentials only (a workgroup's IAM identity, a cluster's DbUser); a secret's user logs on with the secret's password instead.",
    `CREATE USER ${quoteUser(target.user)} PASSWORD DISABLE;`,
  ];
}

/**
 * Lets publishing attach RLS and masking policies (https://docs.aws.amazon.com/redshift/latest/dg/r_ATTACH_RLS_POLICY.html);
 * as in https://docs.aws.amazon.com/redshift/latest/dg/r_CREATE_RLS_POLICY.html (`GRANT ROLE sys:secadmin TO bob`), the
 * name delimited (https://docs.aws.amazon.com/redshift/latest/dg/r_names.html) so that no client reads
 * `:secadmin` as a named parameter (the Data API's, psql's variables).
 */
export function securityPolicyLines(target: SetupTarget): string[] {
  return [
    '',
    "-- sys:secadmin: publishing attaches the live table's row-level security and masking policies to each new version,",
    '-- which takes a superuser or sys:secadmin (https://docs.aws.amazon.com/redshift/latest/dg/r_ATTACH_RLS_POLICY.html).',
    `GRANT ROLE "sys:secadmin" TO ${quoteUser(target.user)};`,
  ];
}

export interface SetupOptions {
  /** Also grant sys:secadmin, for tables with RLS or masking policies. */
  readonly securityPolicies?: boolean;
}

/** The setup as a script to read and run: each statement with what it is for. */
export function setupScript(pipeline: Pipeline, target: SetupTarget, options: SetupOptions = {}): string {
  return script(
    [
      `-- atomic-publish setup for pipeline ${pipeline.name}: database ${target.database}, user ${quoteUser(target.user)}.`,
      '-- Run as a superuser before the first deploy; safe to run again.',
      '-- The live table must exist; the manifest schema is created by the first run.',
      ...createUserLines(target),
      ...(options.securityPolicies === true ? securityPolicyLines(target) : []),
    ],
    requiredPrivileges(pipeline),
    target,
  );
}

/** The freshness monitor's setup as a script: its own database user's grants (reads, and one column it marks). */
export function monitorSetupScript(pipeline: Pipeline, target: SetupTarget): string {
  return script(
    [
      `-- atomic-publish freshness monitor setup for pipeline ${pipeline.name}: database ${target.database}, user ${quoteUser(target.user)}.`,
      '-- Run as a superuser after the first run (it creates the manifest schema); safe to run again.',
      '-- Publish carries the grants on the live table over to each new version.',
      ...createUserLines(target),
    ],
    monitorPrivileges(pipeline),
    target,
  );
}
