/**
 * `npm run setup-sql -- --pipeline NAME --user USER [--database NAME]`:
 * prints the SQL a superuser runs once before a pipeline's first run (and
 * safely again): the grants and the ownership transfer its database user
 * needs (domain/sql/setup.ts). The user is the one the step functions run
 * as: on Redshift Serverless with IAM `IAMR:<role name>`, on a cluster the
 * DbUser or the secret's user. The database defaults to the deployment's
 * (`warehouse.database` in cdk.json's context).
 *
 *   npm run setup-sql -- --pipeline sales_order_lines --user 'IAMR:atomic-publish-steps'
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { databaseUserProblem, identifierProblem } from '../domain/identifiers.ts';
import type { Pipeline } from '../domain/spec.ts';
import { setupScript } from '../domain/sql/setup.ts';
import { warehouseTargetFromContext } from '../domain/warehouse-target.ts';
import { PROJECT_ROOT } from '../lib/project.ts';
import { pipelines } from '../pipelines/index.ts';

/** The database of the deployment's context, if cdk.json names one. */
export function contextDatabase(cdkJson = join(PROJECT_ROOT, 'cdk.json')): string | undefined {
  try {
    const context = (JSON.parse(readFileSync(cdkJson, 'utf8')) as { context?: { warehouse?: unknown } }).context;
    return context?.warehouse === undefined ? undefined : warehouseTargetFromContext(context.warehouse).database;
  } catch {
    return undefined;
  }
}

/** The setup SQL for the arguments (without node and script), or an error that says what is wrong; `null`: no default database. */
export function setupSqlFor(args: readonly string[], registry: readonly Pipeline[] = pipelines, defaultDatabase: string | null = contextDatabase() ?? null): string {
  const command = new Command('setup-sql')
    .description('Print the grants and ownership transfer a pipeline needs for its database user')
    .requiredOption('--pipeline <name>', 'the pipeline (pipelines/index.ts)')
    .requiredOption('--user <user>', "the step functions' database user, e.g. IAMR:<role name>")
    .option('--database <name>', 'the database of the target and source schemas', defaultDatabase ?? undefined)
    .exitOverride()
    .configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  command.parse(args, { from: 'user' });
  const options = command.opts<{ pipeline: string; user: string; database?: string }>();
  const pipeline = registry.find((p) => p.name === options.pipeline);
  if (!pipeline) {
    throw new Error(`unknown pipeline ${JSON.stringify(options.pipeline)}; known pipelines: ${registry.map((p) => p.name).join(', ') || '(none)'}`);
  }
  const userProblem = databaseUserProblem(options.user);
  if (userProblem) throw new Error(`--user ${userProblem}`);
  if (options.database === undefined) throw new Error('--database is required: cdk.json names no warehouse.database');
  const databaseProblem = identifierProblem(options.database);
  if (databaseProblem) throw new Error(`--database ${databaseProblem}`);
  return setupScript(pipeline, { database: options.database, user: options.user });
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
