import { describe, expect, it } from 'vitest';
import type { BatchRef } from '../../../../domain/batch.ts';
import { ValidationError } from '../../../../domain/errors.ts';
import { chunksToLoad } from '../../../../domain/load-chunk/chunk-loads.ts';
import {
  chunkOfLoadStatement,
  insertIntervalSql,
  loadChunkSqls,
  loadStatementName,
  loadStatementPrefix,
} from '../../../../domain/load-chunk/sql/load-chunk.ts';
import { batch, batchId, chunk, chunks, commented, itKeepsTheSourceQueryClosed, NOW, pipeline, staging } from '../../sql/support.ts';

describe('the load of one chunk', () => {
  it('is two statements for a fresh chunk: the INSERT, and the record of the rows it wrote, counted in its snapshot', () => {
    const { sqls, parameters } = loadChunkSqls(pipeline, batch, chunk, NOW);

    expect(sqls).toHaveLength(2);
    expect(sqls[0]).toMatch(/^INSERT INTO "analytics"\."orders__stg_[0-9a-f]{16}" \("order_id", "ordered_at", "amount"\)/);
    expect(sqls[0]).toContain('src."ordered_at" >= :start AND src."ordered_at" < :end');
    expect(sqls[1]).toMatch(
      /^INSERT INTO "atomic_publish"\.chunk_loads \(batch_id, chunk_index, generation, rows_written, loaded_at\)\s+SELECT :batch_id, CAST\(:chunk_index AS int\), CAST\(:generation AS int\), COUNT\(\*\)/,
    );
    expect(sqls[1]).toContain('src."ordered_at" >= :start AND src."ordered_at" < :end');
    expect(parameters).toEqual({
      start: '2026-01-02 00:00:00.000',
      end: '2026-01-03 00:00:00.000',
      batch_id: batchId,
      chunk_index: '1',
      generation: '0',
      now: '2026-03-15 10:20:30.456',
    });
  });

  it('clears the interval first, and only, when an earlier load may have left rows there', () => {
    const { sqls, parameters } = loadChunkSqls(pipeline, batch, { ...chunk, generation: 2, clear: true }, NOW);

    expect(sqls).toHaveLength(3);
    expect(sqls[0]).toBe(`DELETE FROM "analytics"."${staging}" WHERE "ordered_at" >= :start AND "ordered_at" < :end`);
    expect(parameters.generation).toBe('2');
  });

  it('inlines no value and uses every parameter it supplies', () => {
    for (const load of [loadChunkSqls(pipeline, batch, chunk, NOW), loadChunkSqls(pipeline, batch, { ...chunk, clear: true }, NOW)]) {
      const text = load.sqls.join('\n');
      const referenced = new Set([...text.matchAll(/(?<!:):([a-z_]+)/g)].map((m) => m[1]));
      expect(referenced).toEqual(new Set(Object.keys(load.parameters)));
      expect(text).not.toMatch(/\d{4}-\d{2}-\d{2}/);
      expect(text).not.toContain(`'${batchId}'`);
    }
  });

  it('takes no lock and writes no manifest table but chunk_loads: loads of a batch run side by side', () => {
    const all = [...loadChunkSqls(pipeline, batch, chunk, NOW).sqls, ...loadChunkSqls(pipeline, batch, { ...chunk, clear: true }, NOW).sqls].join('\n');

    expect(all).not.toMatch(/\bLOCK\b|\bUPDATE\b/);
    expect([...all.matchAll(/"atomic_publish"\.(\w+)/g)].map((m) => m[1])).toEqual(['chunk_loads', 'chunk_loads']);
  });

  it('names every load of a chunk generation alike, and no other chunk by a prefix of it', () => {
    const name = loadStatementName(pipeline, batch, chunk);
    const prefix = loadStatementPrefix(pipeline.name, batchId);

    expect(name).toBe(`atomic-publish:orders:load-chunk:${batchId}:1:g0:load`);
    expect(loadStatementName(pipeline, batch, { ...chunk, generation: 3 })).toBe(`${prefix}1:g3:load`);
    expect(loadStatementName(pipeline, batch, { ...chunks[10]!, generation: 0 }).startsWith(name)).toBe(false);
    expect(chunkOfLoadStatement(prefix, name)).toBe(1);
    expect(chunkOfLoadStatement(prefix, `${prefix}status:1`)).toBeUndefined();
    expect(chunkOfLoadStatement('other:', name)).toBeUndefined();
  });

  it('refuses a hostile column name instead of quoting it', () => {
    const hostile: BatchRef = { ...batch, columns: ['order_id', 'x" FROM pg_user; --'] };

    expect(() => insertIntervalSql(pipeline, hostile)).toThrow(ValidationError);
  });

  it('refuses a hostile staging table name', () => {
    const hostile: BatchRef = { ...batch, stagingTable: 'orders"; DROP TABLE "analytics"."orders' };

    expect(() => loadChunkSqls(pipeline, hostile, { ...chunk, clear: true }, NOW)).toThrow(ValidationError);
  });

  itKeepsTheSourceQueryClosed([
    ['the chunk INSERT', () => ({ sql: loadChunkSqls(commented, batch, chunk, NOW).sqls[0]! })],
    ['the chunk record', () => ({ sql: loadChunkSqls(commented, batch, chunk, NOW).sqls[1]! })],
  ]);
});

describe('the chunks Plan hands out', () => {
  it('are the planned chunks as they are in a new batch', () => {
    expect(chunksToLoad(chunks, []).remaining).toEqual(chunks);
  });

  it('leave out the loaded ones, and carry the generation and the clear of the others that are not fresh', () => {
    const { done, remaining } = chunksToLoad(chunks.slice(0, 5), [
      { chunk_index: 0, status: 'DONE', generation: 0 },
      { chunk_index: 1, status: 'STALE', generation: 1 },
      { chunk_index: 2, status: 'LOADING', generation: 3 },
      { chunk_index: 3, status: 'PENDING', generation: 1 },
    ]);

    expect([...done]).toEqual([0]);
    expect(remaining.map((c) => [c.index, c.generation, c.clear])).toEqual([
      [1, 1, true],
      [2, 3, true],
      [3, 1, undefined],
      [4, undefined, undefined],
    ]);
  });
});
