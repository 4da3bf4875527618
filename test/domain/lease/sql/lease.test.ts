import { describe, expect, it } from 'vitest';
import { acquireLease, leaseHolder, releaseLease } from '../../../../domain/lease/sql/lease.ts';
import { LEASES_LOCK } from '../../../../domain/manifest/sql/manifest.ts';
import { itIsASafeSingleStatement, NOW } from '../../sql/support.ts';

describe('single statements of the pipeline lease', () => {
  itIsASafeSingleStatement([
    ['leaseHolder', leaseHolder('orders')],
    ['releaseLease', releaseLease('arn:aws:states:eu-west-1:1:execution:sm:run')],
  ]);

  it('releases only under the leases lock, and only the execution’s own lease', () => {
    const release = releaseLease('arn:run');
    expect(release.lock).toBe(LEASES_LOCK);
    expect(release.sql).toMatch(/^DELETE FROM "atomic_publish"\.pipeline_leases WHERE execution_id = :execution_id$/);
    expect(release.parameters).toEqual({ execution_id: 'arn:run' });
  });
});

describe('acquireLease', () => {
  const statements = acquireLease({ pipeline: "o'rders", executionId: 'arn:run', now: NOW, expiresAt: new Date(NOW.getTime() + 3_600_000) });

  it('takes the leases lock first, so one row per pipeline holds without an enforced key', () => {
    expect(statements[0]).toBe(LEASES_LOCK);
    expect(statements).toHaveLength(3);
  });

  it('takes over only an expired lease of this pipeline, and inserts only when none is held', () => {
    expect(statements[1]).toMatch(
      /^DELETE FROM "atomic_publish"\.pipeline_leases WHERE pipeline = 'o''rders' AND expires_at <= CAST\('[\d-]+ [\d:.]+' AS timestamp\)$/,
    );
    expect(statements[2]).toContain("WHERE NOT EXISTS (SELECT 1 FROM \"atomic_publish\".pipeline_leases WHERE pipeline = 'o''rders')");
    expect(statements[2]).toContain("'arn:run'");
  });
});
