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
import { batch, batchId, chunk, chunks, commented, itKeepsTheSourceQueryClosed, pipeline, staging } from '../../sql/support.ts';

describe('the load of one chunk', () => {
  it('is one CALL for a fresh chunk: load_chunk runs the INSERT, its interval inlined, and records the rows it inserted', () => {
    const { sqls, parameters, sourceReads } = loadChunkSqls(pipeline, batch, chunk);

    expect(sourceReads).toBe(1);
    expect(sqls).toEqual(['CALL "atomic_publish".load_chunk(:batch_id, CAST(:chunk_index AS int), CAST(:generation AS int), :insert)']);
    expect(Object.keys(parameters).sort()).toEqual(['batch_id', 'chunk_index', 'generation', 'insert']);
    expect(parameters.insert).toMatch(/^INSERT INTO "analytics"\."orders__stg_[0-9a-f]{16}" \("order_id", "ordered_at", "amount"\)/);
    expect(parameters.insert).toContain(`src."ordered_at" >= '2026-01-02 00:00:00.000' AND src."ordered_at" < '2026-01-03 00:00:00.000'`);
    expect(parameters.insert).not.toMatch(/:start|:end|\n/);
    expect({ batch_id: parameters.batch_id, chunk_index: parameters.chunk_index, generation: parameters.generation }).toEqual({
      batch_id: batchId,
      chunk_index: '1',
      generation: '0',
    });
  });

  it('is the same request on every attempt: nothing in it depends on when it is built', async () => {
    const first = loadChunkSqls(pipeline, batch, chunk);
    await new Promise((resolve) => setImmediate(resolve));
    expect(loadChunkSqls(pipeline, batch, chunk)).toEqual(first);
  });

  it('clears the interval first, and only, when an earlier load may have left rows there', () => {
    const { sqls, parameters } = loadChunkSqls(pipeline, batch, { ...chunk, generation: 2, clear: true });

    expect(sqls).toHaveLength(2);
    expect(sqls[0]).toBe(`DELETE FROM "analytics"."${staging}" WHERE "ordered_at" >= :start AND "ordered_at" < :end`);
    expect(parameters.generation).toBe('2');
    expect(parameters.start).toBe('2026-01-02 00:00:00.000');
  });

  it('falls back to an INSERT and a record counting the source, when the source cannot be inlined safely', () => {
    const multiline = { ...pipeline, sourceSql: `${pipeline.sourceSql.replace('WHERE', "WHERE note <> 'a\\b' AND")}` };
    const { sqls, parameters, sourceReads } = loadChunkSqls(multiline, batch, chunk);

    expect(sourceReads).toBe(2);
    expect(sqls).toHaveLength(2);
    expect(sqls[0]).toMatch(/^INSERT INTO "analytics"\."orders__stg_[0-9a-f]{16}"/);
    expect(sqls[1]).toMatch(/^INSERT INTO "atomic_publish"\.chunk_loads .*COUNT\(\*\), GETDATE\(\)/s);
    expect(parameters).toEqual({ start: '2026-01-02 00:00:00.000', end: '2026-01-03 00:00:00.000', batch_id: batchId, chunk_index: '1', generation: '0' });
  });

  it('uses every parameter it supplies, and inlines only the interval', () => {
    for (const load of [loadChunkSqls(pipeline, batch, chunk), loadChunkSqls(pipeline, batch, { ...chunk, clear: true })]) {
      const text = load.sqls.join('\n');
      const referenced = new Set([...text.matchAll(/(?<!:):([a-z_]+)/g)].map((m) => m[1]));
      expect(referenced).toEqual(new Set(Object.keys(load.parameters)));
      expect(text).not.toMatch(/\d{4}-\d{2}-\d{2}/);
      expect(text).not.toContain(`'${batchId}'`);
    }
  });

  it('takes no lock and writes no manifest table but chunk_loads (through load_chunk): loads of a batch run side by side', () => {
    const all = [...loadChunkSqls(pipeline, batch, chunk).sqls, ...loadChunkSqls(pipeline, batch, { ...chunk, clear: true }).sqls].join('\n');

    expect(all).not.toMatch(/\bLOCK\b|\bUPDATE\b/);
    expect([...all.matchAll(/"atomic_publish"\.(\w+)/g)].map((m) => m[1])).toEqual(['load_chunk', 'load_chunk']);
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

    expect(() => loadChunkSqls(pipeline, hostile, { ...chunk, clear: true })).toThrow(ValidationError);
  });

  itKeepsTheSourceQueryClosed([['the chunk INSERT', () => ({ sql: loadChunkSqls(commented, batch, chunk).parameters.insert! })]]);
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
