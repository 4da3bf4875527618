// Intervals in the pipeline's zone across daylight saving time: the sample
// pipeline published by replace-intervals with hourly chunks in
// Europe/Berlin, backfilling the 23-hour day of 2026-03-29 and the 25-hour
// day of 2026-10-25, whose hour from 02:00 to 03:00 comes twice. The
// source and live rows are arranged once; each day's replace acts on a copy
// of its own (test/support/workflow.ts useFork).
import { afterAll, describe, expect, it } from 'vitest';
import { definePipeline } from '../../domain/define-pipeline.ts';
import { batchIdFor, resolveInterval } from '../../domain/plan/plan.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { LIVE, useFork, useWorkflowFixture, type Workflow } from '../support/workflow.ts';

const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
const original = pipelines[index]!;
const berlin = definePipeline({ ...salesOrderLines, publishMode: 'replace-intervals', chunk: { grain: 'hour', timezone: 'Europe/Berlin', maxConcurrency: 4 } });
pipelines[index] = berlin;

/** Local midnights that start and end each DST day (as the input names them, with their offsets). */
const SPRING = { from: '2026-03-29T00:00:00+01:00', to: '2026-03-30T00:00:00+02:00', hours: 23 };
const AUTUMN = { from: '2026-10-25T00:00:00+02:00', to: '2026-10-26T00:00:00+01:00', hours: 25 };
/** Source rows every 30 minutes (UTC) over [from, to): two per hour, whatever the zone says. */
const STRETCHES = [
  ['2026-03-27T00:00:00Z', '2026-04-01T00:00:00Z'],
  ['2026-10-23T00:00:00Z', '2026-10-28T00:00:00Z'],
] as const;

const fixture = useWorkflowFixture('wf_dst', async (wf) => {
  await wf.sample({ rowsPerDay: 4, sourceDays: 3, liveDays: 3 });
  let first = 700_000_000;
  for (const [from, to] of STRETCHES) {
    await wf.query(
      `INSERT INTO source.sales_order_lines
       SELECT $3::bigint + n, 1, $1::timestamp + n * interval '30 minutes', 1, 1, 2, 10.00 + n
         FROM generate_series(0, (EXTRACT(EPOCH FROM $2::timestamp - $1::timestamp) / 1800)::int - 1) AS n`,
      [from.slice(0, 19), to.slice(0, 19), first],
    );
    first += 100_000;
  }
  // The live table's current version of those days: other amounts, so a replace shows.
  await wf.query(
    `INSERT INTO ${LIVE} SELECT order_id, line_no, ordered_at, customer_id, product_id, quantity, amount + 1, CAST((amount + 1) / quantity AS numeric(12, 4))
       FROM source.sales_order_lines WHERE order_id >= 700000000`,
  );
});
afterAll(() => {
  pipelines[index] = original;
});

/** Live rows against the source over [from, to) (UTC), as count and content. */
async function compare(wf: Workflow, from: string, to: string): Promise<{ live: string; source: string }> {
  const digest = (table: string, amount: string) =>
    wf.query<{ d: string }>(
      `SELECT count(*) || ':' || md5(string_agg(order_id || '/' || ${amount}, ',' ORDER BY order_id)) AS d FROM ${table} WHERE ordered_at >= $1 AND ordered_at < $2`,
      [from.slice(0, 19), to.slice(0, 19)],
    );
  return { live: (await digest(LIVE, 'amount'))[0]!.d, source: (await digest('source.sales_order_lines', 'amount'))[0]!.d };
}

describe.each([
  ['spring forward: a 23-hour day', SPRING],
  ['fall back: a 25-hour day, its 02:00 hour twice', AUTUMN],
])('a replace of the Berlin day of %s', (_what, day) => {
  const wf = useFork(fixture);
  it('plans one chunk per local hour, replaces exactly that day, and leaves the days around it as they were', async () => {
    const interval = resolveInterval({ pipeline: berlin.name, from: day.from, to: day.to }, berlin, new Date());
    const [from, to] = [interval.from.toISOString(), interval.to.toISOString()];
    const dayBefore = new Date(interval.from.getTime() - 86_400_000).toISOString();
    const dayAfter = new Date(interval.to.getTime() + 86_400_000).toISOString();
    const around = { before: await compare(wf, dayBefore, from), after: await compare(wf, to, dayAfter) };
    expect((await compare(wf, from, to)).live).not.toBe((await compare(wf, from, to)).source);

    const result = await wf.run({ pipeline: berlin.name, from: day.from, to: day.to }, `dst-${day.hours}`);

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    const replaced = await compare(wf, from, to);
    expect(replaced.live).toBe(replaced.source);
    expect(replaced.live.startsWith(`${day.hours * 2}:`)).toBe(true);
    expect(await compare(wf, dayBefore, from)).toEqual(around.before);
    expect(await compare(wf, to, dayAfter)).toEqual(around.after);

    const chunks = await wf.query<{ interval_start: Date }>('SELECT interval_start FROM atomic_publish.chunks WHERE batch_id = $1 ORDER BY chunk_index', [
      batchIdFor(berlin, interval),
    ]);
    expect(chunks).toHaveLength(day.hours);
    const localHours = chunks.map((c) =>
      new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', hourCycle: 'h23' }).format(c.interval_start),
    );
    if (day === SPRING) expect(localHours).not.toContain('02');
    if (day === AUTUMN) expect(localHours.filter((h) => h === '02')).toHaveLength(2);
  });
});
