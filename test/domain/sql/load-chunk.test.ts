import { describe, expect, it } from 'vitest';
import type { BatchRef } from '../../../domain/batch.ts';
import { ValidationError } from '../../../domain/errors.ts';
import {
  chunkStatus,
  clearStagingInterval,
  loadStagingInterval,
  markChunkDone,
  markChunkLoading,
  recordChunkStatement,
} from '../../../domain/sql/load-chunk.ts';
import { batch, batchId, chunk, commented, itIsASafeSingleStatement, itKeepsTheSourceQueryClosed, NOW, pipeline, staging } from './support.ts';

describe('single statements of LoadChunk', () => {
  itIsASafeSingleStatement([
    ['chunkStatus', chunkStatus(batchId, chunk)],
    ['clearStagingInterval', clearStagingInterval(pipeline, batch, chunk)],
    ['loadStagingInterval', loadStagingInterval(pipeline, batch, chunk)],
    ['markChunkLoading', markChunkLoading(batchId, chunk, NOW)],
    ['recordChunkStatement', recordChunkStatement(batchId, chunk, 'stmt-0001')],
    ['markChunkDone', markChunkDone(batchId, chunk, 'stmt-0001', 42, NOW)],
  ]);

  it('binds a chunk by its half-open interval as UTC timestamp text', () => {
    const statement = loadStagingInterval(pipeline, batch, chunk);

    expect(statement.parameters).toEqual({ start: '2026-01-02 00:00:00.000', end: '2026-01-03 00:00:00.000' });
    expect(statement.sql).toContain('src."ordered_at" >= :start AND src."ordered_at" < :end');
    expect(statement.sql).toMatch(/^INSERT INTO "analytics"\."orders__stg_[0-9a-f]{16}" \("order_id", "ordered_at", "amount"\)/);
  });

  it('clears exactly the chunk interval from staging before a load', () => {
    const statement = clearStagingInterval(pipeline, batch, chunk);

    expect(statement.sql).toBe(`DELETE FROM "analytics"."${staging}" WHERE "ordered_at" >= :start AND "ordered_at" < :end`);
    expect(statement.parameters).toEqual({ start: '2026-01-02 00:00:00.000', end: '2026-01-03 00:00:00.000' });
  });

  it('records the rows the Data API reported for a chunk as a parameter', () => {
    const statement = markChunkDone(batchId, chunk, 'stmt-0001', 42, NOW);

    expect(statement.parameters).toMatchObject({ rows_written: '42', chunk_index: '1', batch_id: batchId, now: '2026-03-15 10:20:30.456' });
    expect(statement.sql).toContain("status = 'DONE'");
  });

  it('closes a chunk only for the attempt whose INSERT it was, and never reopens a DONE chunk', () => {
    const done = markChunkDone(batchId, chunk, 'stmt-0001', 42, NOW);
    expect(done.sql).toContain("AND status = 'LOADING' AND statement_id = :statement_id");
    expect(done.parameters?.statement_id).toBe('stmt-0001');
    expect(markChunkLoading(batchId, chunk, NOW).sql).toContain("AND status <> 'DONE'");
  });

  it("queues each chunk's bookkeeping for the chunks table (LOCK first, same transaction), and nothing else", () => {
    const bookkeeping = [markChunkLoading(batchId, chunk, NOW), recordChunkStatement(batchId, chunk, 'stmt-0001'), markChunkDone(batchId, chunk, 'stmt-0001', 42, NOW)];
    expect(bookkeeping.map((s) => s.lock)).toEqual(Array(3).fill('LOCK "atomic_publish".chunks'));
    // The staging statements run without it: a chunk's load must not queue behind another's.
    expect([clearStagingInterval(pipeline, batch, chunk), loadStagingInterval(pipeline, batch, chunk)].map((s) => s.lock)).toEqual([undefined, undefined]);
  });

  it('refuses a hostile column name instead of quoting it', () => {
    const hostile: BatchRef = { ...batch, columns: ['order_id', 'x" FROM pg_user; --'] };

    expect(() => loadStagingInterval(pipeline, hostile, chunk)).toThrow(ValidationError);
  });

  it('refuses a hostile staging table name', () => {
    const hostile: BatchRef = { ...batch, stagingTable: 'orders"; DROP TABLE "analytics"."orders' };

    expect(() => clearStagingInterval(pipeline, hostile, chunk)).toThrow(ValidationError);
  });

  itKeepsTheSourceQueryClosed([['loadStagingInterval', () => loadStagingInterval(commented, batch, chunk)]]);
});
