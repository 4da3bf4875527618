import { describe, expect, it } from 'vitest';
import { type FactRow, liveTableFacts } from '../../../../domain/publish/dependents.ts';
import { dependentsFacts } from '../../../../domain/publish/sql/swap.ts';
import { type RollbackTarget, resolveRollback } from '../../../../domain/rollback/rollback.ts';
import { publicationHistory, rollbackBatch, rollbackState, swapRollback } from '../../../../domain/rollback/sql/rollback.ts';
import { itIsASafeSingleStatement, NOW, pipeline } from '../../sql/support.ts';

const fact = (kind: string, name: string, detail = '', extra = ''): FactRow => ({ kind, name, detail, extra, fact: `${kind}|${name}|${detail}|${extra}` });
const facts = liveTableFacts([
  fact('user', 'IAMR:steps'),
  fact('grant', 'user:analyst', 'SELECT'),
  fact('view', 'reporting.v', ' SELECT order_id FROM analytics.orders;', 'IAMR:steps'),
]);
const target = resolveRollback(
  pipeline,
  undefined,
  [
    {
      seq: 1,
      batchId: 'aaaaaaaaaaaaaaaa',
      publishedAt: '2026-01-01',
      oldVersionTable: 'analytics.orders__prev_aaaaaaaaaaaaaaaa',
      dropped: false,
      restored: false,
    },
    {
      seq: 2,
      batchId: 'bbbbbbbbbbbbbbbb',
      publishedAt: '2026-01-02',
      oldVersionTable: 'analytics.orders__prev_bbbbbbbbbbbbbbbb',
      dropped: false,
      restored: false,
    },
  ],
  undefined,
) as RollbackTarget;

describe('single statements of a rollback', () => {
  itIsASafeSingleStatement([
    ['publicationHistory', publicationHistory('orders')],
    ['rollbackBatch', rollbackBatch('orders', 'aaaaaaaaaaaaaaaa')],
    ['rollbackState', rollbackState('orders', 2)],
  ]);
});

describe('swapRollback', () => {
  const swap = swapRollback(pipeline, target, NOW, { facts, factsQuery: dependentsFacts('analytics', 'orders', target.restoreTable) }, 5_000);
  const at = (pattern: RegExp) => swap.findIndex((sql) => pattern.test(sql));

  it("takes the locks of a publish, the restored version in staging's place, then guards, renames, re-applies and records", () => {
    expect(swap.slice(0, 6)).toEqual([
      'SET LOCAL statement_timeout TO 5000',
      'LOCK "analytics"."orders__prev_bbbbbbbbbbbbbbbb"',
      'ALTER TABLE "reporting"."v" OWNER TO "IAMR:steps"',
      'LOCK "analytics"."orders"',
      'LOCK "atomic_publish".publications',
      'SET LOCAL statement_timeout TO 0',
    ]);
    expect(swap[6]).toBe(`CALL "atomic_publish".assert_rollback('orders', 2, 2)`);
    expect(swap[7]).toMatch(/^CALL "atomic_publish".assert_catalog_unchanged\(/);
    expect(swap[8]).toBe(`CALL "atomic_publish".capture_views('analytics', 'orders')`);
    expect(swap[9]).toBe('ALTER TABLE "analytics"."orders" RENAME TO "orders__rb_bbbbbbbbbbbbbbbb"');
    expect(swap[10]).toBe('ALTER TABLE "analytics"."orders__prev_bbbbbbbbbbbbbbbb" RENAME TO "orders"');
    expect(swap[11]).toBe('CALL "atomic_publish".recreate_views()');
    expect(at(/^GRANT SELECT ON TABLE "analytics"\."orders" TO "analyst"$/)).toBeGreaterThan(11);
  });

  it('records the batch now live, the publication rolled back and the version restored', () => {
    const insert = swap.find((sql) => sql.startsWith('INSERT INTO "atomic_publish".publications'))!;
    expect(insert).toContain('interval_end, restatement, rollback_of)');
    // A rollback is no restatement: its event says none.
    expect(insert).toMatch(/\(SELECT interval_end FROM "atomic_publish"\.batches WHERE batch_id = 'aaaaaaaaaaaaaaaa'\), NULL, 2$/m);
    expect(insert).toContain(`'aaaaaaaaaaaaaaaa'`);
    expect(insert).toContain(`'analytics.orders__rb_bbbbbbbbbbbbbbbb'`);
    expect(swap.slice(-2)).toEqual([
      `UPDATE "atomic_publish".publications SET restored_at = CAST('2026-03-15 10:20:30.456' AS timestamp) WHERE pipeline = 'orders' AND seq = 2`,
      `UPDATE "atomic_publish".publications SET rolled_back_at = CAST('2026-03-15 10:20:30.456' AS timestamp) WHERE pipeline = 'orders' AND seq = 2`,
    ]);
    for (const sql of swap) expect(sql).not.toMatch(/CASCADE|DROP/i);
  });
});
