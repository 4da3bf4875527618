/**
 * The command line, `atomic-publish` (bin/atomic-publish.js): plan, run,
 * backfill, status, history, check, rollback and `local up`, against the
 * deployed stack or the local engine. Human-readable tables by default;
 * `--json` for scripts: one JSON object on stdout per command, its result
 * or `{"error": {...}}` (docs/decisions/one-json-object.md). Exit codes:
 * cli/errors.ts.
 */
import { Command, CommanderError, Option } from 'commander';
import { AtomicPublishError, ValidationError } from '../domain/errors.ts';
import { CODE_VERSION } from '../lib/project.ts';
import { check } from './check.ts';
import { contextFrom, type GlobalOptions, isUnreachable } from './context.ts';
import { CliError, type ErrorKind, ExitCode } from './errors.ts';
import { Interrupt } from './interrupt.ts';
import { plan } from './plan.ts';
import { rollback, run } from './run.ts';
import { type CliIo, prose } from './shared.ts';
import { history, status } from './status.ts';

export type { CliIo } from './shared.ts';

function parsePositive(value: string, name: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`${name} must be a whole number above 0, got ${JSON.stringify(value)}`);
  return n;
}

export function program(io: CliIo, exit: { code: number }, json = false): Command {
  const root = new Command('atomic-publish')
    .description('Plan, run, backfill, check and roll back atomic-publish pipelines.')
    // package.json's, read when the command line starts (lib/project.ts).
    .version(CODE_VERSION, '-V, --version', 'print the version')
    .option('--json', 'machine-readable output')
    .option('--state-machine-arn <arn>', 'the state machine (env ATOMIC_PUBLISH_STATE_MACHINE_ARN)')
    .option('--sfn-endpoint <url>', 'Step Functions endpoint (env ATOMIC_PUBLISH_SFN_ENDPOINT; default AWS)')
    .option('--data-api-endpoint <url>', 'Redshift Data API endpoint (env REDSHIFT_DATA_ENDPOINT; default AWS)')
    .option('--cloudwatch-endpoint <url>', 'CloudWatch endpoint (env ATOMIC_PUBLISH_CLOUDWATCH_ENDPOINT; default AWS)')
    .option('--region <region>', 'AWS region (env AWS_REGION)')
    .exitOverride()
    // Under --json a usage error is printed as JSON (main), not as commander's text and help.
    .configureOutput({ writeOut: (s) => io.stdout(s.trimEnd()), writeErr: (s) => (json ? undefined : io.stderr(s.trimEnd())) })
    .showHelpAfterError();
  const ctx = () => contextFrom(root.opts<GlobalOptions>(), io.env);
  const done = (action: () => Promise<number>) => async () => {
    exit.code = await action();
  };
  const pollOption = () => new Option('--poll-ms <ms>', 'how often to look at the execution').default('1000');
  root
    .command('plan')
    .description('dry run: chunks, SQL, what is published already, estimate; starts nothing')
    .argument('<pipeline>')
    .option('--from <time>', 'interval start (ISO, on the grain)')
    .option('--to <time>', 'interval end (ISO, on the grain)')
    .action((name: string, o: { from?: string; to?: string }) => done(() => plan(ctx(), io, name, o))());
  root
    .command('run')
    .description("start the pipeline's run up to --to (default: now, on the grain) and follow it")
    .argument('<pipeline>')
    .option('--to <time>', 'interval end (ISO, on the grain)')
    .addOption(pollOption())
    .action((name: string, o: { to?: string; pollMs: string }) =>
      done(() => run(ctx(), io, name, { ...o, pollMs: parsePositive(o.pollMs, '--poll-ms') }, false))(),
    );
  root
    .command('backfill')
    .description('start a backfill of [--from, --to) and follow it; repeating the command resumes it')
    .argument('<pipeline>')
    .option('--from <time>', 'interval start (ISO, on the grain)')
    .option('--to <time>', 'interval end (ISO, on the grain)')
    .addOption(pollOption())
    .action((name: string, o: { from?: string; to?: string; pollMs: string }) =>
      done(() => run(ctx(), io, name, { ...o, pollMs: parsePositive(o.pollMs, '--poll-ms') }, true))(),
    );
  root
    .command('status')
    .description('live version, last batch, freshness against the SLA, running executions')
    .argument('[pipeline]')
    .action((name: string | undefined) => done(() => status(ctx(), io, name))());
  root
    .command('history')
    .description('batches with their intervals, rows and check outcomes, newest first')
    .argument('<pipeline>')
    .option('--limit <n>', 'how many batches', '20')
    .action((name: string, o: { limit: string }) => done(() => history(ctx(), io, name, { limit: parsePositive(o.limit, '--limit') }))());
  root
    .command('check')
    .description('the reconciliation gate of [--from, --to) without publishing: prints every check; exit 0 passed, 1 failed')
    .argument('<pipeline>')
    .option('--from <time>', 'interval start (ISO, on the grain)')
    .option('--to <time>', 'interval end (ISO, on the grain)')
    .addOption(pollOption())
    .action((name: string, o: { from?: string; to?: string; pollMs: string }) =>
      done(() => check(ctx(), io, name, { ...o, pollMs: parsePositive(o.pollMs, '--poll-ms') }))(),
    );
  root
    .command('rollback')
    .description('put back the version live before the latest publication, or the retained version of --to BATCH')
    .argument('<pipeline>')
    .option('--to <batch>', 'the batch whose rows to put back (atomic_publish.publications batch_id)')
    .addOption(pollOption())
    .action((name: string, o: { to?: string; pollMs: string }) =>
      done(() => rollback(ctx(), io, name, { ...o, pollMs: parsePositive(o.pollMs, '--poll-ms') }))(),
    );
  const local = root.command('local').description('the local engine');
  local
    .command('up')
    .description('start PostgreSQL, the Data API, Step Functions and CloudWatch endpoints; print them; run until Ctrl-C')
    .option('--database <name>', 'the warehouse database', 'atomic_publish_local')
    .option('--sample-days <n>', 'days of sample source data, created with the database', '10')
    .option('--rows-per-day <n>', 'sample rows per day', '200')
    .action((o: { database: string; sampleDays: string; rowsPerDay: string }) =>
      done(async () => {
        const { localUp } = await import('./local-up.ts');
        const options = {
          database: o.database,
          sampleDays: parsePositive(o.sampleDays, '--sample-days'),
          rowsPerDay: parsePositive(o.rowsPerDay, '--rows-per-day'),
        };
        // Ctrl-C stops the engine, which closes what it started: the command ends when it has.
        return io.interrupt ? io.interrupt.owning(() => localUp(io, options)) : localUp(io, options);
      })(),
    );
  return root;
}

/** How an error ends the command line: what it prints, and the exit code. */
interface Failure {
  readonly kind: ErrorKind;
  readonly message: string;
  readonly exitCode: number;
}

function failureOf(error: unknown, terms: (message: string) => string): Failure {
  if (error instanceof CommanderError) return { kind: 'usage', message: error.message.replace(/^error: /, ''), exitCode: ExitCode.USAGE };
  // The workflow's words (input.to, an execution input) as the command line's (--to, a command).
  if (error instanceof CliError) return { kind: error.kind, message: terms(error.message), exitCode: error.exitCode };
  if (error instanceof ValidationError) return { kind: 'refused', message: `${terms(error.message)}\nNothing was started.`, exitCode: ExitCode.USAGE };
  const e = error as Error;
  if (isUnreachable(error)) {
    return {
      kind: 'unreachable',
      message: `cannot reach an endpoint (${e.message || e.name}). Check --sfn-endpoint, --data-api-endpoint and the environment; nothing was started.`,
      exitCode: ExitCode.USAGE,
    };
  }
  return {
    kind: 'error',
    message: `${e instanceof AtomicPublishError ? '' : `${e?.name ?? 'Error'}: `}${e?.message ?? String(error)}`,
    exitCode: ExitCode.USAGE,
  };
}

/**
 * Runs the command line on `argv` (without node and the script); returns
 * the exit code. Under --json, stdout holds one JSON object whatever
 * happens: the command's result, or `{"error": {...}}` (Failure).
 */
export async function main(argv: readonly string[], given: CliIo): Promise<number> {
  // Read before commander parses: a usage error can come before it has read --json.
  const json = argv.includes('--json');
  const interrupt = new Interrupt(given.signal);
  const io: CliIo = { ...given, interrupt };
  const exit = { code: ExitCode.OK as number };
  const root = program(io, exit, json);
  const report = (failure: Failure) => {
    if (json) io.stdout(JSON.stringify({ error: failure }));
    else io.stderr(prose(io, `atomic-publish: ${failure.message}`));
    return failure.exitCode;
  };
  const command = root.parseAsync([...argv], { from: 'user' }).then(() => exit.code);
  try {
    // Ctrl-C that no command owns (cli/interrupt.ts) ends the command at once: it has started nothing.
    const code = await Promise.race([command, interrupt.unowned.then(() => undefined)]);
    if (code !== undefined) return code;
    command.catch(() => undefined);
    return report({ kind: 'interrupted', message: 'interrupted (Ctrl-C); nothing was started.', exitCode: ExitCode.INTERRUPTED });
  } catch (error) {
    if (error instanceof CommanderError) {
      if (['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(error.code)) return ExitCode.OK;
      // Without --json, commander has printed the error and the help already.
      if (!json) return ExitCode.USAGE;
    }
    return report(failureOf(error, contextFrom(root.opts<GlobalOptions>(), io.env).terms));
  }
}
