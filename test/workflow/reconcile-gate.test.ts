// The reconciliation gate on real parts: when staging no longer matches the
// source, the batch is not published, every check result is recorded, and
// the alert carries a table of the chunks that differ. The run that late
// rows fail is arranged once; the re-run and the other runs each act on a
// copy of what it left (test/support/workflow.ts useFork).
import { beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionResult } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { caughtError, caughtMessage, type Fingerprint, inputFor, LIVE, namesFor, useFork, useWorkflowFixture, visited } from '../support/workflow.ts';

const ROWS_PER_DAY = 30;
const { batchId } = namesFor(7);
const fixture = useWorkflowFixture('wf_gate', async (wf) => {
  await wf.sample({ rowsPerDay: ROWS_PER_DAY, sourceDays: 8, liveDays: 5 });
  const old = await wf.fingerprint(LIVE);
  // Two late order lines arrive for day 3 after its chunk was loaded.
  wf.faults.Reconcile = async (input, next) => {
    await wf.query(
      `INSERT INTO source.sales_order_lines VALUES (900000001, 1, $1::timestamp + interval '1 hour', 1, 1, 1, 5.00),
                                                 (900000002, 1, $1::timestamp + interval '2 hours', 1, 1, 1, 5.00)`,
      [sampleDay(3).toISOString().slice(0, 19)],
    );
    return next(input);
  };
  const result = await wf.run(inputFor(7), 'late-rows');
  wf.reset();
  return { old, result };
});

describe('a source that changed while the batch loaded', () => {
  const wf = useFork(fixture);
  let old: Fingerprint;
  let result: ExecutionResult;
  beforeAll(() => {
    ({ old, result } = fixture.arranged);
  });

  it('blocks the publish, records the failed checks and pages with the differing chunk in a table', async () => {
    expect(result.status).toBe('FAILED');
    expect(visited(result)).not.toContain('Publish');
    expect(caughtError(result)?.Error).toBe('CheckFailedError');
    expect(await wf.fingerprint(LIVE)).toEqual(old);
    expect(await wf.publications()).toEqual([]);

    const checks = await wf.query<{ check_name: string; passed: boolean; observed: string; expected: string; details: string }>(
      'SELECT check_name, passed, observed, expected, details FROM atomic_publish.check_results WHERE batch_id = $1 ORDER BY check_name',
      [batchId],
    );
    expect(checks.map((c) => [c.check_name, c.passed])).toEqual([
      ['all_chunks_loaded', true],
      ['business_key_unique', true],
      // Where: the located difference (test/workflow/locate.test.ts), the late rows' keys missing from staging.
      ['difference_located', false],
      ['missing_in_source', true],
      ['missing_in_staging', false],
      ['rows_changed', true],
      ['source_time_not_null', true],
      ['staging_content_matches_source', false],
      ['staging_not_empty', true],
      ['staging_rows_match_load_record', true],
      ['staging_rows_match_source', false],
      ['staging_within_interval', true],
    ]);
    const mismatch = checks.find((c) => c.check_name === 'staging_rows_match_source')!;
    expect(mismatch.observed).toBe(`${7 * ROWS_PER_DAY} staging rows; 1 chunk(s) differ`);
    expect(mismatch.expected).toBe(`${7 * ROWS_PER_DAY + 2} source rows; 0 chunks differ`);
    expect(mismatch.details).toBe(`#3 2026-01-04 00:00:00: source ${ROWS_PER_DAY + 2}, staging ${ROWS_PER_DAY}, recorded ${ROWS_PER_DAY}`);
    expect(checks.find((c) => c.check_name === 'missing_in_staging')!.details).toBe(
      'first keys: (order_id, line_no) = (900000001, 1); (order_id, line_no) = (900000002, 1)',
    );

    expect(await wf.batch(batchId)).toMatchObject({ status: 'FAILED' });
    const [attempt] = await wf.query<{ status: string; error: string }>('SELECT status, error FROM atomic_publish.batch_attempts WHERE batch_id = $1', [
      batchId,
    ]);
    expect(attempt!.status).toBe('FAILED');
    expect(attempt!.error).toMatch(/^CheckFailedError: 2 check\(s\) failed for batch /);

    expect(result.alerts).toHaveLength(1);
    const { message } = result.alerts[0]!;
    expect(message).toContain('staging_rows_match_source: observed');
    // The content checksum of that chunk differs too, in a table of its own.
    expect(message).toContain('staging_content_matches_source: observed 1 chunk(s) whose rows differ');
    expect(message).toContain('Chunks that differ (1 of 1):');
    expect(message).toMatch(new RegExp(`│ +3 │ 2026-01-04 00:00:00 │ DONE +│ +${ROWS_PER_DAY + 2} │ +${ROWS_PER_DAY} │ +${ROWS_PER_DAY} │ +-2 │`));
    expect(message).toContain('Live table: analytics.sales_order_lines untouched');
  });

  it('marks the differing chunk STALE', async () => {
    expect(await wf.chunkStatuses(batchId)).toEqual({ DONE: 6, STALE: 1 });
  });
});

describe('the re-run the alert suggests', () => {
  const wf = useFork(fixture);
  let rerun: ExecutionResult;
  beforeAll(async () => {
    rerun = await wf.run(inputFor(7), 'late-rows-rerun');
  });

  it('reloads just the STALE chunk and publishes', async () => {
    expect(rerun.status, `${rerun.error}: ${rerun.cause}`).toBe('SUCCEEDED');
    expect(wf.loads.started).toEqual([3]);
    // The late rows are in: live is exactly the source as it is now.
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
    expect((await wf.fingerprint(LIVE)).rows).toBe(7 * ROWS_PER_DAY + 2);
    const attempts = await wf.query<{ attempt: number; status: string }>(
      'SELECT attempt, status FROM atomic_publish.batch_attempts WHERE batch_id = $1 ORDER BY attempt',
      [batchId],
    );
    expect(attempts).toEqual([
      { attempt: 1, status: 'FAILED' },
      { attempt: 2, status: 'PUBLISHED' },
    ]);
  });
});

describe('a source that breaks the business key', () => {
  const wf = useFork(fixture);

  it('is refused, though every count matches', async () => {
    const live = await wf.fingerprint(LIVE);
    // An upstream bug sends order line (1, 1) again, a week later.
    await wf.query(
      `INSERT INTO source.sales_order_lines SELECT order_id, line_no, ordered_at + interval '6 days', customer_id, product_id, quantity, amount
         FROM source.sales_order_lines WHERE order_id = 1 AND line_no = 1`,
    );

    const result = await wf.run(inputFor(8), 'duplicate-key');

    expect(result.status).toBe('FAILED');
    expect(caughtError(result)?.Error).toBe('CheckFailedError');
    expect(caughtMessage(result)).toContain('business_key_unique: observed 1 key value(s) on more than one row; expected each (order_id, line_no) on one row');
    expect(caughtMessage(result)).not.toContain('Chunks that differ');
    expect(await wf.fingerprint(LIVE)).toEqual(live);
  });
});
