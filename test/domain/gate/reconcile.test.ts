import { describe, expect, it } from 'vitest';
import type { ChunkCount } from '../../../domain/gate/reconcile.ts';
import { describeFailure, duplicateKeyText, reconcile } from '../../../domain/gate/reconcile.ts';

function chunk(index: number, rows: number, overrides: Partial<ChunkCount> = {}): ChunkCount {
  return {
    index,
    start: `2026-01-${String(index + 1).padStart(2, '0')} 00:00:00`,
    status: 'DONE',
    recordedRows: rows,
    sourceRows: rows,
    stagingRows: rows,
    ...overrides,
  };
}

const matching = [chunk(0, 10), chunk(1, 20), chunk(2, 30)];

function check(result: ReturnType<typeof reconcile>, name: string) {
  const found = result.checks.find((c) => c.check === name);
  if (!found) throw new Error(`no check named ${name}`);
  return found;
}

describe('reconcile', () => {
  it('passes every check when all chunks are loaded and all counts match', () => {
    const result = reconcile(matching, { outsideInterval: 0, duplicateKeys: 0 }, false);

    expect(result.passed).toBe(true);
    expect(result.checks.map((c) => [c.check, c.passed])).toEqual([
      ['all_chunks_loaded', true],
      ['staging_rows_match_source', true],
      ['staging_rows_match_load_record', true],
      ['staging_within_interval', true],
      ['business_key_unique', true],
      ['staging_not_empty', true],
    ]);
    expect(result.mismatches).toEqual([]);
  });

  it('fails all_chunks_loaded when fewer chunks were recorded than planned (a window that never ran)', () => {
    const result = reconcile(matching, { outsideInterval: 0, duplicateKeys: 0, plannedChunks: 5 }, false);
    const loaded = check(result, 'all_chunks_loaded');

    expect(result.passed).toBe(false);
    expect(loaded.passed).toBe(false);
    expect(loaded.observed).toBe('3 of 5 chunks done');
    expect(loaded.details).toContain('2 planned chunk(s) never recorded');
    expect(check(reconcile(matching, { outsideInterval: 0, duplicateKeys: 0, plannedChunks: 3 }, false), 'all_chunks_loaded').passed).toBe(true);
  });

  it('totals rows read from the source and rows written to staging', () => {
    const result = reconcile(matching, { outsideInterval: 0, duplicateKeys: 0 }, false);

    expect(result.rowsRead).toBe(60);
    expect(result.rowsWritten).toBe(60);
  });

  it('fails staging_rows_match_source for one short chunk and lists that chunk', () => {
    const counts = [chunk(0, 10), chunk(1, 20, { stagingRows: 19, recordedRows: 19 }), chunk(2, 30)];

    const result = reconcile(counts, { outsideInterval: 0, duplicateKeys: 0 }, false);
    const failed = check(result, 'staging_rows_match_source');

    expect(result.passed).toBe(false);
    expect(failed.passed).toBe(false);
    expect(failed.details).toBe('#1 2026-01-02 00:00:00: source 20, staging 19, recorded 19');
    expect(failed.observed).toBe('59 staging rows; 1 chunk(s) differ');
    expect(failed.expected).toBe('60 source rows; 0 chunks differ');
    expect(result.mismatches.map((c) => c.index)).toEqual([1]);
    expect(check(result, 'staging_rows_match_load_record').passed).toBe(true);
  });

  it('fails all_chunks_loaded for a chunk that never finished loading', () => {
    const counts = [chunk(0, 10), chunk(1, 0, { status: 'PENDING', recordedRows: null, sourceRows: 20 }), chunk(2, 30)];

    const result = reconcile(counts, { outsideInterval: 0, duplicateKeys: 0 }, false);
    const failed = check(result, 'all_chunks_loaded');

    expect(failed.passed).toBe(false);
    expect(failed.observed).toBe('2 of 3 chunks done');
    expect(failed.details).toBe('#1 2026-01-02 00:00:00: source 20, staging 0, recorded -');
    expect(result.passed).toBe(false);
  });

  it('fails all_chunks_loaded for a chunk still LOADING even if its counts match', () => {
    const result = reconcile([chunk(0, 10), chunk(1, 20, { status: 'LOADING' })], { outsideInterval: 0, duplicateKeys: 0 }, false);

    expect(check(result, 'all_chunks_loaded').passed).toBe(false);
    expect(result.mismatches.map((c) => c.index)).toEqual([1]);
  });

  it('fails staging_rows_match_load_record when staging differs from what the load recorded', () => {
    const result = reconcile([chunk(0, 10, { recordedRows: 12 })], { outsideInterval: 0, duplicateKeys: 0 }, false);

    expect(check(result, 'staging_rows_match_load_record').passed).toBe(false);
    expect(check(result, 'staging_rows_match_load_record').details).toContain('#0');
    expect(check(result, 'staging_rows_match_source').passed).toBe(true);
  });

  it('fails staging_within_interval for rows outside the interval and counts them as written', () => {
    const result = reconcile(matching, { outsideInterval: 3, duplicateKeys: 0 }, false);

    expect(check(result, 'staging_within_interval').passed).toBe(false);
    expect(check(result, 'staging_within_interval').observed).toBe('3 row(s) outside the batch interval or with no time');
    expect(result.rowsWritten).toBe(63);
    expect(result.passed).toBe(false);
  });

  it('fails staging_not_empty for an empty staging table', () => {
    const result = reconcile([chunk(0, 0), chunk(1, 0)], { outsideInterval: 0, duplicateKeys: 0 }, false);

    expect(check(result, 'staging_not_empty').passed).toBe(false);
    expect(result.passed).toBe(false);
  });

  it('passes an empty staging table when the pipeline allows empty', () => {
    const result = reconcile([chunk(0, 0), chunk(1, 0)], { outsideInterval: 0, duplicateKeys: 0 }, true);

    expect(check(result, 'staging_not_empty').passed).toBe(true);
    expect(check(result, 'staging_not_empty').expected).toBe('any number of rows (allowEmpty)');
    expect(result.passed).toBe(true);
  });

  it('lists at most 20 differing chunks and says how many more', () => {
    const counts = Array.from({ length: 25 }, (_, i) => chunk(i, 5, { stagingRows: 4, recordedRows: 4 }));

    const details = check(reconcile(counts, { outsideInterval: 0, duplicateKeys: 0 }, false), 'staging_rows_match_source').details;

    expect(details.split('; ')).toHaveLength(21);
    expect(details).toMatch(/; \.\.\. and 5 more$/);
  });
});

describe('describeFailure', () => {
  it('lists the failed checks and draws the differing chunks as a table', () => {
    const counts = [
      { index: 0, start: '2026-01-01 00:00:00', status: 'DONE', recordedRows: 40, sourceRows: 40, stagingRows: 40 },
      { index: 1, start: '2026-01-02 00:00:00', status: 'DONE', recordedRows: 40, sourceRows: 41, stagingRows: 40 },
    ];
    const text = describeFailure('abc', reconcile(counts, { outsideInterval: 0, duplicateKeys: 0 }, false));

    expect(text.split('\n')[0]).toBe('1 check(s) failed for batch abc:');
    expect(text).toContain('staging_rows_match_source: observed 80 staging rows; 1 chunk(s) differ; expected 81 source rows; 0 chunks differ');
    expect(text).toContain('Chunks that differ (1 of 1):');
    expect(text).toMatch(/│ +1 │ 2026-01-02 00:00:00 │ DONE +│ +41 │ +40 │ +40 │ +-1 │/);
    expect(text).not.toMatch(/│ +0 │ 2026-01-01/);
  });
});

describe('business key', () => {
  it('fails business_key_unique when key values repeat, naming the key', () => {
    const result = reconcile([chunk(0, 10)], { outsideInterval: 0, duplicateKeys: 2 }, false, ['order_id', 'line_no']);

    expect(result.passed).toBe(false);
    expect(check(result, 'business_key_unique')).toMatchObject({
      passed: false,
      observed: '2 key value(s) on more than one row',
      expected: 'each (order_id, line_no) on one row',
    });
  });

  it('lists sample keys in the check and the alert, saying how many more there are', () => {
    const samples = [duplicateKeyText(['order_id', 'line_no'], ['5', 1], 2), duplicateKeyText(['order_id', 'line_no'], [null, 2], 3)];
    const result = reconcile([chunk(0, 10)], { outsideInterval: 0, duplicateKeys: 7, duplicateKeySamples: samples }, false, ['order_id', 'line_no']);

    expect(check(result, 'business_key_unique').details).toBe(
      'sample keys: (order_id, line_no) = (5, 1) on 2 rows; (order_id, line_no) = (NULL, 2) on 3 rows; and 5 more',
    );
    const text = describeFailure('abc', result);
    expect(text).toContain(
      'business_key_unique: observed 7 key value(s) on more than one row; expected each (order_id, line_no) on one row\n    sample keys: (order_id, line_no) = (5, 1) on 2 rows;',
    );
  });
});

describe('reconcile: content checksum and measure sums', () => {
  const gate = { contentChecksum: true, measures: ['amount'] };
  const same = (index: number, rows: number, amount: string) =>
    chunk(index, rows, {
      sourceChecksum: '123456789012345678901',
      stagingChecksum: '123456789012345678901',
      sums: [{ column: 'amount', source: amount, staging: amount }],
    });

  it('passes both checks when every chunk has the same checksum and sums on both sides', () => {
    const result = reconcile([same(0, 10, '100.00'), same(1, 20, '200.50')], { outsideInterval: 0, duplicateKeys: 0 }, false, [], undefined, gate);

    expect(result.passed).toBe(true);
    expect(check(result, 'staging_content_matches_source').passed).toBe(true);
    expect(check(result, 'staging_sums_match_source')).toMatchObject({
      passed: true,
      observed: '0 chunk(s) whose sums differ; amount: source 300.50, staging 300.50, source - staging 0.00',
      expected: 'sums of amount equal in every chunk',
    });
    expect(result.contentMismatches).toEqual([]);
  });

  it('fails on a corrected amount with the same count, naming the chunk, its day and the difference (source - staging)', () => {
    const corrected = chunk(1, 20, {
      sourceChecksum: '99',
      stagingChecksum: '98',
      sums: [{ column: 'amount', source: '45176850.00', staging: '45076850.00' }],
    });
    const result = reconcile([same(0, 10, '100.00'), corrected], { outsideInterval: 0, duplicateKeys: 0 }, false, [], undefined, gate);

    expect(result.passed).toBe(false);
    expect(check(result, 'staging_rows_match_source').passed).toBe(true);
    expect(check(result, 'staging_content_matches_source')).toMatchObject({
      passed: false,
      observed: "1 chunk(s) whose rows differ from the source's",
      details: '#1 2026-01-02 00:00:00: checksum differs (source 20 rows, staging 20 rows)',
    });
    expect(check(result, 'staging_sums_match_source')).toMatchObject({
      passed: false,
      details: '#1 2026-01-02 00:00:00: amount: source 45176850.00, staging 45076850.00, source - staging 100000.00',
    });
    expect(result.mismatches).toEqual([]);
    expect(result.contentMismatches!.map((c) => c.index)).toEqual([1]);
    const message = describeFailure('b1', result);
    expect(message).toContain('Chunks whose content differs from the source (1 of 1):');
    expect(message).toContain(
      '│ chunk │ starts              │ source rows │ staging rows │ checksum │ amount source │ amount staging │ amount source - staging │',
    );
    expect(message).toContain(
      '│     1 │ 2026-01-02 00:00:00 │          20 │           20 │ differs  │   45176850.00 │    45076850.00 │               100000.00 │',
    );
    expect(message).not.toContain('Chunks that differ (');
  });

  it('fails only the checksum for a swapped key whose sums agree', () => {
    const swapped = chunk(0, 10, {
      sourceChecksum: '1152921504606846975',
      stagingChecksum: '1152921504606846974',
      sums: [{ column: 'amount', source: '10.00', staging: '10.00' }],
    });
    const result = reconcile([swapped], { outsideInterval: 0, duplicateKeys: 0 }, false, [], undefined, gate);

    expect(result.checks.filter((c) => !c.passed).map((c) => c.check)).toEqual(['staging_content_matches_source']);
  });

  it('compares decimal texts as numbers: 10.5 and 10.50 are the same sum', () => {
    const result = reconcile(
      [chunk(0, 1, { sums: [{ column: 'amount', source: '10.5', staging: '10.50' }] })],
      { outsideInterval: 0, duplicateKeys: 0 },
      false,
      [],
      undefined,
      {
        contentChecksum: false,
        measures: ['amount'],
      },
    );

    expect(check(result, 'staging_sums_match_source').passed).toBe(true);
    expect(result.checks.map((c) => c.check)).not.toContain('staging_content_matches_source');
  });

  it("passes sums that differ within the measure's tolerance, names it, and fails them beyond it", () => {
    const tolerant = { contentChecksum: false, measures: ['amount'], tolerances: { amount: { absolute: '0.50' } } };
    const within = reconcile(
      [chunk(0, 1, { sums: [{ column: 'amount', source: '10.00', staging: '10.40' }] })],
      { outsideInterval: 0, duplicateKeys: 0 },
      false,
      [],
      undefined,
      tolerant,
    );
    const beyond = reconcile(
      [chunk(0, 1, { sums: [{ column: 'amount', source: '10.00', staging: '11.00' }] })],
      { outsideInterval: 0, duplicateKeys: 0 },
      false,
      [],
      undefined,
      tolerant,
    );

    expect(check(within, 'staging_sums_match_source')).toMatchObject({
      passed: true,
      expected: 'sums of amount (tolerance absolute 0.50) equal in every chunk',
    });
    expect(within.contentMismatches).toEqual([]);
    expect(check(beyond, 'staging_sums_match_source')).toMatchObject({
      passed: false,
      details: '#0 2026-01-01 00:00:00: amount: source 10.00, staging 11.00, source - staging -1.00',
    });
    expect(beyond.contentMismatches!.map((c) => c.index)).toEqual([0]);
  });

  it('adds neither check when the spec asks for neither', () => {
    const result = reconcile(matching, { outsideInterval: 0, duplicateKeys: 0 }, false, [], undefined, { contentChecksum: false, measures: [] });
    expect(result.checks.map((c) => c.check)).not.toContain('staging_content_matches_source');
    expect(result.checks.map((c) => c.check)).not.toContain('staging_sums_match_source');
  });
});
