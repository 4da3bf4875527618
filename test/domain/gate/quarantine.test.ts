import { describe, expect, it } from 'vitest';
import { definePipeline } from '../../../domain/define-pipeline.ts';
import { ValidationError } from '../../../domain/errors.ts';
import { checkQuarantineColumns, QUARANTINE_CHECK, type Quarantined, quarantineCheck, quarantines, rowRules } from '../../../domain/gate/quarantine.ts';
import { moveToQuarantine } from '../../../domain/gate/sql/quarantine.ts';
import type { PipelineSpec } from '../../../domain/spec.ts';
import { errorOf, ordersSpec, pipelineWith, specWith } from '../fixtures.ts';

const found = (rows: Record<string, number>, sourceRows = 1000): Quarantined => ({
  table: 'analytics.orders__quarantine',
  batchId: 'b1',
  byReason: Object.entries(rows).map(([reason, n]) => ({ reason, rows: n, sampleKeys: n > 0 ? ['(order_id) = (7)'] : [] })),
  sourceRows,
});

describe('quarantineCheck', () => {
  it('passes within maxRows, recording how many, why and where', () => {
    const check = quarantineCheck(found({ 'business key NULL': 2, 'duplicate (identical)': 1 }), { maxRows: 3 });

    expect(check).toMatchObject({ check: QUARANTINE_CHECK, passed: true, expected: 'at most 3 row(s) quarantined (checks.quarantine)' });
    expect(check.observed).toBe(
      "3 row(s) quarantined (0.3% of 1000) in analytics.orders__quarantine (batch_id = 'b1'): business key NULL: 2, duplicate (identical): 1",
    );
    expect(check.details).toBe('business key NULL: (order_id) = (7); and 1 more | duplicate (identical): (order_id) = (7)');
  });

  it('fails over maxRows, and over maxPct when both are given', () => {
    expect(quarantineCheck(found({ 'not_null:amount': 4 }), { maxRows: 3 }).passed).toBe(false);
    expect(quarantineCheck(found({ 'not_null:amount': 11 }), { maxRows: 100, maxPct: 1 }).passed).toBe(false);
    expect(quarantineCheck(found({ 'not_null:amount': 10 }), { maxRows: 100, maxPct: 1 }).passed).toBe(true);
    expect(quarantineCheck(found({ 'not_null:amount': 10 }), { maxPct: 1 }).expected).toBe('at most 1% of 1000 source row(s) quarantined (checks.quarantine)');
  });

  it('passes with nothing quarantined, also of an empty batch, and counts every row of an empty source as over a percentage', () => {
    expect(quarantineCheck(found({}, 0), { maxRows: 0 })).toMatchObject({ passed: true, observed: '0 row(s) quarantined (0% of 0)', details: '' });
    expect(quarantineCheck(found({ 'time NULL': 1 }, 0), { maxPct: 50 }).passed).toBe(false);
  });
});

describe('checks.quarantine in the spec', () => {
  const quarantining = { notNull: [{ column: 'amount', action: 'quarantine' as const }], quarantine: { maxRows: 5 } };

  it('keeps the action only when it quarantines, and the tolerance as given', () => {
    const pipeline = definePipeline(specWith({ checks: quarantining }));

    expect(pipeline.checks.notNull).toEqual([{ column: 'amount', severity: 'block', tolerance: 0, action: 'quarantine' }]);
    expect(pipeline.checks.quarantine).toEqual({ maxRows: 5 });
    expect(rowRules(pipeline)).toEqual([{ reason: 'not_null:amount', column: 'amount' }]);
    expect(definePipeline(specWith({ checks: { notNull: [{ column: 'amount', action: 'check' }] } })).checks.notNull).toEqual([
      { column: 'amount', severity: 'block', tolerance: 0 },
    ]);
  });

  it('leaves the spec hash as it was without it, and changes it with it', () => {
    const hash = definePipeline(ordersSpec).specHash;

    expect(definePipeline(specWith({ checks: { quarantine: undefined } })).specHash).toBe(hash);
    expect(definePipeline(specWith({ checks: { notNull: [{ column: 'amount', action: 'check' }] } })).specHash).toBe(
      definePipeline(specWith({ checks: { notNull: ['amount'] } })).specHash,
    );
    expect(definePipeline(specWith({ checks: { quarantine: { maxRows: 5 } } })).specHash).not.toBe(hash);
    expect(definePipeline(specWith({ checks: { quarantine: { maxRows: 5 } } })).specHash).not.toBe(
      definePipeline(specWith({ checks: { quarantine: { maxRows: 6 } } })).specHash,
    );
  });

  it.each<[string, PipelineSpec['checks'], RegExp]>([
    ['a tolerance without a limit', { quarantine: {} }, /checks\.quarantine must give maxRows or maxPct/],
    ['a percentage over 100', { quarantine: { maxPct: 101 } }, /checks\.quarantine\.maxPct must be a number from 0 to 100/],
    ['a negative row count', { quarantine: { maxRows: -1 } }, /checks\.quarantine\.maxRows must be an integer from 0 to 1000000000/],
    ['a fractional row count', { quarantine: { maxRows: 1.5 } }, /checks\.quarantine\.maxRows must be an integer/],
    ['an unknown field', { quarantine: { maxRows: 1, maxrows: 2 } as never }, /checks\.quarantine has unknown field\(s\) maxrows/],
    [
      'a quarantining check without a tolerance',
      { notNull: [{ column: 'amount', action: 'quarantine' }] },
      /checks\.quarantine must be declared .* for check\(s\) not_null:amount with action quarantine/,
    ],
    ['an empty pattern', { pattern: [{ column: 'code', regex: '' }] }, /checks\.pattern\[0\]\.regex must be a POSIX regular expression/],
    ['a pattern with a control character', { pattern: [{ column: 'code', regex: '^a\tb$' }] }, /checks\.pattern\[0\]\.regex must hold no control character/],
    [
      'an unknown action',
      { acceptedValues: [{ column: 'amount', values: [1], action: 'drop' as never }] },
      /checks\.acceptedValues\[0\]\.action of check accepted_values:amount: "drop" must be one of check, quarantine/,
    ],
  ])('refuses %s at synth, naming the pipeline and the field', (_what, checks, message) => {
    const error = errorOf(() => definePipeline(specWith({ checks })));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toMatch(/^pipeline orders: /);
    expect(error.message).toMatch(message);
  });

  it('quarantines only when declared, and not in a migration, which copies the live table as it is', () => {
    const pipeline = pipelineWith({ checks: quarantining });

    expect(quarantines(pipeline)).toBe(true);
    expect(quarantines(pipelineWith())).toBe(false);
    expect(quarantines({ ...pipeline, migrating: { columns: ['order_id'], from: ['order_id'] } })).toBe(false);
  });

  it('is refused in Plan when the live table has a column the quarantine table adds', () => {
    const pipeline = pipelineWith({ checks: quarantining });
    const live = [
      { name: 'order_id', dataType: 'bigint' },
      { name: 'reason', dataType: 'character varying' },
    ];

    expect(() => checkQuarantineColumns(pipeline, live)).toThrow(
      /pipeline orders: checks\.quarantine keeps rows in analytics\.orders__quarantine .* has column\(s\) reason/,
    );
    expect(() => checkQuarantineColumns(pipelineWith(), live)).not.toThrow();
  });
});

describe('moveToQuarantine', () => {
  const batch = {
    pipeline: 'orders',
    batchId: 'b1',
    specHash: '',
    liveTable: 'analytics.orders',
    from: '2026-01-01T00:00:00.000Z',
    to: '2026-01-03T00:00:00.000Z',
    stagingTable: 'orders__stg_b1',
    columns: ['order_id', 'ordered_at', 'amount'],
    basePublication: 0,
  };
  const columns = ['order_id bigint', 'ordered_at timestamp without time zone', 'amount numeric(12,2)'];

  it('sends a pattern as a parameter, so that its backslashes reach the warehouse as written', () => {
    const pipeline = pipelineWith({ checks: { pattern: [{ column: 'code', regex: '^A\\d+$', action: 'quarantine' }], quarantine: { maxPct: 1 } } });
    const { sqls, parameters } = moveToQuarantine(
      pipeline,
      { ...batch, columns: ['order_id', 'ordered_at', 'code'] },
      columns,
      new Date('2026-01-05T00:00:00Z'),
    );

    expect(sqls[2]).toContain(`WHEN NOT (s."code" ~ :ap_pattern_0) THEN 'pattern:code'`);
    expect(parameters.ap_pattern_0).toBe('^A\\d+$');
  });

  it('locks staging, drops the quarantined rows of superseded chunk generations, then moves rule breakers and duplicates in one transaction', () => {
    const { sqls, parameters } = moveToQuarantine(
      pipelineWith({ checks: { notNull: [{ column: 'amount', action: 'quarantine' }], quarantine: { maxRows: 1 } } }),
      batch,
      columns,
      new Date('2026-01-05T00:00:00Z'),
    );

    expect(sqls[0]).toBe('LOCK "analytics"."orders__stg_b1"');
    expect(sqls[1]).toMatch(/^DELETE FROM "analytics"\."orders__quarantine"\s+WHERE batch_id = :batch_id AND chunk_index IS NOT NULL\s+AND NOT EXISTS/);
    expect(sqls[2]).toContain(`CASE WHEN s."order_id" IS NULL THEN 'business key NULL' WHEN s."amount" IS NULL THEN 'not_null:amount' END AS ap_reason`);
    expect(sqls[3]).toMatch(
      /^DELETE FROM "analytics"\."orders__stg_b1"\s+WHERE "orders__stg_b1"\."ordered_at" >= :start .* AND EXISTS \(SELECT 1 FROM \S*chunk_state AS c/s,
    );
    expect(sqls.join('\n')).not.toContain('USING');
    expect(sqls.slice(4).map((s) => s.trim().split(/\s+/).slice(0, 3).join(' '))).toEqual([
      'INSERT INTO "analytics"."orders__quarantine"',
      'INSERT INTO "analytics"."orders__quarantine"',
      'DELETE FROM "analytics"."orders__stg_b1"',
      'INSERT INTO "analytics"."orders__stg_b1"',
    ]);
    expect(parameters).toEqual({ batch_id: 'b1', now: '2026-01-05 00:00:00.000', start: '2026-01-01 00:00:00.000', end: '2026-01-03 00:00:00.000' });
  });
});
