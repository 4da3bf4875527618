import { describe, expect, it } from 'vitest';
import { cleanupCandidates, dropRetired } from '../../../../domain/cleanup/sql/cleanup.ts';
import { ValidationError } from '../../../../domain/errors.ts';
import { pipelineWith } from '../../fixtures.ts';
import { batchId, itIsASafeSingleStatement, NOW, pipeline, previous, staging } from '../../sql/support.ts';

describe('single statements of Cleanup', () => {
  itIsASafeSingleStatement([['cleanupCandidates', cleanupCandidates(pipeline, batchId, NOW)]]);

  it('passes the keep count for cleanup as a parameter', () => {
    const keepNone = pipelineWith({ retention: { keepVersions: 0 } });

    expect(cleanupCandidates(keepNone, batchId, NOW).parameters).toMatchObject({ keep: '0', pipeline: 'orders', batch_id: batchId });
  });
});

describe('dropRetired', () => {
  it.each(['old_version', 'staging'] as const)('drops a %s table with IF EXISTS and never CASCADE', (kind) => {
    const statements = dropRetired(pipeline, kind, previous, batchId, NOW);

    expect(statements[0]).toBe(`DROP TABLE IF EXISTS "analytics"."${previous}"`);
    for (const sql of statements) expect(sql).not.toMatch(/CASCADE/i);
  });

  it('records a dropped staging table on its batch', () => {
    expect(dropRetired(pipeline, 'staging', staging, batchId, NOW)[1]).toMatch(
      new RegExp(`^UPDATE "atomic_publish"\\.batches SET staging_dropped_at = .* WHERE batch_id = '${batchId}'$`),
    );
  });

  it('refuses a schema-qualified or hostile table name', () => {
    expect(() => dropRetired(pipeline, 'old_version', `analytics.${previous}`, batchId, NOW)).toThrow(ValidationError);
    expect(() => dropRetired(pipeline, 'staging', 'x; DROP TABLE y', batchId, NOW)).toThrow(ValidationError);
  });
});
