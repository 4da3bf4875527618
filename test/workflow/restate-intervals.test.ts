// A restatement under publishMode 'replace-intervals': the comparison and
// the replace cover the interval's rows only, so days outside it stay as
// they were, and a replay of the restate input publishes nothing.
// The publication and the source corrections after it are arranged once;
// each describe acts on its own copy of them (test/support/workflow.ts useFork).
import '../support/intervals-pipeline.ts';
import { beforeAll, describe, expect, it } from 'vitest';
import { batchIdFor, resolveInterval } from '../../domain/plan/plan.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { type Fingerprint, LIVE, PIPELINE, useFork, useWorkflowFixture, visited } from '../support/workflow.ts';

const ts = (day: number) => sampleDay(day).toISOString().slice(0, 19);
const input = { pipeline: PIPELINE.name, from: sampleDay(6).toISOString(), to: sampleDay(8).toISOString() };
const restate = { ...input, restate: true };
const id = (n: number) => batchIdFor(PIPELINE, resolveInterval(input, PIPELINE, new Date()), n);
/** Live rows of `[from, to)` as a table expression. */
const liveDays = (from: number, to: number) => `(SELECT * FROM ${LIVE} WHERE ordered_at >= '${ts(from)}' AND ordered_at < '${ts(to)}') AS days`;
const sourceDays = (from: number, to: number) =>
  `(SELECT order_id, line_no, ordered_at, customer_id, product_id, quantity, amount, CAST(amount / quantity AS numeric(12, 4)) AS unit_price
      FROM source.sales_order_lines WHERE ordered_at >= '${ts(from)}' AND ordered_at < '${ts(to)}') AS days`;

// Days 6 and 7 published, then corrected in the source: inside the interval
// (day 6) and outside it (day 3), which a restatement of 6 and 7 must not publish.
const fixture = useWorkflowFixture('wf_restate_intervals', async (wf) => {
  await wf.sample({ rowsPerDay: 12, sourceDays: 10, liveDays: 5 });
  const published = await wf.run(input, 'publish');
  const publishedDays = { live: await wf.fingerprint(liveDays(6, 8)), source: await wf.fingerprint(sourceDays(6, 8)) };
  const earlier = await wf.fingerprint(liveDays(0, 6));
  await wf.query(`UPDATE source.sales_order_lines SET amount = amount + 3 WHERE line_no = 1 AND ordered_at >= $1 AND ordered_at < $2`, [ts(6), ts(7)]);
  await wf.query(`UPDATE source.sales_order_lines SET amount = amount + 5 WHERE ordered_at >= $1 AND ordered_at < $2`, [ts(3), ts(4)]);
  const corrected = await wf.fingerprint(sourceDays(6, 8));
  const liveAfterCorrection = await wf.fingerprint(liveDays(6, 8));
  return { published, publishedDays, earlier, corrected, liveAfterCorrection };
});
let corrected: Fingerprint;
beforeAll(() => {
  ({ corrected } = fixture.arranged);
});

describe('the interval published by replace-intervals, then corrected in the source', () => {
  it('was published as the source held it, and the correction left it differing from the source', () => {
    const { published, publishedDays, liveAfterCorrection } = fixture.arranged;
    expect(published.status, `${published.error}: ${published.cause}`).toBe('SUCCEEDED');
    expect(publishedDays.live).toEqual(publishedDays.source);
    expect(liveAfterCorrection).toEqual(publishedDays.live);
    expect(liveAfterCorrection).not.toEqual(corrected);
  });
});

describe('a plain replay of the corrected interval', () => {
  const wf = useFork(fixture);
  let replay: ExecutionResult;
  beforeAll(async () => {
    replay = await wf.run(input, 'plain-replay');
  });

  it('publishes nothing: the correction stays unpublished', async () => {
    expect(visited(replay)).toContain('NothingToPublish');
    expect(await wf.fingerprint(liveDays(6, 8))).not.toEqual(corrected);
  });
});

describe('restating the corrected interval, then replaying the restate input', () => {
  const wf = useFork(fixture);
  let restated: ExecutionResult;
  /** What the restatement left, read before the replay. */
  let afterRestate: { interval: Fingerprint; earlier: Fingerprint; live: Fingerprint; lastBatch: unknown; publications: number };
  let replay: ExecutionResult;
  beforeAll(async () => {
    restated = await wf.run(restate, 'restate');
    const publications = await wf.publications();
    afterRestate = {
      interval: await wf.fingerprint(liveDays(6, 8)),
      earlier: await wf.fingerprint(liveDays(0, 6)),
      live: await wf.fingerprint(LIVE),
      lastBatch: publications.at(-1)?.batch_id,
      publications: publications.length,
    };
    replay = await wf.run(restate, 'restate-replay');
  });

  it('the restatement publishes the correction of the interval and leaves the other days as they were', () => {
    expect(restated.status, `${restated.error}: ${restated.cause}`).toBe('SUCCEEDED');
    expect(visited(restated)).toContain('Published');
    expect(afterRestate.interval).toEqual(corrected);
    expect(afterRestate.earlier).toEqual(fixture.arranged.earlier);
    expect(afterRestate.lastBatch).toBe(id(1));
  });

  it('the replay of the restate input publishes nothing: restatement 2 ends SUPERSEDED', async () => {
    expect(replay.status).toBe('SUCCEEDED');
    expect(visited(replay)).toContain('Superseded');
    expect(await wf.fingerprint(LIVE)).toEqual(afterRestate.live);
    expect(await wf.publications()).toHaveLength(afterRestate.publications);
    expect((await wf.batch(id(2)))?.status).toBe('SUPERSEDED');
  });
});
