// Rollback through the state machine: after publishes A, B, C, `{"rollback": {}}`
// puts B back while readers see C or B, keeping grants, comment, keys and a view,
// recorded and counted; forward to C, or to the live batch; bad inputs refused in
// Plan; a failed or overtaken rollback changes nothing and pages truly; a later run
// publishes newer data; it waits for the lease; Cleanup never CASCADEs.
// Why: docs/decisions/rollback.md
import { ListStatementsCommand } from '@aws-sdk/client-redshift-data';
import { beforeAll, describe, expect, it } from 'vitest';
import { quoteUser } from '../../domain/identifiers.ts';
import { rolledBackVersionTableFor } from '../../domain/rollback/rollback.ts';
import { ensureLocalUser, LOCAL_PIPELINE_USER } from '../../local/database-users.ts';
import { ReaderPool, type ReaderSample } from '../../local/readers.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import {
  caughtError,
  caughtMessage,
  type Fingerprint,
  inputFor,
  LIVE,
  namesFor,
  PIPELINE,
  useFork,
  useWorkflowFixture,
  visited,
  type Workflow,
} from '../support/workflow.ts';

const READER = 'rollback_reader';
const VIEW = 'analytics.sales_amounts_rb';
const A = 6;
const B = 8;
const C = 10;
const D = 12;

const id = (day: number) => namesFor(day).batchId;
const versionOf = (f: { rows: number; keySum: string }) => `${f.rows}/${f.keySum}`;
const versionRead = (r: ReaderSample) => `${r.count}/${r.keySum}`;
const rollbackInput = (rollback: unknown) => ({ pipeline: PIPELINE.name, rollback });

async function succeeds(wf: Workflow, input: unknown, name: string): Promise<ExecutionResult> {
  const result = await wf.run(input, name);
  expect(result.status, `${result.error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
  return result;
}

/** What a rollback must not change when refused: the manifest's publications and batches, the tables, the live rows. */
async function snapshot(wf: Workflow): Promise<unknown> {
  return {
    publications: await wf.publications(),
    batches: await wf.query(`SELECT batch_id, status, attempt FROM atomic_publish.batches ORDER BY batch_id`),
    leases: await wf.query(`SELECT pipeline, execution_id FROM atomic_publish.pipeline_leases ORDER BY 1`),
    tables: await wf.derivedTables(),
    live: await wf.fingerprint(LIVE),
  };
}

/** The live table's declared keys as the endpoint's sessions see the catalog. */
async function liveKeys(wf: Workflow): Promise<string[]> {
  const rows = await wf.wh.select(
    `SELECT con.conname || ' ' || pg_get_constraintdef(con.oid) FROM pg_constraint con
       JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'analytics' AND c.relname = 'sales_order_lines' ORDER BY 1`,
  );
  return rows.map((r) => String(r[0]));
}

/** Every statement the Cleanup runs of this workflow sent through its Data API endpoint. */
async function cleanupStatements(wf: Workflow): Promise<string[]> {
  const sent: string[] = [];
  let token: string | undefined;
  do {
    const page = await wf.wh.client.send(
      new ListStatementsCommand({
        StatementName: `atomic-publish:${PIPELINE.name}:cleanup:`,
        Status: 'ALL',
        MaxResults: 100,
        RoleLevel: true,
        ...(token ? { NextToken: token } : {}),
      }),
    );
    for (const statement of page.Statements ?? []) sent.push(...(statement.QueryStrings ?? []), ...(statement.QueryString ? [statement.QueryString] : []));
    token = page.NextToken;
  } while (token);
  return sent;
}

// Publishes A, B and C of a live table with grants, a comment, a view and
// declared keys, then `{"rollback": {}}` puts B back while readers poll it.
const fixture = useWorkflowFixture('wf_rollback', async (wf) => {
  await wf.sample({ rowsPerDay: 10, sourceDays: 14, liveDays: 4 });
  await ensureLocalUser(wf.wh.pg, READER);
  for (const sql of [
    `GRANT USAGE ON SCHEMA analytics TO ${quoteUser(READER)}`,
    `GRANT SELECT ON ${LIVE} TO ${quoteUser(READER)}`,
    `COMMENT ON TABLE ${LIVE} IS 'Order lines, rolled back and forth'`,
    `CREATE VIEW ${VIEW} AS SELECT order_id, line_no, amount FROM ${LIVE}`,
    `ALTER TABLE ${VIEW} OWNER TO ${quoteUser(LOCAL_PIPELINE_USER)}`,
  ]) {
    await wf.query(sql);
  }
  // A declared key, through the endpoint (informational, in pg_constraint): every version carries it.
  expect((await wf.wh.run(`ALTER TABLE ${LIVE} ADD CONSTRAINT sales_order_lines_pk PRIMARY KEY (order_id, line_no)`)).Status).toBe('FINISHED');
  const versions: Record<number, Fingerprint> = {};
  for (const day of [A, B, C]) {
    await succeeds(wf, inputFor(day), `publish-${day}`);
    versions[day] = await wf.fingerprint(LIVE);
    expect(versions[day]).toEqual(await wf.expected(day));
  }
  // A key declared on C only: the version rolled back to must get the live table's keys, not keep its own.
  expect((await wf.wh.run(`ALTER TABLE ${LIVE} ADD CONSTRAINT sales_order_lines_uq UNIQUE (customer_id, order_id, line_no)`)).Status).toBe('FINISHED');

  const readers = new ReaderPool(wf.wh.pg, 2, { keyExpression: 'order_id * 1000 + line_no', pauseMs: 1 });
  readers.watch(LIVE, 'before');
  await readers.readAll();
  wf.faults.Rollback = async (input, next) => {
    readers.phase('before the swap');
    await readers.readAll();
    readers.phase('swapping');
    const output = await next(input);
    readers.phase('after');
    await readers.readAll();
    return output;
  };
  let result: ExecutionResult;
  try {
    result = await succeeds(wf, rollbackInput({}), 'rollback-previous');
  } finally {
    wf.reset();
  }
  const reads = await readers.close();
  return { versions, result, reads, cleanups: await cleanupStatements(wf) };
});
let versions: Record<number, Fingerprint>;
beforeAll(() => {
  ({ versions } = fixture.arranged);
});

/** From the arranged rollback to B, a rollback to C again: publication 5, replacing B. */
const rollForward = (wf: Workflow) => succeeds(wf, rollbackInput({ to: id(C) }), 'rollback-forward');

describe('rollback', () => {
  const wf = useFork(fixture);
  let result: ExecutionResult;
  let reads: ReaderSample[];
  beforeAll(() => {
    ({ result, reads } = fixture.arranged);
  });

  it('to the previous version runs Plan, Rollback, EmitMetrics and Cleanup, and puts B live again', async () => {
    expect(visited(result)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'Rollback', 'EmitMetrics', 'Cleanup', 'Published']);
    expect(await wf.fingerprint(LIVE)).toEqual(versions[B]);
    // The version rolled away from is retained, so the rollback can itself be undone.
    expect(await wf.fingerprint(`analytics.${rolledBackVersionTableFor(PIPELINE, id(C))}`)).toEqual(versions[C]);
  });

  it('readers polling throughout saw exactly C or B, never an error, and B once it committed', () => {
    const old = versionOf(versions[C]!);
    const fresh = versionOf(versions[B]!);
    expect(reads.filter((r) => r.error)).toEqual([]);
    for (const phase of ['before', 'before the swap']) {
      const inPhase = reads.filter((r) => r.phase === phase);
      expect(inPhase.length, phase).toBeGreaterThanOrEqual(2);
      expect(new Set(inPhase.map(versionRead)), phase).toEqual(new Set([old]));
    }
    expect(new Set(reads.filter((r) => r.phase === 'after').map(versionRead))).toEqual(new Set([fresh]));
    for (const read of reads) expect([old, fresh]).toContain(versionRead(read));
  });

  it("gives the version rolled back to the live table's declared keys, each once", async () => {
    expect(await liveKeys(wf)).toEqual([
      'sales_order_lines_pk PRIMARY KEY (order_id, line_no)',
      'sales_order_lines_uq UNIQUE (customer_id, order_id, line_no)',
    ]);
  });

  it('keeps the grants, the comment and the view of the live table', async () => {
    expect((await wf.query<{ ok: boolean }>(`SELECT has_table_privilege($1, $2, 'SELECT') AS ok`, [READER, LIVE]))[0]!.ok).toBe(true);
    const [comment] = await wf.query<{ c: string }>(`SELECT obj_description($1::regclass, 'pg_class') AS c`, [LIVE]);
    expect(comment!.c).toBe('Order lines, rolled back and forth');
    const [view] = await wf.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${VIEW}`);
    expect(view!.n).toBe(versions[B]!.rows);
  });

  it('records the rollback in the manifest: the batch now live, the publication rolled back, the version restored', async () => {
    const publications = await wf.publications();
    expect(publications.map((p) => p.seq)).toEqual([1, 2, 3, 4]);
    expect(publications[3]).toMatchObject({
      seq: 4,
      batch_id: id(B),
      rollback_of: 3,
      old_version_table: `analytics.${rolledBackVersionTableFor(PIPELINE, id(C))}`,
      restored_at: null,
      rolled_back_at: null,
    });
    expect(Number(publications[3]!.rows_published)).toBe(versions[B]!.rows);
    // Publication 3 (C) was rolled back; its old version (B) is live again.
    expect(publications[2]!.rolled_back_at).not.toBeNull();
    expect(publications[2]!.restored_at).not.toBeNull();
    expect(publications.slice(0, 3).map((p) => p.rollback_of)).toEqual([null, null, null]);
    expect(await wf.tableExists(namesFor(C).previous)).toBe(false);
    expect((await wf.batch(id(C)))!.status).toBe('PUBLISHED');
  });

  it('emits the metrics of a publish', () => {
    const published = result.metrics.filter((m) => 'Published' in m.values);
    expect(published).toHaveLength(1);
    expect(published[0]!.dimensions).toEqual({ service: 'atomic-publish', Pipeline: 'sales_order_lines' });
    expect(published[0]!.values).toMatchObject({ Published: 1, RowsPublished: versions[B]!.rows });
    expect(result.alerts).toEqual([]);
  });

  it('is followed by a Cleanup that keeps the version rolled away from and drops only what retention says', async () => {
    // keepVersions 3 at publication 4: the old version of publication 1 (the sample's original table) goes.
    expect(await wf.tableExists(namesFor(A).previous)).toBe(false);
    expect(await wf.tableExists(namesFor(B).previous)).toBe(true);
    expect(await wf.tableExists(`analytics.${rolledBackVersionTableFor(PIPELINE, id(C))}`)).toBe(true);
  });
});

describe('after a rollback', () => {
  describe('a rollback to C, then to the batch live', () => {
    const wf = useFork(fixture);

    it('a rollback to C rolls forward, and one to the batch live now does nothing', async () => {
      const forward = await rollForward(wf);
      expect(visited(forward)).toContain('Rollback');
      expect(await wf.fingerprint(LIVE)).toEqual(versions[C]);
      expect((await wf.publications()).at(-1)).toMatchObject({ seq: 5, batch_id: id(C), rollback_of: 4 });

      const before = await snapshot(wf);
      const again = await succeeds(wf, rollbackInput({ to: id(C) }), 'rollback-live');
      expect(visited(again)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'NothingToPublish']);
      expect(await snapshot(wf)).toEqual(before);
    });
  });

  describe('refuses in Plan, before any write, saying what to do', () => {
    const wf = useFork(fixture);
    let before: unknown;
    beforeAll(async () => {
      await rollForward(wf);
      // A batch that never published: its run fails in Reconcile.
      wf.faults.Reconcile = async () => {
        throw new Error('injected: reconcile never ran');
      };
      try {
        expect((await wf.run(inputFor(D + 1), 'never-published')).status).toBe('FAILED');
      } finally {
        wf.reset();
      }
      before = await snapshot(wf);
    });

    const cases: [string, () => unknown, RegExp][] = [
      ['an interval beside rollback', () => ({ ...rollbackInput({}), to: inputFor(C).to }), /^input has unknown field\(s\): to \(allowed: pipeline, rollback/],
      ['an unknown field in rollback', () => rollbackInput({ to: id(B), force: true }), /^input\.rollback has unknown field\(s\): force \(allowed: to\)/],
      [
        'rollback that is not an object',
        () => rollbackInput('yesterday'),
        /^input\.rollback must be an object: \{\} or \{"to": "<batch id>"\}, got "yesterday"/,
      ],
      ['a batch id of the wrong shape', () => rollbackInput({ to: 'B-8' }), /^input\.rollback\.to must be a batch id \(16 hexadecimal digits.*got "B-8"/],
      [
        'an unknown batch',
        () => rollbackInput({ to: '0123456789abcdef' }),
        /^batch 0123456789abcdef is not a batch of pipeline sales_order_lines .*roll back to one with \{"pipeline":"sales_order_lines","rollback":\{"to":"[0-9a-f]{16}"\}\}/,
      ],
      [
        'a batch never published',
        () => rollbackInput({ to: id(D + 1) }),
        /was never published \(it is FAILED\): there is no version of it to roll back to; the versions still retained hold batches/,
      ],
      [
        'a version past retention',
        () => rollbackInput({ to: id(A) }),
        /is past retention: its version was dropped by Cleanup \(retention\.keepVersions 3\)\. To publish its data again, run its interval as a new run\. Otherwise, the versions still retained hold batches/,
      ],
    ];
    for (const [what, input, message] of cases) {
      it(what, async () => {
        const result = await wf.run(input(), `refused-${what.replace(/\W+/g, '-')}`);
        expect(result.status).toBe('FAILED');
        expect(visited(result)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
        expect(caughtError(result)?.Error).toBe('ValidationError');
        expect(caughtMessage(result)).toMatch(message);
        expect(await snapshot(wf)).toEqual(before);
      });
    }

    it('names the versions still retained, newest first', async () => {
      const result = await wf.run(rollbackInput({ to: id(A) }), 'refused-names');
      // Publication 5 replaced B (held now by the rollback's retained table); publication 3's old version (B) was restored; 4's (C) too.
      expect(caughtMessage(result)).toContain(`the versions still retained hold batches ${id(B)} (replaced by publication 5 at `);
    });
  });

  describe('a rollback that fails in its swap', () => {
    const wf = useFork(fixture);
    beforeAll(async () => {
      await rollForward(wf);
    });

    it('a rollback that fails in its swap changes nothing, releases the lease, and the page says readers see what they saw', async () => {
      // A view on the live table the functions' user does not own: the swap would have to re-create it, so it refuses.
      await wf.query(`CREATE VIEW analytics.foreign_view AS SELECT order_id FROM ${LIVE}`);
      try {
        const before = await snapshot(wf);
        const result = await wf.run(rollbackInput({}), 'rollback-refused-view');
        expect(result.status).toBe('FAILED');
        expect(visited(result)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'Rollback', 'RecordFailure', 'Notify', 'Failed']);
        expect(caughtError(result)?.Error).toBe('DependentViewError');
        expect(caughtMessage(result)).toContain('view analytics.foreign_view is owned by');
        expect(await snapshot(wf)).toEqual(before);
        const [alert] = result.alerts;
        expect(alert!.message).toContain(`Rollback:   to batch ${id(B)} (from batch ${id(C)}, publication 5)`);
        expect(alert!.message).toContain(`Live table: ${LIVE} untouched; readers still see publication 5 (batch ${id(C)}); the rollback changed nothing.`);
        expect(alert!.message).toContain(
          `Re-run:     start an execution with input {"pipeline":"sales_order_lines","rollback":{"to":"${id(B)}"}} once the cause is fixed.`,
        );
      } finally {
        await wf.query('DROP VIEW analytics.foreign_view');
      }
    });
  });

  describe("a publish between a rollback's plan and its swap", () => {
    const wf = useFork(fixture);
    beforeAll(async () => {
      await rollForward(wf);
    });

    it('refuses in its swap when a publish came in between (a lease taken over), changing nothing and saying so', async () => {
      wf.faults.Rollback = async (input, next) => {
        // The rollback's lease expired and another execution took it over and published.
        await wf.query('DELETE FROM atomic_publish.pipeline_leases');
        wf.faults.Rollback = undefined;
        const between = await wf.run(inputFor(D - 1), 'publish-between');
        expect(between.status).toBe('SUCCEEDED');
        return next(input);
      };
      let result: ExecutionResult;
      try {
        result = await wf.run(rollbackInput({}), 'rollback-overtaken');
      } finally {
        wf.reset();
      }
      const latest = (await wf.publications()).at(-1)!;
      expect(latest).toMatchObject({ batch_id: id(D - 1), rollback_of: null });
      expect(result.status).toBe('FAILED');
      expect(caughtError(result)?.Error).toBe('PublishConflictError');
      expect(caughtMessage(result)).toMatch(
        /^rollback refused: publish guard: pipeline sales_order_lines is at publication \d+ but the rollback was planned on publication \d+; nothing was changed/,
      );
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(D - 1));
      expect(result.alerts[0]!.message).toContain(
        `shows publication ${String(latest.seq)}, published since the rollback was planned; the rollback changed nothing.`,
      );
    });
  });

  describe('a normal run after a rollback, and rollbacks around it', () => {
    const wf = useFork(fixture);
    /** The live table after each step. */
    const live: Record<string, Fingerprint> = {};
    let next: ExecutionResult;
    let nextPublication: Record<string, unknown>;
    let batchD: Record<string, unknown> | undefined;
    let replay: ExecutionResult;
    beforeAll(async () => {
      await rollForward(wf);
      // Live is a publish after the rollback (day D - 1); its previous version is C.
      await succeeds(wf, inputFor(D - 1), 'publish-between');
      await succeeds(wf, rollbackInput({}), 'rollback-again');
      live.rolledBack = await wf.fingerprint(LIVE);

      next = await succeeds(wf, inputFor(D), 'after-rollback');
      live.next = await wf.fingerprint(LIVE);
      live.expectedNext = await wf.expected(D);
      nextPublication = (await wf.publications()).at(-1)!;

      await succeeds(wf, rollbackInput({}), 'rollback-d');
      live.rolledBackD = await wf.fingerprint(LIVE);
      batchD = await wf.batch(id(D));
      replay = await succeeds(wf, inputFor(D), 'replay-d');
      live.replayed = await wf.fingerprint(LIVE);
    });

    it('a normal run publishes newer data, and a replay of the batch rolled away from does not re-publish it', () => {
      expect(live.rolledBack).toEqual(versions[C]);

      expect(visited(next)).toContain('Publish');
      expect(live.next).toEqual(live.expectedNext);
      expect(nextPublication).toMatchObject({ batch_id: id(D), rollback_of: null });

      expect(live.rolledBackD).toEqual(versions[C]);
      expect(batchD!.status).toBe('PUBLISHED');
      expect(visited(replay)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'NothingToPublish']);
      expect(live.replayed).toEqual(versions[C]);
    });

    it('Cleanup never sends CASCADE: every statement its runs sent through the Data API, DROPs included', async () => {
      // The arranged runs' (publishes and a rollback) and this describe's (publishes and rollbacks).
      const sent = [...fixture.arranged.cleanups, ...(await cleanupStatements(wf))];
      expect(sent.filter((sql) => /^DROP TABLE/.test(sql)).length).toBeGreaterThanOrEqual(3);
      expect(sent.filter((sql) => /CASCADE/i.test(sql))).toEqual([]);
    });
  });

  describe('a rollback while a run loads', () => {
    const wf = useFork(fixture);

    it('holds the pipeline lease like any run: a rollback while a run loads ends PipelineBusy, writing nothing, and that run then publishes', async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let loading!: () => void;
      const entered = new Promise<void>((resolve) => (loading = resolve));
      wf.faults.LoadChunk = async (input, next) => {
        loading();
        await held;
        return next(input);
      };
      try {
        const running = await wf.start(inputFor(D + 1), 'holds-the-lease');
        await entered;
        const before = await snapshot(wf);
        const busy = await succeeds(wf, rollbackInput({}), 'rollback-busy');
        expect(visited(busy)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'PipelineBusy']);
        expect((busy.output as { plan: { skipped: { heldBy: string } } }).plan.skipped.heldBy).toBe(running.executionId);
        expect(await snapshot(wf)).toEqual(before);
        release();
        expect((await running.result).status).toBe('SUCCEEDED');
      } finally {
        release();
        wf.reset();
      }
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(D + 1));
    });
  });
});
