import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../domain/errors.ts';
import { batchIdFor, planChunks, previousVersionTableFor, stagingTableFor } from '../../domain/plan.ts';
import type { BatchRecord, BatchRef, CheckResult, Statement } from '../../domain/sql.ts';
import {
  batchState,
  chunkCounts,
  chunkStatus,
  cleanupCandidates,
  clearStagingInterval,
  doneChunks,
  dropRetired,
  findBatch,
  latestEventTime,
  latestPublication,
  loadStagingInterval,
  manifestDdl,
  MANIFEST_VERSION,
  markBatchFailed,
  markChunkDone,
  markChunkLoading,
  recordChunkStatement,
  MAX_BATCH_STATEMENTS,
  MAX_SQL_BYTES,
  recordChecks,
  sourceShape,
  startBatch,
  stagingProblems,
  swapPublish,
  tableColumns,
  timestampParam,
} from '../../domain/sql.ts';
import { HOUR_MS, pipelineWith } from './fixtures.ts';

const at = (iso: string) => new Date(iso);
const pipeline = pipelineWith();
const interval = { from: at('2026-01-01T00:00:00Z'), to: at('2026-02-01T00:00:00Z') };
const chunks = planChunks(interval, pipeline);
const chunk = chunks[1]!;
const batchId = batchIdFor(pipeline, interval);
const staging = stagingTableFor(pipeline, batchId);
const previous = previousVersionTableFor(pipeline, batchId);
const NOW = at('2026-03-15T10:20:30.456Z');
const batch: BatchRef = {
  pipeline: pipeline.name,
  batchId,
  specHash: pipeline.specHash,
  liveTable: 'analytics.orders',
  from: interval.from.toISOString(),
  to: interval.to.toISOString(),
  stagingTable: staging,
  columns: ['order_id', 'ordered_at', 'amount'],
  basePublication: 2,
};
const record: BatchRecord = {
  batchId,
  pipeline,
  interval,
  codeVersion: 'v1.2.3',
  executionId: 'arn:aws:states:eu-central-1:123456789012:execution:atomic-publish:run-1',
  basePublication: 2,
  stagingTable: staging,
  chunks,
  now: NOW,
};

/** `:name` references outside quotes and comments (`::` is a cast). */
function referencedParameters(sql: string): Set<string> {
  const code = sql.replace(/'(?:[^']|'')*'/g, "''").replace(/--[^\n]*/g, '');
  return new Set([...code.matchAll(/(?<![:\w]):([A-Za-z_]\w*)/g)].map((m) => m[1]!));
}

/** Single-quoted literals in the SQL text. */
function literals(sql: string): string[] {
  return [...sql.matchAll(/'((?:[^']|'')*)'/g)].map((m) => m[1]!);
}

/** The SQL the tool wrote around the author's source query. */
function generatedPart(sql: string): string {
  return sql.replace(pipeline.sourceSql, '<source>');
}

/** Occurrences of a user-supplied identifier that are not double-quoted. */
function unquoted(sql: string, identifier: string): string[] {
  const found: string[] = [];
  for (const m of sql.matchAll(new RegExp(`\\b${identifier}\\b`, 'g'))) {
    const before = sql[m.index - 1];
    const after = sql[m.index + identifier.length];
    if (before !== '"' || after !== '"') found.push(sql.slice(Math.max(0, m.index - 20), m.index + identifier.length + 20));
  }
  return found;
}

/** Parentheses balance once comments and string literals are removed. */
function parenthesesBalance(sql: string): boolean {
  const code = sql.replace(/'(?:[^']|'')*'/g, "''").replace(/--[^\n]*/g, '');
  let depth = 0;
  for (const ch of code) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (depth < 0) return false;
  }
  return depth === 0;
}

// Fixed words of the tool, plus the validated chunk grain and zone that
// bucket rows into chunks (configuration, not values).
const FIXED_WORDS = new Set(['RUNNING', 'CHECKED', 'PUBLISHED', 'FAILED', 'PENDING', 'LOADING', 'DONE', 'old_version', 'staging']);
const CHUNK_WORDS = new Set(['hour', 'day', 'month', 'UTC', 'Europe/Berlin']);
const berlinMonthly = pipelineWith({ chunk: { grain: 'month', timezone: 'Europe/Berlin' }, historyStart: '2025-12-31T23:00:00Z' });

const singleStatements: [string, Statement][] = [
  ['tableColumns', tableColumns('analytics', 'orders')],
  ['sourceShape', sourceShape(pipeline, interval)],
  ['findBatch', findBatch(batchId)],
  ['latestPublication', latestPublication(pipeline.name)],
  ['doneChunks', doneChunks(batchId)],
  ['chunkStatus', chunkStatus(batchId, chunk)],
  ['clearStagingInterval', clearStagingInterval(pipeline, batch, chunk)],
  ['loadStagingInterval', loadStagingInterval(pipeline, batch, chunk)],
  ['markChunkLoading', markChunkLoading(batchId, chunk, NOW)],
  ['recordChunkStatement', recordChunkStatement(batchId, chunk, 'stmt-0001')],
  ['markChunkDone', markChunkDone(batchId, chunk, 'stmt-0001', 42, NOW)],
  ['chunkCounts (hour grain)', chunkCounts(pipelineWith({ chunk: { grain: 'hour' } }), batch)],
  ['chunkCounts (Berlin month grain)', chunkCounts(berlinMonthly, batch)],
  ['chunkCounts', chunkCounts(pipeline, batch)],
  ['stagingProblems', stagingProblems(pipeline, batch)],
  ['batchState', batchState(batchId)],
  ['latestEventTime', latestEventTime(pipeline)],
  ['cleanupCandidates', cleanupCandidates(pipeline, batchId, NOW)],
  ...markBatchFailed(batchId, "CheckFailedError: it's \\ broken", NOW).map((statement, i) => [`markBatchFailed[${i}]`, statement] as [string, Statement]),
];

describe('single statements (ExecuteStatement)', () => {
  it.each(singleStatements)('%s supplies exactly the parameters its SQL references, none empty', (_name, statement) => {
    const referenced = referencedParameters(statement.sql);
    const supplied = Object.keys(statement.parameters ?? {});

    expect(new Set(supplied)).toEqual(referenced);
    // The Data API rejects an empty parameter list and empty values.
    if (statement.parameters !== undefined) expect(supplied.length).toBeGreaterThan(0);
    for (const value of Object.values(statement.parameters ?? {})) expect(value).not.toBe('');
  });

  it.each(singleStatements)('%s inlines no values: only fixed words and the chunk grain and zone appear as literals', (_name, statement) => {
    const sql = statement.sql;

    expect(literals(sql).filter((l) => !FIXED_WORDS.has(l) && !CHUNK_WORDS.has(l))).toEqual([]);
    expect(sql).not.toMatch(/\d{4}-\d{2}-\d{2}/);
    expect(sql).not.toContain(`'${batchId}'`);
    expect(sql).not.toContain('stmt-0001');
  });

  it.each(singleStatements)('%s double-quotes every schema, table and column name it generates', (_name, statement) => {
    const sql = generatedPart(statement.sql);

    for (const identifier of ['analytics', 'orders', staging, 'ordered_at', 'order_id', 'amount']) {
      expect(unquoted(sql, identifier)).toEqual([]);
    }
  });

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

  it('compiles the source query for the batch interval without reading rows', () => {
    const statement = sourceShape(pipeline, interval);

    expect(statement.sql).toMatch(/LIMIT 0$/);
    expect(statement.parameters).toEqual({ start: '2026-01-01 00:00:00.000', end: '2026-02-01 00:00:00.000' });
  });

  it('counts rows outside the batch interval, including rows with no time, and duplicated business keys', () => {
    const statement = stagingProblems(pipeline, batch);

    expect(statement.sql).toContain('"ordered_at" IS NULL OR "ordered_at" < :start OR "ordered_at" >= :end');
    expect(statement.sql).toMatch(/GROUP BY "order_id"(, "line_no")? HAVING COUNT\(\*\) > 1/);
    expect(statement.parameters).toEqual({ start: '2026-01-01 00:00:00.000', end: '2026-02-01 00:00:00.000' });
  });

  it('binds the batch interval (not a chunk) when counting source rows per chunk', () => {
    expect(chunkCounts(pipeline, batch).parameters).toEqual({ batch_id: batchId, start: '2026-01-01 00:00:00.000', end: '2026-02-01 00:00:00.000' });
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

  it('passes the keep count for cleanup as a parameter', () => {
    const keepNone = pipelineWith({ retention: { keepVersions: 0 } });

    expect(cleanupCandidates(keepNone, batchId, NOW).parameters).toMatchObject({ keep: '0', pipeline: 'orders', batch_id: batchId });
  });

  it('refuses a hostile column name instead of quoting it', () => {
    const hostile: BatchRef = { ...batch, columns: ['order_id', 'x" FROM pg_user; --'] };

    expect(() => loadStagingInterval(pipeline, hostile, chunk)).toThrow(ValidationError);
  });

  it('refuses a hostile staging table name', () => {
    const hostile: BatchRef = { ...batch, stagingTable: 'orders"; DROP TABLE "analytics"."orders' };

    expect(() => clearStagingInterval(pipeline, hostile, chunk)).toThrow(ValidationError);
    expect(() => chunkCounts(pipeline, hostile)).toThrow(ValidationError);
  });
});

describe('timestampParam', () => {
  it('renders a Date or an ISO string as UTC text with milliseconds', () => {
    expect(timestampParam(at('2026-01-02T03:04:05.678Z'))).toBe('2026-01-02 03:04:05.678');
    expect(timestampParam('2026-01-02T04:04:05.678+01:00')).toBe('2026-01-02 03:04:05.678');
  });
});

describe('markBatchFailed', () => {
  it('passes the error as a parameter, so quotes and backslashes never reach the SQL text', () => {
    const message = `WarehouseError: column "x" can't be '\\N'; DROP TABLE analytics.orders; --`;

    for (const statement of markBatchFailed(batchId, message, NOW)) {
      expect(statement.parameters?.error).toBe(message);
      expect(statement.sql).toContain('error = :error');
      expect(statement.sql).not.toContain("can't");
      expect(statement.sql).not.toContain('\\');
      expect(statement.sql).not.toContain('DROP');
    }
  });

  it('marks the current attempt and then the batch, never a published batch', () => {
    const [attempt, batch] = markBatchFailed(batchId, 'x', NOW);
    expect(attempt!.sql).toContain('UPDATE "atomic_publish".batch_attempts');
    expect(attempt!.sql).toContain("status <> 'PUBLISHED'");
    expect(batch!.sql).toContain('UPDATE "atomic_publish".batches');
    expect(batch!.sql).toContain("status <> 'PUBLISHED'");
  });

  it('truncates a very long error to 60,000 characters', () => {
    expect(markBatchFailed(batchId, 'e'.repeat(100_000), NOW)[0]!.parameters?.error).toHaveLength(60_000);
  });

  // Fixed bug, kept as a regression test (domain/sql.ts): the error was cut at 60,000 UTF-16 code
  // units, but batches.error is varchar(65535), which Redshift measures in
  // BYTES. A message of 21,846+ three-byte characters (e.g. source data
  // quoted in a warehouse error) overflows the column, the UPDATE fails and
  // RecordFailure reports "manifest not updated"; slicing can also split a
  // surrogate pair. Expected: truncate to at most 65,535 UTF-8 bytes.
  it('truncates the error to what a Redshift varchar(65535) holds in bytes', () => {
    const [statement] = markBatchFailed(batchId, '€'.repeat(70_000), NOW);

    expect(Buffer.byteLength(statement!.parameters!.error!, 'utf8')).toBeLessThanOrEqual(65_535);
  });
});

describe('a source query ending in a line comment', () => {
  const commented = pipelineWith({ sourceSql: `${pipeline.sourceSql} -- closed orders only` });

  // Fixed bug, kept as a regression test (domain/sql.ts lines 132): the source
  // query is wrapped as `(${sourceSql}) AS src` on one line, so a trailing
  // `-- comment` (valid in any SELECT, accepted by definePipeline) comments
  // out the closing parenthesis and every statement built on it is a syntax
  // error. Expected: a newline before the `)`, or the spec rejected.
  it.each([
    ['sourceShape', () => sourceShape(commented, interval)],
    ['loadStagingInterval', () => loadStagingInterval(commented, batch, chunk)],
    ['chunkCounts', () => chunkCounts(commented, batch)],
  ])('keeps the closing parenthesis of %s outside the comment', (_name, build) => {
    expect(parenthesesBalance(build().sql)).toBe(true);
  });
});

describe('startBatch', () => {
  const statements = startBatch(record);

  it('creates staging like live, if it does not exist yet', () => {
    expect(statements[0]).toBe(`CREATE TABLE IF NOT EXISTS "analytics"."${staging}" (LIKE "analytics"."orders")`);
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
    expect(statements[1]).toContain("CAST('2026-01-01 00:00:00.000' AS timestamp)");
    expect(statements[1]).toContain("CAST('2026-02-01 00:00:00.000' AS timestamp)");
    expect(statements[1]).toContain(`, ${chunks.length}, `);
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

  it('lists chunk rows as SELECTs joined by UNION ALL, since Redshift has no VALUES list in FROM', () => {
    const insert = statements.find((s) => s.startsWith('INSERT INTO "atomic_publish".chunks'))!;

    expect(insert).not.toContain('VALUES');
    expect(insert).toContain('UNION ALL SELECT');
  });

  it('refuses a hostile value rather than escaping it', () => {
    expect(() => startBatch({ ...record, executionId: 'run\\1' })).toThrow(ValidationError);
  });
});

describe('recordChecks', () => {
  const passed: CheckResult = { check: 'all_chunks_loaded', passed: true, observed: "31 of 31 chunks 'done'", expected: '31 of 31', details: '' };
  const failed: CheckResult = { check: 'staging_within_interval', passed: false, observed: '3 row(s)', expected: '0 rows', details: '' };

  it('records each result and moves a RUNNING batch to CHECKED when all passed', () => {
    const statements = recordChecks(batchId, [passed, passed], { rowsRead: 10, rowsWritten: 10 }, NOW);

    expect(statements).toHaveLength(4);
    expect(statements[1]).toContain("'31 of 31 chunks ''done'''");
    expect(statements[3]).toContain("status = 'CHECKED'");
    expect(statements[3]).toContain("status = 'RUNNING'");
    expect(statements[3]).toContain('rows_read = 10, rows_written = 10');
  });

  it("first removes this attempt's earlier results, so a retried Reconcile records each check once", () => {
    const [first] = recordChecks(batchId, [passed], { rowsRead: 1, rowsWritten: 1 }, NOW);

    expect(first).toBe(
      `DELETE FROM "atomic_publish".check_results WHERE batch_id = '${batchId}' AND attempt = (SELECT attempt FROM "atomic_publish".batches WHERE batch_id = '${batchId}')`,
    );
  });

  it('leaves the batch unchecked when one check failed', () => {
    const statements = recordChecks(batchId, [passed, failed], { rowsRead: 10, rowsWritten: 13 }, NOW);

    expect(statements.at(-1)).not.toContain('CHECKED');
  });
});

describe('swapPublish', () => {
  const statements = swapPublish(pipeline, batch, previous, NOW);

  it('locks publications and staging, guards, renames live away, renames staging in, records the publication, attempt and batch, in that order', () => {
    const expected = [
      /^LOCK "atomic_publish"\.publications$/,
      new RegExp(`^LOCK "analytics"\\."${staging}"$`),
      new RegExp(`^CALL "atomic_publish"\\.assert_publishable\\('orders', '${batchId}', 2, 'analytics', '${staging}'\\)$`),
      new RegExp(`^ALTER TABLE "analytics"\\."orders" RENAME TO "${previous}"$`),
      new RegExp(`^ALTER TABLE "analytics"\\."${staging}" RENAME TO "orders"$`),
      /^INSERT INTO "atomic_publish"\.publications /,
      /^UPDATE "atomic_publish"\.batch_attempts SET status = 'PUBLISHED'/,
      new RegExp(`^UPDATE "atomic_publish"\\.batches SET status = 'PUBLISHED'.* WHERE batch_id = '${batchId}'$`),
    ];

    expect(statements).toHaveLength(expected.length);
    statements.forEach((sql, i) => expect(sql).toMatch(expected[i]!));
  });

  it('never truncates, drops or cascades', () => {
    for (const sql of statements) expect(sql).not.toMatch(/\b(TRUNCATE|CASCADE|DROP|DELETE)\b/i);
  });

  it('records the old version under the name cleanup later matches', () => {
    const [, recordDrop] = dropRetired(pipeline, 'old_version', previous, batchId, NOW);

    expect(statements.find((sql) => sql.startsWith('INSERT INTO "atomic_publish".publications'))).toContain(`'analytics.${previous}'`);
    expect(recordDrop).toContain(`old_version_table = 'analytics.${previous}'`);
  });

  it('refuses a hostile previous-version name', () => {
    expect(() => swapPublish(pipeline, batch, 'prev"; DROP TABLE x; --', NOW)).toThrow(ValidationError);
  });
});

describe('dropRetired', () => {
  it.each(['old_version', 'staging'] as const)('drops a %s table with IF EXISTS and never CASCADE', (kind) => {
    const statements = dropRetired(pipeline, kind, previous, batchId, NOW);

    expect(statements[0]).toBe(`DROP TABLE IF EXISTS "analytics"."${previous}"`);
    for (const sql of statements) expect(sql).not.toMatch(/CASCADE/i);
  });

  it('records a dropped staging table on its batch', () => {
    expect(dropRetired(pipeline, 'staging', staging, batchId, NOW)[1]).toMatch(
      new RegExp(`^UPDATE "atomic_publish"\\.batches SET staging_dropped_at = .* WHERE batch_id = '${batchId}'$`),
    );
  });

  it('refuses a schema-qualified or hostile table name', () => {
    expect(() => dropRetired(pipeline, 'old_version', `analytics.${previous}`, batchId, NOW)).toThrow(ValidationError);
    expect(() => dropRetired(pipeline, 'staging', 'x; DROP TABLE y', batchId, NOW)).toThrow(ValidationError);
  });
});

describe('manifestDdl', () => {
  it("passes RAISE only variables after the format, as Redshift's PL/pgSQL requires", () => {
    const raises = manifestDdl(NOW).flatMap((sql) => [...sql.matchAll(/RAISE EXCEPTION '[^']*'((?:, *[^;]+)?);/g)].map((m) => m[1]!));

    expect(raises.length).toBeGreaterThanOrEqual(2);
    for (const args of raises) {
      for (const arg of args.split(',').map((a) => a.trim()).filter(Boolean)) expect(arg).toMatch(/^[a-z_][a-z0-9_]*$/);
    }
  });

  it('is safe to run again: every statement creates if not exists, replaces, or inserts its version once', () => {
    for (const sql of manifestDdl(NOW)) {
      expect(sql).toMatch(/^(CREATE (SCHEMA IF NOT EXISTS|TABLE IF NOT EXISTS|OR REPLACE PROCEDURE) |INSERT INTO "atomic_publish".manifest_version .* WHERE NOT EXISTS)/s);
    }
  });

  it('records the manifest version it installs, which Plan compares before installing again', () => {
    expect(manifestDdl(NOW).at(-1)).toContain(`SELECT ${MANIFEST_VERSION}, CAST('2026-03-15 10:20:30.456' AS timestamp)`);
  });

  it('guards the publish against an older batch, a changed staging table and a moved base, all by raising', () => {
    const procedure = manifestDdl(NOW).find((sql) => sql.includes('PROCEDURE'))!;
    expect(procedure).toContain('latest_end > batch_end');
    expect(procedure).toContain('staged_rows <> checked_rows');
    expect(procedure).toContain('latest <> p_base');
  });
});
