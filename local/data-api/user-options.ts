// Redshift's options of a database user that PostgreSQL's roles lack, as the
// local engine runs them (docs/redshift.md, "The setup's user options"):
// - `ALTER USER u [ WITH ] SYSLOG ACCESS UNRESTRICTED` alone is `GRANT
//   pg_read_all_stats TO u` (held already: a notice, so a setup run again
//   succeeds), RESTRICTED its REVOKE; in a list or a CREATE USER it runs as
//   written and the database refuses it.
// - PASSWORD DISABLE (PostgreSQL's PASSWORD NULL) gives the user the password the
//   endpoint, the stand-in for IAM, connects with (passwordDisabledUser, runner.ts).
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
