import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { dropRetired } from '../../../../domain/cleanup/sql/cleanup.ts';
import { ValidationError } from '../../../../domain/errors.ts';
import { carryOverCorrections, dependentViewProblems, type FactRow, liveTableFacts } from '../../../../domain/publish/dependents.ts';
import { batchState, carryOverStatements, dependentsFacts, reapplyStatements, swapPublish } from '../../../../domain/publish/sql/swap.ts';
import { MAX_BATCH_STATEMENTS, MAX_SQL_BYTES } from '../../../../domain/sql/statement.ts';
import { batch, batchId, itIsASafeSingleStatement, NOW, pipeline, previous, staging } from '../../sql/support.ts';

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

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

  it('bounds its lock waits only, locks staging, live and then publications, guards, renames live away, renames staging in, records the publication, attempt and batch, in that order', () => {
    const expected = [
      /^SET LOCAL statement_timeout TO 5000$/,
      new RegExp(`^LOCK "analytics"\\."${staging}"$`),
      /^LOCK "analytics"\."orders"$/,
      /^LOCK "atomic_publish"\.publications$/,
      /^SET LOCAL statement_timeout TO 0$/,
      new RegExp(`^CALL "atomic_publish"\\.assert_publishable\\('orders', '${batchId}', 2, 'analytics', '${staging}'\\)$`),
      new RegExp(
        `^CALL "atomic_publish"\\.assert_catalog_unchanged\\('SELECT kind, .*', '${NO_FACTS.fingerprint}', 'the grants, defaults, comments or views of analytics.orders'\\)$`,
      ),
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
    expect(check, names(statements).join('\n')).toBe(at(statements, 'CALL "atomic_publish".assert_catalog_unchanged(') + 1);
    expect(check).toBeGreaterThan(at(statements, 'LOCK "analytics"."orders"'));
    expect(check).toBeLessThan(at(statements, 'ALTER TABLE "analytics"."orders" RENAME'));
    expect(statements[check]).toContain(`'10:42')`);
    // A scan, not a lock wait: the bound is off from the last lock to the commit.
    expect(statements.filter((sql) => sql.startsWith('SET LOCAL statement_timeout'))).toEqual([
      'SET LOCAL statement_timeout TO 5000',
      'SET LOCAL statement_timeout TO 0',
    ]);
    expect(statements.indexOf('SET LOCAL statement_timeout TO 0')).toBe(at(statements, 'LOCK "atomic_publish".publications') + 1);
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
    row('column_grant', 'role:bi_reader', 'SELECT', 'amount'),
    row('column_grant', 'role:bi_reader', 'SELECT', 'order_id'),
    row('column_grant', 'user:AWSIDC:alice@example.com', 'SELECT', 'amount'),
    row('column_grant', 'user:AWSIDC:alice@example.com', 'SELECT', 'order_id'),
    row('comment', '', md5('Order lines,\none row per line \\ at most')),
    row('comment', 'amount', md5('in EUR')),
    row('default', 'quantity', '1'),
    row('grant', 'group:finance', 'SELECT'),
    row('grant', 'public', 'SELECT'),
    row('grant', 'role:bi_reader', 'SELECT'),
    row('grant', 'user:Mixed-Case "Name"', 'SELECT'),
    row('grant', 'user:analyst', 'INSERT', 'admin'),
    row('grant', 'user:analyst', 'SELECT', 'admin'),
    row('staging_column', 'amount'),
    row('staging_column', 'order_id'),
    row('staging_column', 'quantity'),
    row('user', 'IAMR:steps'),
    row('view', 'reporting.big_orders', `${md5('SELECT ...')}:67`, 'IAMR:steps'),
    row('view_column', 'reporting.big_orders', 'amount'),
    row('view_column', 'reporting.big_orders', 'order_id'),
  ]);

  it('grants each privilege to all its grantees at once, of any name Redshift allows, column grants per column set; defaults came with staging', () => {
    expect(reapplyStatements(pipeline, facts)).toEqual([
      'GRANT SELECT ON TABLE "analytics"."orders" TO GROUP "finance", PUBLIC, ROLE "bi_reader", "Mixed-Case ""Name"""',
      'GRANT INSERT ON TABLE "analytics"."orders" TO "analyst" WITH GRANT OPTION',
      'GRANT SELECT ON TABLE "analytics"."orders" TO "analyst" WITH GRANT OPTION',
      'GRANT SELECT ("amount", "order_id") ON TABLE "analytics"."orders" TO ROLE "bi_reader", "AWSIDC:alice@example.com"',
    ]);
    expect(dependentViewProblems('analytics.orders', facts)).toBeUndefined();
  });

  it('copies comments and re-creates views inside the warehouse: no text of theirs in the swap, whatever it holds', () => {
    const swap = swapPublish(pipeline, batch, previous, NOW, facts, FACTS_QUERY, 5_000);
    const at = (prefix: string) => swap.findIndex((sql) => sql.startsWith(prefix));
    const renames = at('ALTER TABLE "analytics"."orders" RENAME');
    expect(at(`CALL "atomic_publish".capture_views('analytics', 'orders')`)).toBe(renames - 1);
    expect(swap[renames + 2]).toBe('CALL "atomic_publish".recreate_views()');
    expect(swap[renames + 3]).toBe(`CALL "atomic_publish".copy_comments('analytics', '${previous}', 'orders')`);
    expect(swap.join('\n')).not.toMatch(/COMMENT ON|CREATE OR REPLACE VIEW|in EUR/);
  });

  it('without views or comments, calls neither procedure', () => {
    const swap = swapPublish(pipeline, batch, previous, NOW, NO_FACTS, FACTS_QUERY, 5_000).join('\n');
    expect(swap).not.toMatch(/capture_views|recreate_views|copy_comments/);
  });

  it('attaches each RLS policy to all its grantees, turns RLS on, and attaches each masking policy with its columns and priority', () => {
    const secured = liveTableFacts(
      [row('staging_column', 'amount'), row('staging_column', 'order_id'), row('user', 'IAMR:steps')],
      [
        row('masking', 'mask_amount', 'role:analyst', '20|["amount"]|["amount"]'),
        row('masking', 'mask_gone', 'public:', '10|["gone"]|["gone"]'),
        row('rls', 'own_region', 'role:analyst'),
        row('rls', 'own_region', 'user:bob'),
        row('rls_on', '', '', ''),
      ],
    );
    expect(reapplyStatements(pipeline, secured)).toEqual([
      'ATTACH RLS POLICY "own_region" ON TABLE "analytics"."orders" TO ROLE "analyst", "bob"',
      'ALTER TABLE "analytics"."orders" ROW LEVEL SECURITY ON',
      'ATTACH MASKING POLICY "mask_amount" ON "analytics"."orders" ("amount") USING ("amount") TO ROLE "analyst" PRIORITY 20',
    ]);
    expect(secured.policiesRead).toBe(true);
    expect(liveTableFacts([row('user', 'IAMR:steps')]).policiesRead).toBe(false);
  });

  it("sets no grant on a column the incoming table lacks (a migration's new table, or the version a rollback restores past one)", () => {
    const lacking = liveTableFacts([
      row('column_grant', 'user:bob', 'SELECT', 'amount'),
      row('default', 'quantity', '1'),
      row('staging_column', 'order_id'),
      row('user', 'IAMR:steps'),
    ]);
    expect(reapplyStatements(pipeline, lacking)).toEqual([]);
  });

  it('refuses a view reading a column the new table lacks, naming both', () => {
    const lacking = liveTableFacts([
      ...['amount'].map((c) => row('staging_column', c)),
      row('user', 'IAMR:steps'),
      row('view', 'reporting.big_orders', 'x:10', 'IAMR:steps'),
      row('view_column', 'reporting.big_orders', 'order_id'),
    ]);
    expect(dependentViewProblems('analytics.orders', lacking)).toContain(
      'view reporting.big_orders reads column order_id of analytics.orders, which the new table lacks',
    );
  });

  it('refuses a view whose definition a varchar cannot hold, before anything is written', () => {
    const long = liveTableFacts([row('user', 'IAMR:steps'), row('view', 'reporting.v', 'x:70000', 'IAMR:steps')]);
    expect(dependentViewProblems('analytics.orders', long)).toContain('view reporting.v has a definition of 70000 bytes');
  });

  it('refuses a view another user owns, saying how to hand it over', () => {
    const foreign = liveTableFacts([row('user', 'IAMR:steps'), row('view', 'reporting.v', 'x:8', 'alice')]);
    expect(dependentViewProblems('analytics.orders', foreign)).toContain('view reporting.v is owned by alice, not by "IAMR:steps"');
  });

  it('locks the views before the live table, as their readers do', () => {
    const swap = swapPublish(pipeline, batch, previous, NOW, facts, FACTS_QUERY, 5_000);
    expect(swap[2]).toBe('ALTER TABLE "reporting"."big_orders" OWNER TO "IAMR:steps"');
    expect(swap.indexOf('LOCK "analytics"."orders"')).toBe(3);
  });

  it('stays one transaction within the Data API limits however many grantees, columns and comments the table has', () => {
    const many = liveTableFacts([
      row('user', 'IAMR:steps'),
      ...Array.from({ length: 2_000 }, (_, i) => row('grant', `user:u${String(i).padStart(4, '0')}`, 'SELECT')),
      ...Array.from({ length: 300 }, (_, i) => row('comment', `c${i}`, md5(String(i)))),
      ...Array.from({ length: 300 }, (_, i) => row('column_grant', 'role:reader', 'SELECT', `c${i}`)),
      ...Array.from({ length: 300 }, (_, i) => row('staging_column', `c${i}`)),
      ...Array.from({ length: 3 }, (_, i) => row('view', `reporting.v${i}`, 'x:60000', 'IAMR:steps')),
    ]);
    const swap = swapPublish(pipeline, batch, previous, NOW, many, FACTS_QUERY, 5_000);
    expect(swap.length).toBeLessThanOrEqual(MAX_BATCH_STATEMENTS);
    expect(swap.reduce((sum, sql) => sum + Buffer.byteLength(sql), 0)).toBeLessThanOrEqual(MAX_SQL_BYTES);
  });

  it('fingerprints the facts in order: any change changes it', () => {
    expect(facts.fingerprint).toMatch(/^[0-9a-f]{32}$/);
    expect(liveTableFacts([row('user', 'IAMR:steps')]).fingerprint).not.toEqual(liveTableFacts([row('user', 'IAMR:other')]).fingerprint);
  });

  it('reads the facts in one line of SQL the swap can pass to its catalog check, no text of unbounded length among them', () => {
    expect(FACTS_QUERY.sql).not.toMatch(/[\n\r]/);
    expect(FACTS_QUERY.sql).toContain('svv_relation_privileges');
    expect(FACTS_QUERY.sql).toContain('md5(d.description)');
    expect(FACTS_QUERY.sql).toContain('md5(definition)');
  });
});

describe('carrying over what changed on the old version while the swap waited', () => {
  const APPLIED = [
    row('comment', '', md5('Order lines')),
    row('default', 'quantity', '1'),
    row('grant', 'role:bi_reader', 'INSERT'),
    row('grant', 'role:bi_reader', 'SELECT'),
    row('grant', 'user:analyst', 'SELECT'),
    row('user', 'IAMR:steps'),
    row('view', 'analytics.v', 'x:8', 'IAMR:steps'),
  ];
  const applied = liveTableFacts(APPLIED);

  it('finds nothing when the old version has what the swap carried over', () => {
    expect(carryOverCorrections(applied, applied)).toBeUndefined();
  });

  it('grants what was granted, revokes what was revoked, copies changed comments, and leaves the views and defaults alone', () => {
    // The old version after the swap: comment and default changed, INSERT revoked, grants added; views are not its.
    const [comment, , , select, analyst, user] = APPLIED;
    const oldVersion = liveTableFacts([
      { ...comment!, detail: md5('Order lines, one per row') },
      row('default', 'quantity', '2'),
      select!,
      analyst!,
      user!,
      row('grant', 'user:late', 'SELECT'),
      row('column_grant', 'user:late', 'SELECT', 'amount'),
    ]);
    const corrections = carryOverCorrections(applied, oldVersion)!;
    expect(carryOverStatements(pipeline, corrections, previous)).toEqual([
      'REVOKE INSERT ON TABLE "analytics"."orders" FROM ROLE "bi_reader"',
      'GRANT SELECT ON TABLE "analytics"."orders" TO "late"',
      'GRANT SELECT ("amount") ON TABLE "analytics"."orders" TO "late"',
      `CALL "atomic_publish".copy_comments('analytics', '${previous}', 'orders')`,
    ]);
  });
});
