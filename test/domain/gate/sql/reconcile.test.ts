import { describe, expect, it } from 'vitest';
import type { BatchRef, CheckResult } from '../../../../domain/batch.ts';
import { ValidationError } from '../../../../domain/errors.ts';
import { chunkCounts, duplicateKeySamples, recordChecks } from '../../../../domain/gate/sql/reconcile.ts';
import { pipelineWith } from '../../fixtures.ts';
import { batch, batchId, berlinMonthly, commented, itIsASafeSingleStatement, itKeepsTheSourceQueryClosed, NOW, pipeline } from '../../sql/support.ts';

describe('single statements of Reconcile', () => {
  itIsASafeSingleStatement([
    ['chunkCounts (hour grain)', chunkCounts(pipelineWith({ chunk: { grain: 'hour' } }), batch)],
    ['chunkCounts (Berlin month grain)', chunkCounts(berlinMonthly, batch)],
    ['chunkCounts', chunkCounts(pipeline, batch)],
    ['chunkCounts (business key holding the time)', chunkCounts(pipelineWith({ businessKey: ['order_id', 'ordered_at'] }), batch)],
    ['duplicateKeySamples', duplicateKeySamples(pipelineWith({ businessKey: ['order_id', 'ordered_at'] }), batch)],
  ]);

  it('samples a few duplicated business keys of staging, in key order, with their rows', () => {
    const { sql } = duplicateKeySamples(pipelineWith({ businessKey: ['order_id', 'ordered_at'] }), batch, 3);
    expect(sql).toMatch(/^SELECT "order_id", "ordered_at", COUNT\(\*\) AS ap_rows\s+FROM "analytics"\."orders__stg_[0-9a-f]{16}"/);
    expect(sql).toMatch(/GROUP BY "order_id", "ordered_at" HAVING COUNT\(\*\) > 1\s+ORDER BY "order_id", "ordered_at" LIMIT 3$/);
  });

  it('counts rows outside the batch interval, including rows with no time, in the grouped pass over staging, and duplicated business keys', () => {
    const statement = chunkCounts(pipeline, batch);

    // A row is in the interval only when its time is; any other row (no time included) has no unit and counts as outside.
    expect(statement.sql).toContain(`CASE WHEN s."ordered_at" >= :start AND s."ordered_at" < :end THEN DATE_TRUNC('day', s."ordered_at") END AS ap_unit`);
    expect(statement.sql).toContain('COUNT(*) - COUNT(s.ap_unit) AS outside');
    expect(statement.sql).toMatch(/GROUP BY s\."order_id" HAVING COUNT\(\*\) > 1/);
  });

  it('checks the business key per chunk, in the same pass over staging, where the key holds the time column', () => {
    const statement = chunkCounts(pipelineWith({ businessKey: ['order_id', 'ordered_at'] }), batch);

    expect(statement.sql).toContain('GROUP BY s.ap_unit, s."order_id", s."ordered_at"');
    expect(statement.sql).toContain('SUM(CASE WHEN key_rows > 1 THEN 1 ELSE 0 END) AS duplicate_keys');
    expect(statement.sql).not.toContain('HAVING');
    expect(statement.sql.match(/FROM "analytics"\."[^"]+__stg_[0-9a-f]+" AS s/g)).toHaveLength(1);
  });

  it('binds the batch interval (not a chunk) when counting source rows per chunk', () => {
    expect(chunkCounts(pipeline, batch).parameters).toEqual({ batch_id: batchId, start: '2026-01-01 00:00:00.000', end: '2026-02-01 00:00:00.000' });
  });

  it('refuses a hostile staging table name', () => {
    const hostile: BatchRef = { ...batch, stagingTable: 'orders"; DROP TABLE "analytics"."orders' };

    expect(() => chunkCounts(pipeline, hostile)).toThrow(ValidationError);
  });

  itKeepsTheSourceQueryClosed([['chunkCounts', () => chunkCounts(commented, batch)]]);
});

describe('recordChecks', () => {
  const passed: CheckResult = { check: 'all_chunks_loaded', passed: true, observed: "31 of 31 chunks 'done'", expected: '31 of 31', details: '' };
  const failed: CheckResult = { check: 'staging_within_interval', passed: false, observed: '3 row(s)', expected: '0 rows', details: '' };

  it('records each result and moves a RUNNING batch to CHECKED when all passed', () => {
    const statements = recordChecks(batchId, [passed, passed], { rowsRead: 10, rowsWritten: 10 }, NOW);

    expect(statements).toHaveLength(5);
    expect(statements[2]).toContain("'31 of 31 chunks ''done'''");
    expect(statements[4]).toContain("status = 'CHECKED'");
    expect(statements[4]).toContain("status = 'RUNNING'");
    expect(statements[4]).toContain('rows_read = 10, rows_written = 10');
  });

  it("takes the manifest's lease, then removes this attempt's earlier results, so a retried Reconcile records each check once", () => {
    const [lease, first] = recordChecks(batchId, [passed], { rowsRead: 1, rowsWritten: 1 }, NOW);

    expect(lease).toBe('LOCK "atomic_publish".batches, "atomic_publish".chunks');
    expect(first).toBe(
      `DELETE FROM "atomic_publish".check_results WHERE batch_id = '${batchId}' AND attempt = (SELECT attempt FROM "atomic_publish".batches WHERE batch_id = '${batchId}')`,
    );
  });

  it('leaves the batch unchecked when one check failed', () => {
    const statements = recordChecks(batchId, [passed, failed], { rowsRead: 10, rowsWritten: 13 }, NOW);

    expect(statements.at(-1)).not.toContain('CHECKED');
  });
});
