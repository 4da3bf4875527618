// Publishing through a view: one CREATE OR REPLACE VIEW points the live name at
// the next version. Plan refuses a live table and prints the SQL; readers see the
// old version or the new; the view keeps its grants; a replay publishes nothing;
// Cleanup never drops the version the view reads; a snapshot reader sees the old
// rows, never none. Why: docs/decisions/publishing-through-a-view.md
import '../support/view-pipeline.ts';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quoteUser } from '../../domain/identifiers.ts';
import { viewVersionTableFor } from '../../domain/plan/plan.ts';
import { migrationSql } from '../../domain/publish/sql/view.ts';
import { ensureLocalUser, LOCAL_PIPELINE_USER, localUserPassword } from '../../local/database-users.ts';
import { newClient } from '../../local/pg-clients.ts';
import { ReaderPool, type ReaderSample } from '../../local/readers.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import {
  caughtMessage,
  type Fingerprint,
  inputFor,
  LIVE,
  namesFor,
  PIPELINE,
  planOf,
  type UseWorkflowOptions,
  useFork,
  useWorkflow,
  useWorkflowFixture,
  visited,
  type Workflow,
} from '../support/workflow.ts';

const ROWS_PER_DAY = 20;
const DASHBOARD = 'dashboard_view_reader';
const OTHER = 'analytics.calendar';

/** Sees the name of every statement the endpoint runs. */
let onStatement: (name: string) => unknown = () => undefined;

async function connect(wf: Workflow, user: string): Promise<pg.Client> {
  const client = newClient({ ...wf.wh.pg, user, password: localUserPassword(wf.wh.pg, user) });
  await client.connect();
  return client;
}

/** What the live name is (`v` view, `r` table) and the tables it reads. */
async function liveShape(wf: Workflow): Promise<{ kind: string; reads: string[] }> {
  const [kind] = await wf.query<{ kind: string }>(`SELECT relkind::text AS kind FROM pg_class WHERE oid = $1::regclass`, [LIVE]);
  const reads = await wf.query<{ name: string }>(
    `SELECT DISTINCT t.relname AS name FROM pg_rewrite r JOIN pg_depend d ON d.objid = r.oid
       JOIN pg_class t ON t.oid = d.refobjid AND t.oid <> r.ev_class
      WHERE r.ev_class = $1::regclass AND d.refclassid = 'pg_class'::regclass ORDER BY 1`,
    [LIVE],
  );
  return { kind: kind!.kind, reads: reads.map((r) => r.name) };
}

const versionTables = async (wf: Workflow) =>
  (
    await wf.query<{ name: string }>(
      `SELECT relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'analytics' AND relname LIKE 'sales\\_order\\_lines\\_\\_v\\_%' ORDER BY 1`,
    )
  ).map((r) => r.name);

const versionRead = (r: ReaderSample) => `${r.count}/${r.keySum}`;
const versionOf = (f: { rows: number; keySum: string }) => `${f.rows}/${f.keySum}`;

const OPTIONS: UseWorkflowOptions = {
  env: { PUBLISH_LOCK_WAIT_MS: '2000', PUBLISH_SNAPSHOT_WAIT_MS: '10000' },
  statementError: ({ name }) => {
    onStatement(name ?? '');
    return undefined;
  },
};

/** The sample, a dashboard user and a table of its own it may read. */
async function sample(wf: Workflow): Promise<void> {
  await wf.sample({ rowsPerDay: ROWS_PER_DAY, sourceDays: 20, liveDays: 4 });
  await ensureLocalUser(wf.wh.pg, DASHBOARD);
  await wf.query(`CREATE TABLE ${OTHER} (d date)`);
  await wf.query(`INSERT INTO ${OTHER} VALUES ('2026-01-01')`);
  await wf.query(`GRANT USAGE ON SCHEMA analytics TO ${quoteUser(DASHBOARD)}`);
  await wf.query(`GRANT SELECT ON ${OTHER} TO ${quoteUser(DASHBOARD)}`);
}

describe('publishVia view on a live table', () => {
  let wf: Workflow;
  beforeAll(async () => {
    wf = await useWorkflow('wf_view_table', OPTIONS);
    await sample(wf);
  });
  afterAll(() => wf?.close());

  it('Plan refuses a live table, printing the SQL that turns it into a view; nothing is written', async () => {
    const before = await wf.fingerprint(LIVE);
    const result = await wf.run(inputFor(5), 'view-refused');

    expect(result.status).toBe('FAILED');
    expect(visited(result)).not.toContain('LoadChunk');
    const message = caughtMessage(result);
    expect(message).toContain(`publishes through a view (publishVia: 'view'), and ${LIVE} is a table`);
    expect(message).toContain(`ALTER TABLE "analytics"."sales_order_lines" RENAME TO "sales_order_lines__v_initial"`);
    expect(message).toContain(`CREATE VIEW "analytics"."sales_order_lines" AS SELECT "order_id", "line_no"`);
    expect(await wf.derivedTables()).toEqual([]);
    expect((await liveShape(wf)).kind).toBe('r');
    expect(await wf.fingerprint(LIVE)).toEqual(before);
  });
});

describe('publishVia view', () => {
  // The one-time migration the refusal prints, then the first publish through the view (day 6), readers polling throughout.
  const fixture = useWorkflowFixture(
    'wf_view',
    async (wf) => {
      await sample(wf);
      // Run as the handlers' user (it owns the live table).
      const owner = await connect(wf, LOCAL_PIPELINE_USER);
      try {
        for (const sql of migrationSql(
          PIPELINE,
          (
            await wf.query<{ c: string }>(
              `SELECT column_name AS c FROM information_schema.columns WHERE table_schema = 'analytics' AND table_name = 'sales_order_lines' ORDER BY ordinal_position`,
            )
          ).map((r) => r.c),
        )) {
          await owner.query(sql);
        }
      } finally {
        await owner.end();
      }
      await wf.query(`GRANT SELECT ON ${LIVE} TO ${quoteUser(DASHBOARD)}`);
      const migrated = await liveShape(wf);
      const old = await wf.fingerprint(LIVE);
      const expected = await wf.expected(6);

      const readers = new ReaderPool(wf.wh.pg, 2, { keyExpression: 'order_id * 1000 + line_no', pauseMs: 1 });
      readers.watch(LIVE, 'before');
      await readers.readAll();
      wf.faults.Publish = async (input, next) => {
        readers.phase('before the switch');
        await readers.readAll();
        readers.phase('switching');
        return next(input);
      };
      const result = await wf.run(inputFor(6), 'view-publish');
      readers.phase('after');
      await readers.readAll();
      const reads = await readers.close();
      return { migrated, old, expected, result, reads };
    },
    OPTIONS,
  );

  describe('the first publish', () => {
    const wf = useFork(fixture);
    let old: Fingerprint;
    let expected: Fingerprint;
    let result: ExecutionResult;
    let reads: ReaderSample[];
    beforeAll(() => {
      ({ old, expected, result, reads } = fixture.arranged);
    });

    it('switches the view in one transaction: readers see the old version, then the new one; the grant on the view is kept; nothing is renamed under readers', async () => {
      expect(fixture.arranged.migrated).toEqual({ kind: 'v', reads: ['sales_order_lines__v_initial'] });
      expect(versionOf(expected)).not.toBe(versionOf(old));

      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      const { batchId } = namesFor(6);
      const version = viewVersionTableFor(PIPELINE, batchId);
      expect(await liveShape(wf)).toEqual({ kind: 'v', reads: [version] });
      expect(await wf.fingerprint(LIVE)).toEqual(expected);
      expect(await wf.fingerprint(`analytics.sales_order_lines__v_initial`)).toEqual(old);
      expect(await wf.publications()).toMatchObject([{ batch_id: batchId, live_table: LIVE, old_version_table: 'analytics.sales_order_lines__v_initial' }]);
      // Readers: never an error, the old version until the switch, the new one after, never back.
      expect(reads.filter((r) => r.error)).toEqual([]);
      for (const phase of ['before', 'before the switch']) {
        expect(new Set(reads.filter((r) => r.phase === phase).map(versionRead)), phase).toEqual(new Set([versionOf(old)]));
      }
      expect(new Set(reads.filter((r) => r.phase === 'after').map(versionRead))).toEqual(new Set([versionOf(expected)]));
      for (const reader of [0, 1]) {
        const versions = reads.filter((r) => r.reader === reader).map(versionRead);
        expect(
          versions.filter((v, i) => i > 0 && v !== versions[i - 1]),
          `reader ${reader} switches`,
        ).toHaveLength(1);
      }
      // The grant on the view survived the switch, and it is all a reader needs: none on the versions.
      const dashboard = await connect(wf, DASHBOARD);
      try {
        expect(Number((await dashboard.query(`SELECT count(*) AS n FROM ${LIVE}`)).rows[0].n)).toBe(expected.rows);
        await expect(dashboard.query(`SELECT count(*) FROM analytics.${version}`)).rejects.toThrow(/permission denied/);
      } finally {
        await dashboard.end();
      }
    });
  });

  describe('replaying the first publish', () => {
    const wf = useFork(fixture);

    it('a replay of the published batch publishes nothing twice', async () => {
      const before = await wf.publications();
      const live = await wf.fingerprint(LIVE);
      const result = await wf.run(inputFor(6), 'view-replay');

      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      expect(planOf(result).alreadyPublished).toBe(true);
      expect(await wf.publications()).toEqual(before);
      expect(await wf.fingerprint(LIVE)).toEqual(live);
    });
  });

  describe('rolling back the first publish', () => {
    const wf = useFork(fixture);

    it('a rollback is refused before any write, with the statement that rolls back by hand', async () => {
      const before = await wf.publications();
      const live = await wf.fingerprint(LIVE);
      const result = await wf.run({ pipeline: PIPELINE.name, rollback: {} }, 'view-rollback');

      expect(result.status).toBe('FAILED');
      expect(caughtMessage(result)).toContain(`pipeline ${PIPELINE.name} publishes through a view, and the rollback operation swaps tables`);
      expect(caughtMessage(result)).toContain(`CREATE OR REPLACE VIEW ${LIVE} AS SELECT <its columns> FROM <the old_version_table`);
      expect(await wf.publications()).toEqual(before);
      expect(await wf.fingerprint(LIVE)).toEqual(live);
    });
  });

  describe('four publications after the first', () => {
    const wf = useFork(fixture);

    it('Cleanup keeps the retained versions and the one the view reads, and drops the older ones', async () => {
      const days = [8, 10, 12, 14];
      for (const day of days) {
        const result = await wf.run(inputFor(day), `view-day-${day}`);
        expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      }
      const current = viewVersionTableFor(PIPELINE, namesFor(14).batchId);
      expect(await liveShape(wf)).toEqual({ kind: 'v', reads: [current] });
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(14));
      // Five publications; keepVersions 3: the old versions of the last three remain, with the current one.
      const publications = await wf.publications();
      expect(publications).toHaveLength(5);
      const kept = publications.slice(-3).map((p) => String(p.old_version_table).replace('analytics.', ''));
      expect(await versionTables(wf)).toEqual([...kept, current].sort());
      expect(publications.slice(0, 2).every((p) => p.dropped_at !== null)).toBe(true);
      expect(await wf.derivedTables()).toEqual([...kept, current].sort().map((t) => `analytics.${t}`));
    });
  });

  describe('a publish under a snapshot reader', () => {
    const wf = useFork(fixture);

    it('a snapshot reader whose snapshot predates the run sees the old rows through the view, never none', async () => {
      const old = (await wf.fingerprint(LIVE)).rows;
      const fresh = (await wf.expected(16)).rows;
      expect(fresh).not.toBe(old);
      const reader = await connect(wf, DASHBOARD);
      try {
        await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        await reader.query(`SELECT count(*) FROM ${OTHER}`); // the snapshot, before the load; nothing of the view read yet
        const snapshotsListed = new Promise<void>((resolve) => (onStatement = (name) => name.includes(':publish:snapshots:') && resolve()));
        const running = await wf.start(inputFor(16), 'view-snapshot-reader');
        // Publish lists the transactions older than the new rows: this reader is among them.
        await snapshotsListed;
        const seen = Number((await reader.query(`SELECT count(*) AS n FROM ${LIVE}`)).rows[0].n);
        await reader.query('COMMIT');
        const result = await running.result;

        expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
        expect(seen).toBe(old);
        expect((await wf.fingerprint(LIVE)).rows).toBe(fresh);
      } finally {
        onStatement = () => undefined;
        await reader.end().catch(() => undefined);
      }
    });
  });
});
