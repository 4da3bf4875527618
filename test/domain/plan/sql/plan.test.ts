import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../../domain/errors.ts';
import { grainUnits, sizeChunks } from '../../../../domain/plan/chunk-sizing.ts';
import { batchIdFor, planChunks } from '../../../../domain/plan/plan.ts';
import {
  doneChunks,
  findBatch,
  latestPublication,
  recordedChunks,
  recordedWindow,
  recordedWindows,
  sourceShape,
  sourceSortKeys,
  sourceVolume,
  startBatch,
  tableColumns,
  windowChunkRows,
} from '../../../../domain/plan/sql/plan.ts';
import { chunkWindows } from '../../../../domain/plan/windows.ts';
import { MAX_BATCH_STATEMENTS, MAX_SQL_BYTES } from '../../../../domain/sql/statement.ts';
import { HOUR_MS, pipelineWith } from '../../fixtures.ts';
import {
  at,
  batchId,
  chunks,
  commented,
  interval,
  itIsASafeSingleStatement,
  itKeepsTheSourceQueryClosed,
  pipeline,
  record,
  staging,
} from '../../sql/support.ts';

describe('single statements of Plan', () => {
  itIsASafeSingleStatement([
    ['tableColumns', tableColumns('analytics', 'orders')],
    ['sourceShape', sourceShape(pipeline, interval)],
    ['findBatch', findBatch(batchId)],
    ['latestPublication', latestPublication(pipeline.name)],
    ['doneChunks', doneChunks(batchId)],
    ['doneChunks (one window)', doneChunks(batchId, { firstChunk: 1000, chunkCount: 1000 })],
    ['recordedChunks', recordedChunks(batchId)],
    ['recordedWindows', recordedWindows(batchId)],
    ['recordedWindow', recordedWindow(batchId, 3)],
    ['sourceVolume', sourceVolume(pipeline, interval)],
    ['sourceVolume (hour grain)', sourceVolume(pipelineWith({ chunk: { grain: 'hour' } }), interval)],
    ['sourceSortKeys', sourceSortKeys([{ schema: 'raw', table: 'order_events' }, { table: 'customers' }])],
  ]);

  it("counts the source's rows per grain unit of the batch interval in one grouped statement", () => {
    const statement = sourceVolume(pipeline, interval);

    expect(statement.sql).toContain('SELECT MIN(s."ordered_at") AS first_at, COUNT(*) AS n');
    expect(statement.sql).toContain(`GROUP BY DATE_TRUNC('day', s."ordered_at")`);
    expect(sourceVolume(pipelineWith({ chunk: { grain: 'day', timezone: 'Europe/Berlin' }, historyStart: '2025-12-31T23:00:00Z' }), interval).sql).toContain(
      `GROUP BY DATE_TRUNC('day', (s."ordered_at" AT TIME ZONE 'UTC') AT TIME ZONE 'Europe/Berlin')`,
    );
    expect(statement.sql.match(/GROUP BY/g)).toHaveLength(1);
    expect(statement.parameters).toEqual({ start: '2026-01-01 00:00:00.000', end: '2026-02-01 00:00:00.000' });
  });

  it('reads the sort keys of the named tables, a table without a schema in any schema', () => {
    const statement = sourceSortKeys([{ schema: 'raw', table: 'order_events' }, { table: 'customers' }]);

    expect(statement.sql).toContain('FROM svv_redshift_columns');
    expect(statement.sql).toContain('(schema_name = :schema_0 AND table_name = :table_0) OR table_name = :table_1');
    expect(statement.parameters).toEqual({ schema_0: 'raw', table_0: 'order_events', table_1: 'customers' });
  });

  it('compiles the source query for the batch interval without reading rows', () => {
    const statement = sourceShape(pipeline, interval);

    expect(statement.sql).toMatch(/LIMIT 0$/);
    expect(statement.parameters).toEqual({ start: '2026-01-01 00:00:00.000', end: '2026-02-01 00:00:00.000' });
  });

  itKeepsTheSourceQueryClosed([['sourceShape', () => sourceShape(commented, interval)]]);
});

describe('startBatch', () => {
  const statements = startBatch(record);

  it("takes the manifest's lease first, before any statement that takes the transaction's snapshot", () => {
    expect(statements[0]).toBe('LOCK "atomic_publish".batches, "atomic_publish".chunks');
    expect(statements.filter((s) => s.startsWith('LOCK'))).toHaveLength(1);
  });

  it('creates staging like live, if it does not exist yet', () => {
    expect(statements[1]).toBe(`CREATE TABLE IF NOT EXISTS "analytics"."${staging}" (LIKE "analytics"."orders" INCLUDING DEFAULTS)`);
  });

  it('guards every INSERT with WHERE NOT EXISTS, so a re-run inserts nothing twice', () => {
    const inserts = statements.filter((s) => /^\s*INSERT/i.test(s));

    expect(inserts.length).toBeGreaterThanOrEqual(2);
    for (const insert of inserts) {
      expect(insert).toMatch(/NOT EXISTS \(SELECT 1 FROM "atomic_publish"\.(batches|chunks|batch_attempts)/);
      expect(insert).not.toMatch(/^\s*INSERT INTO [^\n]*\)\s*VALUES/);
    }
  });

  it('counts an attempt only for a new execution, so a retried Plan does not count twice', () => {
    const update = statements.find((s) => s.startsWith('UPDATE "atomic_publish".batches'));
    expect(update).toContain(`execution_id <> '${record.executionId}'`);
  });

  it('records the attempt once, with its execution', () => {
    const insert = statements.find((s) => s.includes('INSERT INTO "atomic_publish".batch_attempts'));
    expect(insert).toContain('NOT EXISTS (SELECT 1 FROM "atomic_publish".batch_attempts a WHERE a.batch_id = b.batch_id AND a.attempt = b.attempt)');
  });

  it('moves an existing unpublished batch back to RUNNING and counts the attempt', () => {
    const update = statements.find((s) => s.startsWith('UPDATE "atomic_publish".batches'));

    expect(update).toContain("status = 'RUNNING', attempt = attempt + 1");
    expect(update).toContain("AND status <> 'PUBLISHED'");
    expect(update).toContain('staging_dropped_at = NULL');
  });

  it('reloads every chunk of a batch whose staging table a later cleanup dropped', () => {
    const reset = statements.find((s) => s.startsWith('UPDATE "atomic_publish".chunks'));

    expect(reset).toContain("SET status = 'PENDING'");
    expect(reset).toContain('staging_dropped_at IS NOT NULL');
    // Before the batch row forgets that its staging was dropped.
    expect(statements.indexOf(reset!)).toBeLessThan(statements.findIndex((s) => s.startsWith('UPDATE "atomic_publish".batches')));
  });

  it('is deterministic: the same record gives the same statements', () => {
    expect(startBatch(record)).toEqual(statements);
  });

  it('records the interval as UTC timestamps and the chunk count', () => {
    expect(statements[2]).toContain("CAST('2026-01-01 00:00:00.000' AS timestamp)");
    expect(statements[2]).toContain("CAST('2026-02-01 00:00:00.000' AS timestamp)");
    expect(statements[2]).toContain(`, ${chunks.length}, `);
  });

  it('inserts 1000 chunks in a batch within the Data API limits, each chunk exactly once', () => {
    const hourly = pipelineWith({ chunk: { grain: 'hour' } });
    const from = at('2026-01-01T00:00:00Z');
    const big = { from, to: new Date(from.getTime() + 1000 * HOUR_MS) };
    const thousand = planChunks(big, hourly);
    const id = batchIdFor(hourly, big);

    const result = startBatch({ ...record, pipeline: hourly, batchId: id, interval: big, chunks: thousand });
    const indexes = result.flatMap((s) =>
      [...s.matchAll(new RegExp(`SELECT (?:CAST\\()?'${id}'(?: AS varchar\\(32\\)\\))?, (\\d+), `, 'g'))].map((m) => Number(m[1])),
    );

    expect(thousand).toHaveLength(1000);
    expect(result.length).toBeLessThanOrEqual(MAX_BATCH_STATEMENTS);
    for (const sql of result) expect(Buffer.byteLength(sql, 'utf8')).toBeLessThanOrEqual(MAX_SQL_BYTES);
    expect(indexes.sort((a, b) => a - b)).toEqual([...Array(1000).keys()]);
  });

  it('records the windows of ten years of hourly chunks sized by data, not their chunks, within the Data API limits', () => {
    const hourly = pipelineWith({ chunk: { grain: 'hour', targetRows: 10 } });
    const from = at('2016-01-01T00:00:00Z');
    const long = { from, to: new Date(from.getTime() + 87_600 * HOUR_MS) };
    const units = grainUnits(long, hourly);
    // Uneven volume, so most windows record the units of each chunk.
    const chunks = sizeChunks(units, new Map(units.map((u, i) => [u.start.getTime(), i % 7 === 0 ? 12 : 3])), 10);
    const windows = chunkWindows(chunks, hourly, 1000);
    const id = batchIdFor(hourly, long);

    const result = startBatch({ ...record, pipeline: hourly, batchId: id, interval: long, chunks, windows });

    expect(windows.length).toBeGreaterThan(20);
    expect(result.some((s) => s.startsWith('INSERT INTO "atomic_publish".chunks'))).toBe(false);
    const inserts = result.filter((s) => s.startsWith('INSERT INTO "atomic_publish".batch_windows'));
    expect(inserts.length).toBeGreaterThan(0);
    expect(result.length).toBeLessThanOrEqual(MAX_BATCH_STATEMENTS);
    for (const sql of result) expect(Buffer.byteLength(sql, 'utf8')).toBeLessThanOrEqual(MAX_SQL_BYTES);
    const recorded = inserts.flatMap((s) =>
      [...s.matchAll(new RegExp(`SELECT (?:CAST\\()?'${id}'(?: AS varchar\\(32\\)\\))?, (\\d+), `, 'g'))].map((m) => Number(m[1])),
    );
    expect(recorded.sort((a, b) => a - b)).toEqual([...windows.keys()]);
    expect(result.join('\n')).toContain(`'${windows[0]!.unitCounts}'`);
    // A window's chunks: one transaction under the chunks' lock, within the limits.
    const window = windowChunkRows(id, chunks.slice(0, 1000));
    expect(window[0]).toBe('LOCK "atomic_publish".chunks');
    expect(window.length).toBeLessThanOrEqual(MAX_BATCH_STATEMENTS);
    for (const sql of window) expect(Buffer.byteLength(sql, 'utf8')).toBeLessThanOrEqual(MAX_SQL_BYTES);
  });

  it('lists chunk rows as SELECTs joined by UNION ALL, since Redshift has no VALUES list in FROM', () => {
    const insert = statements.find((s) => s.startsWith('INSERT INTO "atomic_publish".chunks'))!;

    expect(insert).not.toContain('VALUES');
    expect(insert).toContain('UNION ALL SELECT');
  });

  it('refuses a hostile value rather than escaping it', () => {
    expect(() => startBatch({ ...record, executionId: 'run\\1' })).toThrow(ValidationError);
  });
});
