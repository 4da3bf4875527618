// The command line pointed at the local engine, for the tests of test/cli:
// the CLI's main with argv (or the real process), the real SDK clients
// against a local Step Functions API of the test's own (over the workflow's
// runner, so a test can hold a chunk load) and the workflow's Data API
// endpoint.
import { type ChildProcess, spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { SFNClient } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll } from 'vitest';
import { main } from '../../cli/main.ts';
import { shellWord } from '../../domain/cli-command.ts';
import { LOCAL_AWS_ENV, localStepFunctionsClient } from '../../local/aws-clients.ts';
import type { LocalRunner } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { type LocalStepFunctionsApi, startLocalStepFunctionsApi } from '../../local/step-functions-api.ts';
import { closedPort } from './unreachable.ts';
import { useFork, type Workflow, type WorkflowFixture } from './workflow.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'bin/atomic-publish.js');

/** The start of sample day `n`, ISO. */
export const day = (n: number) => sampleDay(n).toISOString();

export interface Ran {
  code: number;
  out: string;
  err: string;
}

/** Human output with its sentences' line breaks undone (cli/layout.ts wraps them at a space). */
export const flat = (text: string) => text.replace(/\n/g, ' ');

export interface RunOptions {
  /** Called with each line the CLI writes to stderr, as it writes it. */
  readonly onStderr?: (line: string) => void;
  /** The width of the terminal the CLI writes to. @default - no terminal */
  readonly columns?: number;
  /** Ctrl-C, as bin/atomic-publish.ts passes it. @default - none comes */
  readonly signal?: AbortSignal;
}

/** The CLI's main with argv, in environment `env`. */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv, options: RunOptions = {}): Promise<Ran> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, {
    stdout: (t) => out.push(t),
    stderr: (t) => {
      err.push(t);
      options.onStderr?.(t);
    },
    env,
    ...(options.columns === undefined ? {} : { columns: options.columns }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

export function spawnCli(argv: string[], env: NodeJS.ProcessEnv): ChildProcess {
  return spawn(process.execPath, [BIN, ...argv], { cwd: tmpdir(), env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * The real process in a terminal of its own (util-linux `script`: a
 * pseudo-terminal): what it writes to stdout and stderr arrives, escape
 * sequences and all, on the child's stdout; what is written to the child's
 * stdin is typed at the terminal (Ctrl-C is "\x03", which the terminal
 * turns into SIGINT).
 */
export function spawnInTerminal(argv: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const command = ['exec', process.execPath, BIN, ...argv].map(shellWord).join(' ');
  return spawn('script', ['--quiet', '--flush', '--return', '--command', command, '/dev/null'], { cwd: tmpdir(), env, stdio: ['pipe', 'pipe', 'pipe'] });
}

/** The command line pointed at one workflow: its Data API endpoint, its runner behind a Step Functions API of its own. */
export interface Cli {
  readonly wf: Workflow;
  readonly api: LocalStepFunctionsApi;
  readonly sfn: SFNClient;
  readonly env: NodeJS.ProcessEnv;
  cli(argv: string[], options?: RunOptions & { env?: NodeJS.ProcessEnv }): Promise<Ran>;
  /**
   * LoadChunk of chunks from `first` on waits until released (then loads) or
   * failed (then ends without loading, as an invocation that died would);
   * `entered` resolves when one is waiting.
   */
  holdLoadsFrom(first: number): { entered: Promise<void>; release: () => void; fail: () => void };
  publicationsOf(batchId: string): Promise<number>;
  doneChunks(batchId: string): Promise<number[]>;
}

/**
 * The workflow's runner as one deployment's Step Functions: the executions
 * it started, and no other's. The runners of one process answer for each
 * other's executions (local/runner.ts LocalRunner.describe), and the forks
 * of a fixture share the state machine's ARN and the execution names their
 * commands give: each describe's command line would find another's run
 * done, or running, under its own name.
 */
function ownRunner(runner: LocalRunner): LocalRunner {
  const describe = (executionArn: string) => runner.list().find((e) => e.executionArn === executionArn);
  return new Proxy(runner, {
    get(target, key) {
      if (key === 'describe') return describe;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

export async function startCli(wf: Workflow): Promise<Cli & { close(): Promise<void> }> {
  const api = await startLocalStepFunctionsApi(ownRunner(wf.runner));
  const sfn = localStepFunctionsClient(api.endpoint);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...LOCAL_AWS_ENV,
    WAREHOUSE_DATABASE: wf.wh.pg.database,
    WAREHOUSE_WORKGROUP: 'local',
    REDSHIFT_DATA_ENDPOINT: wf.wh.endpoint,
    ATOMIC_PUBLISH_SFN_ENDPOINT: api.endpoint,
    ATOMIC_PUBLISH_STATE_MACHINE_ARN: wf.runner.workflow.stateMachineArn,
    // No CloudWatch here (`local up` below has one): status goes on without the alarms.
    ATOMIC_PUBLISH_CLOUDWATCH_ENDPOINT: `http://127.0.0.1:${await closedPort()}`,
  };
  return {
    wf,
    api,
    sfn,
    env,
    cli: (argv, { env: own, ...options } = {}) => runCli(argv, own ?? env, options),
    holdLoadsFrom(first) {
      let release!: () => void;
      let fail!: (error: Error) => void;
      const released = new Promise<void>((resolve, reject) => {
        release = resolve;
        fail = reject;
      });
      released.catch(() => undefined);
      let entered!: () => void;
      const waiting = new Promise<void>((resolve) => (entered = resolve));
      wf.faults.LoadChunk = async (input, next) => {
        if ((input as { chunk: { index: number } }).chunk.index >= first) {
          entered();
          await released;
        }
        return next(input);
      };
      return { entered: waiting, release, fail: () => fail(new Error('the invocation died')) };
    },
    async publicationsOf(batchId) {
      const rows = await wf.query<{ n: number }>('SELECT COUNT(*)::int AS n FROM atomic_publish.publications WHERE batch_id = $1', [batchId]);
      return rows[0]!.n;
    },
    async doneChunks(batchId) {
      const rows = await wf.query<{ chunk_index: number }>(
        "SELECT chunk_index FROM atomic_publish.chunk_state WHERE batch_id = $1 AND status = 'DONE' ORDER BY 1",
        [batchId],
      );
      return rows.map((r) => r.chunk_index);
    },
    async close() {
      sfn.destroy();
      await api.close();
    },
  };
}

/** A value made in a beforeAll, usable from the describe's body on, like a `let` set there. */
function late<T extends object>(get: () => T | undefined, what: string): T {
  return new Proxy({} as T, {
    get(_target, key) {
      const target = get() ?? fail(`${what} used outside the describe that made it, or before its beforeAll ran (reading ${String(key)})`);
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
/** Throws `message`: an expression a test can end a promise chain with. */
export const fail = (message: string): never => {
  throw new Error(message);
};

/** For the calling describe: a copy of the fixture's database, and the command line pointed at it. */
export function useCli(fixture: WorkflowFixture<unknown>): Cli {
  const wf = useFork(fixture);
  let started: Awaited<ReturnType<typeof startCli>> | undefined;
  beforeAll(async () => {
    started = await startCli(wf);
  });
  afterAll(() => started?.close());
  const current = () => started ?? fail('the command line used outside the describe that made it, or before its beforeAll ran');
  return {
    wf,
    api: late(() => started?.api, 'the Step Functions API'),
    sfn: late(() => started?.sfn, 'the Step Functions client'),
    get env() {
      return current().env;
    },
    cli: (argv, options) => current().cli(argv, options),
    holdLoadsFrom: (first) => current().holdLoadsFrom(first),
    publicationsOf: (batchId) => current().publicationsOf(batchId),
    doneChunks: (batchId) => current().doneChunks(batchId),
  };
}
