// A fresh warehouse for one test file: its own database on the shared test
// PostgreSQL (see test/global-setup.ts) and a local Redshift Data API
// endpoint on a random port, with a real SDK client pointed at it.
//
//   let wh: Warehouse;
//   beforeAll(async () => { wh = await useWarehouse('publish'); });
//   afterAll(() => wh.close());
//
//   const { Id } = await wh.client.send(new ExecuteStatementCommand({ ...wh.target, Sql: 'SELECT 1' }));
//   const done = await wh.run('INSERT INTO t VALUES (:v)', { v: '1' }); // submit and wait
//   expect(await wh.query('SELECT count(*)::int AS n FROM t')).toEqual([{ n: 1 }]);
import { randomBytes } from 'node:crypto';
import {
  DescribeStatementCommand,
  ExecuteStatementCommand,
  RedshiftDataClient,
  type DescribeStatementResponse,
} from '@aws-sdk/client-redshift-data';
import pg from 'pg';
import { inject } from 'vitest';
import { startLocalDataApi, type LocalDataApi, type LocalDataApiOptions } from '../../local/data-api/server.ts';
import { ensureDatabase, type PgConnection } from '../../local/postgres.ts';

export interface Warehouse {
  /** Direct connection details of this file's database. */
  pg: PgConnection & { database: string };
  endpoint: string;
  api: LocalDataApi;
  /** The real SDK client, pointed at the local endpoint. */
  client: RedshiftDataClient;
  /** Spread into ExecuteStatement/BatchExecuteStatement input: Database, ClusterIdentifier, DbUser. */
  target: { Database: string; ClusterIdentifier: string; DbUser: string };
  /** Direct SQL through pg (positional $1 parameters), for arranging and asserting. */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** ExecuteStatement through the Data API, then DescribeStatement until it ends. */
  run(sql: string, parameters?: Record<string, string>): Promise<DescribeStatementResponse>;
  /** Closes the endpoint and drops the database. */
  close(): Promise<void>;
}

export async function useWarehouse(prefix: string, options: Omit<LocalDataApiOptions, 'postgres'> = {}): Promise<Warehouse> {
  const server = inject('pg');
  const database = `${prefix.toLowerCase().replace(/[^a-z0-9_]/g, '_')}_${randomBytes(4).toString('hex')}`.slice(-63);
  await ensureDatabase(server, database);
  const api = await startLocalDataApi({ ...options, postgres: server });
  const client = new RedshiftDataClient({
    endpoint: api.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const pool = new pg.Pool({ ...server, database, max: 4 });
  const target = { Database: database, ClusterIdentifier: 'local', DbUser: server.user };

  const waitForEnd = async (id: string): Promise<DescribeStatementResponse> => {
    for (;;) {
      const described = await client.send(new DescribeStatementCommand({ Id: id }));
      if (described.Status === 'FINISHED' || described.Status === 'FAILED' || described.Status === 'ABORTED') return described;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  return {
    pg: { ...server, database },
    endpoint: api.endpoint,
    api,
    client,
    target,
    query: async <T>(sql: string, params?: unknown[]) => (await pool.query(sql, params)).rows as T[],
    run: async (sql, parameters) => {
      const { Id } = await client.send(
        new ExecuteStatementCommand({
          ...target,
          Sql: sql,
          ...(parameters ? { Parameters: Object.entries(parameters).map(([name, value]) => ({ name, value })) } : {}),
        }),
      );
      return waitForEnd(Id!);
    },
    close: async () => {
      client.destroy();
      await api.close();
      await pool.end();
      const admin = new pg.Client({ ...server, database: 'postgres' });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}
