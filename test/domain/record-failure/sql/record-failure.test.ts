import { describe, expect, it } from 'vitest';
import { markBatchFailed } from '../../../../domain/record-failure/sql/record-failure.ts';
import type { Statement } from '../../../../domain/sql/statement.ts';
import { batchId, itIsASafeSingleStatement, NOW } from '../../sql/support.ts';

describe('single statements of RecordFailure', () => {
  itIsASafeSingleStatement(
    markBatchFailed(batchId, "CheckFailedError: it's \\ broken", NOW).map((statement, i) => [`markBatchFailed[${i}]`, statement] as [string, Statement]),
  );
});

describe('markBatchFailed', () => {
  it('passes the error as a parameter, so quotes and backslashes never reach the SQL text', () => {
    const message = `WarehouseError: column "x" can't be '\\N'; DROP TABLE analytics.orders; --`;

    for (const statement of markBatchFailed(batchId, message, NOW)) {
      expect(statement.parameters?.error).toBe(message);
      expect(statement.sql).toContain('error = :error');
      expect(statement.sql).not.toContain("can't");
      expect(statement.sql).not.toContain('\\');
      expect(statement.sql).not.toContain('DROP');
    }
  });

  it('marks the current attempt and then the batch, never a published batch', () => {
    const [attempt, batch] = markBatchFailed(batchId, 'x', NOW);
    expect(attempt!.sql).toContain('UPDATE "atomic_publish".batch_attempts');
    expect(attempt!.sql).toContain("status <> 'PUBLISHED'");
    expect(batch!.sql).toContain('UPDATE "atomic_publish".batches');
    expect(batch!.sql).toContain("status <> 'PUBLISHED'");
  });

  it('truncates a very long error to 60,000 characters', () => {
    expect(markBatchFailed(batchId, 'e'.repeat(100_000), NOW)[0]!.parameters?.error).toHaveLength(60_000);
  });

  // Fixed bug, kept as a regression test: the error was cut at 60,000 UTF-16
  // code units, but batches.error is varchar(65535), which Redshift measures
  // in BYTES. A message of 21,846+ three-byte characters (e.g. source data
  // quoted in a warehouse error) overflows the column, the UPDATE fails and
  // RecordFailure reports "manifest not updated"; slicing can also split a
  // surrogate pair. Expected: truncate to at most 65,535 UTF-8 bytes.
  it('truncates the error to what a Redshift varchar(65535) holds in bytes', () => {
    const [statement] = markBatchFailed(batchId, '€'.repeat(70_000), NOW);

    expect(Buffer.byteLength(statement!.parameters!.error!, 'utf8')).toBeLessThanOrEqual(65_535);
  });
});
