import { describe, expect, it } from 'vitest';
import { ChunkStatus } from '../../../domain/batch.ts';
import { ValidationError } from '../../../domain/errors.ts';
import { checkDeclaredColumns, declaredResult, isBlocking, isWarning } from '../../../domain/gate/declared-checks.ts';
import { describeFailure, reconcile } from '../../../domain/gate/reconcile.ts';
import { customCheckRows, declaredRowChecks, declaredRowSamples, missingReferences, recordChecks } from '../../../domain/gate/sql/reconcile.ts';
import type { LiveColumn } from '../../../domain/plan/live-column.ts';
import { checkRelations, requiredPrivileges } from '../../../domain/setup/privileges.ts';
import type { PipelineSpec } from '../../../domain/spec.ts';
import { errorOf, pipelineWith } from '../fixtures.ts';
import { batch } from '../sql/support.ts';

const LIVE: LiveColumn[] = [
  { name: 'order_id', dataType: 'bigint' },
  { name: 'ordered_at', dataType: 'timestamp without time zone' },
  { name: 'amount', dataType: 'numeric' },
  { name: 'status', dataType: 'character varying' },
  { name: 'customer_id', dataType: 'integer' },
];
const CUSTOMERS = new Map([
  [
    'crm.customers',
    [
      { name: 'id', dataType: 'bigint' },
      { name: 'code', dataType: 'character varying' },
    ],
  ],
]);
const withChecks = (checks: PipelineSpec['checks']) => pipelineWith({ checks });

describe('checkDeclaredColumns (Plan, before any load)', () => {
  it('accepts checks on columns of the live table, values of the column type and a parent with columns of the same kind', () => {
    const pipeline = withChecks({
      notNull: ['amount'],
      acceptedValues: [
        { column: 'status', values: ['open', 'paid'] },
        { column: 'customer_id', values: [1, 2] },
      ],
      references: [{ columns: ['customer_id'], parent: { schema: 'crm', table: 'customers', columns: ['id'] } }],
    });
    expect(() => checkDeclaredColumns(pipeline, LIVE, CUSTOMERS)).not.toThrow();
  });

  it.each<[string, PipelineSpec['checks'], string]>([
    ['a notNull column the live table lacks', { notNull: ['discount'] }, 'check not_null:discount names discount, which is not a column of analytics.orders'],
    ['an acceptedValues column the live table lacks', { acceptedValues: [{ column: 'state', values: ['a'] }] }, 'check accepted_values:state names state'],
    [
      'numbers for a text column',
      { acceptedValues: [{ column: 'status', values: [1] }] },
      'check accepted_values:status lists 1 for status of analytics.orders, which is character varying: list strings',
    ],
    [
      'strings for a number column',
      { acceptedValues: [{ column: 'amount', values: ['1'] }] },
      'check accepted_values:amount lists "1" for amount of analytics.orders, which is numeric: list numbers',
    ],
    [
      'a parent that does not exist',
      { references: [{ columns: ['customer_id'], parent: { schema: 'crm', table: 'clients', columns: ['id'] } }] },
      'check references:customer_id references crm.clients, which does not exist',
    ],
    [
      'a parent column that does not exist',
      { references: [{ columns: ['customer_id'], parent: { schema: 'crm', table: 'customers', columns: ['cid'] } }] },
      'references cid, which is not a column of crm.customers',
    ],
    [
      'a child column the live table lacks',
      { references: [{ columns: ['client_id'], parent: { schema: 'crm', table: 'customers', columns: ['id'] } }] },
      'check references:client_id names client_id',
    ],
    [
      'key columns of different kinds',
      { references: [{ columns: ['customer_id'], parent: { schema: 'crm', table: 'customers', columns: ['code'] } }] },
      'compares customer_id (integer) with crm.customers.code (character varying)',
    ],
  ])('refuses %s, naming the pipeline and the check', (_what, checks, message) => {
    const error = errorOf(() => checkDeclaredColumns(withChecks(checks), LIVE, CUSTOMERS));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toMatch(/^pipeline orders: check /);
    expect(error.message).toContain(message);
  });
});

describe('declaredResult: tolerance and severity', () => {
  const observation = { check: 'not_null:amount', what: 'row(s) with NULL amount', samples: ['(order_id) = (1)', '(order_id) = (2)'] };

  it('passes within the tolerance, and records no sample then', () => {
    const result = declaredResult({ ...observation, severity: 'block', tolerance: 2, offending: 2 });
    expect(result).toMatchObject({ passed: true, severity: 'block', tolerance: 2, details: '', samples: [], observed: '2 row(s) with NULL amount' });
    expect(isBlocking(result) || isWarning(result)).toBe(false);
  });

  it('fails beyond it with the sample and how many more; warn does not block', () => {
    const blocking = declaredResult({ ...observation, severity: 'block', tolerance: 0, offending: 7 });
    expect(blocking).toMatchObject({
      passed: false,
      details: 'sample: (order_id) = (1); (order_id) = (2); and 5 more',
      expected: 'at most 0 (tolerance), severity block',
    });
    expect(isBlocking(blocking)).toBe(true);
    const warning = declaredResult({ ...observation, severity: 'warn', tolerance: 0, offending: 7 });
    expect(isBlocking(warning)).toBe(false);
    expect(isWarning(warning)).toBe(true);
  });
});

describe('reconcile with declared checks', () => {
  const counts = [{ index: 0, start: '2026-01-01 00:00:00', status: ChunkStatus.DONE, recordedRows: 3, sourceRows: 3, stagingRows: 3 }];
  const staging = { outsideInterval: 0, duplicateKeys: 0 };
  const warn = declaredResult({
    check: 'not_null:amount',
    severity: 'warn',
    tolerance: 0,
    offending: 1,
    what: 'row(s) with NULL amount',
    samples: ['(order_id) = (1)'],
  });
  const block = declaredResult({
    check: 'sql:negative',
    severity: 'block',
    tolerance: 0,
    offending: 2,
    what: 'row(s) returned',
    samples: ['order_id = 4', 'order_id = 5'],
  });

  it('passes with a failed warning, and lists it as a warning', () => {
    const result = reconcile(counts, staging, false, ['order_id'], undefined, undefined, [warn]);
    expect(result.passed).toBe(true);
    expect(result.warnings?.map((c) => c.check)).toEqual(['not_null:amount']);
  });

  it('fails on a blocking one, and the alert names it with a table of the declared checks that failed and their sample keys', () => {
    const result = reconcile(counts, staging, false, ['order_id'], undefined, undefined, [warn, block]);
    expect(result.passed).toBe(false);
    const text = describeFailure('b1', result);
    expect(text).toContain('1 check(s) failed for batch b1:');
    expect(text).toContain('  sql:negative: observed 2 row(s) returned; expected at most 0 (tolerance), severity block');
    expect(text).toContain('Declared checks that failed (2):');
    expect(text).toMatch(/│ not_null:amount +│ warn +│ 1 row\(s\) with NULL amount +│ +0 │ \(order_id\) = \(1\) +│/);
    expect(text).toMatch(/│ sql:negative +│ block +│ 2 row\(s\) returned +│ +0 │ order_id = 4; order_id = 5 +│/);
  });

  it('moves the batch to CHECKED with only a warning failed, and records each severity', () => {
    const passedGate = reconcile(counts, staging, false, ['order_id']).checks;
    const withWarning = recordChecks('b1', [...passedGate, warn], { rowsRead: 3, rowsWritten: 3 }, new Date('2026-01-02T00:00:00Z'));
    expect(withWarning.at(-1)).toContain("status = 'CHECKED'");
    expect(withWarning.find((s) => s.includes("'not_null:amount'"))).toMatch(/, 'warn'$/);
    expect(withWarning.find((s) => s.includes("'staging_not_empty'"))).toMatch(/, 'block'$/);
    const withBlock = recordChecks('b1', [...passedGate, block], { rowsRead: 3, rowsWritten: 3 }, new Date('2026-01-02T00:00:00Z'));
    expect(withBlock.at(-1)).not.toContain('CHECKED');
  });
});

describe('the SQL of the declared checks', () => {
  const pipeline = withChecks({
    notNull: ['amount', 'status'],
    acceptedValues: [{ column: 'status', values: ['open', "o'clock"] }],
    references: [{ columns: ['customer_id'], parent: { schema: 'crm', table: 'customers', columns: ['id'] } }],
    sql: [{ name: 'negative', sql: 'SELECT order_id FROM {staging} WHERE amount < 0' }],
  });
  const staging = `"analytics"."${batch.stagingTable}"`;

  it('counts every row check in one pass over staging, and none when none is declared', () => {
    const { sql } = declaredRowChecks(pipeline, batch)!;
    expect(sql.match(/FROM /g)).toHaveLength(1);
    expect(sql).toContain(`FROM ${staging} AS s`);
    expect(sql).toContain('SUM(CASE WHEN s."amount" IS NULL THEN 1 ELSE 0 END) AS nn_0');
    expect(sql).toContain('SUM(CASE WHEN s."status" IS NULL THEN 1 ELSE 0 END) AS nn_1');
    expect(sql).toContain(`SUM(CASE WHEN s."status" NOT IN ('open', 'o''clock') THEN 1 ELSE 0 END) AS av_0`);
    expect(declaredRowChecks(pipelineWith(), batch)).toBeUndefined();
  });

  it('samples only the failed row checks, the first 5 of each in key order', () => {
    const { sql } = declaredRowSamples(pipeline, batch, ['nn_1', 'av_0']);
    expect(sql).not.toContain('"amount" IS NULL');
    expect(sql.match(/UNION ALL/g)).toHaveLength(1);
    expect(sql).toContain('ROW_NUMBER() OVER (PARTITION BY u.ap_check ORDER BY u."order_id")');
    expect(sql).toContain('WHERE ap_n <= 5');
  });

  it('counts staging rows whose key the parent lacks, against the parent keys made distinct', () => {
    const { sql } = missingReferences(pipeline, batch, pipeline.checks.references[0]!);
    expect(sql).toMatch(/^SELECT COUNT\(\*\) AS ap_rows FROM /);
    expect(sql).toContain('SELECT DISTINCT p."id" AS ap_k0');
    expect(sql).toContain('FROM "crm"."customers" AS p');
    expect(sql).toContain('WHERE p.ap_k0 IS NULL AND s."customer_id" IS NOT NULL');
    expect(missingReferences(pipeline, batch, pipeline.checks.references[0]!, 5).sql).toMatch(/GROUP BY s\."customer_id" ORDER BY s\."customer_id" LIMIT 5$/);
  });

  it('runs custom SQL with staging in place of its placeholder', () => {
    expect(customCheckRows(pipeline, batch, pipeline.checks.sql[0]!).sql).toBe(
      `SELECT COUNT(*) AS ap_rows FROM (SELECT order_id FROM ${staging} WHERE amount < 0\n) AS src`,
    );
    expect(customCheckRows(pipeline, batch, pipeline.checks.sql[0]!, 5).sql).toMatch(/\) AS src LIMIT 5$/);
  });
});

describe('privileges of the declared checks', () => {
  it('grants reading the parents and the tables custom SQL reads, not staging', () => {
    const pipeline = withChecks({
      references: [{ columns: ['customer_id'], parent: { schema: 'crm', table: 'customers', columns: ['id'] } }],
      sql: [{ name: 'unknown_product', sql: 'SELECT s.order_id FROM {staging} AS s LEFT JOIN catalog.products AS p ON p.id = s.order_id WHERE p.id IS NULL' }],
    });
    expect(checkRelations(pipeline)).toEqual([
      { schema: 'crm', table: 'customers' },
      { schema: 'catalog', table: 'products' },
    ]);
    const selects = requiredPrivileges(pipeline).filter((r) => r.kind === 'table');
    expect(selects.map((r) => `${r.kind === 'table' ? `${r.schema}.${r.table}: ${r.reason}` : ''}`)).toEqual([
      'raw.order_events: to read the source',
      'crm.customers: to run the declared checks',
      'catalog.products: to run the declared checks',
    ]);
    expect(
      requiredPrivileges(pipeline)
        .filter((r) => r.kind === 'schema' && r.privilege === 'USAGE')
        .map((r) => (r.kind === 'schema' ? r.schema : '')),
    ).toEqual(['analytics', 'raw', 'crm', 'catalog']);
  });

  it('refuses custom SQL reading a table without its schema', () => {
    const pipeline = withChecks({ sql: [{ name: 'lookup', sql: 'SELECT s.order_id FROM {staging} AS s JOIN products AS p ON p.id = s.order_id' }] });
    expect(errorOf(() => checkRelations(pipeline)).message).toBe(
      'pipeline orders: check sql:lookup reads products without a schema; qualify it (schema.products), or name staging as {staging}',
    );
  });
});
