// A PostgreSQL server of a test file's own, for tests that stop, restart or
// otherwise break it, never the suite's shared one; its data directory is a
// temporary folder close() removes. Why: docs/decisions/tests-and-timing.md
//
//   own = await startPrivatePostgres();  ...  await own.server.restart();  ...  await own.close();
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { quoteIdent } from '../../domain/identifiers.ts';
import { withClient } from '../../local/pg-clients.ts';
import { type LocalPostgres, type PgConnection, startLocalPostgres } from '../../local/postgres.ts';
import { relocatedDataDir } from '../../local/postgres-host.ts';

export interface PrivateDataDir {
  /** Where to ask for the data directory (the server may relocate it; see local/postgres-host.ts). */
  dataDir: string;
  /**
   * Removes the data directory and its siblings (port file, lock, users);
   * given the directory a server actually used, also that one when it was
   * relocated.
   */
  remove(actualDataDir?: string): Promise<void>;
}

export interface PrivatePostgres {
  server: LocalPostgres;
  conn: PgConnection;
  /** Stops the server and removes its data directory. */
  close(): Promise<void>;
}

/** A data directory in a fresh temporary folder the `postgres` OS user can reach. */
export async function privateDataDir(prefix = 'atomic-publish-pg-'): Promise<PrivateDataDir> {
  const parent = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  await fs.chmod(parent, 0o755);
  const dataDir = path.join(parent, 'pg');
  return {
    dataDir,
    async remove(actualDataDir) {
      await fs.rm(parent, { recursive: true, force: true });
      // Relocated (as root, when the tmpdir is out of the postgres user's reach) to
      // a folder keyed by a hash of `parent`: ours alone.
      if (actualDataDir && actualDataDir !== dataDir && actualDataDir === relocatedDataDir(dataDir)) {
        await fs.rm(path.dirname(actualDataDir), { recursive: true, force: true });
      }
    },
  };
}

export interface PrivatePostgresOptions {
  /** Server settings beyond the local engine's (ALTER SYSTEM, then a restart). @default - none */
  settings?: Record<string, string>;
}

export async function startPrivatePostgres(options: PrivatePostgresOptions = {}): Promise<PrivatePostgres> {
  const dir = await privateDataDir();
  let server: LocalPostgres;
  try {
    server = await startLocalPostgres({ dataDir: dir.dataDir, log: () => undefined });
    const settings = Object.entries(options.settings ?? {});
    if (settings.length > 0) {
      await withClient({ ...server, database: 'postgres' }, async (client) => {
        for (const [name, value] of settings) await client.query(`ALTER SYSTEM SET ${quoteIdent(name)} = '${value.replace(/'/g, "''")}'`);
      });
      await server.restart();
    }
  } catch (error) {
    await dir.remove();
    throw error;
  }
  const { host, port, user, password } = server;
  return {
    server,
    conn: { host, port, user, password },
    async close() {
      try {
        await server.stop();
      } finally {
        await dir.remove(server.dataDir);
      }
    },
  };
}
