// The gate's content checksum and measure sums on a real database through
// the Data API in Redshift mode, from the same grouped pass as the counts:
// equal on both sides when staging holds what the load's INSERT made of the
// source (values converted to staging's types), different in exactly the
// chunk where a value, a NULL or a key differs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchRef } from '../../../../domain/batch.ts';
import { CHECKSUM_AGGREGATE, chunkCounts, gateAggregates, measureAggregate } from '../../../../domain/gate/sql/reconcile.ts';
import { liveColumnsQuery } from '../../../../domain/live-watch/sql/out-of-band.ts';
import { manifestInstall } from '../../../../domain/manifest/sql/manifest.ts';
import type { Chunk } from '../../../../domain/plan/chunk.ts';
import { startBatch } from '../../../../domain/plan/sql/plan.ts';
import type { Pipeline } from '../../../../domain/spec.ts';
import type { Warehouse as Steps } from '../../../../functions/commons/warehouse.ts';
import { localWarehouse } from '../../../../local/aws-clients.ts';
import { useWarehouse, type Warehouse } from '../../../support/warehouse.ts';
import { pipelineWith } from '../../fixtures.ts';

let wh: Warehouse;
let steps: Steps;
beforeAll(async () => {
  wh = await useWarehouse('sql_reconcile_gate_engine');
  steps = localWarehouse(wh.endpoint, wh.pg.database);
  await wh.query('CREATE SCHEMA raw; CREATE SCHEMA analytics');
  // The source has more scale than the live table: a load rounds amounts to cents.
  await wh.query('CREATE TABLE raw.gate_events (order_id bigint, ordered_at timestamp, amount numeric(12,4), qty integer, note varchar(20), flag boolean)');
  await wh.query('CREATE TABLE analytics.gate (order_id bigint, ordered_at timestamp, amount numeric(12,2), qty integer, note varchar(20), flag boolean)');
  for (const ddl of manifestInstall(new Date())) await steps.batch(ddl, 'manifest');
});
afterAll(() => wh?.close());

const spec = {
  name: 'gate',
  target: { schema: 'analytics', table: 'gate' },
  sourceSql: 'SELECT order_id, ordered_at, amount, qty, note, flag FROM raw.gate_events WHERE ordered_at >= :start AND ordered_at < :end',
  checks: { measures: ['amount', 'qty'] },
};
const FROM = '2026-01-01T00:00:00Z';
const TO = '2026-01-03T00:00:00Z';
const chunks: Chunk[] = [
  { index: 0, start: '2026-01-01T00:00:00.000Z', end: '2026-01-02T00:00:00.000Z' },
  { index: 1, start: '2026-01-02T00:00:00.000Z', end: '2026-01-03T00:00:00.000Z' },
];
const SOURCE = `INSERT INTO raw.gate_events VALUES
  (1, '2026-01-01 10:00', 10.0050, 2, 'a', true),
  (2, '2026-01-01 11:00', 20.0000, 1, NULL, false),
  (3, '2026-01-02 09:00', 5.1250, 7, 'c', NULL),
  (4, '2026-01-02 10:00', 1.0000, 1, 'd', true)`;

let batchNumber = 0;
/** A batch over two days whose staging is loaded from the source as a chunk load does, then changed by `change`; its per-chunk checksums and sums. */
async function gateFigures(pipeline: Pipeline, change?: string) {
  const batchId = `gate${String(++batchNumber).padStart(12, '0')}`;
  const stagingTable = `gate__stg_${batchId}`;
  await wh.query('TRUNCATE raw.gate_events');
  await wh.query(SOURCE);
  await steps.batch(
    startBatch({
      batchId,
      pipeline,
      interval: { from: new Date(FROM), to: new Date(TO) },
      codeVersion: 'test',
      executionId: '',
      basePublication: 0,
      stagingTable,
      chunks,
      now: new Date(),
    }),
    'start',
  );
  await wh.query(
    `INSERT INTO analytics.${stagingTable} (order_id, ordered_at, amount, qty, note, flag) SELECT order_id, ordered_at, amount, qty, note, flag FROM raw.gate_events`,
  );
  if (change) await wh.query(change.replaceAll('STAGING', `analytics.${stagingTable}`));
  const columns = (await steps.query(liveColumnsQuery('analytics', stagingTable), 'columns')).map((r) => String(r.col));
  const batch: BatchRef = {
    pipeline: pipeline.name,
    batchId,
    specHash: pipeline.specHash,
    liveTable: 'analytics.gate',
    from: FROM,
    to: TO,
    stagingTable,
    columns: [],
    basePublication: 0,
  };
  const rows = await steps.query(chunkCounts(pipeline, batch, gateAggregates(pipeline, columns)), 'counts');
  return rows.map((r) => ({
    rows: [Number(r.source_rows), Number(r.staging_rows)],
    checksumEqual: String(r[`source_${CHECKSUM_AGGREGATE}`]) === String(r[`staging_${CHECKSUM_AGGREGATE}`]),
    amount: [String(r[`source_${measureAggregate(0)}`]), String(r[`staging_${measureAggregate(0)}`])],
    qty: [String(r[`source_${measureAggregate(1)}`]), String(r[`staging_${measureAggregate(1)}`])],
  }));
}

describe.each([
  ['a key without the time column', pipelineWith(spec)],
  ['a key holding the time column (checked in the one pass over staging)', pipelineWith({ ...spec, businessKey: ['order_id', 'ordered_at'] })],
])('content checksum and measure sums, %s', (_label, pipeline) => {
  it("match when staging holds what the load made of the source, values rounded to staging's scale", async () => {
    expect(await gateFigures(pipeline)).toEqual([
      { rows: [2, 2], checksumEqual: true, amount: ['30.01', '30.01'], qty: ['3', '3'] },
      { rows: [2, 2], checksumEqual: true, amount: ['6.13', '6.13'], qty: ['8', '8'] },
    ]);
  });

  it('differ in the chunk of a corrected value, with the same count', async () => {
    const figures = await gateFigures(pipeline, 'UPDATE STAGING SET amount = amount - 1 WHERE order_id = 3');
    expect(figures.map((f) => [f.checksumEqual, f.amount])).toEqual([
      [true, ['30.01', '30.01']],
      [false, ['6.13', '5.13']],
    ]);
  });

  it('differ in the checksum alone for a swapped key, a NULL made a value, or a duplicate and an omission of equal rows', async () => {
    expect(
      (await gateFigures(pipeline, 'UPDATE STAGING SET order_id = 9 WHERE order_id = 1')).map((f) => [f.checksumEqual, f.amount[0] === f.amount[1]]),
    ).toEqual([
      [false, true],
      [true, true],
    ]);
    expect((await gateFigures(pipeline, "UPDATE STAGING SET note = '' WHERE order_id = 2")).map((f) => f.checksumEqual)).toEqual([false, true]);
    expect((await gateFigures(pipeline, 'UPDATE STAGING SET flag = false WHERE order_id = 3')).map((f) => f.checksumEqual)).toEqual([true, false]);
    // A NULL made a zero: the hash of a NULL column is its type's zero, told apart by the NULL mask.
    expect((await gateFigures(pipeline, 'UPDATE STAGING SET flag = false WHERE order_id = 3')).map((f) => f.checksumEqual)).toEqual([true, false]);
    expect((await gateFigures(pipeline, 'UPDATE STAGING SET note = NULL WHERE order_id = 1')).map((f) => f.checksumEqual)).toEqual([false, true]);
    // Two rows' values of one column swapped: every column's total is unchanged, but the rows are not.
    expect(
      (await gateFigures(pipeline, 'UPDATE STAGING SET qty = CASE order_id WHEN 1 THEN 1 ELSE 2 END WHERE order_id IN (1, 2)')).map((f) => [
        f.checksumEqual,
        f.qty[0] === f.qty[1],
      ]),
    ).toEqual([
      [false, true],
      [true, true],
    ]);
    // Order 4 loaded twice, order 3 lost, in one chunk: the count matches.
    const cancelled = await gateFigures(pipeline, 'DELETE FROM STAGING WHERE order_id = 3; INSERT INTO STAGING SELECT * FROM STAGING WHERE order_id = 4');
    expect(cancelled.map((f) => [f.rows, f.checksumEqual])).toEqual([
      [[2, 2], true],
      [[2, 2], false],
    ]);
  });
});
