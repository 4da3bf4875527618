// The sample pipelines' history start (pipelines/sample-start.ts): fixed
// unless `local up` exports another, which must be a day.
import { describe, expect, it } from 'vitest';
import { pipelines } from '../../pipelines/index.ts';
import { DEFAULT_SAMPLE_START, sampleHistoryStart } from '../../pipelines/sample-start.ts';

describe('the sample history start', () => {
  it('is the fixed day without the variable, and the day it names with it', () => {
    expect(sampleHistoryStart(undefined)).toBe(`${DEFAULT_SAMPLE_START}T00:00:00Z`);
    expect(sampleHistoryStart('')).toBe(`${DEFAULT_SAMPLE_START}T00:00:00Z`);
    expect(sampleHistoryStart('2026-11-22')).toBe('2026-11-22T00:00:00Z');
  });

  it('refuses what is not a day, naming the variable', () => {
    for (const bad of ['2026-02-30', '2026-11-22T05:00:00Z', 'yesterday', '20261122', "2026-01-01'; DROP TABLE x"]) {
      expect(() => sampleHistoryStart(bad), bad).toThrow(/^ATOMIC_PUBLISH_SAMPLE_START is ".*": give a day as YYYY-MM-DD/);
    }
  });

  it('is where both sample pipelines start, in this process (no variable set)', () => {
    expect(pipelines.map((p) => [p.name, p.historyStart])).toEqual([
      ['sales_order_lines', sampleHistoryStart(undefined)],
      ['daily_sales', sampleHistoryStart(undefined)],
    ]);
  });
});
