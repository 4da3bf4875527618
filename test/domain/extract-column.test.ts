import { describe, expect, it } from 'vitest';
import { extractColumn } from '../../domain/extract-column.ts';
import { chunkCounts } from '../../domain/gate/sql/reconcile.ts';
import { loadChunkSqls } from '../../domain/load-chunk/sql/load-chunk.ts';
import { sortKeyWarning } from '../../domain/plan/chunk-sizing.ts';
import { sourceVolume } from '../../domain/plan/sql/plan.ts';
import { pipelineWith } from './fixtures.ts';
import { batch, chunk, interval } from './sql/support.ts';

// A spec naming the source's modification time: chunks, the load's filter,
// Reconcile's counts and chunk sizing are on it; the time column stays the
// event time, stored as any column.
const modified = pipelineWith({
  sourceSql: 'SELECT order_id, ordered_at, amount, updated_at FROM raw.order_events WHERE updated_at >= :start AND updated_at < :end',
  publishMode: 'merge',
  merge: { versionColumn: 'updated_at' },
  modifiedColumn: 'updated_at',
});
const plain = pipelineWith();

describe('the column rows are extracted by', () => {
  it('is modifiedColumn when the spec names one, else timeColumn', () => {
    expect(extractColumn(modified)).toBe('updated_at');
    expect(extractColumn(plain)).toBe('ordered_at');
  });

  it("places the load's rows, and its clear and record, by the modification time", () => {
    const { sqls, parameters } = loadChunkSqls(modified, batch, { ...chunk, clear: true });
    expect(sqls[0]).toContain('WHERE "updated_at" >= :start AND "updated_at" < :end');
    expect(parameters.insert).toContain(`WHERE src."updated_at" >= '2026-01-02 00:00:00.000' AND src."updated_at" < '2026-01-03 00:00:00.000'`);
    expect([...sqls, parameters.insert].join('\n')).not.toContain('"ordered_at" >=');
  });

  it("buckets Reconcile's two passes and its outside-interval check by it", () => {
    const { sql } = chunkCounts(modified, batch);
    expect(sql).toContain(`CASE WHEN s."updated_at" >= :start AND s."updated_at" < :end THEN DATE_TRUNC('day', s."updated_at") END AS ap_unit`);
    expect(sql).toContain('WHERE s."updated_at" >= :start AND s."updated_at" < :end');
    expect(sql).not.toContain('"ordered_at"');
  });

  it('checks the business key per chunk only when the key holds the extraction column, not the event time', () => {
    const keyedByEvent = pipelineWith({ ...modified, businessKey: ['order_id', 'ordered_at'] });
    expect(chunkCounts(keyedByEvent, batch).sql).toMatch(/GROUP BY s\."order_id", s\."ordered_at" HAVING COUNT\(\*\) > 1/);
  });

  it('sizes chunks by it and wants the source sorted on it', () => {
    expect(sourceVolume(modified, interval).sql).toContain(`GROUP BY DATE_TRUNC('day', s."updated_at")`);
    const table = { schema: 'raw', table: 'order_events' };
    expect(sortKeyWarning(modified, [{ table, firstSortColumn: 'updated_at' }])).toBeUndefined();
    expect(sortKeyWarning(modified, [{ table, firstSortColumn: 'ordered_at' }])).toMatch(
      /^pipeline orders: no table the source reads is sorted first on the modification time column updated_at: raw\.order_events \(sorted first on ordered_at\)\. .*a sort key starting with updated_at/,
    );
  });
});
