// snapshotReaders 'in-place': readers whose snapshot holds no lock (SELECT 1, a
// catalog read, another schema's table, mid-load), under REPEATABLE READ and
// SERIALIZABLE, read exactly the old rows after the publish, never none or part;
// later readers the new; nothing is renamed; its rollback likewise. The rename
// swap's wait is waits.test.ts's. Why: docs/decisions/snapshot-readers-without-locks.md
import '../support/in-place-swap-pipeline.ts';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { newClient } from '../../local/pg-clients.ts';
import { useForkPerTest } from '../support/fork-per-test.ts';
import { caughtMessage, FINGERPRINT, type Fingerprint, inputFor, LIVE, namesFor, PIPELINE, useWorkflowFixture, type Workflow } from '../support/workflow.ts';

const OTHER = 'elsewhere.calendar';
const LEVELS = ['REPEATABLE READ', 'SERIALIZABLE'] as const;
/** Statements that take a transaction's snapshot and lock nothing Publish's wait looks for. */
const SNAPSHOTS = {
  'SELECT 1': 'SELECT 1',
  'a catalog read': 'SELECT count(*) FROM pg_class',
  'another schema': `SELECT count(*) FROM ${OTHER}`,
} as const;

interface Reader {
  readonly label: string;
  readonly client: pg.Client;
}

async function snapshotReader(wf: Workflow, label: string, level: string, takes: string): Promise<Reader> {
  const client = newClient(wf.wh.pg);
  await client.connect();
  await client.query(`BEGIN ISOLATION LEVEL ${level}`);
  await client.query(takes);
  return { label: `${label}, ${level.toLowerCase()}`, client };
}

/** What each reader sees of the live table now, then its transaction committed. */
async function readLive(readers: readonly Reader[]): Promise<[string, Fingerprint][]> {
  const seen: [string, Fingerprint][] = [];
  for (const reader of readers) {
    seen.push([reader.label, (await reader.client.query<Fingerprint>(`${FINGERPRINT} FROM ${LIVE}`)).rows[0]!]);
    await reader.client.query('COMMIT');
  }
  return seen;
}

const liveOid = async (wf: Workflow) => String((await wf.query<{ oid: string }>(`SELECT $1::regclass::oid::text AS oid`, [LIVE]))[0]!.oid);

const fixture = useWorkflowFixture('wf_snapshot_readers', async (wf) => {
  await wf.sample({ rowsPerDay: 10, sourceDays: 16, liveDays: 4 });
  await wf.query(`CREATE SCHEMA elsewhere`);
  await wf.query(`CREATE TABLE ${OTHER} (d date)`);
  await wf.query(`INSERT INTO ${OTHER} VALUES ('2026-01-01')`);
  const first = await wf.run(inputFor(5), 'first-publication');
  if (first.status !== 'SUCCEEDED') throw new Error(`the first publication failed: ${first.error}: ${first.cause}`);
});

describe('snapshot readers of an in-place publish', () => {
  const wf = useForkPerTest(fixture);

  it('snapshots from SELECT 1, the catalog, another schema and mid-load read exactly the old rows after the publish; a later reader the new', async () => {
    const old = await wf.fingerprint(LIVE);
    const fresh = await wf.expected(6);
    expect(fresh.digest).not.toBe(old.digest);
    const table = await liveOid(wf);
    const readers: Reader[] = [];
    try {
      for (const [label, takes] of Object.entries(SNAPSHOTS)) for (const level of LEVELS) readers.push(await snapshotReader(wf, label, level, takes));
      // The first chunk to start loads and commits; the mid-load snapshots
      // are taken then; the other chunks start only after.
      let first = false;
      let midLoad!: () => void;
      const taken = new Promise<void>((resolve) => (midLoad = resolve));
      wf.faults.LoadChunk = async (input, next) => {
        if (first) {
          await taken;
          return next(input);
        }
        first = true;
        try {
          return await next(input);
        } finally {
          const staged = Number((await wf.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${namesFor(6).staging}`))[0]!.n);
          expect(staged).toBeGreaterThan(0);
          for (const level of LEVELS) readers.push(await snapshotReader(wf, 'mid-load', level, `SELECT count(*) FROM ${OTHER}`));
          midLoad();
        }
      };
      const result = await wf.run(inputFor(6), 'in-place-under-snapshots');
      expect(result.status, `${result.error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
      expect(readers).toHaveLength(8);

      const seen = await readLive(readers);
      expect(seen).toEqual(readers.map((r) => [r.label, old]));
      expect(await wf.fingerprint(LIVE)).toEqual(fresh);
      expect(await liveOid(wf)).toBe(table);
      // The old rows are kept as the publication's old version.
      const [latest] = (await wf.publications()).slice(-1);
      expect(await wf.fingerprint(String(latest!.old_version_table))).toEqual(old);
    } finally {
      wf.reset();
      for (const reader of readers) await reader.client.end().catch(() => undefined);
    }
  });

  it('a rollback writes the old rows back in place: a snapshot from before it reads the rows it replaced', async () => {
    const old = await wf.fingerprint(LIVE);
    const published = await wf.run(inputFor(6), 'in-place-publish');
    expect(published.status, `${published.error}: ${caughtMessage(published)}`).toBe('SUCCEEDED');
    const fresh = await wf.fingerprint(LIVE);
    expect(fresh).toEqual(await wf.expected(6));
    const table = await liveOid(wf);
    const readers: Reader[] = [];
    try {
      for (const level of LEVELS) readers.push(await snapshotReader(wf, 'SELECT 1', level, 'SELECT 1'));
      const rolledBack = await wf.run({ pipeline: PIPELINE.name, rollback: {} }, 'in-place-rollback');
      expect(rolledBack.status, `${rolledBack.error}: ${caughtMessage(rolledBack)}`).toBe('SUCCEEDED');

      expect(await readLive(readers)).toEqual(readers.map((r) => [r.label, fresh]));
      expect(await wf.fingerprint(LIVE)).toEqual(old);
      expect(await liveOid(wf)).toBe(table);
      const [rollback] = (await wf.publications()).slice(-1);
      expect(rollback!.rollback_of).not.toBeNull();
      // The rows rolled away from are kept, so the rollback can itself be undone.
      expect(await wf.fingerprint(String(rollback!.old_version_table))).toEqual(fresh);
    } finally {
      for (const reader of readers) await reader.client.end().catch(() => undefined);
    }
  });
});
