// Restating a published interval: a source correction found after the
// interval was published. A plain replay of the interval stays a no-op;
// `"restate": true` re-runs it as a new batch (restatement 1, 2, ...) and
// publishes it only if its rows differ from the live ones. Bad restate
// input is refused in Plan before anything is written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchIdFor, resolveInterval } from '../../domain/plan.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { caughtError, caughtMessage, inputFor, LIVE, PIPELINE, useWorkflow, visited, type Workflow } from '../support/workflow.ts';

let wf: Workflow;
beforeAll(async () => {
  wf = await useWorkflow('wf_restate');
  await wf.sample({ rowsPerDay: 24, sourceDays: 10, liveDays: 5 });
});
afterAll(() => wf?.close());

const restatementId = (day: number, n: number) => batchIdFor(PIPELINE, resolveInterval(inputFor(day), PIPELINE, new Date()), n);
const restate = (day: number) => ({ ...inputFor(day), restate: true });
const day = (n: number) => sampleDay(n).toISOString().slice(0, 19);
const publicationCount = async () => (await wf.publications()).length;
const batchCount = async () => Number((await wf.query<{ n: string }>('SELECT COUNT(*) AS n FROM atomic_publish.batches'))[0]!.n);
/** A source correction of sample day n: `set` on its first `rows` rows by key. */
const correctSource = (n: number, set: string, rows: number) =>
  wf.query(
    `UPDATE source.sales_order_lines SET ${set}
      WHERE (order_id, line_no) IN (SELECT order_id, line_no FROM source.sales_order_lines
                                     WHERE ordered_at >= $1 AND ordered_at < $2 ORDER BY order_id, line_no LIMIT ${rows})`,
    [day(n), day(n + 1)],
  );

describe('restating a published interval', () => {
  it('publishes the interval once', async () => {
    const result = await wf.run(inputFor(7), 'first-publish');

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(visited(result)).toContain('Published');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
  });

  it('leaves a source correction unpublished on a plain replay', async () => {
    wf.reset();
    const live = await wf.fingerprint(LIVE);
    const publications = await publicationCount();
    // Found after day 3 was published.
    await correctSource(3, 'amount = amount + 7.00', 5);
    expect(await wf.expected(7)).not.toEqual(live);

    const replay = await wf.run(inputFor(7), 'plain-replay');

    expect(replay.status).toBe('SUCCEEDED');
    expect(visited(replay)).toContain('NothingToPublish');
    expect(wf.loads.started).toEqual([]);
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    expect(await publicationCount()).toBe(publications);
  });

  it('publishes the correction with restate, as restatement 1: a new batch and publication', async () => {
    wf.reset();
    const publications = await publicationCount();

    const result = await wf.run(restate(7), 'restate');

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(visited(result)).toContain('Published');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
    const id = restatementId(7, 1);
    expect(id).not.toBe(restatementId(7, 0));
    expect((await wf.batch(id))?.status).toBe('PUBLISHED');
    expect((await wf.batch(restatementId(7, 0)))?.status).toBe('PUBLISHED');
    const all = await wf.publications();
    expect(all).toHaveLength(publications + 1);
    expect(all.at(-1)?.batch_id).toBe(id);
  });

  it('changes nothing when the restate input is replayed: restatement 2 equals the live rows', async () => {
    wf.reset();
    const live = await wf.fingerprint(LIVE);
    const publications = await publicationCount();

    const replay = await wf.run(restate(7), 'restate-replay');

    expect(replay.status, `${replay.error}: ${replay.cause}`).toBe('SUCCEEDED');
    expect(visited(replay)).toContain('Superseded');
    expect(visited(replay)).not.toContain('EmitMetrics');
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    expect(await publicationCount()).toBe(publications);
    const second = await wf.batch(restatementId(7, 2));
    expect(second?.status).toBe('SUPERSEDED');
    expect(String(second?.error)).toMatch(/^restatement 2 of .*: staging equals the live rows it would replace \(rows:checksum \d+:-?\d+\); nothing to publish$/);
    expect(result(replay).unchanged).toBe(true);
  });

  it('publishes nothing for a restate of an interval whose source did not change', async () => {
    wf.reset();
    expect((await wf.run(inputFor(8), 'publish-8')).status).toBe('SUCCEEDED');
    const live = await wf.fingerprint(LIVE);
    const publications = await publicationCount();

    const result8 = await wf.run(restate(8), 'restate-8');

    expect(result8.status).toBe('SUCCEEDED');
    expect(visited(result8)).toContain('Superseded');
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    expect(await publicationCount()).toBe(publications);
    expect((await wf.batch(restatementId(8, 1)))?.status).toBe('SUPERSEDED');
  });
});

describe('bad restate input, refused in Plan before anything is written', () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['restate not a boolean', { ...inputFor(8), restate: 'yes' }, /^input\.restate must be true or false, got "yes"/],
    ['restate with rollback', { pipeline: PIPELINE.name, rollback: {}, restate: true }, /^input has unknown field\(s\): restate \(allowed: pipeline, rollback/],
    ['restate of an interval never published', restate(9), /^pipeline sales_order_lines: input\.restate re-runs an interval already published, but the batch of .* with this spec is not recorded\. Nothing was written/],
  ];
  for (const [what, input, message] of cases) {
    it(what, async () => {
      wf.reset();
      const live = await wf.fingerprint(LIVE);
      const batches = await batchCount();
      const publications = await publicationCount();
      const derived = await wf.derivedTables();

      const refused = await wf.run(input, what.replace(/\W+/g, '-'));

      expect(refused.status).toBe('FAILED');
      expect(visited(refused)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
      expect(caughtError(refused)?.Error).toBe('ValidationError');
      expect(caughtMessage(refused)).toMatch(message);
      expect(await wf.fingerprint(LIVE)).toEqual(live);
      expect(await batchCount()).toBe(batches);
      expect(await publicationCount()).toBe(publications);
      expect(await wf.derivedTables()).toEqual(derived);
    });
  }
});

describe('a source change between the check and the publish', () => {
  it('refuses the publish when the newest chunk changed after Reconcile: live untouched, a page naming the chunk, the chunk STALE', async () => {
    wf.reset();
    const live = await wf.fingerprint(LIVE);
    const publications = await publicationCount();
    // Committed after Reconcile passed, before Publish runs: a late correction lands in the newest chunk (sample day 8).
    wf.faults.Publish = async (input, next) => {
      await correctSource(8, 'quantity = quantity + 1', 1);
      return next(input);
    };

    const result9 = await wf.run(inputFor(9), 'source-moved');

    expect(result9.status).toBe('FAILED');
    expect(visited(result9)).toContain('Publish');
    expect(caughtError(result9)?.Error).toBe('SourceChangedError');
    const message = caughtMessage(result9);
    expect(message).toMatch(
      new RegExp(`source changed: chunk #8 \\(${sampleDay(8).toISOString()} to ${sampleDay(9).toISOString()}\\) of batch ${restatementId(9, 0)} holds rows:checksum 24:-?\\d+ in the source now, but 24:-?\\d+ in staging`),
    );
    expect(message).toContain('Nothing was published; the chunk is marked STALE');
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    expect(await publicationCount()).toBe(publications);
    expect(await wf.chunkStatuses(restatementId(9, 0))).toEqual({ DONE: 8, STALE: 1 });
    expect(result9.alerts).toHaveLength(1);
    expect(result9.alerts[0]!.message).toContain(`SourceChangedError: ${message}`);
    expect(result9.alerts[0]!.message).toContain('only that chunk reloads');
  });

  it('reloads just that chunk on the re-run and publishes the changed source', async () => {
    wf.reset();

    const rerun = await wf.run(inputFor(9), 'source-moved-rerun');

    expect(rerun.status, `${rerun.error}: ${rerun.cause}`).toBe('SUCCEEDED');
    expect(wf.loads.started).toEqual([8]);
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(9));
  });
});

describe('a restatement that failed', () => {
  it('pages with the input that resumes it, and that input resumes the same restatement', async () => {
    wf.reset();
    const live = await wf.fingerprint(LIVE);
    await correctSource(5, 'amount = amount + 2.00', 3);
    wf.faults.Publish = async (input, next) => {
      await correctSource(8, 'quantity = quantity + 1', 1);
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
