// The live side of the drift checks on a real database through the Data API
// in Redshift mode: one grouped pass over the live rows of the batch
// interval, mapped to chunks as the gate maps the source (a chunk of several
// grain units holds them all; rows outside the interval count nowhere), and
// staging's NULL counts as more entries of the gate's pass.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchRef } from '../../../../domain/batch.ts';
import { liveDriftCounts, nullAggregate, nullCountAggregates } from '../../../../domain/gate/sql/drift.ts';
import { chunkCounts } from '../../../../domain/gate/sql/reconcile.ts';
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
  wh = await useWarehouse('sql_drift_engine');
  steps = localWarehouse(wh.endpoint, wh.pg.database);
  await wh.query('CREATE SCHEMA raw; CREATE SCHEMA analytics');
  await wh.query('CREATE TABLE raw.drift_events (order_id bigint, ordered_at timestamp, amount numeric(12,2), note varchar(20))');
  await wh.query('CREATE TABLE analytics.drift (order_id bigint, ordered_at timestamp, amount numeric(12,2), note varchar(20))');
  // Live: hours 0 to 3 of Jan 1, and one row before and one after the interval [01:00, 04:00).
  await wh.query(`INSERT INTO analytics.drift VALUES
    (1, '2026-01-01 00:30', 1.00, 'a'),
    (2, '2026-01-01 01:10', 2.00, NULL), (3, '2026-01-01 01:20', NULL, 'c'),
    (4, '2026-01-01 02:10', 4.00, NULL),
    (5, '2026-01-01 03:10', 5.00, 'e'), (6, '2026-01-01 03:20', 6.00, 'f'), (7, '2026-01-01 03:30', NULL, NULL),
    (8, '2026-01-01 04:30', 8.00, 'h')`);
  await wh.query(
    `INSERT INTO raw.drift_events SELECT * FROM analytics.drift WHERE ordered_at >= '2026-01-01 01:00' AND ordered_at < '2026-01-01 04:00' AND order_id <> 5`,
  );
  for (const ddl of manifestInstall(new Date())) await steps.batch(ddl, 'manifest');
});
afterAll(() => wh?.close());

const FROM = '2026-01-01T01:00:00.000Z';
const TO = '2026-01-01T04:00:00.000Z';
// Chunk 0 holds two hours (01:00 and 02:00, merged by a row target), chunk 1 one.
const chunks: Chunk[] = [
  { index: 0, start: FROM, end: '2026-01-01T03:00:00.000Z' },
  { index: 1, start: '2026-01-01T03:00:00.000Z', end: TO },
];
const pipeline: Pipeline = pipelineWith({
  target: { schema: 'analytics', table: 'drift' },
  sourceSql: 'SELECT order_id, ordered_at, amount, note FROM raw.drift_events WHERE ordered_at >= :start AND ordered_at < :end',
  chunk: { grain: 'hour' },
  checks: { drift: { nullRate: { maxIncreasePoints: 5 } } },
});

async function startedBatch(batchId: string): Promise<BatchRef> {
  const stagingTable = `drift__stg_${batchId}`;
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
  await wh.query(`INSERT INTO analytics.${stagingTable} SELECT * FROM raw.drift_events`);
  return {
    pipeline: pipeline.name,
    batchId,
    specHash: pipeline.specHash,
    liveTable: 'analytics.drift',
    from: FROM,
    to: TO,
    stagingTable,
    columns: ['order_id', 'ordered_at', 'amount', 'note'],
    basePublication: 0,
  };
}

describe('the live drift pass', () => {
  it("counts live's rows and NULLs per chunk of the interval, a merged chunk's units together, nothing outside it", async () => {
    const batch = await startedBatch('drift000000000001');

    const rows = await steps.query(liveDriftCounts(pipeline, batch, ['amount', 'note']), 'live');

    expect(rows.map((r) => [Number(r.chunk_index), Number(r.live_rows), Number(r[`live_${nullAggregate(0)}`]), Number(r[`live_${nullAggregate(1)}`])])).toEqual(
      [
        [0, 3, 1, 2],
        [1, 3, 1, 1],
      ],
    );
  });

  it("counts staging's NULLs per chunk in the gate's pass, beside its rows", async () => {
    const batch = await startedBatch('drift000000000002');

    const rows = await steps.query(
      chunkCounts(pipeline, batch, [{ name: 'rows', perRow: () => '1', columns: [] }, ...nullCountAggregates(['amount', 'note'])]),
      'counts',
    );

    expect(
      rows.map((r) => [Number(r.chunk_index), Number(r.staging_rows), Number(r[`staging_${nullAggregate(0)}`]), Number(r[`staging_${nullAggregate(1)}`])]),
    ).toEqual([
      [0, 3, 1, 2],
      [1, 2, 1, 1],
    ]);
    expect(rows.map((r) => Number(r[`source_${nullAggregate(1)}`]))).toEqual([2, 1]);
  });
});
