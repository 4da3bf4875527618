// The order `atomic-publish check` prints its checks in: what failed first,
// then where the content differs, then what passed.
import { describe, expect, it } from 'vitest';
import { type CheckLine, checkOrder } from '../../cli/check.ts';

const line = (check: string, passed: boolean): CheckLine => ({ check, passed, observed: '', expected: '', details: '' });

describe('checkOrder', () => {
  it('puts the failing gate checks first, then the location rows (failing or not), then the passing checks, by name within each', () => {
    const ordered = checkOrder([
      line('all_chunks_loaded', true),
      line('rows_changed', true),
      line('staging_rows_match_source', false),
      line('missing_in_staging', false),
      line('business_key_unique', true),
      line('difference_located', false),
      line('staging_content_matches_source', false),
    ]);

    expect(ordered.map((l) => l.check)).toEqual([
      'staging_content_matches_source',
      'staging_rows_match_source',
      'difference_located',
      'missing_in_staging',
      'rows_changed',
      'all_chunks_loaded',
      'business_key_unique',
    ]);
  });
});
