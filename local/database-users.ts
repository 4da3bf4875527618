/**
 * Database users on the local server. The handlers run as LOCAL_PIPELINE_USER,
 * named as a Serverless IAM role's user and holding exactly what the setup
 * SQL grants (domain/setup/sql/setup.ts), applied after the sample tables exist.
 * Roles belong to the server, shared by all its databases; a role's password
 * is localUserPassword's. Why: docs/decisions/privileges-and-the-database-user.md
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { quoteUser, sqlLiteral } from '../domain/identifiers.ts';
import { setupStatements } from '../domain/setup/sql/setup.ts';
import type { Pipeline } from '../domain/spec.ts';
import { syslogAccessStatement } from './data-api/user-options.ts';
import { withClient } from './pg-clients.ts';
import type { PgConnection } from './postgres.ts';

/** The database user the handlers are locally. */
export const LOCAL_PIPELINE_USER = 'IAMR:atomic-publish-local';

/** The password of a local role; the superuser keeps its own. */
export function localUserPassword(server: PgConnection, user: string): string {
  if (user === server.user) return server.password;
  return createHash('sha256').update(`${server.password}\n${user}`).digest('base64url');
}

/** Creates the role (LOGIN, nothing else) unless the server has it; safe against a concurrent creator. */
export async function ensureLocalUser(server: PgConnection, user: string = LOCAL_PIPELINE_USER): Promise<void> {
  await withClient({ ...server, database: 'postgres' }, async (client) => {
    const { rowCount } = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [user]);
    if (rowCount) return;
    await client.query(`CREATE ROLE ${quoteUser(user)} LOGIN PASSWORD ${sqlLiteral(localUserPassword(server, user))}`).catch((error: { code?: string }) => {
      // 42710 duplicate_object; 23505 when a concurrent CREATE ROLE won the catalog race.
      if (error.code !== '42710' && error.code !== '23505') throw error;
    });
  });
}

/** Runs the pipeline's setup SQL on `db` (connected as a superuser to the pipeline's database). */
export async function applyPipelineSetup(db: pg.ClientBase, pipeline: Pipeline, user: string = LOCAL_PIPELINE_USER): Promise<void> {
  const { rows } = await db.query<{ database: string }>('SELECT current_database() AS database');
  for (const sql of setupStatements(pipeline, { database: rows[0]!.database, user })) await db.query(localSetupStatement(sql));
}

/**
 * A setup statement as the local server runs it: Redshift's `ALTER USER ...
 * SYSLOG ACCESS UNRESTRICTED` is membership in pg_read_all_stats, which
 * the local system views take for it (local/data-api/user-options.ts, as
 * the local endpoint runs it).
 */
export function localSetupStatement(sql: string): string {
  return syslogAccessStatement(sql) ?? sql;
}
