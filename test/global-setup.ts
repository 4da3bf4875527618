// Starts (or reuses) the local PostgreSQL once for the whole test run, on a
// data directory of its own (`.atomic-publish/test-pg`, apart from the
// demo's `.atomic-publish/pg`). Tests get its connection with `inject('pg')`;
// test/support/warehouse.ts builds a database and Data API endpoint on it.
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { STATE_DIR } from '../lib/project.ts';
import { type PgConnection, startLocalPostgres } from '../local/postgres.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    pg: PgConnection;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startLocalPostgres({ dataDir: path.join(STATE_DIR, 'test-pg') });
  const { host, port, user, password } = server;
  project.provide('pg', { host, port, user, password });
  // Another test run in this checkout may still use the server: release, not stop.
  return () => server.release();
}
