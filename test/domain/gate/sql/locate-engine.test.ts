// Locating a difference on a real database through the Data API in Redshift
// mode: segments by the hour of the chunk time zone and a dimension (NULL
// values meeting their counterparts), source values converted to staging's
// types so a rounding is no difference, and the keys in both directions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchRef } from '../../../../domain/batch.ts';
import { differingKeys, differingSegments, KeyClass } from '../../../../domain/gate/sql/locate.ts';
import { gateAggregates } from '../../../../domain/gate/sql/reconcile.ts';
import { liveColumnsQuery } from '../../../../domain/live-watch/sql/out-of-band.ts';
import { manifestInstall } from '../../../../domain/manifest/sql/manifest.ts';
import type { Chunk } from '../../../../domain/plan/chunk.ts';
import { startBatch } from '../../../../domain/plan/sql/plan.ts';
import type { Warehouse as Steps } from '../../../../functions/commons/warehouse.ts';
import { localWarehouse } from '../../../../local/aws-clients.ts';
import { useWarehouse, type Warehouse } from '../../../support/warehouse.ts';
import { pipelineWith } from '../../fixtures.ts';

let wh: Warehouse;
let steps: Steps;
beforeAll(async () => {
  wh = await useWarehouse('sql_locate_engine');
  steps = localWarehouse(wh.endpoint, wh.pg.database);
  await wh.query('CREATE SCHEMA raw; CREATE SCHEMA analytics');
  await wh.query('CREATE TABLE raw.located_events (order_id bigint, ordered_at timestamp, amount numeric(12,4), region varchar(20))');
  await wh.query('CREATE TABLE analytics.located (order_id bigint, ordered_at timestamp, amount numeric(12,2), region varchar(20))');
  for (const ddl of manifestInstall(new Date())) await steps.batch(ddl, 'manifest');
});
afterAll(() => wh?.close());

const pipeline = pipelineWith({
  name: 'located',
  target: { schema: 'analytics', table: 'located' },
  sourceSql: 'SELECT order_id, ordered_at, amount, region FROM raw.located_events WHERE ordered_at >= :start AND ordered_at < :end',
  chunk: { grain: 'hour', timezone: 'Europe/Berlin' },
  checks: { measures: ['amount'], dimensions: ['region'] },
});
const FROM = '2026-01-01T09:00:00Z';
const TO = '2026-01-01T11:00:00Z';
const chunks: Chunk[] = [
  { index: 0, start: '2026-01-01T09:00:00.000Z', end: '2026-01-01T10:00:00.000Z' },
  { index: 1, start: '2026-01-01T10:00:00.000Z', end: '2026-01-01T11:00:00.000Z' },
];

let batchNumber = 0;
/** A batch whose staging is loaded from the source as a load does, then changed by `change`; the segments and keys located in both chunks. */
async function locate(change?: string) {
  const batchId = `loc${String(++batchNumber).padStart(13, '0')}`;
  const stagingTable = `located__stg_${batchId}`;
  await wh.query('TRUNCATE raw.located_events');
  // Amounts with four places, loaded into two: a rounding the load makes is no difference.
  await wh.query(`INSERT INTO raw.located_events VALUES
    (1, '2026-01-01 09:15', 10.0050, 'north'), (2, '2026-01-01 09:30', 20.0000, NULL), (3, '2026-01-01 10:15', 5.1250, 'south')`);
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
  await wh.query(`INSERT INTO analytics.${stagingTable} SELECT order_id, ordered_at, amount, region FROM raw.located_events`);
  if (change) await wh.query(change.replaceAll('STAGING', `analytics.${stagingTable}`));
  const columns = (await steps.query(liveColumnsQuery('analytics', stagingTable), 'columns')).map((r) => String(r.col));
  const types = new Map(columns.map((c) => [c.split(' ')[0]!, c.slice(c.indexOf(' ') + 1)]));
  const batch: BatchRef = {
    pipeline: pipeline.name,
    batchId,
    specHash: pipeline.specHash,
    liveTable: 'analytics.located',
    from: FROM,
    to: TO,
    stagingTable,
    columns: [],
    basePublication: 0,
  };
  const aggregates = gateAggregates(pipeline, columns);
  const segments = await steps.query(differingSegments(pipeline, batch, [0, 1], aggregates, types, 20), 'segments');
  const keys = await steps.query(differingKeys(pipeline, batch, [0, 1], aggregates, 5), 'keys');
  return {
    segments: segments.map((r) => ({
      chunk: Number(r.chunk_index),
      segment: String(r.ap_segment),
      region: r.ap_d0,
      rows: [Number(r.source_rows), Number(r.staging_rows)],
      amount: [String(r.source_sum_0), String(r.staging_sum_0)],
      groups: Number(r.ap_groups),
    })),
    keys: keys.map((r) => ({ class: Number(r.ap_class), key: Number(r.ap_k0), count: Number(r.ap_keys) })),
  };
}

describe('locating on the engine', () => {
  it('finds nothing when staging holds what the load made of the source, NULL regions and rounded amounts included', async () => {
    expect(await locate()).toEqual({ segments: [], keys: [] });
  });

  it('names the hour in the chunk time zone and the region of a corrected value, and its key', async () => {
    const found = await locate('UPDATE STAGING SET amount = amount + 1 WHERE order_id = 1');
    expect(found.segments).toEqual([{ chunk: 0, segment: '2026-01-01 10:00:00', region: 'north', rows: [1, 1], amount: ['10.01', '11.01'], groups: 1 }]);
    expect(found.keys).toEqual([{ class: KeyClass.ROWS_CHANGED, key: 1, count: 1 }]);
  });

  it('names a NULL region as one segment, and a key missing in each direction', async () => {
    const found = await locate("DELETE FROM STAGING WHERE order_id = 2; INSERT INTO STAGING VALUES (9, '2026-01-01 10:20', 1.00, 'south')");
    expect(found.segments).toEqual([
      { chunk: 0, segment: '2026-01-01 10:00:00', region: null, rows: [1, 0], amount: ['20.00', '0'], groups: 2 },
      { chunk: 1, segment: '2026-01-01 11:00:00', region: 'south', rows: [1, 2], amount: ['5.13', '6.13'], groups: 2 },
    ]);
    expect(found.keys).toEqual([
      { class: KeyClass.MISSING_IN_STAGING, key: 2, count: 1 },
      { class: KeyClass.MISSING_IN_SOURCE, key: 9, count: 1 },
    ]);
  });
});
