/**
 * What the local Data API costs per statement (a submit held at a lock gate, a
 * `SELECT 1` round trip with WaitTimeSeconds, a CancelStatement), each against a
 * bare `SELECT 1` on a pg connection, and the DescribeStatement polls the handlers'
 * Warehouse (DEFAULT_POLL) makes for a statement held a given time, against a fixed
 * 20 ms poll: distributions measured in the same run (docs/develop.md#bench).
 */
import { CancelStatementCommand, DescribeStatementCommand, ExecuteStatementCommand } from '@aws-sdk/client-redshift-data';
import { DEFAULT_POLL, Warehouse } from '../functions/commons/warehouse.ts';
import { localRedshiftDataClient } from '../local/aws-clients.ts';
import { withClient } from '../local/pg-clients.ts';
import type { PgConnection } from '../local/postgres.ts';
import { renderTable } from '../local/table.ts';
import { holdGate } from '../test/support/lock-gate.ts';
import { median, quantile } from './stats.ts';

export interface DataApiBenchOptions {
  postgres: PgConnection;
  database: string;
  /** The local Data API endpoint on that server. */
  endpoint: string;
  /** Rounds of each measurement (each round takes several samples). */
  repeat: number;
}

const SAMPLES_PER_ROUND = 30;
const HELD_MS = [100, 500, 2_000];
const FIXED_POLL_MS = 20;

/** Runs the measurements and returns them as a table. */
export async function benchDataApi(opts: DataApiBenchOptions): Promise<string> {
  const conn = { ...opts.postgres, database: opts.database };
  const client = localRedshiftDataClient(opts.endpoint);
  const target = { Database: opts.database, ClusterIdentifier: 'local', DbUser: opts.postgres.user };
  const submit = async (Sql: string) => (await client.send(new ExecuteStatementCommand({ ...target, Sql }))).Id!;
  const samples = SAMPLES_PER_ROUND * opts.repeat;
  try {
    return await withClient(conn, async (bare) => {
      const bareMs = await timed(samples, () => bare.query('SELECT 1'));
      const submitMs: number[] = [];
      const cancelMs: number[] = [];
      for (let i = 0; i < samples; i++) {
        const gate = await holdGate(conn);
        let started = performance.now();
        const id = await submit(gate.sql);
        submitMs.push(performance.now() - started);
        await gate.waiting();
        started = performance.now();
        await client.send(new CancelStatementCommand({ Id: id }));
        cancelMs.push(performance.now() - started);
        await gate.release();
      }
      const roundTripMs = await timed(samples, async () => {
        const Id = await submit('SELECT 1');
        let status: string | undefined;
        do status = (await client.send(new DescribeStatementCommand({ Id, WaitTimeSeconds: 30 }))).Status;
        while (status !== 'FINISHED');
      });

      const warehouse = new Warehouse(client, { database: opts.database, clusterIdentifier: 'local', dbUser: opts.postgres.user }, DEFAULT_POLL);
      const pollRows: string[][] = [];
      for (const heldMs of HELD_MS) {
        const polls: number[] = [];
        const fixed: number[] = [];
        const late: number[] = [];
        for (let i = 0; i < opts.repeat; i++) {
          const gate = await holdGate(conn);
          const id = await warehouse.submit({ sql: gate.sql }, 'bench:held');
          await gate.waiting();
          const waitStarted = performance.now();
          let releasedAt = 0;
          const timer = setTimeout(() => {
            releasedAt = performance.now();
            void gate.release();
          }, heldMs);
          const outcome = await warehouse.wait(id, 'bench:held');
          const waitEnded = performance.now();
          clearTimeout(timer);
          polls.push(outcome.polls);
          fixed.push(Math.max(1, Math.ceil((waitEnded - waitStarted) / FIXED_POLL_MS)));
          late.push(waitEnded - releasedAt);
        }
        pollRows.push([
          `polls for a statement held ${heldMs / 1000} s`,
          `${median(fixed)} (20 ms)`,
          `${median(polls)}, noticed ${Math.round(median(late))} ms after release`,
          ratio(median(polls), median(fixed)),
          '',
        ]);
      }

      const latency = (label: string, values: number[]) => [
        label,
        ms(median(bareMs)),
        `${ms(median(values))} (p90 ${ms(quantile(values, 0.9))})`,
        ratio(median(values), median(bareMs)),
        ratio(quantile(values, 0.9), quantile(bareMs, 0.9)),
      ];
      return `${renderTable(
        ['local Data API', 'baseline', 'Data API', 'ratio', 'p90 ratio'],
        [
          latency('submit (Id back, statement held)', submitMs),
          latency('round trip of SELECT 1', roundTripMs),
          latency('cancel of a running statement', cancelMs),
          ...pollRows,
        ],
        ['l', 'r', 'r', 'r', 'r'],
      )}\n`;
    });
  } finally {
    client.destroy();
  }
}

async function timed(samples: number, fn: () => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = performance.now();
    await fn();
    times.push(performance.now() - started);
  }
  return times;
}

const ms = (value: number) => `${value.toFixed(value < 10 ? 2 : 1)} ms`;
const ratio = (value: number, baseline: number) => `${(value / baseline).toFixed(2)}x`;
