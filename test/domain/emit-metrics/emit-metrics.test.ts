import { describe, expect, it } from 'vitest';
import { publishMetrics } from '../../../domain/emit-metrics/emit-metrics.ts';
import { parseWarehouseTime } from '../../../domain/time.ts';

const facts = {
  rowsPublished: 1234,
  publishedAt: '2026-03-15 06:10:00.5',
  executionStartedAt: '2026-03-15T06:00:00.000Z',
  latestEventTime: '2026-03-14 23:59:59',
  now: new Date('2026-03-15T06:10:01.000Z'),
};

describe('publishMetrics', () => {
  it('counts one publish with its rows, the run from execution start to commit, and the age of the newest row now', () => {
    expect(publishMetrics(facts)).toEqual({
      Published: 1,
      RowsPublished: 1234,
      RunDurationSeconds: 600.5,
      DataLagSeconds: 6 * 3600 + 10 * 60 + 2,
    });
  });

  it('reports a data lag of -1 for an empty live table', () => {
    expect(publishMetrics({ ...facts, latestEventTime: undefined }).DataLagSeconds).toBe(-1);
  });

  it('never reports a negative duration or lag when clocks disagree', () => {
    const skewed = publishMetrics({ ...facts, executionStartedAt: '2026-03-15T07:00:00Z', latestEventTime: '2026-03-15 07:00:00' });

    expect(skewed.RunDurationSeconds).toBe(0);
    expect(skewed.DataLagSeconds).toBe(0);
  });
});

describe('parseWarehouseTime', () => {
  it.each([
    ['the warehouse text form, as UTC', '2026-01-02 03:04:05.678', '2026-01-02T03:04:05.678Z'],
    ['an ISO string with Z', '2026-01-02T03:04:05Z', '2026-01-02T03:04:05.000Z'],
    ['an ISO string with an offset', '2026-01-02T04:04:05+01:00', '2026-01-02T03:04:05.000Z'],
  ])('reads %s', (_what, text, iso) => {
    expect(parseWarehouseTime(text).toISOString()).toBe(iso);
  });
});
