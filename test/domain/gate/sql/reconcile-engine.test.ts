// Reconcile's per-chunk figures on a real database through the Data API in
// Redshift mode: rows bucketed by grain unit and mapped to their chunk,
// merged chunks (chunk.targetRows) and calendar ones alike, in the
// pipeline's zone; rows outside the interval and duplicated keys from the
// same statement, per chunk where the key holds the time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchRef } from '../../../../domain/batch.ts';
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
  wh = await useWarehouse('sql_reconcile_engine');
  steps = localWarehouse(wh.endpoint, wh.pg.database);
  await wh.query('CREATE SCHEMA raw; CREATE SCHEMA analytics');
  await wh.query('CREATE TABLE raw.order_events (order_id bigint, ordered_at timestamp, amount numeric(12,2))');
  await wh.query('CREATE TABLE analytics.orders (order_id bigint, ordered_at timestamp, amount numeric(12,2))');
  for (const ddl of manifestInstall(new Date())) await steps.batch(ddl, 'manifest');
});
afterAll(() => wh?.close());

let batchNumber = 0;
/** A batch of `pipeline` over `[from, to)` with these chunks, source rows and staging rows (`[order_id, ordered_at]`); its per-chunk figures. */
async function figures(pipeline: Pipeline, from: string, to: string, chunks: readonly Chunk[], source: [number, string][], staging: [number, string][]) {
  const batchId = `engine${String(++batchNumber).padStart(10, '0')}`;
  const stagingTable = `orders__stg_${batchId}`;
  const interval = { from: new Date(from), to: new Date(to) };
  await wh.query('TRUNCATE raw.order_events');
  const values = (rows: [number, string][]) => rows.map(([id, at]) => `(${id}, '${at}', 1)`).join(', ');
  if (source.length > 0) await wh.query(`INSERT INTO raw.order_events VALUES ${values(source)}`);
  await steps.batch(
    startBatch({ batchId, pipeline, interval, codeVersion: 'test', executionId: '', basePublication: 0, stagingTable, chunks, now: new Date() }),
    'start',
  );
  if (staging.length > 0) await wh.query(`INSERT INTO analytics.${stagingTable} VALUES ${values(staging)}`);
  const batch: BatchRef = {
    pipeline: pipeline.name,
    batchId,
    specHash: pipeline.specHash,
    liveTable: 'analytics.orders',
    from,
    to,
    stagingTable,
    columns: [],
    basePublication: 0,
  };
  const rows = await steps.query(chunkCounts(pipeline, batch), 'counts');
  return {
    chunks: rows.map((r) => [Number(r.chunk_index), Number(r.source_rows), Number(r.staging_rows)]),
    outside: Number(rows[0]?.outside_interval),
    duplicates: Number(rows[0]?.duplicate_keys),
  };
}

const chunk = (index: number, start: string, end: string): Chunk => ({ index, start: new Date(start).toISOString(), end: new Date(end).toISOString() });

describe('per-chunk figures', () => {
  it('counts each merged chunk over all its days, rows outside the interval once, and a key repeated in another chunk', async () => {
    const daily = pipelineWith({ chunk: { grain: 'day', targetRows: 3 } });
    const chunks = [chunk(0, '2026-01-01', '2026-01-03'), chunk(1, '2026-01-03', '2026-01-04'), chunk(2, '2026-01-04', '2026-01-08')];
    const source: [number, string][] = [
      [1, '2026-01-01 00:00'],
      [2, '2026-01-02 23:59:59.999'],
      [3, '2026-01-03 12:00'],
      [4, '2026-01-05 01:00'],
      [5, '2026-01-07 23:00'],
    ];

    const result = await figures(daily, '2026-01-01T00:00:00Z', '2026-01-08T00:00:00Z', chunks, source, [
      ...source,
      [1, '2026-01-06 10:00'], // order 1 again, in chunk 2
      [9, '2026-01-08 00:00'], // at the interval's end: outside
      [9, '2025-12-31 23:59:59'], // before its start: outside, and order 9 twice
    ]);

    expect(result.chunks).toEqual([
      [0, 2, 2],
      [1, 1, 1],
      [2, 2, 3],
    ]);
    expect(result.outside).toBe(2);
    expect(result.duplicates).toBe(2);
  });

  it("buckets by the local day in the pipeline's zone, and hours since the batch start across a DST change", async () => {
    const berlin = pipelineWith({ chunk: { grain: 'day', timezone: 'Europe/Berlin' }, historyStart: '2026-03-27T23:00:00Z' });
    // Berlin days: Mar 28 (24 h), Mar 29 (23 h: clocks go forward), Mar 30; chunk 0 the first, chunk 1 the other two.
    const days = [chunk(0, '2026-03-27T23:00:00Z', '2026-03-28T23:00:00Z'), chunk(1, '2026-03-28T23:00:00Z', '2026-03-30T22:00:00Z')];
    const rows: [number, string][] = [
      [1, '2026-03-28 22:59:59'],
      [2, '2026-03-28 23:00:00'],
      [3, '2026-03-30 21:59:59'],
    ];

    expect((await figures(berlin, '2026-03-27T23:00:00Z', '2026-03-30T22:00:00Z', days, rows, rows)).chunks).toEqual([
      [0, 1, 1],
      [1, 2, 2],
    ]);

    const hourly = pipelineWith({ chunk: { grain: 'hour', timezone: 'Europe/Berlin', targetRows: 2 }, historyStart: '2026-03-29T00:00:00Z' });
    // 00:00-01:00 UTC (01:00-02:00 CET), then 01:00-03:00 UTC (03:00-05:00 CEST after the jump).
    const hours = [chunk(0, '2026-03-29T00:00:00Z', '2026-03-29T01:00:00Z'), chunk(1, '2026-03-29T01:00:00Z', '2026-03-29T03:00:00Z')];
    const events: [number, string][] = [
      [1, '2026-03-29 00:30'],
      [2, '2026-03-29 01:00'],
      [3, '2026-03-29 02:59:59'],
    ];
    expect((await figures(hourly, '2026-03-29T00:00:00Z', '2026-03-29T03:00:00Z', hours, events, events.slice(0, 2))).chunks).toEqual([
      [0, 1, 1],
      [1, 2, 1],
    ]);
  });

  it('counts duplicated keys per chunk, in the one pass over staging, where the key holds the time column', async () => {
    const keyed = pipelineWith({ businessKey: ['order_id', 'ordered_at'] });
    const chunks = [chunk(0, '2026-01-01', '2026-01-02'), chunk(1, '2026-01-02', '2026-01-03')];
    const source: [number, string][] = [
      [1, '2026-01-01 10:00'],
      [1, '2026-01-02 10:00'],
      [2, '2026-01-02 11:00'],
    ];

    const clean = await figures(keyed, '2026-01-01T00:00:00Z', '2026-01-03T00:00:00Z', chunks, source, source);
    // Order 1 on two days is two key values (the time is part of the key).
    expect(clean).toEqual({
      chunks: [
        [0, 1, 1],
        [1, 2, 2],
      ],
      outside: 0,
      duplicates: 0,
    });

    const doubled = await figures(keyed, '2026-01-01T00:00:00Z', '2026-01-03T00:00:00Z', chunks, source, [
      ...source,
      [2, '2026-01-02 11:00'],
      [3, '2026-01-05 00:00'],
    ]);
    expect(doubled).toEqual({
      chunks: [
        [0, 1, 1],
        [1, 2, 3],
      ],
      outside: 1,
      duplicates: 1,
    });
  });
});
