// The quarantine's SQL on a real database through the Data API in Redshift
// mode: the move takes each offending row out of staging once, keeps one of
// identical rows, and a chunk's new generation drops its earlier quarantined
// rows; the gate's per-chunk figures count staging with the quarantined
// rows, also where the business key holds the time (its key check in the
// same pass must not count a quarantined copy). Each describe arranges the
// same rows on a database of its own, so none sees another's moves.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchRef } from '../../../../domain/batch.ts';
import { moveToQuarantine } from '../../../../domain/gate/sql/quarantine.ts';
import { chunkCounts } from '../../../../domain/gate/sql/reconcile.ts';
import { liveColumnsQuery } from '../../../../domain/live-watch/sql/out-of-band.ts';
import type { Chunk } from '../../../../domain/plan/chunk.ts';
import { createQuarantine } from '../../../../domain/plan/sql/null-times.ts';
import { startBatch } from '../../../../domain/plan/sql/plan.ts';
import type { Warehouse as Steps } from '../../../../functions/commons/warehouse.ts';
import type { Warehouse } from '../../../support/warehouse.ts';
import { pipelineWith } from '../../fixtures.ts';
import { useOrdersWarehouse } from '../../sql/orders-warehouse.ts';

// The business key holds the time: Reconcile checks it per chunk, in its staging pass.
const pipeline = pipelineWith({
  businessKey: ['order_id', 'ordered_at'],
  checks: { notNull: [{ column: 'amount', action: 'quarantine' }], quarantine: { maxRows: 100 } },
});
const chunk = (index: number, start: string, end: string): Chunk => ({ index, start: new Date(start).toISOString(), end: new Date(end).toISOString() });
const chunks = [chunk(0, '2026-01-01', '2026-01-02'), chunk(1, '2026-01-02', '2026-01-03')];
const rows = [
  "(1, '2026-01-01 01:00', 10)",
  "(2, '2026-01-01 02:00', NULL)", // NULL amount
  "(NULL, '2026-01-01 03:00', 30)", // NULL key
  "(4, '2026-01-02 01:00', 40)",
  "(4, '2026-01-02 01:00', 40)",
  "(4, '2026-01-02 01:00', 40)", // identical
  "(5, '2026-01-02 02:00', 50)",
  "(5, '2026-01-02 02:00', 51)", // conflicting
  "(6, '2026-01-02 03:00', 60)",
].join(', ');
const batch: BatchRef = {
  pipeline: pipeline.name,
  batchId: 'quarantine00000001',
  specHash: pipeline.specHash,
  liveTable: 'analytics.orders',
  from: '2026-01-01T00:00:00.000Z',
  to: '2026-01-03T00:00:00.000Z',
  stagingTable: 'orders__stg_quarantine00000001',
  columns: ['order_id', 'ordered_at', 'amount'],
  basePublication: 0,
};

interface Arranged {
  wh: Warehouse;
  steps: Steps;
}

/** For the calling describe, a database of its own: the rows in source and in staging, the batch started, the quarantine table created. */
function useArranged(): Arranged {
  const db = {} as Arranged;
  beforeAll(async () => {
    Object.assign(db, await useOrdersWarehouse('sql_quarantine_engine'));
    const { wh, steps } = db;
    await wh.query(`INSERT INTO raw.order_events VALUES ${rows}`);
    await steps.batch(
      startBatch({
        batchId: batch.batchId,
        pipeline,
        interval: { from: new Date(batch.from), to: new Date(batch.to) },
        codeVersion: 'test',
        executionId: '',
        basePublication: 0,
        stagingTable: batch.stagingTable,
        chunks,
        now: new Date(),
      }),
      'start',
    );
    await wh.query(`INSERT INTO analytics.${batch.stagingTable} VALUES ${rows}`);
    await steps.execute({ sql: createQuarantine(pipeline, batch.columns) }, 'create');
  });
  afterAll(() => db.wh?.close());
  return db;
}

async function move({ steps }: Arranged): Promise<void> {
  const columns = (await steps.query(liveColumnsQuery('analytics', batch.stagingTable), 'columns')).map((r) => String(r.col));
  const { sqls, parameters } = moveToQuarantine(pipeline, batch, columns, new Date('2026-01-05T00:00:00Z'));
  await steps.batch(sqls, 'move', parameters);
}
const quarantined = ({ wh }: Arranged) =>
  wh.query<{ order_id: string | null; amount: string | null; reason: string; chunk_index: number; generation: number }>(
    `SELECT order_id, amount, reason, chunk_index, generation FROM analytics.orders__quarantine ORDER BY reason, order_id, amount`,
  );
const staging = ({ wh }: Arranged) =>
  wh.query<{ order_id: string; amount: string }>(`SELECT order_id, amount FROM analytics.${batch.stagingTable} ORDER BY order_id, amount`);
async function figures({ steps }: Arranged) {
  const counted = await steps.query(chunkCounts(pipeline, batch), 'counts');
  return { chunks: counted.map((r) => [Number(r.chunk_index), Number(r.source_rows), Number(r.staging_rows)]), duplicates: Number(counted[0]?.duplicate_keys) };
}

describe('the quarantine on the engine', () => {
  describe('a move', () => {
    const db = useArranged();

    it('moves each offending row once with its reason and chunk, keeps one of identical rows, and a second move changes nothing', async () => {
      await move(db);
      const first = await quarantined(db);
      await move(db);

      expect(await quarantined(db)).toEqual(first);
      expect(first.map((r) => [r.order_id, r.amount, r.reason, r.chunk_index, r.generation])).toEqual([
        [null, '30.00', 'business key NULL', 0, 0],
        ['5', '50.00', 'duplicate (conflicting)', 1, 0],
        ['5', '51.00', 'duplicate (conflicting)', 1, 0],
        ['4', '40.00', 'duplicate (identical)', 1, 0],
        ['4', '40.00', 'duplicate (identical)', 1, 0],
        ['2', null, 'not_null:amount', 0, 0],
      ]);
      expect(await staging(db)).toEqual([
        { order_id: '1', amount: '10.00' },
        { order_id: '4', amount: '40.00' },
        { order_id: '6', amount: '60.00' },
      ]);
    });
  });

  describe("the gate's figures after a move", () => {
    const db = useArranged();
    beforeAll(() => move(db));

    it('counts staging with the quarantined rows per chunk, and no key twice for a quarantined copy', async () => {
      expect(await figures(db)).toEqual({
        chunks: [
          [0, 3, 3],
          [1, 6, 6],
        ],
        duplicates: 0,
      });
    });
  });

  describe('a chunk reloaded after a move', () => {
    const db = useArranged();
    beforeAll(() => move(db));

    it("drops a chunk's quarantined rows once the chunk has a new generation, and judges its reloaded rows afresh", async () => {
      const { wh } = db;
      // Chunk 1 found stale and reloaded: a new generation, its interval loaded again.
      await wh.query(`UPDATE atomic_publish.chunks SET attempt = attempt + 1 WHERE batch_id = $1 AND chunk_index = 1`, [batch.batchId]);
      await wh.query(`DELETE FROM analytics.${batch.stagingTable} WHERE ordered_at >= '2026-01-02'`);
      await wh.query(`INSERT INTO analytics.${batch.stagingTable} SELECT * FROM raw.order_events WHERE ordered_at >= '2026-01-02'`);

      await move(db);

      const now = await quarantined(db);
      expect(now.filter((r) => r.chunk_index === 1).map((r) => r.generation)).toEqual([1, 1, 1, 1]);
      expect(now).toHaveLength(6);
      expect(await figures(db)).toEqual({
        chunks: [
          [0, 3, 3],
          [1, 6, 6],
        ],
        duplicates: 0,
      });
    });
  });
});
