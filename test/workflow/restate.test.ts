// Restating a published interval: a source correction found after the
// interval was published. A plain replay of the interval stays a no-op;
// `"restate": true` re-runs it as a new batch (restatement 1, 2, ...) and
// publishes it only if its rows differ from the live ones. Bad restate
// input is refused in Plan before anything is written.
// The first publication (day 7) is arranged once; each describe acts on its
// own copy of it (test/support/workflow.ts useFork).
import { beforeAll, describe, expect, it } from 'vitest';
import { batchIdFor, resolveInterval } from '../../domain/plan/plan.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import {
  caughtError,
  caughtMessage,
  type Fingerprint,
  inputFor,
  LIVE,
  PIPELINE,
  useFork,
  useWorkflowFixture,
  visited,
  type Workflow,
} from '../support/workflow.ts';

const fixture = useWorkflowFixture('wf_restate', async (wf) => {
  await wf.sample({ rowsPerDay: 24, sourceDays: 10, liveDays: 5 });
  const first = await wf.run(inputFor(7), 'first-publish');
  return { first, live: await wf.fingerprint(LIVE), expected: await wf.expected(7) };
});

const restatementId = (day: number, n: number) => batchIdFor(PIPELINE, resolveInterval(inputFor(day), PIPELINE, new Date()), n);
const restate = (day: number) => ({ ...inputFor(day), restate: true });
const day = (n: number) => sampleDay(n).toISOString().slice(0, 19);
const publicationCount = async (wf: Workflow) => (await wf.publications()).length;
const batchCount = async (wf: Workflow) => Number((await wf.query<{ n: string }>('SELECT COUNT(*) AS n FROM atomic_publish.batches'))[0]!.n);
/** A source correction of sample day n: `set` on its first `rows` rows by key. */
const correctSource = (wf: Workflow, n: number, set: string, rows: number) =>
  wf.query(
    `UPDATE source.sales_order_lines SET ${set}
      WHERE (order_id, line_no) IN (SELECT order_id, line_no FROM source.sales_order_lines
                                     WHERE ordered_at >= $1 AND ordered_at < $2 ORDER BY order_id, line_no LIMIT ${rows})`,
    [day(n), day(n + 1)],
  );

describe('restating a published interval', () => {
  it('publishes the interval once', () => {
    const { first, live, expected } = fixture.arranged;
    expect(first.status, `${first.error}: ${first.cause}`).toBe('SUCCEEDED');
    expect(visited(first)).toContain('Published');
    expect(live).toEqual(expected);
  });

  describe('a plain replay after a source correction', () => {
    const wf = useFork(fixture);
    let live: Fingerprint;
    let publications: number;
    let expected: Fingerprint;
    let replay: ExecutionResult;
    beforeAll(async () => {
      live = await wf.fingerprint(LIVE);
      publications = await publicationCount(wf);
      // Found after day 3 was published.
      await correctSource(wf, 3, 'amount = amount + 7.00', 5);
      expected = await wf.expected(7);
      replay = await wf.run(inputFor(7), 'plain-replay');
    });

    it('leaves the source correction unpublished', async () => {
      expect(expected).not.toEqual(live);
      expect(replay.status).toBe('SUCCEEDED');
      expect(visited(replay)).toContain('NothingToPublish');
      expect(wf.loads.started).toEqual([]);
      expect(await wf.fingerprint(LIVE)).toEqual(live);
      expect(await publicationCount(wf)).toBe(publications);
    });
  });

  describe('a restate after a source correction, then a replay of the restate input', () => {
    const wf = useFork(fixture);
    let publications: number;
    let restateRun: ExecutionResult;
    /** What the restatement left, read before the replay. */
    let restated: { live: Fingerprint; expected: Fingerprint; batch: unknown; base: unknown; all: Record<string, unknown>[] };
    let replay: ExecutionResult;
    beforeAll(async () => {
      await correctSource(wf, 3, 'amount = amount + 7.00', 5);
      publications = await publicationCount(wf);
      restateRun = await wf.run(restate(7), 'restate');
      restated = {
        live: await wf.fingerprint(LIVE),
        expected: await wf.expected(7),
        batch: (await wf.batch(restatementId(7, 1)))?.status,
        base: (await wf.batch(restatementId(7, 0)))?.status,
        all: await wf.publications(),
      };
      replay = await wf.run(restate(7), 'restate-replay');
    });

    it('publishes the correction with restate, as restatement 1: a new batch and publication', () => {
      expect(restateRun.status, `${restateRun.error}: ${restateRun.cause}`).toBe('SUCCEEDED');
      expect(visited(restateRun)).toContain('Published');
      expect(restated.live).toEqual(restated.expected);
      const id = restatementId(7, 1);
      expect(id).not.toBe(restatementId(7, 0));
      expect(restated.batch).toBe('PUBLISHED');
      expect(restated.base).toBe('PUBLISHED');
      expect(restated.all).toHaveLength(publications + 1);
      expect(restated.all.at(-1)?.batch_id).toBe(id);
    });

    it('changes nothing when the restate input is replayed: restatement 2 equals the live rows', async () => {
      expect(replay.status, `${replay.error}: ${replay.cause}`).toBe('SUCCEEDED');
      expect(visited(replay)).toContain('Superseded');
      expect(visited(replay)).not.toContain('EmitMetrics');
      expect(await wf.fingerprint(LIVE)).toEqual(restated.live);
      expect(await publicationCount(wf)).toBe(restated.all.length);
      const second = await wf.batch(restatementId(7, 2));
      expect(second?.status).toBe('SUPERSEDED');
      expect(String(second?.error)).toMatch(
        /^restatement 2 of .*: staging equals the live rows it would replace \(rows:checksum \d+:-?\d+\); nothing to publish$/,
      );
      expect(result(replay).unchanged).toBe(true);
    });
  });

  describe('a restate of an interval whose source did not change', () => {
    const wf = useFork(fixture);
    let published: ExecutionResult;
    let live: Fingerprint;
    let publications: number;
    let result8: ExecutionResult;
    beforeAll(async () => {
      published = await wf.run(inputFor(8), 'publish-8');
      live = await wf.fingerprint(LIVE);
      publications = await publicationCount(wf);
      result8 = await wf.run(restate(8), 'restate-8');
    });

    it('publishes nothing', async () => {
      expect(published.status).toBe('SUCCEEDED');
      expect(result8.status).toBe('SUCCEEDED');
      expect(visited(result8)).toContain('Superseded');
      expect(await wf.fingerprint(LIVE)).toEqual(live);
      expect(await publicationCount(wf)).toBe(publications);
      expect((await wf.batch(restatementId(8, 1)))?.status).toBe('SUPERSEDED');
    });
  });
});

describe('bad restate input, refused in Plan before anything is written', () => {
  // Each refused run writes nothing (what each test proves), so they share one copy.
  const wf = useFork(fixture);
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['restate not a boolean', { ...inputFor(8), restate: 'yes' }, /^input\.restate must be true or false, got "yes"/],
    ['restate with rollback', { pipeline: PIPELINE.name, rollback: {}, restate: true }, /^input has unknown field\(s\): restate \(allowed: pipeline, rollback/],
    [
      'restate of an interval never published',
      restate(9),
      /^pipeline sales_order_lines: input\.restate re-runs an interval already published, but the batch of .* with this spec is not recorded\. Nothing was written/,
    ],
  ];
  for (const [what, input, message] of cases) {
    it(what, async () => {
      const live = await wf.fingerprint(LIVE);
      const batches = await batchCount(wf);
      const publications = await publicationCount(wf);
      const derived = await wf.derivedTables();

      const refused = await wf.run(input, what.replace(/\W+/g, '-'));

      expect(refused.status).toBe('FAILED');
      expect(visited(refused)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
      expect(caughtError(refused)?.Error).toBe('ValidationError');
      expect(caughtMessage(refused)).toMatch(message);
      expect(await wf.fingerprint(LIVE)).toEqual(live);
      expect(await batchCount(wf)).toBe(batches);
      expect(await publicationCount(wf)).toBe(publications);
      expect(await wf.derivedTables()).toEqual(derived);
    });
  }
});

describe('a source change between the check and the publish, and the re-run after it', () => {
  const wf = useFork(fixture);
  let live: Fingerprint;
  let publications: number;
  let result9: ExecutionResult;
  /** What the refused publish left, read before the re-run. */
  let refused: { live: Fingerprint; publications: number; chunks: Record<string, number> };
  let rerun: ExecutionResult;
  let rerunLoads: number[];
  beforeAll(async () => {
    live = await wf.fingerprint(LIVE);
    publications = await publicationCount(wf);
    // Committed after Reconcile passed, before Publish runs: a late correction lands in the newest chunk (sample day 8).
    wf.faults.Publish = async (input, next) => {
      await correctSource(wf, 8, 'quantity = quantity + 1', 1);
      return next(input);
    };
    result9 = await wf.run(inputFor(9), 'source-moved');
    refused = { live: await wf.fingerprint(LIVE), publications: await publicationCount(wf), chunks: await wf.chunkStatuses(restatementId(9, 0)) };
    wf.reset();
    rerun = await wf.run(inputFor(9), 'source-moved-rerun');
    rerunLoads = [...wf.loads.started];
  });

  it('refuses the publish when the newest chunk changed after Reconcile: live untouched, a page naming the chunk, the chunk STALE', () => {
    expect(result9.status).toBe('FAILED');
    expect(visited(result9)).toContain('Publish');
    expect(caughtError(result9)?.Error).toBe('SourceChangedError');
    const message = caughtMessage(result9);
    expect(message).toMatch(
      new RegExp(
        `source changed: chunk #8 \\(${sampleDay(8).toISOString()} to ${sampleDay(9).toISOString()}\\) of batch ${restatementId(9, 0)} holds rows:checksum 24:-?\\d+ in the source now, but 24:-?\\d+ in staging`,
      ),
    );
    expect(message).toContain('Nothing was published; the chunk is marked STALE');
    expect(refused.live).toEqual(live);
    expect(refused.publications).toBe(publications);
    expect(refused.chunks).toEqual({ DONE: 8, STALE: 1 });
    expect(result9.alerts).toHaveLength(1);
    expect(result9.alerts[0]!.message).toContain(`SourceChangedError: ${message}`);
    expect(result9.alerts[0]!.message).toContain('only that chunk reloads');
  });

  it('reloads just that chunk on the re-run and publishes the changed source', async () => {
    expect(rerun.status, `${rerun.error}: ${rerun.cause}`).toBe('SUCCEEDED');
    expect(rerunLoads).toEqual([8]);
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(9));
  });
});

describe('a restatement that failed', () => {
  const wf = useFork(fixture);
  beforeAll(async () => {
    // The interval restated: published first.
    const published = await wf.run(inputFor(9), 'publish-9');
    expect(published.status, `${published.error}: ${published.cause}`).toBe('SUCCEEDED');
  });

  it('pages with the input that resumes it, and that input resumes the same restatement', async () => {
    const live = await wf.fingerprint(LIVE);
    await correctSource(wf, 5, 'amount = amount + 2.00', 3);
    wf.faults.Publish = async (input, next) => {
      await correctSource(wf, 8, 'quantity = quantity + 1', 1);
      return next(input);
    };

    const failed = await wf.run(restate(9), 'restate-fails');

    expect(failed.status).toBe('FAILED');
    expect(caughtError(failed)?.Error).toBe('SourceChangedError');
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    expect((await wf.batch(restatementId(9, 1)))?.status).toBe('FAILED');
    const resume = { pipeline: PIPELINE.name, from: sampleDay(0).toISOString(), restate: true, to: sampleDay(9).toISOString() };
    expect(failed.alerts[0]!.message).toContain(`start an execution with input ${JSON.stringify(resume)}; only that chunk reloads.`);

    wf.reset();
    const resumed = await wf.run(resume, 'restate-resumed');

    expect(resumed.status, `${resumed.error}: ${resumed.cause}`).toBe('SUCCEEDED');
    expect(wf.loads.started).toEqual([8]);
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(9));
    expect((await wf.batch(restatementId(9, 1)))?.status).toBe('PUBLISHED');
    expect(await wf.batch(restatementId(9, 2))).toBeUndefined();
  });
});

/** Publish's answer in an execution's output. */
function result(execution: { output?: unknown }): { unchanged?: boolean } {
  const output = (typeof execution.output === 'string' ? JSON.parse(execution.output) : execution.output) as { publish?: { unchanged?: boolean } };
  return output?.publish ?? {};
}
