// The local PostgreSQL manager: reuse across processes, survival of a killed
// starter, recovery from a killed server, and where it runs as root.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PROJECT_ROOT, STATE_DIR } from '../../lib/project.ts';
import { withClient } from '../../local/pg-clients.ts';
import { ensureDatabase, type LocalPostgres, type PgConnection, startLocalPostgres } from '../../local/postgres.ts';
import { canReach, relocatedDataDir } from '../../local/postgres-host.ts';
import { type PrivateDataDir, privateDataDir } from '../support/private-postgres.ts';

let dir: PrivateDataDir;
let dataDir: string;
let quiet: { dataDir: string; log: () => void };
let last: LocalPostgres | undefined;
beforeAll(async () => {
  dir = await privateDataDir();
  dataDir = dir.dataDir;
  quiet = { dataDir, log: () => undefined };
});
afterAll(async () => {
  try {
    await last?.stop();
  } finally {
    await dir?.remove(last?.dataDir);
  }
});

async function sql<T>(conn: PgConnection, text: string): Promise<T[]> {
  return withClient({ ...conn, database: 'postgres' }, async (client) => (await client.query(text)).rows as T[]);
}

const postmasterPid = (dir: string) => Number(readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);

/** Starts the server from a separate Node process and returns once it printed its port. */
function startInChild(): Promise<{ child: ReturnType<typeof spawn>; port: number; dataDir: string }> {
  const script = path.join(PROJECT_ROOT, 'test', 'support', 'start-postgres.ts');
  const child = spawn(process.execPath, ['--import', 'tsx', script, dataDir], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve({ child, ...(JSON.parse(out) as { port: number; dataDir: string }) });
    });
    child.on('exit', (code) => reject(new Error(`start-postgres exited with ${code}`)));
  });
}

describe('startLocalPostgres', () => {
  it('keeps the server running when the process that started it is SIGKILLed, and a new process reuses it', async () => {
    const first = await startInChild();
    const pidBefore = postmasterPid(first.dataDir);
    first.child.kill('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));

    last = await startLocalPostgres(quiet);
    expect(last.port).toBe(first.port);
    expect(postmasterPid(last.dataDir)).toBe(pidBefore);
    expect(await sql(last, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
  });

  it('recovers after the server itself was killed, keeping committed data', async () => {
    last = await startLocalPostgres(quiet);
    await sql(last, 'DROP TABLE IF EXISTS survivor; CREATE TABLE survivor AS SELECT 42 AS answer');
    const killed = postmasterPid(last.dataDir);
    process.kill(killed, 'SIGKILL');

    last = await startLocalPostgres(quiet);
    expect(postmasterPid(last.dataDir)).not.toBe(killed);
    expect(await sql(last, 'SELECT answer FROM survivor')).toEqual([{ answer: 42 }]);
  });

  it('stops cleanly, and starts again on the same port with the same password', async () => {
    const running = await startLocalPostgres(quiet);
    await running.stop();
    await expect(sql(running, 'SELECT 1')).rejects.toThrow(/ECONNREFUSED/);
    await expect(fs.access(path.join(running.dataDir, 'postmaster.pid'))).rejects.toThrow();

    last = await startLocalPostgres(quiet);
    expect({ port: last.port, password: last.password }).toEqual({ port: running.port, password: running.password });
    expect(await sql(last, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
  });
});

describe('release', () => {
  it('leaves the server to another live user, and stops it once none is left', async () => {
    const other = await startInChild();
    try {
      const mine = await startLocalPostgres(quiet);
      await mine.release();
      expect(await sql(mine, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
    } finally {
      other.child.kill('SIGKILL');
      await new Promise((resolve) => other.child.once('exit', resolve));
    }
    const alone = await startLocalPostgres(quiet);
    await alone.release();
    await expect(sql(alone, 'SELECT 1')).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe('ensureDatabase', () => {
  it('creates a database once, also under concurrent callers, and validates the name', async () => {
    const conn = inject('pg');
    const name = `ensure_${Date.now()}`;
    await Promise.all([ensureDatabase(conn, name), ensureDatabase(conn, name), ensureDatabase(conn, name)]);
    await ensureDatabase(conn, name);
    expect(await sql(conn, `SELECT datname FROM pg_database WHERE datname = '${name}'`)).toHaveLength(1);
    await sql(conn, `DROP DATABASE "${name}"`);
    await expect(ensureDatabase(conn, 'Bad-Name')).rejects.toThrow(/identifier "Bad-Name" is not allowed/);
  });
});

describe.runIf(process.getuid?.() === 0)('as root', () => {
  it('detects that the postgres OS user cannot reach a folder below a 0700 directory', async () => {
    const hidden = await fs.mkdtemp(path.join(os.tmpdir(), 'ap-'));
    try {
      await fs.mkdir(path.join(hidden, 'p'), { mode: 0o755 });
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
      expect(canReach({ uid, gid }, path.join(hidden, 'p'))).toBe(false);
      await fs.chmod(hidden, 0o755);
      expect(canReach({ uid, gid }, path.join(hidden, 'p'))).toBe(true);
    } finally {
      await fs.rm(hidden, { recursive: true, force: true });
    }
  });

  it('relocates a project data directory to a stable place keyed by the project root', () => {
    const relocated = relocatedDataDir(path.join(STATE_DIR, 'pg'));
    expect(relocated).toMatch(/^\/var\/tmp\/atomic-publish\/[0-9a-f]{12}\/pg$/);
    expect(relocatedDataDir(path.join(STATE_DIR, 'test-pg'))).toBe(path.join(path.dirname(relocated), 'test-pg'));
  });
});
