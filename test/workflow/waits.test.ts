// Publish waits for others, boundedly: snapshot readers from before the run or
// mid-load see exactly the old rows; a transaction holding the live table makes
// each swap attempt give up after PUBLISH_LOCK_WAIT_MS and retry while dashboard
// reads complete, and the publish goes through once it ends; a holder or reader
// that never ends fails the run with an alert naming it.
// Why: docs/decisions/publishing.md ("Snapshot readers", "Bounded lock waits")
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { quoteUser } from '../../domain/identifiers.ts';
import { ensureLocalUser, localUserPassword } from '../../local/database-users.ts';
import { newClient } from '../../local/pg-clients.ts';
import { useForkPerTest } from '../support/fork-per-test.ts';
import { until } from '../support/until.ts';
import { caughtMessage, inputFor, LIVE, namesFor, useWorkflowFixture, type Workflow } from '../support/workflow.ts';

const HOLDER = 'dashboard_holder';
const OTHER = 'analytics.calendar';

async function connect(wf: Workflow, user?: string): Promise<pg.Client> {
  const client = newClient(user ? { ...wf.wh.pg, user, password: localUserPassword(wf.wh.pg, user) } : wf.wh.pg);
  await client.connect();
  return client;
}

const count = async (client: pg.Client, table: string) => Number((await client.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);

// The server is shared by the test files running at once: pg_locks and
// pg_stat_activity list every database's, so each look is kept to this one.
const THIS_DATABASE = '(SELECT oid FROM pg_database WHERE datname = current_database())';

/** True once the swap's lock request on the live table is seen waiting in pg_locks. */
async function swapWaiting(wf: Workflow): Promise<boolean> {
  const rows = await wf.query(
    `SELECT 1 FROM pg_locks WHERE database = ${THIS_DATABASE} AND relation = $1::regclass AND NOT granted AND mode = 'AccessExclusiveLock'`,
    [LIVE],
  );
  return rows.length > 0;
}

/**
 * Publish of `batchId` has begun its wait for older snapshots: it submitted
 * the wait's query (the endpoint's request log), which it repeats until they end.
 * Sampling pg_stat_activity instead could miss the short queries on a busy
 * machine.
 */
async function publishWaitsForSnapshots(wf: Workflow, batchId: string): Promise<boolean> {
  return wf.wh.api.requests().some((r) => r.operation === 'ExecuteStatement' && (r.statementName ?? '').endsWith(`:publish:snapshots:${batchId}`));
}

const publishCalls = (wf: Workflow) => wf.calls.filter((c) => c.state === 'Publish').length;

const fixture = useWorkflowFixture(
  'wf_waits',
  async (wf) => {
    await wf.sample({ rowsPerDay: 10, sourceDays: 16, liveDays: 4 });
    await ensureLocalUser(wf.wh.pg, HOLDER);
    await wf.query(`CREATE TABLE ${OTHER} (d date)`);
    await wf.query(`INSERT INTO ${OTHER} VALUES ('2026-01-01')`);
    await wf.query(`GRANT USAGE ON SCHEMA analytics TO ${quoteUser(HOLDER)}`);
    await wf.query(`GRANT SELECT ON ${LIVE}, ${OTHER} TO ${quoteUser(HOLDER)}`);
    // A publication for readers to see while a later run waits (the alerts name it).
    const first = await wf.run(inputFor(5), 'first-publication');
    if (first.status !== 'SUCCEEDED') throw new Error(`the first publication failed: ${first.error}: ${first.cause}`);
  },
  { env: { PUBLISH_LOCK_WAIT_MS: '300', PUBLISH_SNAPSHOT_WAIT_MS: '1000' } },
);

describe('snapshot readers', () => {
  const wf = useForkPerTest(fixture);
  it('a REPEATABLE READ and a SERIALIZABLE reader, snapshots taken before the run and mid-load, see exactly the old rows, never none or part', async () => {
    const old = (await wf.fingerprint(LIVE)).rows;
    const fresh = (await wf.expected(6)).rows;
    expect(fresh).not.toBe(old);
    const readers: { label: string; client: pg.Client; rows?: number }[] = [];
    const snapshotReader = async (label: string, isolation: string) => {
      const client = await connect(wf, HOLDER);
      await client.query(`BEGIN ISOLATION LEVEL ${isolation}`);
      await count(client, OTHER); // takes the snapshot, reads nothing of the live table
      readers.push({ label, client });
    };
    await snapshotReader('before, repeatable read', 'REPEATABLE READ');
    await snapshotReader('before, serializable', 'SERIALIZABLE');

    // The first chunk to start loads and commits; the mid-load snapshots are
    // taken then; the other chunks start only after.
    let first: Promise<void> | undefined;
    let midLoad!: () => void;
    const taken = new Promise<void>((resolve) => (midLoad = resolve));
    wf.faults.LoadChunk = async (input, next) => {
      if (first) {
        await taken;
        return next(input);
      }
      let done!: () => void;
      first = new Promise<void>((resolve) => (done = resolve));
      try {
        return await next(input);
      } finally {
        done();
        const staged = Number((await wf.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${namesFor(6).staging}`))[0]!.n);
        expect(staged).toBeGreaterThan(0);
        await snapshotReader('mid-load, repeatable read', 'REPEATABLE READ');
        await snapshotReader('mid-load, serializable', 'SERIALIZABLE');
        midLoad();
      }
    };
    try {
      const running = await wf.start(inputFor(6), 'snapshot-readers');
      // They read the live table when Publish is ready to swap: waiting for
      // them (the fix) or, without it, having swapped already.
      const published = async () => (await wf.batch(namesFor(6).batchId).catch(() => undefined))?.status === 'PUBLISHED';
      await until(async () => (await publishWaitsForSnapshots(wf, namesFor(6).batchId)) || (await published()), 'Publish ready to swap');
      for (const reader of readers) {
        reader.rows = await count(reader.client, LIVE);
        await reader.client.query('COMMIT');
      }
      const result = await running.result;
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      expect(readers.map((r) => [r.label, r.rows])).toEqual(readers.map((r) => [r.label, old]));
      expect((await wf.fingerprint(LIVE)).rows).toBe(fresh);
    } finally {
      wf.reset();
      for (const reader of readers) await reader.client.end().catch(() => undefined);
    }
  });

  it('a snapshot reader that never ends fails the run, transiently retried first, with an alert naming it', async () => {
    const before = await wf.fingerprint(LIVE);
    const reader = await connect(wf, HOLDER);
    try {
      await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await count(reader, OTHER);
      const result = await wf.run(inputFor(8), 'snapshot-reader-stays');
      expect(result.status).toBe('FAILED');
      expect(publishCalls(wf)).toBeGreaterThan(1);
      const message = caughtMessage(result);
      expect(message).toContain('transactions older than the new rows');
      expect(message).toContain(`user ${HOLDER}`);
      expect(result.alerts.map((a) => a.message).join('\n')).toContain(HOLDER);
      expect(await wf.fingerprint(LIVE)).toEqual(before);
    } finally {
      wf.reset();
      await reader.end();
    }
  });
});

describe('bounded lock waits', () => {
  const wf = useForkPerTest(fixture);
  it('a reader holding the live table makes the swap give up and retry; a dashboard read meanwhile completes while it is open; the publish follows its end', async () => {
    const old = (await wf.fingerprint(LIVE)).rows;
    const holder = await connect(wf, HOLDER);
    const dashboard = await connect(wf);
    try {
      await holder.query('BEGIN');
      expect(await count(holder, LIVE)).toBe(old);
      const running = await wf.start(inputFor(10), 'lock-holder-ends');
      await until(() => swapWaiting(wf), 'the swap waiting for the live table');
      // While it waits it holds nothing another pipeline's swap needs: the
      // publications are locked only once the live table is.
      let waiting: { holds: boolean }[] = [];
      await until(async () => {
        waiting = await wf.query<{ holds: boolean }>(
          // SIReadLock: a SERIALIZABLE transaction's record of what it read,
          // kept past the commit while overlapping transactions run (the
          // holder's is open), blocking nobody; not a lock another swap waits for.
          `SELECT EXISTS (SELECT 1 FROM pg_locks p WHERE p.pid = w.pid AND p.database = w.database AND p.relation = 'atomic_publish.publications'::regclass AND p.mode <> 'SIReadLock') AS holds
             FROM pg_locks w WHERE w.database = ${THIS_DATABASE} AND w.relation = $1::regclass AND NOT w.granted AND w.mode = 'AccessExclusiveLock'`,
          [LIVE],
        );
        return waiting.length > 0;
      }, 'the waiting swap seen with its locks');
      expect(waiting).toEqual([{ holds: false }]);
      // Queued behind the swap's lock request: it completes only once the
      // swap gave up, while the holder still holds its transaction open.
      const read = count(dashboard, LIVE);
      expect(await read).toBe(old);
      await until(() => publishCalls(wf) > 1, 'Publish retried');
      expect((await holder.query(`SELECT count(*)::int AS n FROM ${LIVE}`)).rows[0].n).toBe(old);
      await holder.query('COMMIT');
      const result = await running.result;
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(10));
    } finally {
      wf.reset();
      await holder.end().catch(() => undefined);
      await dashboard.end().catch(() => undefined);
    }
  });

  it('a holder that never lets go fails the run with an alert naming it and when its transaction started', async () => {
    const before = await wf.fingerprint(LIVE);
    const holder = await connect(wf, HOLDER);
    const dashboard = await connect(wf);
    try {
      await holder.query('BEGIN');
      await count(holder, LIVE);
      const running = await wf.start(inputFor(12), 'lock-holder-stays');
      await until(() => swapWaiting(wf), 'the swap waiting for the live table');
      expect(await count(dashboard, LIVE)).toBe(before.rows);
      const result = await running.result;
      expect(result.status).toBe('FAILED');
      const message = caughtMessage(result);
      expect(message).toMatch(/the swap of analytics\.sales_order_lines gave up after waiting 300 ms/);
      expect(message).toMatch(new RegExp(`user ${HOLDER} \\(session \\d+, transaction started \\d{4}-\\d\\d-\\d\\d[ T]\\d\\d:\\d\\d`));
      expect(result.alerts.map((a) => a.message).join('\n')).toContain(HOLDER);
      // What readers see now and what to do next: the lock wait was given up after every retry.
      expect(result.alerts[0]!.message).toMatch(
        new RegExp(`^Live table: ${LIVE} untouched; readers still see publication \\d+ \\(batch [0-9a-f]{16}, published at [^)]+ UTC\\)\\.$`, 'm'),
      );
      expect(result.alerts[0]!.message).toContain(
        `Next:       the warehouse kept failing after every retry (a lock held, snapshots not ending, unreachable: the error says which); once that has ended, start an execution with input ${JSON.stringify(inputFor(12))}.`,
      );
      expect(await wf.fingerprint(LIVE)).toEqual(before);
      // The holder was never cancelled.
      expect(await count(holder, LIVE)).toBe(before.rows);
    } finally {
      wf.reset();
      await holder.end().catch(() => undefined);
      await dashboard.end().catch(() => undefined);
    }
  });

  it('names the statement a holder is running', async () => {
    const before = await wf.fingerprint(LIVE);
    // The holder's statement reads the live table, then blocks on an
    // advisory lock the test holds (a session lock, no open transaction).
    const latch = await connect(wf);
    const holder = await connect(wf, HOLDER);
    try {
      await latch.query('SELECT pg_advisory_lock(7007)');
      const holding = holder.query(`SELECT count(*) AS n FROM ${LIVE} WHERE pg_advisory_lock_shared(7007) IS NOT NULL`);
      await until(
        async () => (await wf.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)).length > 0,
        "the holder's statement blocked on the latch",
      );
      const result = await wf.run(inputFor(14), 'lock-holder-running');
      expect(result.status).toBe('FAILED');
      expect(caughtMessage(result)).toContain(`user ${HOLDER} (session `);
      expect(caughtMessage(result)).toContain(`running "SELECT count(*) AS n FROM ${LIVE} WHERE pg_advisory_lock_shared(7007)`);
      expect(await wf.fingerprint(LIVE)).toEqual(before);
      await latch.query('SELECT pg_advisory_unlock(7007)');
      // Never cancelled: its statement completes with the old rows.
      expect(Number((await holding).rows[0].n)).toBe(before.rows);
    } finally {
      wf.reset();
      await latch.end().catch(() => undefined);
      await holder.end().catch(() => undefined);
    }
  });
});
