// A statement that runs until the test lets it go: a table locked ACCESS
// EXCLUSIVE by the test's own connection; a statement reading it (`sql`) blocks,
// waiting() resolves once pg_locks shows it blocked, release() commits the lock.
// A durable gate holds its lock in a prepared transaction, through a restart.
// Why: docs/decisions/tests-and-timing.md
//
//   const gate = await holdGate(wh.pg); /* submit gate.sql */ const [pid] = await gate.waiting(); await gate.release();
import { randomBytes } from 'node:crypto';
import { newClient, withClient } from '../../local/pg-clients.ts';
import type { PgConnection } from '../../local/postgres.ts';
import { until } from './until.ts';

export interface LockGate {
  readonly table: string;
  /** A statement that blocks while the gate is held, and returns one row (0) after. */
  readonly sql: string;
  /** The pids of the backends waiting for the gate's lock, once there are at least `count`. */
  waiting(count?: number): Promise<number[]>;
  /** Lets the waiting statements go; nothing when already released, or when a gate that is not durable lost its session. */
  release(): Promise<void>;
}

export interface GateOptions {
  /**
   * Lock this existing table (`schema.table`) instead of a new one: what is
   * held back is then whatever the system under test does with it.
   * @default - a new table of its own
   */
  table?: string;
  /**
   * Keeps the lock across a lost session and a server restart, in a
   * prepared transaction (needs max_prepared_transactions > 0).
   * @default false - the lock goes with the test's session
   */
  durable?: boolean;
}

export async function holdGate(conn: PgConnection & { database: string }, options: GateOptions = {}): Promise<LockGate> {
  const table = options.table ?? `gate_${randomBytes(4).toString('hex')}`;
  // The connection may be lost on purpose (a server restart in a fault test).
  const client = newClient(conn);
  await client.connect();
  if (!options.table) await client.query(`CREATE TABLE ${table} (x int)`);
  await client.query('BEGIN');
  await client.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  const prepared = `gate_${randomBytes(4).toString('hex')}`;
  if (options.durable) await client.query(`PREPARE TRANSACTION '${prepared}'`);
  let released = false;
  return {
    table,
    sql: `SELECT count(*) AS gate FROM ${table}`,
    async waiting(count = 1) {
      let pids: number[] = [];
      await until(async () => {
        // pg_locks is read afresh by every query, also inside the lock's own transaction.
        const { rows } = await client.query<{ pid: number }>(
          `SELECT pid FROM pg_locks WHERE locktype = 'relation' AND relation = $1::regclass AND NOT granted ORDER BY pid`,
          [table],
        );
        pids = rows.map((r) => r.pid);
        return pids.length >= count;
      }, `${count} statement(s) waiting for the lock on ${table}`);
      return pids;
    },
    async release() {
      if (released) return;
      released = true;
      if (options.durable) await withClient(conn, (admin) => admin.query(`COMMIT PREPARED '${prepared}'`));
      else await client.query('COMMIT').catch(() => undefined);
      await client.end().catch(() => undefined);
    },
  };
}
