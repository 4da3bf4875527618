import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../domain/errors.ts';
import type { RowCountDrift } from '../../../domain/gate/config.ts';
import {
  checkDriftColumns,
  driftChecks,
  driftFailureText,
  driftOf,
  isDriftCheck,
  nullRateColumns,
  nullRateDrift,
  rowCountDrift,
} from '../../../domain/gate/drift.ts';
import { describeFailure, reconcile } from '../../../domain/gate/reconcile.ts';
import { errorOf, pipelineWith } from '../fixtures.ts';

const rule: RowCountDrift = { maxDecreasePct: 50, maxIncreasePct: 100, minRows: 100, severity: 'block' };
const chunk = (index: number, liveRows: number, stagingRows: number) => ({ index, start: `2026-01-0${index + 1} 00:00:00`, liveRows, stagingRows });

describe('rowCountDrift', () => {
  it('passes chunks within the bounds and fails one that lost more than allowed, naming it with both counts and the change', () => {
    const { check, failing } = rowCountDrift(rule, [chunk(0, 200, 150), chunk(1, 200, 60), chunk(2, 200, 400)]);

    expect(check).toMatchObject({
      check: 'live_row_count_drift',
      passed: false,
      severity: 'block',
      observed: '1 of 3 chunk(s) compared outside the bounds',
      expected:
        "staging rows per chunk within -50% / +100% of live's rows of the same interval (tolerance), chunks with at least 100 live rows; severity block",
      details: '#1 2026-01-02 00:00:00: live 200, staging 60, -70.0%',
    });
    expect(failing.map((c) => c.index)).toEqual([1]);
  });

  it('fails a rise beyond maxIncreasePct and an empty chunk live had rows of', () => {
    const { check } = rowCountDrift(rule, [chunk(0, 200, 401), chunk(1, 200, 0)]);
    expect(check.details).toBe('#0 2026-01-01 00:00:00: live 200, staging 401, +100.5%; #1 2026-01-02 00:00:00: live 200, staging 0, -100.0%');
  });

  it('leaves a bound out when the spec does', () => {
    const { check } = rowCountDrift({ maxDecreasePct: 10, minRows: 1, severity: 'warn' }, [chunk(0, 10, 1000)]);
    expect(check.passed).toBe(true);
    expect(check.expected).toContain('within -10% / any rise of');
  });

  it('passes the first publication and chunks below minRows, saying so', () => {
    const { check } = rowCountDrift(rule, [chunk(0, 0, 120), chunk(1, 0, 120), chunk(2, 99, 1)]);
    expect(check).toMatchObject({
      passed: true,
      observed: '0 of 0 chunk(s) compared outside the bounds; 2 with no live rows to compare; 1 with fewer than 100 live rows, not compared',
      details: '',
    });
  });
});

describe('nullRateDrift', () => {
  const nulls = (column: string, stagingNulls: number, liveNulls: number, rows = 1000) => ({
    column,
    stagingNulls,
    stagingRows: rows,
    liveNulls,
    liveRows: rows,
  });
  const points = { maxIncreasePoints: 5, minRows: 100, severity: 'block' as const };

  it('fails a column whose NULL share rose by more than the points allowed, with both shares', () => {
    const { check, failing } = nullRateDrift(points, [nulls('amount', 800, 10), nulls('note', 110, 100), nulls('code', 0, 500)]);

    expect(check).toMatchObject({
      check: 'live_null_rate_drift',
      passed: false,
      observed: '1 of 3 column(s) compared whose NULL share rose by more than 5 points',
      details: 'amount: live 1.0% NULL, staging 80.0% NULL (+79.0 points)',
    });
    expect(failing.map((c) => c.column)).toEqual(['amount']);
  });

  it('compares nothing while live or staging holds fewer than minRows rows', () => {
    const { check } = nullRateDrift(points, [{ column: 'amount', stagingNulls: 50, stagingRows: 50, liveNulls: 0, liveRows: 0 }]);
    expect(check).toMatchObject({
      passed: true,
      observed:
        '0 of 0 column(s) compared whose NULL share rose by more than 5 points; not compared: live 0, staging 50 rows over the interval, fewer than 100',
    });
  });
});

describe('driftChecks in the gate', () => {
  it('adds nothing when no drift is declared', () => {
    expect(driftChecks(undefined, [chunk(0, 200, 1)], [])).toEqual({ checks: [], chunks: [], columns: [] });
  });

  it('blocks the publish on a failed check of severity block and shows the chunks and columns in the alert; warn publishes', () => {
    const drift = driftChecks(
      { rowCount: rule, nullRate: { maxIncreasePoints: 5, minRows: 100, severity: 'warn' } },
      [chunk(0, 200, 200), chunk(1, 200, 60)],
      [{ column: 'amount', stagingNulls: 200, stagingRows: 260, liveNulls: 0, liveRows: 400 }],
    );
    const counts = [0, 1].map((index) => ({
      index,
      start: `2026-01-0${index + 1} 00:00:00`,
      status: 'DONE',
      recordedRows: 10,
      sourceRows: 10,
      stagingRows: 10,
    }));
    const result = reconcile(counts, { outsideInterval: 0, duplicateKeys: 0 }, false, ['order_id'], undefined, undefined, [], drift);

    expect(result.passed).toBe(false);
    expect(result.warnings!.map((c) => c.check)).toEqual(['live_null_rate_drift']);
    const text = describeFailure('b1', result);
    expect(text).toContain('1 check(s) failed for batch b1:');
    expect(text).toContain('Chunks whose row count drifted from live (1 of 1, severity block):');
    expect(text).toContain('│     1 │ 2026-01-02 00:00:00 │       200 │           60 │ -70.0% │');
    expect(text).toContain('Columns whose NULL share rose against live (1, severity warn):');
    expect(text).toContain('│ amount │      0.0% │        76.9% │ +76.9 points │');
    expect(text).not.toContain('Declared checks that failed');
    expect(driftFailureText({ checks: [], chunks: [], columns: [] })).toEqual([]);
    expect(isDriftCheck({ check: 'live_row_count_drift' })).toBe(true);
  });
});

describe('drift columns', () => {
  const live = [
    { name: 'order_id', dataType: 'bigint' },
    { name: 'ordered_at', dataType: 'timestamp without time zone' },
    { name: 'amount', dataType: 'numeric' },
  ];

  it('compares the declared columns, else every loaded column; none without nullRate', () => {
    expect(nullRateColumns(pipelineWith({ checks: { drift: { nullRate: { columns: ['amount'], maxIncreasePoints: 5 } } } }), ['order_id', 'amount'])).toEqual([
      'amount',
    ]);
    expect(nullRateColumns(pipelineWith({ checks: { drift: { nullRate: { maxIncreasePoints: 5 } } } }), ['order_id', 'amount'])).toEqual([
      'order_id',
      'amount',
    ]);
    expect(nullRateColumns(pipelineWith({ checks: { drift: { rowCount: { maxDecreasePct: 5 } } } }), ['order_id'])).toEqual([]);
  });

  it('runs no drift check in a migration batch, which copies live itself', () => {
    const pipeline = pipelineWith({ checks: { drift: { nullRate: { maxIncreasePoints: 5 } } } });
    expect(driftOf(pipeline)).toEqual(pipeline.checks.drift);
    const migrating = { ...pipeline, migrating: { columns: ['order_id', 'ordered_at', 'amount', 'note'], from: ['order_id', 'ordered_at', 'amount', 'note'] } };
    expect(driftOf(migrating)).toBeUndefined();
    expect(nullRateColumns(migrating, ['order_id', 'note'])).toEqual([]);
  });

  it('refuses in Plan a NULL-rate column the live table lacks, naming the pipeline and the check', () => {
    expect(() => checkDriftColumns(pipelineWith({ checks: { drift: { nullRate: { columns: ['amount'], maxIncreasePoints: 5 } } } }), live)).not.toThrow();
    const error = errorOf(() => checkDriftColumns(pipelineWith({ checks: { drift: { nullRate: { columns: ['discount'], maxIncreasePoints: 5 } } } }), live));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toBe(
      'pipeline orders: check live_null_rate_drift (checks.drift.nullRate.columns) names discount, which is not a column of analytics.orders: name a column of the live table or remove it',
    );
  });
});
