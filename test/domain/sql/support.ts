// What the tests of the SQL modules share: one batch of the fixture
// pipeline, and the checks every single statement (ExecuteStatement) must pass.
import { expect, it } from 'vitest';
import type { BatchRef } from '../../../domain/batch.ts';
import { batchIdFor, planChunks, previousVersionTableFor, stagingTableFor } from '../../../domain/plan/plan.ts';
import type { BatchRecord } from '../../../domain/plan/sql/plan.ts';
import type { Statement } from '../../../domain/sql/statement.ts';
import { pipelineWith } from '../fixtures.ts';

export const at = (iso: string) => new Date(iso);
export const pipeline = pipelineWith();
export const interval = { from: at('2026-01-01T00:00:00Z'), to: at('2026-02-01T00:00:00Z') };
export const chunks = planChunks(interval, pipeline);
export const chunk = chunks[1]!;
export const batchId = batchIdFor(pipeline, interval);
export const staging = stagingTableFor(pipeline, batchId);
export const previous = previousVersionTableFor(pipeline, batchId);
export const NOW = at('2026-03-15T10:20:30.456Z');
export const batch: BatchRef = {
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
export const record: BatchRecord = {
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
/** A pipeline whose chunk grain and zone appear in the SQL that buckets rows into chunks. */
export const berlinMonthly = pipelineWith({ chunk: { grain: 'month', timezone: 'Europe/Berlin' }, historyStart: '2025-12-31T23:00:00Z' });
/** The fixture pipeline with a source query ending in a line comment. */
export const commented = pipelineWith({ sourceSql: `${pipeline.sourceSql} -- closed orders only` });

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
const FIXED_WORDS = new Set([
  'RUNNING',
  'CHECKED',
  'PUBLISHED',
  'FAILED',
  'SUPERSEDED',
  'ABANDONED',
  'PENDING',
  'LOADING',
  'DONE',
  'CANCELLED',
  'old_version',
  'staging',
]);
const CHUNK_WORDS = new Set(['hour', 'day', 'month', 'UTC', 'Europe/Berlin']);

/** The checks every single statement must pass: parameters as referenced, no inlined values, quoted identifiers. */
export function itIsASafeSingleStatement(statements: [string, Statement][]): void {
  it.each(statements)('%s supplies exactly the parameters its SQL references, none empty', (_name, statement) => {
    const referenced = referencedParameters(statement.sql);
    const supplied = Object.keys(statement.parameters ?? {});

    expect(new Set(supplied)).toEqual(referenced);
    // The Data API rejects an empty parameter list and empty values.
    if (statement.parameters !== undefined) expect(supplied.length).toBeGreaterThan(0);
    for (const value of Object.values(statement.parameters ?? {})) expect(value).not.toBe('');
  });

  it.each(statements)('%s inlines no values: only fixed words and the chunk grain and zone appear as literals', (_name, statement) => {
    const sql = statement.sql;

    expect(literals(sql).filter((l) => !FIXED_WORDS.has(l) && !CHUNK_WORDS.has(l))).toEqual([]);
    expect(sql).not.toMatch(/\d{4}-\d{2}-\d{2}/);
    expect(sql).not.toContain(`'${batchId}'`);
    expect(sql).not.toContain('stmt-0001');
  });

  it.each(statements)('%s double-quotes every schema, table and column name it generates', (_name, statement) => {
    const sql = generatedPart(statement.sql);

    for (const identifier of ['analytics', 'orders', staging, 'ordered_at', 'order_id', 'amount']) {
      expect(unquoted(sql, identifier)).toEqual([]);
    }
  });
}

// Fixed bug, kept as a regression test: the source query was wrapped as
// `(${sourceSql}) AS src` on one line, so a trailing `-- comment` (valid in
// any SELECT, accepted by definePipeline) commented out the closing
// parenthesis and every statement built on it was a syntax error.
// Expected: a newline before the `)`.
export function itKeepsTheSourceQueryClosed(builders: [string, () => Statement][]): void {
  it.each(builders)('keeps the closing parenthesis of %s outside a line comment ending the source query', (_name, build) => {
    expect(parenthesesBalance(build().sql)).toBe(true);
  });
}
