import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../domain/errors.ts';
import { dropRetired } from '../../../domain/sql/cleanup.ts';
import { batchState, swapPublish } from '../../../domain/sql/publish.ts';
import { batch, batchId, itIsASafeSingleStatement, NOW, pipeline, previous, staging } from './support.ts';

describe('single statements of Publish', () => {
  itIsASafeSingleStatement([['batchState', batchState(batchId)]]);
});

describe('swapPublish', () => {
  const statements = swapPublish(pipeline, batch, previous, NOW);

  it('locks publications and staging, guards, renames live away, renames staging in, records the publication, attempt and batch, in that order', () => {
    const expected = [
      /^LOCK "atomic_publish"\.publications$/,
      new RegExp(`^LOCK "analytics"\\."${staging}"$`),
      new RegExp(`^CALL "atomic_publish"\\.assert_publishable\\('orders', '${batchId}', 2, 'analytics', '${staging}'\\)$`),
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
    expect(() => swapPublish(pipeline, batch, 'prev"; DROP TABLE x; --', NOW)).toThrow(ValidationError);
  });
});
