import { describe, expect, it } from 'vitest';
import { liveDriftCounts, nullCountAggregates } from '../../../../domain/gate/sql/drift.ts';
import { chunkCounts, gateAggregates } from '../../../../domain/gate/sql/reconcile.ts';
import { batch, berlinMonthly, itIsASafeSingleStatement, pipeline } from '../../sql/support.ts';

describe('single statements of the drift checks', () => {
  itIsASafeSingleStatement([
    ['liveDriftCounts', liveDriftCounts(pipeline, batch, ['amount', 'order_id'])],
    ['liveDriftCounts (rows only)', liveDriftCounts(pipeline, batch, [])],
    ['liveDriftCounts (Berlin month grain)', liveDriftCounts(berlinMonthly, batch, ['amount'])],
    ['chunkCounts with NULL counts', chunkCounts(pipeline, batch, [...gateAggregates(pipeline, []), ...nullCountAggregates(['amount'])])],
  ]);

  it('reads live once, over the rows of the batch interval, and counts its rows and NULLs per chunk', () => {
    const { sql } = liveDriftCounts(pipeline, batch, ['amount', 'order_id']);

    expect(sql.match(/FROM "analytics"\."orders" AS l/g)).toHaveLength(1);
    expect(sql).toContain('WHERE l."ordered_at" >= :start AND l."ordered_at" < :end');
    expect(sql).toContain('SUM(CASE WHEN l."amount" IS NULL THEN 1 ELSE 0 END) AS live_null_0');
    expect(sql).toContain('SUM(CASE WHEN l."order_id" IS NULL THEN 1 ELSE 0 END) AS live_null_1');
    expect(sql).toContain('GROUP BY owner.chunk_index');
  });

  it("adds the NULL counts to the gate's one pass over staging: no other pass", () => {
    const plain = chunkCounts(pipeline, batch, gateAggregates(pipeline, []));
    const withNulls = chunkCounts(pipeline, batch, [...gateAggregates(pipeline, []), ...nullCountAggregates(['amount'])]);
    const stagingReads = (sql: string) => sql.match(/FROM "analytics"\."orders__stg_[0-9a-f]+" AS s/g)?.length;

    expect(stagingReads(withNulls.sql)).toBe(stagingReads(plain.sql));
    expect(withNulls.sql).toContain('SUM(CASE WHEN s.ap_unit IS NOT NULL THEN CASE WHEN s."amount" IS NULL THEN 1 ELSE 0 END END) AS staging_null_0');
    expect(withNulls.sql).toContain('AS source_null_0');
  });
});
