import { describe, expect, it } from 'vitest';
import { viewVersionTableFor } from '../../../../domain/plan/plan.ts';
import { liveRelation, migrationSql, readLiveRelation, switchView, viewVersionProblem } from '../../../../domain/publish/sql/view.ts';
import { batch, batchId, NOW, pipeline, staging } from '../../sql/support.ts';

const rows = (facts: [string, string][]) => facts.map(([kind, name]) => ({ kind, name, fact: `${kind}|${name}` }));
const COLUMNS: [string, string][] = [
  ['column', '00001:order_id'],
  ['column', '00002:amount'],
];
const aView = (reads: string[]) =>
  readLiveRelation(rows([['user', 'IAMR:steps'], ['relkind', 'v'], ...COLUMNS, ...reads.map((r): [string, string] => ['reads', r])]));

describe('liveRelation', () => {
  it('reads the user, the kind, the columns in order and what a view reads', () => {
    expect(aView(['analytics.orders__v_initial'])).toMatchObject({
      user: 'IAMR:steps',
      relkind: 'v',
      columns: ['order_id', 'amount'],
      reads: ['analytics.orders__v_initial'],
    });
  });
});

describe('viewVersionProblem', () => {
  it('finds the one version table a live view reads', () => {
    expect(viewVersionProblem(pipeline, aView(['analytics.orders__v_initial']))).toEqual({ version: 'orders__v_initial' });
  });

  it('refuses a view over anything else, or over more than one table', () => {
    for (const reads of [['analytics.customers'], ['analytics.orders__v_a', 'analytics.orders__v_b'], []]) {
      const found = viewVersionProblem(pipeline, aView(reads));
      expect('problem' in found && found.problem).toContain('not exactly one version table analytics.orders__v_<batch id>');
    }
  });

  it('refuses a live table with the SQL that turns it into a view', () => {
    const table = readLiveRelation(rows([['user', 'IAMR:steps'], ['relkind', 'r'], ...COLUMNS]));
    const found = viewVersionProblem(pipeline, table);
    expect('problem' in found && found.problem).toContain(
      `ALTER TABLE "analytics"."orders" RENAME TO "orders__v_initial"; CREATE VIEW "analytics"."orders" AS SELECT "order_id", "amount" FROM "analytics"."orders__v_initial"`,
    );
  });

  it('refuses a missing live name', () => {
    const found = viewVersionProblem(pipeline, readLiveRelation(rows([['user', 'IAMR:steps']])));
    expect('problem' in found && found.problem).toContain('analytics.orders does not exist');
  });
});

describe('migrationSql', () => {
  it('is one transaction: the rename to the first version, the view over it', () => {
    expect(migrationSql(pipeline, ['order_id', 'amount'])).toEqual([
      'BEGIN',
      'ALTER TABLE "analytics"."orders" RENAME TO "orders__v_initial"',
      'CREATE VIEW "analytics"."orders" AS SELECT "order_id", "amount" FROM "analytics"."orders__v_initial"',
      'COMMIT',
    ]);
  });
});

describe('switchView', () => {
  const live = aView(['analytics.orders__v_initial']);
  const version = viewVersionTableFor(pipeline, batchId);
  const statements = switchView(pipeline, batch, {
    live,
    factsQuery: liveRelation('analytics', 'orders'),
    previousVersion: 'orders__v_initial',
    versionTable: version,
    now: NOW,
    lockWaitMs: 5_000,
  });

  it('bounds its waits, locks staging, the view and the publications, checks, renames only staging, replaces the view, records the old version', () => {
    const expected = [
      /^SET LOCAL statement_timeout TO 5000$/,
      new RegExp(`^LOCK "analytics"\\."${staging}"$`),
      /^ALTER TABLE "analytics"\."orders" OWNER TO "IAMR:steps"$/,
      /^LOCK "atomic_publish"\.publications$/,
      /^SET LOCAL statement_timeout TO 0$/,
      /^CALL "atomic_publish"\.assert_publishable\(/,
      new RegExp(`^CALL "atomic_publish"\\.assert_catalog_unchanged\\('SELECT kind, .*', '${live.fingerprint}', 'the view analytics.orders`),
      new RegExp(`^ALTER TABLE "analytics"\\."${staging}" RENAME TO "${version}"$`),
      new RegExp(`^CREATE OR REPLACE VIEW "analytics"\\."orders" AS SELECT "order_id", "amount" FROM "analytics"\\."${version}"$`),
      /^INSERT INTO "atomic_publish"\.publications .*'analytics\.orders__v_initial'/s,
      /^UPDATE "atomic_publish"\.batch_attempts /,
      /^UPDATE "atomic_publish"\.batches /,
    ];
    expect(statements).toHaveLength(expected.length);
    statements.forEach((sql, i) => expect(sql).toMatch(expected[i]!));
    expect(statements.filter((sql) => /^ALTER TABLE "analytics"\."orders" RENAME/.test(sql))).toEqual([]);
  });
});
