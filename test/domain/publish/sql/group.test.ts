import { describe, expect, it } from 'vitest';
import type { BatchRef } from '../../../../domain/batch.ts';
import { ValidationError } from '../../../../domain/errors.ts';
import { previousVersionTableFor, stagingTableFor } from '../../../../domain/plan/plan.ts';
import { type FactRow, liveTableFacts } from '../../../../domain/publish/dependents.ts';
import { GROUP_SWAP_SHARED_STATEMENTS, groupSwapPublish, MEMBER_SWAP_MIN_STATEMENTS, type MemberSwap } from '../../../../domain/publish/sql/group.ts';
import { decodeStatements } from '../../../../domain/publish/sql/one-transaction.ts';
import { dependentsFacts } from '../../../../domain/publish/sql/swap.ts';
import { MAX_BATCH_STATEMENTS } from '../../../../domain/sql/statement.ts';
import { pipelineWith } from '../../fixtures.ts';
import { NOW } from '../../sql/support.ts';

function row(kind: string, name: string, detail = '', extra = ''): FactRow {
  return { kind, name, detail, extra, fact: [kind, name, detail, extra].join('|') };
}

/** A member named `name` publishing `analytics.<table>`, its live table's facts as given (none read for a member rewritten in place). */
function member(name: string, table: string, rows: FactRow[] = [], snapshotReaders: 'wait' | 'in-place' = 'wait'): MemberSwap {
  const pipeline = pipelineWith({ name, target: { schema: 'analytics', table }, snapshotReaders });
  const batchId = `b_${name}`;
  const batch: BatchRef = {
    pipeline: name,
    batchId,
    specHash: pipeline.specHash,
    liveTable: `analytics.${table}`,
    from: '2026-01-01T00:00:00.000Z',
    to: '2026-01-02T00:00:00.000Z',
    stagingTable: stagingTableFor(pipeline, batchId),
    columns: ['order_id'],
    basePublication: 1,
    // What Plan saw of the live table: the swap checks it (one statement per member).
    live: { columns: ['order_id bigint'], rows: 0, checksum: '0' },
  };
  const previousVersionTable = previousVersionTableFor(pipeline, batchId);
  if (snapshotReaders === 'in-place') return { pipeline, batch, previousVersionTable };
  return {
    pipeline,
    batch,
    previousVersionTable,
    dependents: { facts: liveTableFacts([row('user', 'IAMR:steps'), ...rows]), factsQuery: dependentsFacts('analytics', table, batch.stagingTable) },
  };
}

const kinds = (statements: readonly string[]) =>
  statements.map((sql) => {
    if (sql.startsWith('SET LOCAL')) return 'timeout';
    if (sql.startsWith('LOCK "atomic_publish"')) return 'lock publications';
    if (sql.startsWith('LOCK')) return `lock ${sql.split('.')[1]!.replace(/"/g, '')}`;
    if (sql.includes('OWNER TO')) return `lock view ${sql.split('.')[1]!.split('"')[1]}`;
    if (sql.includes('assert_publishable')) return `guard ${sql.split("'")[1]}`;
    if (sql.includes('assert_catalog_unchanged')) return `catalog ${sql.split('analytics.').at(-1)!.split("'")[0]}`;
    if (sql.includes('assert_live_unchanged')) return `out-of-band ${sql.split("'analytics.")[1]!.split("'")[0]}`;
    if (sql.includes(' RENAME TO ')) return `rename ${sql.split('.')[1]!.split('"')[1]}`;
    if (sql.includes('capture_views')) return `capture ${sql.split("'")[3]}`;
    if (sql.includes('recreate_views')) return 'views';
    if (sql.startsWith('GRANT')) return `grant ${sql.split('.')[1]!.split('"')[1]}`;
    if (sql.includes('INSERT INTO "atomic_publish".publications')) return `publication ${sql.split("'")[1]}`;
    if (sql.startsWith('CREATE TABLE')) return `keep ${sql.split('(LIKE "analytics".')[1]!.replace(/"|\)/g, '')}`;
    if (sql.startsWith('INSERT INTO "analytics"') && sql.includes('__stg_')) return `insert ${sql.split('.')[1]!.split('"')[1]}`;
    if (sql.startsWith('INSERT INTO "analytics"')) return `copy ${sql.split(' FROM "analytics".')[1]!.split('"')[1]}`;
    if (sql.startsWith('DELETE FROM')) return `delete ${sql.split('.')[1]!.split('"')[1]}`;
    if (sql.includes('batch_attempts')) return 'attempt';
    return 'batch';
  });

describe('groupSwapPublish', () => {
  it('takes every lock first in one global order, guards and checks every member (catalog, out-of-band) before any rename, then renames, re-applies and records', () => {
    // Listed out of order: members go by name, live tables by their qualified name.
    const statements = groupSwapPublish('sales', [member('orders', 'a_orders'), member('customers', 'z_customers')], NOW, 5_000);

    expect(kinds(statements)).toEqual([
      'timeout',
      'lock z_customers__stg_b_customers',
      'lock a_orders__stg_b_orders',
      'lock a_orders',
      'lock z_customers',
      'lock publications',
      'timeout',
      'guard customers',
      'guard orders',
      'catalog z_customers',
      'catalog a_orders',
      'out-of-band z_customers',
      'out-of-band a_orders',
      'rename z_customers',
      'rename z_customers__stg_b_customers',
      'rename a_orders',
      'rename a_orders__stg_b_orders',
      'publication customers',
      'attempt',
      'batch',
      'publication orders',
      'attempt',
      'batch',
    ]);
    expect(statements).toHaveLength(GROUP_SWAP_SHARED_STATEMENTS + 2 * MEMBER_SWAP_MIN_STATEMENTS);
    // One published_at for every member.
    const times = statements.filter((sql) => sql.includes('INSERT INTO "atomic_publish".publications')).map((sql) => sql.match(/'2026-03-15[^']*'/)![0]);
    expect(new Set(times).size).toBe(1);
  });

  it('locks the views of every member before any live table, captures them before any rename, and re-creates them once, after every rename', () => {
    const view = (table: string) => row('view', 'reporting.sales', `${table}:60`, 'IAMR:steps');
    const statements = groupSwapPublish(
      'sales',
      [member('orders', 'orders', [view('orders')]), member('customers', 'customers', [view('customers'), row('grant', 'user:bi', 'SELECT')])],
      NOW,
      5_000,
    );
    const k = kinds(statements);

    expect(k.filter((s) => s === 'lock view sales')).toHaveLength(1);
    expect(k.indexOf('lock view sales')).toBeLessThan(k.indexOf('lock customers'));
    expect(k.filter((s) => s === 'views')).toHaveLength(1);
    expect(k.indexOf('views')).toBeGreaterThan(k.lastIndexOf('rename orders__stg_b_orders'));
    expect(k.filter((s) => s.startsWith('capture '))).toEqual(['capture customers', 'capture orders']);
    expect(k.indexOf('capture orders')).toBeLessThan(k.indexOf('rename customers'));
    expect(k.indexOf('grant customers')).toBeGreaterThan(k.lastIndexOf('rename orders__stg_b_orders'));
  });

  it('locks the views of every member in name order, whichever member reads them', () => {
    const view = (name: string) => row('view', `reporting.${name}`, 'SELECT 1', 'IAMR:steps');
    const statements = groupSwapPublish(
      'sales',
      [member('orders', 'orders', [view('a_view')]), member('customers', 'customers', [view('b_view')])],
      NOW,
      5_000,
    );

    expect(kinds(statements).filter((k) => k.startsWith('lock view'))).toEqual(['lock view a_view', 'lock view b_view']);
  });

  it('packs the carry-over of a group swap over 40 statements into run_statements, in order, within one batch', () => {
    // Declared keys are one statement each (the grants of a privilege are one, whatever the grantees).
    const keys = Array.from({ length: 12 }, (_, i) => row('key', `k${String(i).padStart(2, '0')}`, 'UNIQUE (order_id)', 'u'));
    const members = [member('orders', 'orders', keys), member('customers', 'customers', keys)];
    const unpacked = GROUP_SWAP_SHARED_STATEMENTS + 2 * (MEMBER_SWAP_MIN_STATEMENTS + 12);
    expect(unpacked).toBeGreaterThan(MAX_BATCH_STATEMENTS);

    const statements = groupSwapPublish('sales', members, NOW, 5_000);

    expect(statements.length).toBeLessThanOrEqual(MAX_BATCH_STATEMENTS);
    const calls = statements.filter((s) => s.includes('.run_statements('));
    expect(calls).toHaveLength(1);
    const packed = decodeStatements(calls[0]!.split("run_statements('")[1]!.slice(0, -2).replaceAll("''", "'"));
    expect(packed).toEqual(
      ['customers', 'orders'].flatMap((t) => keys.map((k) => `ALTER TABLE "analytics"."${t}" ADD CONSTRAINT "${k.name}" UNIQUE (order_id)`)),
    );
    // After every rename, before the records.
    expect(statements.indexOf(calls[0]!)).toBeGreaterThan(statements.findLastIndex((s) => s.includes(' RENAME TO ')));
    expect(statements.indexOf(calls[0]!)).toBeLessThan(statements.findIndex((s) => s.includes('INSERT INTO "atomic_publish".publications')));
  });

  it('refuses a group swap still over the Data API limit of 40 statements, naming what each member needs', () => {
    // Each table whose key references a member is locked, one statement each: no procedure takes those.
    const referencing = (of: string) =>
      Array.from({ length: 12 }, (_, i) =>
        row('referencing_key', `analytics.${of}_ref${String(i).padStart(2, '0')}`, `fk${i}`, `FOREIGN KEY (order_id) REFERENCES analytics.${of}(order_id)`),
      );
    const members = [member('orders', 'orders', referencing('orders')), member('customers', 'customers', referencing('customers'))];
    let error: unknown;
    try {
      groupSwapPublish('sales', members, NOW, 5_000);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toContain(`over the Data API's ${MAX_BATCH_STATEMENTS} statements`);
    expect((error as Error).message).toContain('statements per member: customers 46, orders 46; 3 shared). Nothing was published. Split the group');
  });

  it('rewrites the rows of a member with snapshotReaders in-place under the group locks: its live table neither locked, checked nor renamed', () => {
    const statements = groupSwapPublish('sales', [member('orders', 'a_orders', [], 'in-place'), member('customers', 'z_customers')], NOW, 5_000);

    expect(kinds(statements)).toEqual([
      'timeout',
      'lock z_customers__stg_b_customers',
      'lock a_orders__stg_b_orders',
      'lock z_customers',
      'lock publications',
      'timeout',
      'guard customers',
      'guard orders',
      'catalog z_customers',
      'out-of-band z_customers',
      'out-of-band a_orders',
      'rename z_customers',
      'rename z_customers__stg_b_customers',
      'keep a_orders',
      'copy a_orders',
      'delete a_orders',
      'insert a_orders',
      'publication customers',
      'attempt',
      'batch',
      'publication orders',
      'attempt',
      'batch',
    ]);
    expect(statements).toHaveLength(GROUP_SWAP_SHARED_STATEMENTS + 2 * MEMBER_SWAP_MIN_STATEMENTS);
    // Every live row replaced, the old ones kept whole for a rollback.
    expect(statements.find((sql) => sql.startsWith('DELETE FROM'))).toBe('DELETE FROM "analytics"."a_orders" WHERE TRUE');
  });
});
