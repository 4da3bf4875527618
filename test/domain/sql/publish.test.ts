import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../domain/errors.ts';
import { dropRetired } from '../../../domain/sql/cleanup.ts';
import { carryOverCorrections, dependentViewProblems, type FactRow, liveTableFacts } from '../../../domain/dependents.ts';
import { batchState, carryOverStatements, dependentsFacts, reapplyStatements, swapPublish } from '../../../domain/sql/publish.ts';
import { batch, batchId, itIsASafeSingleStatement, NOW, pipeline, previous, staging } from './support.ts';

describe('single statements of Publish', () => {
  itIsASafeSingleStatement([['batchState', batchState(batchId)]]);
});

function row(kind: string, name: string, detail = '', extra = ''): FactRow {
  return { kind, name, detail, extra, fact: [kind, name, detail, extra].join('|') };
}

const NO_FACTS = liveTableFacts([row('user', 'IAMR:steps')]);
const FACTS_QUERY = dependentsFacts('analytics', 'orders', staging);

describe('swapPublish', () => {
  const statements = swapPublish(pipeline, batch, previous, NOW, NO_FACTS, FACTS_QUERY, 5_000);

  it('bounds its waits, locks staging, live and then publications, guards, renames live away, renames staging in, records the publication, attempt and batch, in that order', () => {
    const expected = [
      /^SET LOCAL statement_timeout TO 5000$/,
      new RegExp(`^LOCK "analytics"\\."${staging}"$`),
      /^LOCK "analytics"\."orders"$/,
      /^LOCK "atomic_publish"\.publications$/,
      new RegExp(`^CALL "atomic_publish"\\.assert_publishable\\('orders', '${batchId}', 2, 'analytics', '${staging}'\\)$`),
      new RegExp(`^CALL "atomic_publish"\\.assert_catalog_unchanged\\('SELECT kind, .*', '${NO_FACTS.fingerprint}', 'the grants, defaults, comments or views of analytics.orders'\\)$`),
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
    expect(() => swapPublish(pipeline, batch, 'prev"; DROP TABLE x; --', NOW, NO_FACTS, FACTS_QUERY, 5_000)).toThrow(ValidationError);
  });
});

describe('swapPublish with the live baseline Plan recorded', () => {
  const live = { columns: ['order_id bigint', 'ordered_at timestamp without time zone', 'amount numeric(12,2)'], rows: 10, checksum: '42' };
  const names = (statements: string[]) => statements.map((sql) => sql.slice(0, 60));
  const at = (statements: string[], prefix: string) => statements.findIndex((sql) => sql.startsWith(prefix));

  it('checks the live table under its lock, after the guard and the catalog check, before the renames', () => {
    const statements = swapPublish(pipeline, { ...batch, live }, previous, NOW, NO_FACTS, FACTS_QUERY, 5_000);
    const check = at(statements, 'CALL "atomic_publish".assert_live_unchanged(');
    expect(check, names(statements).join('\n')).toBe(at(statements, 'CALL "atomic_publish".assert_catalog_unchanged(') + 2);
    expect(check).toBeGreaterThan(at(statements, 'LOCK "analytics"."orders"'));
    expect(check).toBeLessThan(at(statements, 'ALTER TABLE "analytics"."orders" RENAME'));
    expect(statements[check]).toContain(`'10:42')`);
    // A scan, not a lock wait: without the lock-wait bound, which comes back after it.
    expect(statements[check - 1]).toBe('SET LOCAL statement_timeout TO 0');
    expect(statements[check + 1]).toBe('SET LOCAL statement_timeout TO 5000');
    expect(statements.some((sql) => sql.startsWith(`INSERT INTO "analytics"."${staging}"`))).toBe(false);
  });

  it('with expected writers carries their rows into staging before the renames and counts the published rows', () => {
    const statements = swapPublish(pipeline, { ...batch, live: { ...live, carryFrom: batch.to } }, previous, NOW, NO_FACTS, FACTS_QUERY, 5_000);
    const carry = at(statements, `INSERT INTO "analytics"."${staging}"`);
    expect(carry).toBe(at(statements, 'CALL "atomic_publish".assert_live_unchanged(') + 1);
    expect(carry).toBeLessThan(at(statements, 'ALTER TABLE "analytics"."orders" RENAME'));
    expect(statements.find((sql) => sql.startsWith('INSERT INTO "atomic_publish".publications'))).toContain('(SELECT COUNT(*) FROM "analytics"."orders")');
  });

  it('without a baseline (a batch planned before the check existed) compares nothing', () => {
    expect(swapPublish(pipeline, batch, previous, NOW, NO_FACTS, FACTS_QUERY, 5_000).join('\n')).not.toContain('assert_live_unchanged');
  });

  it('records the fingerprint staging had before the transaction on the publication it inserts, scanning nothing under the lock', () => {
    const plain = swapPublish(pipeline, { ...batch, live }, previous, NOW, NO_FACTS, FACTS_QUERY, 5_000);
    const watched = swapPublish(pipeline, { ...batch, live }, previous, NOW, NO_FACTS, FACTS_QUERY, 5_000, '7:1234');
    const record = at(watched, 'UPDATE "atomic_publish".publications SET live_columns');
    expect(record, names(watched).join('\n')).toBeGreaterThan(at(watched, 'INSERT INTO "atomic_publish".publications'));
    expect(watched[record]).toContain(`live_fingerprint = '7:1234'`);
    expect(watched[record]).toContain(`'order_id bigint;ordered_at timestamp without time zone;amount numeric(12,2)'`);
    expect(watched[record]).toContain('live_rows_before = CAST(NULL AS timestamp)');
    // One statement more than without the record, and no scan: every other statement is the same.
    expect(watched.filter((_, i) => i !== record)).toEqual(plain);
    expect(watched.join('\n')).not.toContain('record_live_fingerprint');
    expect(plain.join('\n')).not.toContain('live_fingerprint');

    // With expected writers, only the rows before the batch's end were fingerprinted: the record says so.
    const carrying = swapPublish(pipeline, { ...batch, live: { ...live, carryFrom: batch.to } }, previous, NOW, NO_FACTS, FACTS_QUERY, 5_000, '7:1234');
    expect(carrying[at(carrying, 'UPDATE "atomic_publish".publications SET live_columns')]).toMatch(
      new RegExp(`live_rows_before = CAST\\('${batch.to.slice(0, 10)} 00:00:00(\\.000)?' AS timestamp\\)`),
    );
  });
});

describe('what the new live table gets back', () => {
  const facts = liveTableFacts([
    row('comment', '', 'Order lines, one row per line'),
    row('comment', 'amount', 'in EUR'),
    row('default', 'quantity', '1'),
    row('grant', 'group:finance', 'SELECT'),
    row('grant', 'public', 'SELECT'),
    row('grant', 'role:bi_reader', 'SELECT'),
    row('grant', 'user:analyst', 'INSERT', 'admin'),
    row('grant', 'user:analyst', 'SELECT', 'admin'),
    row('staging_column', 'amount'),
    row('staging_column', 'order_id'),
    row('staging_column', 'quantity'),
    row('user', 'IAMR:steps'),
    row('view', 'reporting.big_orders', ' SELECT order_id, amount FROM analytics.orders WHERE amount > 100;', 'IAMR:steps'),
    row('view_column', 'reporting.big_orders', 'amount'),
    row('view_column', 'reporting.big_orders', 'order_id'),
  ]);

  it('grants each grantee its privileges, sets comments, and re-creates the views, in that order; defaults came with staging', () => {
    expect(reapplyStatements(pipeline, facts)).toEqual([
      'GRANT SELECT ON TABLE "analytics"."orders" TO GROUP "finance"',
      'GRANT SELECT ON TABLE "analytics"."orders" TO PUBLIC',
      'GRANT SELECT ON TABLE "analytics"."orders" TO ROLE "bi_reader"',
      'GRANT INSERT, SELECT ON TABLE "analytics"."orders" TO "analyst" WITH GRANT OPTION',
      `COMMENT ON TABLE "analytics"."orders" IS 'Order lines, one row per line'`,
      `COMMENT ON COLUMN "analytics"."orders"."amount" IS 'in EUR'`,
      'CREATE OR REPLACE VIEW "reporting"."big_orders" AS SELECT order_id, amount FROM analytics.orders WHERE amount > 100',
    ]);
    expect(dependentViewProblems('analytics.orders', facts)).toBeUndefined();
  });

  it('sets no default or comment on a column the incoming table lacks (a migration\'s new table, or the version a rollback restores past one)', () => {
    const lacking = liveTableFacts([row('comment', 'amount', 'in EUR'), row('default', 'quantity', '1'), row('staging_column', 'order_id'), row('user', 'IAMR:steps')]);
    expect(reapplyStatements(pipeline, lacking)).toEqual([]);
  });

  it('refuses a view reading a column the new table lacks, naming both', () => {
    const lacking = liveTableFacts([...['amount'].map((c) => row('staging_column', c)), row('user', 'IAMR:steps'),
      row('view', 'reporting.big_orders', 'SELECT order_id FROM analytics.orders', 'IAMR:steps'), row('view_column', 'reporting.big_orders', 'order_id')]);
    expect(dependentViewProblems('analytics.orders', lacking)).toContain('view reporting.big_orders reads column order_id of analytics.orders, which the new table lacks');
  });

  it('refuses a view another user owns, saying how to hand it over', () => {
    const foreign = liveTableFacts([row('user', 'IAMR:steps'), row('view', 'reporting.v', 'SELECT 1', 'alice')]);
    expect(dependentViewProblems('analytics.orders', foreign)).toContain('view reporting.v is owned by alice, not by "IAMR:steps"');
  });

  it('locks the views before the live table, as their readers do, and re-creates them after the renames', () => {
    const swap = swapPublish(pipeline, batch, previous, NOW, facts, FACTS_QUERY, 5_000);
    const at = (pattern: RegExp) => swap.findIndex((sql) => pattern.test(sql));
    expect(swap[2]).toBe('ALTER TABLE "reporting"."big_orders" OWNER TO "IAMR:steps"');
    expect(at(/^LOCK "analytics"\."orders"$/)).toBe(3);
    expect(at(/^CREATE OR REPLACE VIEW/)).toBeGreaterThan(at(new RegExp(`^ALTER TABLE "analytics"\\."${staging}" RENAME`)));
  });

  it('refuses a swap over the Data API limit of 40 statements', () => {
    const many = liveTableFacts([row('user', 'IAMR:steps'), ...Array.from({ length: 40 }, (_, i) => row('grant', `user:u${i}`, 'SELECT'))]);
    expect(() => swapPublish(pipeline, batch, previous, NOW, many, FACTS_QUERY, 5_000)).toThrow(/over the Data API's 40 statements/);
  });

  it('fingerprints the facts in order: any change changes it', () => {
    expect(facts.fingerprint).toMatch(/^[0-9a-f]{32}$/);
    expect(liveTableFacts([row('user', 'IAMR:steps')]).fingerprint).not.toEqual(liveTableFacts([row('user', 'IAMR:other')]).fingerprint);
  });

  it('reads the facts in one line of SQL the swap can pass to its catalog check', () => {
    expect(FACTS_QUERY.sql).not.toMatch(/[\n\r]/);
    expect(FACTS_QUERY.sql).toContain('svv_relation_privileges');
  });
});

describe('carrying over what changed on the old version while the swap waited', () => {
  const APPLIED = [
    row('comment', '', 'Order lines'),
    row('default', 'quantity', '1'),
    row('grant', 'role:bi_reader', 'INSERT'),
    row('grant', 'role:bi_reader', 'SELECT'),
    row('grant', 'user:analyst', 'SELECT'),
    row('user', 'IAMR:steps'),
    row('view', 'analytics.v', 'SELECT 1', 'IAMR:steps'),
  ];
  const applied = liveTableFacts(APPLIED);

  it('finds nothing when the old version has what the swap carried over', () => {
    expect(carryOverCorrections(applied, applied)).toBeUndefined();
  });

  it('grants what was granted, revokes what was revoked, sets changed comments, and leaves the views and defaults alone', () => {
    // The old version after the swap: comment and default changed, INSERT revoked, a grant added; views are not its.
    const [comment, , , select, analyst, user] = APPLIED;
    const oldVersion = liveTableFacts([
      { ...comment!, detail: 'Order lines, one per row' },
      row('default', 'quantity', '2'),
      select!,
      analyst!,
      user!,
      row('grant', 'user:late', 'SELECT'),
    ]);
    const corrections = carryOverCorrections(applied, oldVersion)!;
    expect(carryOverStatements(pipeline, corrections)).toEqual([
      'REVOKE INSERT ON TABLE "analytics"."orders" FROM ROLE "bi_reader"',
      'GRANT SELECT ON TABLE "analytics"."orders" TO "late"',
      `COMMENT ON TABLE "analytics"."orders" IS 'Order lines, one per row'`,
    ]);
  });
});
