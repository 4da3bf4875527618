/**
 * `npm run setup-sql -- --pipeline NAME [--user USER] [--database NAME] [--security-policies] [--monitor]`:
 * prints the SQL a superuser runs before a pipeline's first run (and again, safely):
 * the database user, its grants and the ownership transfer (domain/setup/sql/setup.ts);
 * with `--monitor`, the freshness monitor's grants instead. User and database default
 * to the deployment's (cdk.json's context); a secret's user must be given.
 * Why: docs/decisions/database-user-created-by-setup.md
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { databaseUserProblem, identifierProblem } from '../domain/identifiers.ts';
import { monitorSetupScript, setupScript } from '../domain/setup/sql/setup.ts';
import type { Pipeline } from '../domain/spec.ts';
import { databaseUserFor, defaultHandlerRoleName, monitorRoleNameFor, warehouseTargetFromContext } from '../domain/warehouse-target.ts';
import { STACK_NAME } from '../lib/app.ts';
import { PROJECT_ROOT } from '../lib/project.ts';
import { pipelines } from '../pipelines/index.ts';

export interface SetupDefaults {
  readonly database?: string;
  readonly user?: string;
  readonly monitorUser?: string;
}

/**
 * What the deployment's context (cdk.json) says: its database, and the
 * database users its step functions and its freshness monitor will be
 * (databaseUserFor), unless that user is inside a secret.
 */
export function contextDefaults(cdkJson = join(PROJECT_ROOT, 'cdk.json')): SetupDefaults {
  try {
    const context = (JSON.parse(readFileSync(cdkJson, 'utf8')) as { context?: Record<string, unknown> }).context ?? {};
    if (context.warehouse === undefined) return {};
    const target = warehouseTargetFromContext(context.warehouse, context.secretArn);
    const roleName = typeof context.handlerRoleName === 'string' ? context.handlerRoleName : defaultHandlerRoleName(STACK_NAME);
    const user = databaseUserFor(target, roleName);
    const monitorUser = databaseUserFor(target, monitorRoleNameFor(roleName));
    return {
      database: target.database,
      ...(user.kind === 'secret' ? {} : { user: user.name }),
      ...(monitorUser.kind === 'secret' ? {} : { monitorUser: monitorUser.name }),
    };
  } catch {
    return {};
  }
}

/** The setup SQL for the arguments (without node and script), or an error that says what is wrong. */
export function setupSqlFor(args: readonly string[], registry: readonly Pipeline[] = pipelines, defaults: SetupDefaults = contextDefaults()): string {
  const command = new Command('setup-sql')
    .description('Print the grants and ownership transfer a pipeline needs for its database user')
    .requiredOption('--pipeline <name>', 'the pipeline (pipelines/index.ts)')
    .option('--user <user>', "the step functions' database user, e.g. IAMR:<role name> (default: the deployment's, from cdk.json)")
    .option('--database <name>', 'the database of the target and source schemas', defaults.database)
    .option('--security-policies', 'also GRANT ROLE sys:secadmin, so publishing can attach RLS and masking policies', false)
    .option(
      '--monitor',
      "the freshness monitor's grants instead (reads, and UPDATE of publications.event_sent_at; its user by default the deployment's, from cdk.json)",
      false,
    )
    .exitOverride()
    .configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  command.parse(args, { from: 'user' });
  const parsed = command.opts<{ pipeline: string; user?: string; database?: string; monitor: boolean; securityPolicies: boolean }>();
  const options = { ...parsed, user: parsed.user ?? (parsed.monitor ? defaults.monitorUser : defaults.user) };
  const pipeline = registry.find((p) => p.name === options.pipeline);
  if (!pipeline) {
    throw new Error(`unknown pipeline ${JSON.stringify(options.pipeline)}; known pipelines: ${registry.map((p) => p.name).join(', ') || '(none)'}`);
  }
  if (options.user === undefined) throw new Error("--user is required: the deployment's database user is inside its secret");
  const userProblem = databaseUserProblem(options.user);
  if (userProblem) throw new Error(`--user ${userProblem}`);
  if (options.database === undefined) throw new Error('--database is required: cdk.json names no warehouse.database');
  const databaseProblem = identifierProblem(options.database);
  if (databaseProblem) throw new Error(`--database ${databaseProblem}`);
  const target = { database: options.database, user: options.user };
  return options.monitor ? monitorSetupScript(pipeline, target) : setupScript(pipeline, target, { securityPolicies: options.securityPolicies });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    process.stdout.write(setupSqlFor(process.argv.slice(2)));
  } catch (error) {
    const message = error instanceof CommanderError ? error.message.replace(/^error: /, '') : (error as Error).message;
    process.stderr.write(`setup-sql: ${message}\n`);
    process.exitCode = 1;
  }
}
