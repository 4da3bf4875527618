// A restatement under publishMode 'replace-intervals': the comparison and
// the replace cover the interval's rows only, so days outside it stay as
// they were, and a replay of the restate input publishes nothing.
import '../support/intervals-pipeline.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchIdFor, resolveInterval } from '../../domain/plan.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { LIVE, PIPELINE, useWorkflow, visited, type Workflow } from '../support/workflow.ts';

const ts = (day: number) => sampleDay(day).toISOString().slice(0, 19);
const input = { pipeline: PIPELINE.name, from: sampleDay(6).toISOString(), to: sampleDay(8).toISOString() };
const restate = { ...input, restate: true };
const id = (n: number) => batchIdFor(PIPELINE, resolveInterval(input, PIPELINE, new Date()), n);
/** Live rows of `[from, to)` as a table expression. */
const liveDays = (from: number, to: number) => `(SELECT * FROM ${LIVE} WHERE ordered_at >= '${ts(from)}' AND ordered_at < '${ts(to)}') AS days`;
const sourceDays = (from: number, to: number) =>
  `(SELECT order_id, line_no, ordered_at, customer_id, product_id, quantity, amount, CAST(amount / quantity AS numeric(12, 4)) AS unit_price
      FROM source.sales_order_lines WHERE ordered_at >= '${ts(from)}' AND ordered_at < '${ts(to)}') AS days`;

let wf: Workflow;
beforeAll(async () => {
  wf = await useWorkflow('wf_restate_intervals');
  await wf.sample({ rowsPerDay: 12, sourceDays: 10, liveDays: 5 });
});
afterAll(() => wf?.close());

describe('restating an interval published by replace-intervals', () => {
  it('publishes the correction of the interval and leaves the other days as they were', async () => {
    expect((await wf.run(input, 'publish')).status).toBe('SUCCEEDED');
    expect(await wf.fingerprint(liveDays(6, 8))).toEqual(await wf.fingerprint(sourceDays(6, 8)));
    const earlier = await wf.fingerprint(liveDays(0, 6));
    await wf.query(`UPDATE source.sales_order_lines SET amount = amount + 3 WHERE line_no = 1 AND ordered_at >= $1 AND ordered_at < $2`, [ts(6), ts(7)]);
    // Outside the interval: a restatement of days 6 and 7 must not publish it.
    await wf.query(`UPDATE source.sales_order_lines SET amount = amount + 5 WHERE ordered_at >= $1 AND ordered_at < $2`, [ts(3), ts(4)]);
    const corrected = await wf.fingerprint(sourceDays(6, 8));
    expect(await wf.fingerprint(liveDays(6, 8))).not.toEqual(corrected);

    wf.reset();
    expect(visited(await wf.run(input, 'plain-replay'))).toContain('NothingToPublish');
    expect(await wf.fingerprint(liveDays(6, 8))).not.toEqual(corrected);

    wf.reset();
    const restated = await wf.run(restate, 'restate');

    expect(restated.status, `${restated.error}: ${restated.cause}`).toBe('SUCCEEDED');
    expect(visited(restated)).toContain('Published');
    expect(await wf.fingerprint(liveDays(6, 8))).toEqual(corrected);
    expect(await wf.fingerprint(liveDays(0, 6))).toEqual(earlier);
    expect((await wf.publications()).at(-1)?.batch_id).toBe(id(1));
  });

  it('publishes nothing on a replay of the restate input', async () => {
    wf.reset();
    const live = await wf.fingerprint(LIVE);
    const publications = (await wf.publications()).length;

    const replay = await wf.run(restate, 'restate-replay');

    expect(replay.status).toBe('SUCCEEDED');
    expect(visited(replay)).toContain('Superseded');
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    expect(await wf.publications()).toHaveLength(publications);
    expect((await wf.batch(id(2)))?.status).toBe('SUPERSEDED');
  });
});
