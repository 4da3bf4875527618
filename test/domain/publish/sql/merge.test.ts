import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../../domain/errors.ts';
import { intervalWriters } from '../../../../domain/publish/sql/intervals.ts';
import { mergeIntoLive } from '../../../../domain/publish/sql/merge.ts';
import { checkSql, endsTransaction } from '../../../../domain/redshift-sql/check.ts';
import { parseSql } from '../../../../domain/redshift-sql/postgres-grammar.ts';
import { pipelineWith } from '../../fixtures.ts';
import { batch, NOW, pipeline, previous, staging } from '../../sql/support.ts';

const merging = pipelineWith({ publishMode: 'merge', merge: { versionColumn: 'updated_at', softDeleteColumn: 'deleted' }, modifiedColumn: 'updated_at' });
const columns = { ...batch, columns: ['order_id', 'ordered_at', 'amount', 'updated_at', 'deleted'] };

describe('the merge transaction', () => {
  const statements = mergeIntoLive(merging, columns, previous, NOW, 5000);

  it('takes the replace-intervals lock order and guard, then copies, deletes and inserts without a time limit, and records the publication', () => {
    expect(statements.slice(0, 6)).toEqual([
      'SET LOCAL statement_timeout TO 5000',
      `LOCK "analytics"."${staging}"`,
      'LOCK "atomic_publish".publications',
      expect.stringMatching(/^CALL "atomic_publish"\.assert_publishable\('orders', /),
      'SET LOCAL statement_timeout TO 0',
      `CREATE TABLE "analytics"."${previous}" (LIKE "analytics"."orders")`,
    ]);
    expect(statements[6]).toMatch(new RegExp(`^INSERT INTO "analytics"\\."${previous}" \\("order_id", "ordered_at", "amount", "updated_at", "deleted"\\)`));
    expect(statements[7]).toMatch(/^DELETE FROM "analytics"\."orders" USING "analytics"\."orders__stg_[0-9a-f]{16}" AS s WHERE /);
    expect(statements[8]).toMatch(/^INSERT INTO "analytics"\."orders" \(/);
    expect(statements[9]).toMatch(/^INSERT INTO "atomic_publish"\.publications/);
    expect(statements).toHaveLength(12);
    // Once the locks are held, the work is not bounded again.
    expect(statements.filter((sql) => sql.startsWith('SET LOCAL statement_timeout'))).toEqual([
      'SET LOCAL statement_timeout TO 5000',
      'SET LOCAL statement_timeout TO 0',
    ]);
  });

  it('lets a staging row win only with a greater version (or against a live row without one), in the copy and the delete alike', () => {
    expect(statements[6]).toContain(
      'JOIN "analytics"."' + staging + '" AS s ON o."order_id" = s."order_id" AND (o."updated_at" IS NULL OR s."updated_at" > o."updated_at")',
    );
    expect(statements[7]).toContain('WHERE "orders"."order_id" = s."order_id" AND ("orders"."updated_at" IS NULL OR s."updated_at" > "orders"."updated_at")');
  });

  it('inserts the staging rows whose key live no longer holds, soft-deleted ones left out', () => {
    expect(statements[8]).toContain(`LEFT JOIN "analytics"."orders" AS o ON o."order_id" = s."order_id"`);
    expect(statements[8]).toContain('WHERE o."order_id" IS NULL AND NOT (s."deleted" IS TRUE)');
    const noSoftDelete = mergeIntoLive(pipelineWith({ publishMode: 'merge', merge: { versionColumn: 'updated_at' } }), columns, previous, NOW, 5000);
    expect(noSoftDelete[8]).toMatch(/WHERE o\."order_id" IS NULL$/);
  });

  it('never locks the live table, truncates or uses what Redshift refuses', () => {
    expect(statements.filter((s) => s.startsWith('LOCK') && s.includes('"orders"') && !s.includes('__stg_'))).toEqual([]);
    expect(statements.flatMap((sql) => checkSql(sql))).toEqual([]);
    expect(
      statements
        .flatMap((sql) => parseSql(sql).statements)
        .map(endsTransaction)
        .filter(Boolean),
    ).toEqual([]);
  });

  it('is refused for a pipeline without a merge section', () => {
    expect(() => mergeIntoLive(pipeline, batch, previous, NOW, 5000)).toThrow(ValidationError);
  });
});

describe('what the manifest says a merge wrote', () => {
  it('lists no stretch of the table for a merge publication: it changed rows by key, its interval is of modification time', () => {
    expect(intervalWriters('orders').sql).toContain("AND publish_mode <> 'merge'");
  });
});
