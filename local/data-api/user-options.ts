// Redshift's options of a database user that PostgreSQL's roles lack, as
// the local engine runs them.
//
// - SYSLOG ACCESS { RESTRICTED | UNRESTRICTED } (r_ALTER_USER, r_CREATE_USER):
//   UNRESTRICTED lets a regular user see the rows other users' activity left
//   in the user-visible system views. PostgreSQL's grammar knows no such
//   option ('unrecognized role option "syslog"'); locally it is membership in
//   pg_read_all_stats, which the local system views take for it
//   (system-views.ts). `ALTER USER u [ WITH ] SYSLOG ACCESS UNRESTRICTED` is
//   `GRANT pg_read_all_stats TO u` (held already: a notice, no error, so a
//   setup run again succeeds), RESTRICTED `REVOKE pg_read_all_stats FROM u`.
//   The option in a list with others, or in a CREATE USER, runs as written
//   and the database refuses it.
// - PASSWORD DISABLE (r_CREATE_USER, r_ALTER_USER): "the user can log on only
//   using temporary AWS Identity and Access Management (IAM) user
//   credentials". PostgreSQL's PASSWORD NULL (domain/redshift-sql/postgres-grammar.ts)
//   lets nobody log on; the endpoint is the local stand-in for IAM, so the
//   user is then given the password the endpoint connects with
//   (passwordDisabledUser, runner.ts). A user created with a password of
//   its own keeps it.
import { kindOf } from '../../domain/redshift-sql/ast.ts';
import type { ParsedStatement } from '../../domain/redshift-sql/parser.ts';

const NAME = String.raw`"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*`;
const SYSLOG_ACCESS = new RegExp(String.raw`^\s*ALTER\s+USER\s+(${NAME})\s+(?:WITH\s+)?SYSLOG\s+ACCESS\s+(RESTRICTED|UNRESTRICTED)\s*;?\s*$`, 'i');

/** The PostgreSQL statement of an `ALTER USER u SYSLOG ACCESS { RESTRICTED | UNRESTRICTED }`; undefined for any other text. */
export function syslogAccessStatement(text: string): string | undefined {
  const match = SYSLOG_ACCESS.exec(text);
  if (!match) return undefined;
  const user = match[1]!;
  return match[2]!.toUpperCase() === 'UNRESTRICTED' ? `GRANT pg_read_all_stats TO ${user}` : `REVOKE pg_read_all_stats FROM ${user}`;
}

interface RoleOption {
  DefElem?: { defname?: string; arg?: unknown };
}

/**
 * The user a CREATE USER or ALTER USER leaves with IAM credentials only:
 * its PASSWORD DISABLE, in PostgreSQL's grammar PASSWORD NULL (an option
 * `password` without a value). Undefined for any other statement.
 */
export function passwordDisabledUser(statements: readonly ParsedStatement[]): string | undefined {
  if (statements.length !== 1) return undefined;
  const node = statements[0]!.node;
  const kind = kindOf(node);
  if (kind !== 'CreateRoleStmt' && kind !== 'AlterRoleStmt') return undefined;
  const stmt = node[kind] as { role?: string | { rolename?: string }; options?: RoleOption[] };
  const disabled = (stmt.options ?? []).some((o) => o.DefElem?.defname === 'password' && o.DefElem.arg === undefined);
  if (!disabled) return undefined;
  return typeof stmt.role === 'string' ? stmt.role : stmt.role?.rolename;
}
