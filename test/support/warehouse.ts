// A fresh warehouse for one test file: its own database on the shared test
// PostgreSQL (test/global-setup.ts) or on a server given (`{ postgres: own.conn }`),
// and a local Redshift Data API endpoint on a random port with a real SDK client.
//
//   wh = await useWarehouse('publish');   // wh.close() in afterAll
//   await wh.client.send(new ExecuteStatementCommand({ ...wh.target, Sql: 'SELECT 1' }));
//   await wh.run('INSERT INTO t VALUES (:v)', { v: '1' });   // submit and wait; wh.query reads directly
import { randomBytes } from 'node:crypto';
import {
  DescribeStatementCommand,
  type DescribeStatementResponse,
  ExecuteStatementCommand,
  GetStatementResultCommand,
  RedshiftDataClient,
} from '@aws-sdk/client-redshift-data';
import { inject } from 'vitest';
import { localRedshiftDataClient } from '../../local/aws-clients.ts';
import { ISOLATIONS, type Isolation } from '../../local/data-api/runner.ts';
import { type LocalDataApi, type LocalDataApiOptions, startLocalDataApi } from '../../local/data-api/server.ts';
import { endPool, newPool } from '../../local/pg-clients.ts';
import { copyDatabase, dropDatabase, ensureDatabase, type PgConnection } from '../../local/postgres.ts';
import { type GateOptions, holdGate, type LockGate } from './lock-gate.ts';

export interface UseWarehouseOptions extends Omit<LocalDataApiOptions, 'postgres'> {
  /** The server to create the database on. @default - the suite's shared server */
  postgres?: PgConnection;
  /** A database on that server to start as a copy of (nobody may use it meanwhile). @default - an empty database */
  copyOf?: string;
}

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
  /** run(), which must finish, then its records with every field as text (null for SQL NULL). */
  select(sql: string, parameters?: Record<string, string>): Promise<(string | null)[][]>;
  /** A lock gate on a new table of this database (see lock-gate.ts); close() releases it if the test did not. */
  gate(options?: GateOptions): Promise<LockGate>;
  /** Another endpoint on this server with other options (limits, log); close() closes it if the test did not. */
  otherEndpoint(options: Omit<LocalDataApiOptions, 'postgres'>): Promise<Endpoint>;
  /** Closes the endpoint and every connection, then drops the database (unless `keepDatabase`: a template for copyOf). */
  close(options?: { keepDatabase?: boolean }): Promise<void>;
}

export interface Endpoint {
  api: LocalDataApi;
  client: RedshiftDataClient;
  /** Idempotent. */
  close(): Promise<void>;
}

const TERMINAL: ReadonlySet<string> = new Set(['FINISHED', 'FAILED', 'ABORTED']);
/** Long polls: the endpoint answers as soon as the statement ends. */
const WAIT_SECONDS = 20;

/** DescribeStatement until the statement has ended. */
export async function untilEnded(client: RedshiftDataClient, Id: string): Promise<DescribeStatementResponse> {
  for (;;) {
    const described = await client.send(new DescribeStatementCommand({ Id, WaitTimeSeconds: WAIT_SECONDS }));
    if (TERMINAL.has(described.Status ?? '')) return described;
  }
}

/**
 * The isolation level of the endpoints a test starts without choosing one:
 * ATOMIC_PUBLISH_ISOLATION, which vitest.config.ts sets per project so that
 * the workflow tests run under both of Redshift's levels.
 */
export function suiteIsolation(env: NodeJS.ProcessEnv = process.env): Isolation {
  const value = env.ATOMIC_PUBLISH_ISOLATION ?? 'snapshot';
  if (!(ISOLATIONS as readonly string[]).includes(value)) {
    throw new Error(`ATOMIC_PUBLISH_ISOLATION must be one of ${ISOLATIONS.join(', ')}, not ${JSON.stringify(value)}`);
  }
  return value as Isolation;
}

/** A local Data API endpoint and an SDK client for it. */
export async function startEndpoint(options: LocalDataApiOptions): Promise<Endpoint> {
  const api = await startLocalDataApi({ isolation: suiteIsolation(), ...options });
  const client = localRedshiftDataClient(api.endpoint);
  let closed: Promise<void> | undefined;
  return {
    api,
    client,
    close: () =>
      (closed ??= (async () => {
        client.destroy();
        await api.close();
      })()),
  };
}

export async function useWarehouse(prefix: string, options: UseWarehouseOptions = {}): Promise<Warehouse> {
  const { postgres, copyOf, ...apiOptions } = options;
  const server = postgres ?? inject('pg');
  const database = `${prefix.toLowerCase().replace(/[^a-z0-9_]/g, '_')}_${randomBytes(4).toString('hex')}`.slice(-63);
  await (copyOf ? copyDatabase(server, copyOf, database) : ensureDatabase(server, database));
  const main = await startEndpoint({ ...apiOptions, postgres: server });
  const { api, client } = main;
  const endpoints = [main];
  // Its connections may be lost on purpose (fault tests restart the server): the pool reconnects.
  const pool = newPool({ ...server, database, max: 4 });
  const target = { Database: database, ClusterIdentifier: 'local', DbUser: server.user };
  const gates: LockGate[] = [];
  const run = async (sql: string, parameters?: Record<string, string>): Promise<DescribeStatementResponse> => {
    const { Id } = await client.send(
      new ExecuteStatementCommand({
        ...target,
        Sql: sql,
        ...(parameters ? { Parameters: Object.entries(parameters).map(([name, value]) => ({ name, value })) } : {}),
      }),
    );
    return untilEnded(client, Id!);
  };

  return {
    pg: { ...server, database },
    endpoint: api.endpoint,
    api,
    client,
    target,
    query: async <T>(sql: string, params?: unknown[]) => (await pool.query(sql, params)).rows as T[],
    run,
    select: async (sql, parameters) => {
      const done = await run(sql, parameters);
      if (done.Status !== 'FINISHED') throw new Error(`${done.Status}: ${done.Error ?? ''} (${sql})`);
      const result = await client.send(new GetStatementResultCommand({ Id: done.Id }));
      return (result.Records ?? []).map((record) =>
        record.map((field) => (field.isNull ? null : String(field.stringValue ?? field.longValue ?? field.doubleValue ?? field.booleanValue ?? ''))),
      );
    },
    gate: async (gateOptions) => {
      const gate = await holdGate({ ...server, database }, gateOptions);
      gates.push(gate);
      return gate;
    },
    otherEndpoint: async (endpointOptions) => {
      const endpoint = await startEndpoint({ ...endpointOptions, postgres: server });
      endpoints.push(endpoint);
      return endpoint;
    },
    close: async ({ keepDatabase = false } = {}) => {
      // Everything that holds a connection to the database ends, sockets closed,
      // before DROP DATABASE ... WITH (FORCE) would terminate it.
      await Promise.all(gates.map((gate) => gate.release()));
      await Promise.all(endpoints.map((endpoint) => endpoint.close()));
      await endPool(pool);
      if (!keepDatabase) await dropDatabase(server, database);
    },
  };
}
