// Publish groups through the state machine: two members loaded one after the
// other and published in ONE transaction, readers seeing both old or both new;
// a failed member or group swap publishes neither; a replay nothing; bad input,
// a busy member and newer data live are refused before any write; a view over both
// reads both new tables; an aborted run leaves no batch RUNNING.
// Why: docs/decisions/publish-groups.md
import '../support/group-pipelines.ts';
import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { batchIdFor, resolveInterval, stagingTableFor } from '../../domain/plan/plan.ts';
import { newClient } from '../../local/pg-clients.ts';
import { ReaderPool, type ReaderSample } from '../../local/readers.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { useForkPerTest } from '../support/fork-per-test.ts';
import { createMirror, GROUP, MIRROR, MIRROR_LIVE } from '../support/group-pipelines.ts';
import { until } from '../support/until.ts';
import {
  caughtError,
  caughtMessage,
  type Fingerprint,
  inputFor,
  LIVE,
  PIPELINE,
  stateEvents,
  type UseWorkflowOptions,
  useFork,
  useWorkflowFixture,
  visited,
  type Workflow,
} from '../support/workflow.ts';

const KEY = 'order_id * 1000 + line_no';
/** The swap's statement that fails when armed: the last of the group transaction. */
let failGroupSwap = false;
/** When set, Plan's start of this batch fails. */
let failStartOf: string | undefined;

const OPTIONS: UseWorkflowOptions = {
  statementError: ({ index, sqls, name }) => {
    if (failGroupSwap && name?.includes(':publish-group:swap:') && index === sqls.length - 1)
      return 'ERROR: injected failure in the last statement of the group swap';
    if (failStartOf !== undefined && name?.includes(`:plan:start-batch:${failStartOf}`)) return 'ERROR: injected failure starting the batch';
    return undefined;
  },
};

/** The sample pipeline's warehouse and its mirror's, nothing published. */
async function arrangeMembers(wf: Workflow): Promise<void> {
  await wf.sample({ rowsPerDay: 10, sourceDays: 19, liveDays: 4 });
  await wf.withClient(createMirror);
}

const groupInput = (day: number) => ({ group: GROUP, to: sampleDay(day).toISOString() });
const version = (f: Fingerprint) => `${f.rows}/${f.keySum}`;
const bothLive = async (wf: Workflow) => ({ mirror: await wf.fingerprint(MIRROR_LIVE), lines: await wf.fingerprint(LIVE) });
const mirrorBatch = (day: number) => batchIdFor(MIRROR, resolveInterval(inputFor(day), MIRROR, new Date()));
const linesBatch = (day: number) => batchIdFor(PIPELINE, resolveInterval(inputFor(day), PIPELINE, new Date()));
const leases = (wf: Workflow) =>
  wf.query<{ pipeline: string; execution_id: string }>('SELECT pipeline, execution_id FROM atomic_publish.pipeline_leases ORDER BY pipeline');
const batchCount = async (wf: Workflow) => Number((await wf.query<{ n: number }>('SELECT count(*)::int AS n FROM atomic_publish.batches'))[0]!.n);
const mirrorTables = async (wf: Workflow) =>
  (
    await wf.query<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'analytics' AND table_name LIKE 'order\\_lines\\_mirror\\_\\_%' ORDER BY 1`,
    )
  ).map((r) => r.name);

/**
 * A reader that reads both live tables in one REPEATABLE READ transaction
 * (the mirror, then the order lines: the order the swap locks them), over
 * and over, and one that reads both in one autocommit statement.
 */
class PairReaders {
  readonly pairs: { reader: string; phase: string; mirror: string; lines: string; error?: string }[] = [];
  private running = true;
  private phaseLabel = 'before';
  /** Reads started and finished, per reader. */
  private readonly started = [0, 0];
  private readonly finished = [0, 0];
  private waiters: { after: number[]; resolve: () => void }[] = [];
  private readonly loops: Promise<void>[];

  constructor(private readonly wf: Workflow) {
    const read = (table: string) => `SELECT count(*)::int AS n, COALESCE(sum(${KEY}), 0)::text AS k FROM ${table}`;
    this.loops = [
      this.loop(0, 'repeatable read', async (client) => {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        try {
          const a = (await client.query(read(MIRROR_LIVE))).rows[0] as { n: number; k: string };
          const b = (await client.query(read(LIVE))).rows[0] as { n: number; k: string };
          return { mirror: `${a.n}/${a.k}`, lines: `${b.n}/${b.k}` };
        } finally {
          await client.query('COMMIT');
        }
      }),
      this.loop(1, 'autocommit', async (client) => {
        const row = (
          await client.query(
            `SELECT (SELECT count(*)::int FROM ${MIRROR_LIVE}) || '/' || (SELECT COALESCE(sum(${KEY}), 0)::text FROM ${MIRROR_LIVE}) AS mirror,
                    (SELECT count(*)::int FROM ${LIVE}) || '/' || (SELECT COALESCE(sum(${KEY}), 0)::text FROM ${LIVE}) AS lines`,
          )
        ).rows[0] as { mirror: string; lines: string };
        return row;
      }),
    ];
  }

  private async loop(index: number, reader: string, once: (client: pg.Client) => Promise<{ mirror: string; lines: string }>): Promise<void> {
    const client = newClient(this.wf.wh.pg);
    await client.connect();
    try {
      while (this.running) {
        const phase = this.phaseLabel;
        this.started[index]! += 1;
        try {
          this.pairs.push({ reader, phase, ...(await once(client)) });
        } catch (error) {
          this.pairs.push({ reader, phase, mirror: '', lines: '', error: (error as Error).message });
        }
        this.finished[index]! += 1;
        const ready = (w: { after: number[] }) => w.after.every((n, i) => this.finished[i]! > n);
        for (const waiter of this.waiters.filter(ready)) waiter.resolve();
        this.waiters = this.waiters.filter((w) => !ready(w));
      }
    } finally {
      await client.end();
    }
  }

  phase(label: string): void {
    this.phaseLabel = label;
  }

  /** Resolves once each reader has finished a read that started after this call (so under the phase set before it). */
  more(): Promise<void> {
    return new Promise((resolve) => this.waiters.push({ after: [...this.started], resolve }));
  }

  async stop() {
    this.running = false;
    await Promise.all(this.loops);
    return this.pairs;
  }
}

/** The group's first publish (day 8), read throughout by readers of both live tables. */
async function firstPublish(wf: Workflow) {
  await arrangeMembers(wf);
  const before = await bothLive(wf);
  const expected = await wf.expected(8);
  const old = version(before.lines);
  const fresh = version(expected);

  const pairs = new PairReaders(wf);
  const single = new ReaderPool(wf.wh.pg, 2, { keyExpression: KEY, pauseMs: 1 });
  single.watch(MIRROR_LIVE, 'before');
  await Promise.all([pairs.more(), single.readAll()]);
  wf.faults.PublishGroup = async (input, next) => {
    pairs.phase('publishing');
    single.phase('publishing');
    await Promise.all([pairs.more(), single.readAll()]);
    return next(input);
  };
  const eventsBefore = wf.runner.events.length;
  let result: ExecutionResult;
  let read: PairReaders['pairs'];
  let singles: ReaderSample[];
  try {
    result = await wf.run(groupInput(8), 'group-publishes');
    pairs.phase('after');
    single.phase('after');
    await Promise.all([pairs.more(), single.readAll()]);
  } finally {
    wf.reset();
    read = await pairs.stop();
    singles = await single.close();
  }
  return { before, expected, old, fresh, result, read, singles, events: wf.runner.events.slice(eventsBefore) };
}

describe('a publish group, before any run', () => {
  const sampled = useWorkflowFixture('wf_groups', arrangeMembers, OPTIONS);
  const wf = useFork(sampled);

  it('refuses bad input in Plan before any write: an unknown group, a group with a pipeline, a malformed group', async () => {
    const cases: [unknown, RegExp][] = [
      [{ group: 'finance' }, /^unknown publish group "finance"; known groups: sales\. Groups are declared in pipelines\/index\.ts$/],
      [{ group: GROUP, pipeline: PIPELINE.name }, /^input names both a group and a pipeline: start \{"group": "sales"\}/],
      [{ group: 7 }, /^input.group must be a group's name, got 7$/],
      [
        { group: GROUP, to: '2026-01-05T12:00:00Z' },
        /^publish group sales, member order_lines_mirror: input.to 2026-01-05T12:00:00.000Z is not on a day boundary/,
      ],
    ];
    for (const [input, message] of cases) {
      const result = await wf.run(input);
      expect(result.status).toBe('FAILED');
      expect(visited(result)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
      expect(caughtError(result)?.Error).toBe('ValidationError');
      expect(caughtMessage(result)).toMatch(message);
      const [alert] = result.alerts;
      expect(alert!.subject).toMatch(/^atomic-publish: group .* failed \(ValidationError\)$/);
      expect(alert!.message).toContain("Live tables: untouched; the run stopped in Plan, before loading anything: no member's live table was written.");
      expect(alert!.message).toContain('correct the execution input');
    }
    // Nothing of atomic-publish exists: not even the manifest.
    expect(await wf.schemaExists('atomic_publish')).toBe(false);
    expect(await wf.derivedTables()).toEqual([]);
    expect(await mirrorTables(wf)).toEqual([]);
  });
});

const published = useWorkflowFixture('wf_groups_published', firstPublish, OPTIONS);

describe("a publish group's first publish", () => {
  const wf = useFork(published);
  let first: Awaited<ReturnType<typeof firstPublish>>;
  beforeAll(() => {
    first = published.arranged;
  });

  it('publishes every member in one transaction: readers of both live tables see both old or both new, never one of each', async () => {
    const { before, expected, old, fresh, result, read, singles, events } = first;
    expect(version(before.mirror)).toBe(version(before.lines));
    expect(fresh).not.toBe(old);

    expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
    expect(visited(result).at(-1)).toBe('GroupPublished');
    expect(stateEvents(result, 'StateEntered', 'PublishGroup')).toHaveLength(1);
    expect(stateEvents(result, 'StateEntered', 'MemberReconcile')).toHaveLength(2);
    // The mirror source has no index on its time column (the sample source has): its member's plan says so.
    const members = (
      stateEvents(result, 'StateExited', 'Plan')[0]!.state!.output as { plan: { members: { batch: { pipeline: string }; warnings?: string[] }[] } }
    ).plan.members;
    expect(Object.fromEntries(members.map((m) => [m.batch.pipeline, m.warnings?.length ?? 0]))).toEqual({ [MIRROR.name]: 1, [PIPELINE.name]: 0 });
    expect(members.find((m) => m.batch.pipeline === MIRROR.name)!.warnings![0]).toContain('source.order_lines_mirror (no sort key)');
    const after = await bothLive(wf);
    expect(after.mirror).toEqual(expected);
    expect(after.lines).toEqual(expected);

    // Every pair read in one snapshot is both old or both new.
    expect(read.filter((p) => p.error)).toEqual([]);
    for (const pair of read) expect([`${old}|${old}`, `${fresh}|${fresh}`], `${pair.reader} ${pair.phase}`).toContain(`${pair.mirror}|${pair.lines}`);
    for (const reader of ['repeatable read', 'autocommit']) {
      expect(read.some((p) => p.reader === reader && p.phase === 'before' && p.mirror === old)).toBe(true);
      expect(read.some((p) => p.reader === reader && p.phase === 'after' && p.mirror === fresh)).toBe(true);
    }
    expect(singles.filter((s) => s.error)).toEqual([]);
    expect(new Set(singles.map((s) => `${s.count}/${s.keySum}`))).toEqual(new Set([old, fresh]));

    // One published_at for both members' publications.
    const publications = await wf.query<{ pipeline: string; batch_id: string; published_at: string }>(
      'SELECT pipeline, batch_id, published_at::text AS published_at FROM atomic_publish.publications ORDER BY pipeline',
    );
    expect(publications.map((p) => [p.pipeline, p.batch_id])).toEqual([
      [MIRROR.name, mirrorBatch(8)],
      [PIPELINE.name, linesBatch(8)],
    ]);
    expect(publications[0]!.published_at).toBe(publications[1]!.published_at);
    expect(await leases(wf)).toEqual([]);
    // Each member's metrics.
    expect(
      result.metrics
        .filter((m) => 'Published' in m.values)
        .map((m) => m.dimensions.Pipeline)
        .sort(),
    ).toEqual([MIRROR.name, PIPELINE.name]);
    // Each member's publication event, one each, naming its own batch.
    expect(events.map((e) => [e.detailType, e.detail.pipeline, e.detail.batchId]).sort()).toEqual([
      ['Publication Published', MIRROR.name, mirrorBatch(8)],
      ['Publication Published', PIPELINE.name, linesBatch(8)],
    ]);
  });
});

describe('a publish group, after its first publish', () => {
  const wf = useForkPerTest(published);

  it('does nothing on a replay of a group whose members are all published', async () => {
    const before = await bothLive(wf);
    const publications = await wf.publications();
    const result = await wf.run(groupInput(8), 'group-replay');

    expect(result.status).toBe('SUCCEEDED');
    expect(visited(result)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'NothingToPublish']);
    expect(await bothLive(wf)).toEqual(before);
    expect(await wf.publications()).toEqual(publications);
  });

  it("publishes neither member when one member's Reconcile fails (a repeated business key)", async () => {
    const before = await bothLive(wf);
    const publications = await wf.publications();
    // A second row of an order line of day 9, an hour later: only the order lines' source has it.
    await wf.query(
      `INSERT INTO source.sales_order_lines
       SELECT order_id, line_no, ordered_at + interval '1 hour', customer_id, product_id, quantity, amount
         FROM source.sales_order_lines WHERE ordered_at >= $1::timestamp ORDER BY ordered_at LIMIT 1`,
      [sampleDay(9).toISOString().slice(0, 19)],
    );
    let result;
    try {
      result = await wf.run(groupInput(10), 'group-reconcile-fails');
    } finally {
      await wf.query(`DELETE FROM source.sales_order_lines a USING source.sales_order_lines b
                       WHERE a.order_id = b.order_id AND a.line_no = b.line_no AND a.ordered_at > b.ordered_at`);
    }

    expect(result.status).toBe('FAILED');
    expect(caughtError(result)?.Error).toBe('CheckFailedError');
    // The mirror (first by name) was loaded and checked before the order lines failed.
    expect(stateEvents(result, 'StateEntered', 'MemberReconcile')).toHaveLength(2);
    expect(visited(result)).not.toContain('PublishGroup');
    expect(await bothLive(wf)).toEqual(before);
    expect(await wf.publications()).toEqual(publications);
    expect((await wf.batch(mirrorBatch(10)))?.status).toBe('FAILED');
    expect((await wf.batch(linesBatch(10)))?.status).toBe('FAILED');
    const [alert] = result.alerts;
    expect(alert!.subject).toBe('atomic-publish: group sales failed (CheckFailedError)');
    expect(alert!.message).toContain(
      "Live tables: untouched: nothing of the group was published; every member's live table shows what it showed before this run:",
    );
    expect(alert!.message).toContain(`${MIRROR_LIVE}: publication 1 (batch ${mirrorBatch(8)}`);
    expect(alert!.message).toContain(`${LIVE}: publication 1 (batch ${linesBatch(8)}`);
    expect(alert!.message).toContain(`Re-run:     start an execution with input ${JSON.stringify({ group: GROUP, to: sampleDay(10).toISOString() })}`);
    expect(await leases(wf)).toEqual([]);
  });

  it('publishes neither member when the group swap fails in its last statement', async () => {
    const before = await bothLive(wf);
    const publications = await wf.publications();
    failGroupSwap = true;
    let result;
    try {
      result = await wf.run(groupInput(11), 'group-swap-fails');
    } finally {
      failGroupSwap = false;
    }

    expect(result.status).toBe('FAILED');
    expect(stateEvents(result, 'StateEntered', 'PublishGroup')).toHaveLength(1);
    expect(caughtMessage(result)).toContain('injected failure in the last statement of the group swap');
    expect(await bothLive(wf)).toEqual(before);
    expect(await wf.publications()).toEqual(publications);
    expect(await wf.tableExists(`analytics.${stagingTableFor(MIRROR, mirrorBatch(11))}`)).toBe(true);
    expect(await wf.tableExists(`analytics.${stagingTableFor(PIPELINE, linesBatch(11))}`)).toBe(true);
    const [alert] = result.alerts;
    expect(alert!.message).toContain('Live tables: untouched: nothing of the group was published');
    expect(alert!.message).toContain(`batch ${mirrorBatch(11)} is FAILED`);
    expect(alert!.message).toContain(`batch ${linesBatch(11)} is FAILED`);
    expect(alert!.message).toContain(`Re-run:     start an execution with input ${JSON.stringify(groupInput(11))}`);

    // The re-run the page gives resumes both batches (every chunk already loaded) and publishes both.
    const rerun = await wf.run(groupInput(11), 'group-swap-rerun');
    expect(rerun.status, `${caughtError(rerun)?.Error}: ${caughtMessage(rerun)}`).toBe('SUCCEEDED');
    expect(stateEvents(rerun, 'StateEntered', 'MemberLoadChunk')).toEqual([]);
    const expected = await wf.expected(11);
    expect(await bothLive(wf)).toEqual({ mirror: expected, lines: expected });
    expect((await wf.batch(mirrorBatch(11)))?.status).toBe('PUBLISHED');
    expect((await wf.batch(linesBatch(11)))?.status).toBe('PUBLISHED');
  });

  it("waits, having written nothing and holding no lease, while a member's own run holds its lease; once that run has published, the group publishes", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let loading = false;
    wf.faults.LoadChunk = async (input, next) => {
      loading = true;
      await held;
      return next(input);
    };
    const solo = await wf.start(inputFor(12), 'member-alone');
    let group: Awaited<ReturnType<typeof wf.start>> | undefined;
    try {
      // Its Plan has taken the lease and started the batch.
      await until(() => loading, 'the member run loads its first chunk');
      const batches = await batchCount(wf);
      const tables = await mirrorTables(wf);

      group = await wf.start(groupInput(13), 'group-while-member-runs');
      const events = () => wf.runner.describe(group!.executionId)!.events();
      await until(() => events().some((e) => e.type === 'StateEntered' && e.state?.name === 'LeaseWait'), 'the group waiting for the member lease');
      const planned = events().find((e) => e.type === 'StateExited' && e.state?.name === 'Plan')!;
      const plan = (planned.state!.output as { plan: { busy: boolean; skipped: { pipeline: string; sameBatch: boolean; message: string } } }).plan;
      expect(plan.busy).toBe(true);
      expect(plan.skipped).toMatchObject({ pipeline: PIPELINE.name, sameBatch: false });
      expect(plan.skipped.message).toMatch(/^publish group sales: member pipeline sales_order_lines is being run by execution .*member-alone/);
      // The mirror's lease, taken first (name order), was released; no batch, no staging table.
      expect((await leases(wf)).map((l) => l.pipeline)).toEqual([PIPELINE.name]);
      expect(await batchCount(wf)).toBe(batches);
      expect(await mirrorTables(wf)).toEqual(tables);
    } finally {
      release();
    }
    const soloResult = await solo.result;
    wf.reset();
    expect(soloResult.status, `${caughtError(soloResult)?.Error}: ${caughtMessage(soloResult)}`).toBe('SUCCEEDED');
    const result = await group!.result;
    expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
    expect(visited(result).at(-1)).toBe('GroupPublished');
    expect(result.alerts).toEqual([]);
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(13));
    expect(await leases(wf)).toEqual([]);
  });
  it("keeps every member's new table from readers until the last member is swapped", async () => {
    const before = await bothLive(wf);
    const expected = await wf.expected(14);
    // The order lines' live table is locked second (by name); hold it, so the swap waits there, the mirror already locked.
    let seen: { mirrorLockable: boolean; mirrorBatch: string; publications: number } | undefined;
    wf.faults.PublishGroup = async (input, next) => {
      const gate = await wf.wh.gate({ table: LIVE });
      const publishing = next(input);
      try {
        await gate.waiting(1);
        const client = newClient(wf.wh.pg);
        await client.connect();
        try {
          await client.query('BEGIN');
          const lockable = await client.query(`LOCK TABLE ${MIRROR_LIVE} IN ACCESS SHARE MODE NOWAIT`).then(
            () => true,
            (error: { code?: string }) => (error.code === '55P03' ? false : Promise.reject(error)),
          );
          await client.query('ROLLBACK');
          const [batch] = await wf.query<{ status: string }>('SELECT status FROM atomic_publish.batches WHERE batch_id = $1', [mirrorBatch(14)]);
          seen = { mirrorLockable: lockable, mirrorBatch: batch!.status, publications: (await wf.publications()).length };
        } finally {
          await client.end();
        }
      } finally {
        await gate.release();
      }
      return publishing;
    };
    const publications = (await wf.publications()).length;
    let result;
    try {
      result = await wf.run(groupInput(14), 'group-held-back');
    } finally {
      wf.reset();
    }

    expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
    // While the order lines waited, the mirror's swap had not committed: its table was still locked, its batch not published.
    expect(seen).toEqual({ mirrorLockable: false, mirrorBatch: 'CHECKED', publications });
    expect(before.mirror).not.toEqual(expected);
    expect(await bothLive(wf)).toEqual({ mirror: expected, lines: expected });
    expect((await wf.publications()).length).toBe(publications + 2);
  });

  it("has CancelOrphans fail every member's batch when a group execution is aborted, and release its leases", async () => {
    let loading = false;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // Held, then failed without running: nothing of the aborted execution writes after the abort.
    wf.faults.MemberLoadChunk = async () => {
      loading = true;
      await held;
      throw new Error('not run: the execution was aborted');
    };
    let aborted;
    try {
      const execution = await wf.start(groupInput(15), 'group-aborted');
      await until(() => loading, 'a member chunk is loading');
      expect((await leases(wf)).map((l) => l.pipeline)).toEqual([MIRROR.name, PIPELINE.name]);
      execution.abort();
      aborted = await execution.result;
    } finally {
      release();
      wf.reset();
    }

    expect(aborted.status).toBe('ABORTED');
    expect(aborted.statusChange).toHaveLength(1);
    expect(aborted.statusChange[0]!.output).toMatchObject({
      status: 'ABORTED',
      batchId: mirrorBatch(15),
      markedFailed: true,
      leaseReleased: true,
      otherBatches: [{ batchId: linesBatch(15), markedFailed: true }],
    });
    for (const id of [mirrorBatch(15), linesBatch(15)]) {
      expect(await wf.batch(id)).toMatchObject({ status: 'FAILED', error: expect.stringMatching(/^ExecutionAborted/) });
    }
    expect(await leases(wf)).toEqual([]);
  });
  it("fails every batch Plan started when it fails starting a later member's, and says so", async () => {
    failStartOf = linesBatch(16);
    let result;
    try {
      result = await wf.run(groupInput(16), 'group-plan-fails');
    } finally {
      failStartOf = undefined;
    }

    expect(result.status).toBe('FAILED');
    expect(visited(result)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
    expect(caughtMessage(result)).toContain('injected failure starting the batch');
    // The mirror's batch (first by name) was started; the order lines' never was.
    expect(await wf.batch(mirrorBatch(16))).toMatchObject({ status: 'FAILED', error: expect.stringContaining('injected failure starting the batch') });
    expect(await wf.batch(linesBatch(16))).toBeUndefined();
    expect(await leases(wf)).toEqual([]);
    const [alert] = result.alerts;
    expect(alert!.message).toContain(`Batches:    created by this execution in Plan, no chunk loaded: ${mirrorBatch(16)} (order_lines_mirror) now FAILED`);
  });
  it('refuses the whole group, publishing neither member, when a member already publishes newer data', async () => {
    const newer = await wf.run(groupInput(14), 'group-newer-data');
    expect(newer.status, `${caughtError(newer)?.Error}: ${caughtMessage(newer)}`).toBe('SUCCEEDED');
    const before = await bothLive(wf);
    const publications = await wf.publications();
    // Day 14 is live in both; day 13 is older.
    const result = await wf.run(groupInput(13), 'group-older-data');

    expect(result.status).toBe('FAILED');
    expect(caughtError(result)?.Error).toBe('PublishConflictError');
    expect(caughtMessage(result)).toMatch(/^publish group sales: publish guard: .*Nothing of the group was published: every member's live table is untouched$/);
    expect(await bothLive(wf)).toEqual(before);
    expect(await wf.publications()).toEqual(publications);
    expect(result.alerts[0]!.message).toContain('Next:       no re-run of this interval');
  });

  it('re-points a view reading two members once both new tables are live', async () => {
    await wf.query(`CREATE VIEW analytics.lines_both AS
                      SELECT m.order_id, m.line_no, m.amount AS mirror_amount, l.amount AS lines_amount
                        FROM ${MIRROR_LIVE} m JOIN ${LIVE} l USING (order_id, line_no)`);
    await wf.query(`ALTER VIEW analytics.lines_both OWNER TO "IAMR:atomic-publish-local"`);
    const expected = await wf.expected(17);

    const result = await wf.run(groupInput(17), 'group-shared-view');

    expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
    expect(await bothLive(wf)).toEqual({ mirror: expected, lines: expected });
    const [view] = await wf.query<{ n: number }>('SELECT count(*)::int AS n FROM analytics.lines_both');
    expect(view!.n).toBe(expected.rows);
    // It reads the live tables, not the retained old versions.
    const reads = await wf.query<{ name: string }>(
      `SELECT DISTINCT t.relname AS name FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid JOIN pg_class t ON t.oid = d.refobjid
        WHERE r.ev_class = 'analytics.lines_both'::regclass AND t.relkind = 'r' ORDER BY 1`,
    );
    expect(reads.map((r) => r.name)).toEqual(['order_lines_mirror', 'sales_order_lines']);
  });

  it("refuses the whole group when someone else wrote to a member's live table since Plan, naming that table", async () => {
    wf.faults.PublishGroup = async (input, next) => {
      // A row written straight into one member's live table after Plan recorded it.
      await wf.query(`INSERT INTO ${MIRROR_LIVE} SELECT * FROM ${MIRROR_LIVE} LIMIT 1`);
      return next(input);
    };
    const before = { lines: await wf.fingerprint(LIVE), publications: await wf.publications() };
    let result;
    try {
      result = await wf.run(groupInput(18), 'group-out-of-band');
    } finally {
      wf.reset();
    }

    expect(result.status).toBe('FAILED');
    expect(caughtError(result)?.Error).toBe('OutOfBandChangeError');
    expect(caughtMessage(result)).toMatch(
      new RegExp(`^publish group sales: out-of-band change: ${MIRROR_LIVE.replace('.', '\\.')} was changed by someone else`),
    );
    expect(caughtMessage(result)).toContain("Nothing of the group was published: every member's live table is untouched");
    expect(await wf.fingerprint(LIVE)).toEqual(before.lines);
    expect(await wf.publications()).toEqual(before.publications);
    expect((await wf.batch(mirrorBatch(18)))?.status).toBe('FAILED');
  });
});
