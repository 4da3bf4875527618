// `atomic-publish local up` as a real process, for a test: its own database
// on the suite's PostgreSQL, ready when it prints `# ready`, with the
// environment it prints (the lines a user pastes into another shell); and
// another command run as that other shell runs it.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { STATE_DIR } from '../../lib/project.ts';
import { LOCAL_AWS_ENV } from '../../local/aws-clients.ts';
import { MIN_SAMPLE_DAYS } from '../../local/recent-sample.ts';

const BIN = path.resolve(import.meta.dirname, '../../bin/atomic-publish.js');

export interface LocalUpProcess {
  /** The `export NAME=value` lines it printed. */
  readonly env: Readonly<Record<string, string>>;
  /** Ctrl-C: resolves with its exit code once it has stopped. */
  stop(): Promise<number | null>;
}

export async function startLocalUp(database: string): Promise<LocalUpProcess> {
  const child: ChildProcess = spawn(
    process.execPath,
    [BIN, 'local', 'up', '--database', database, '--sample-days', String(MIN_SAMPLE_DAYS), '--rows-per-day', '5'],
    {
      cwd: tmpdir(),
      env: { ...process.env, ...LOCAL_AWS_ENV, ATOMIC_PUBLISH_PG_DIR: path.join(STATE_DIR, 'test-pg') },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let out = '';
  let err = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('# ready')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`local up exited ${code} before it was ready: ${out}\n${err}`)));
    });
  } catch (error) {
    child.kill('SIGINT');
    throw error;
  }
  const env = Object.fromEntries([...out.matchAll(/^export (\w+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!.replace(/^'|'$/g, '')]));
  return {
    env,
    stop: () => {
      child.kill('SIGINT');
      return exited;
    },
  };
}

/** `atomic-publish <argv>` as a process with `env` added to this one's: its exit code and output. */
export function atomicPublish(argv: readonly string[], env: Readonly<Record<string, string>>): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...argv], { cwd: tmpdir(), env: { ...process.env, ...env } }, (error, out, err) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, out, err }),
    );
  });
}
