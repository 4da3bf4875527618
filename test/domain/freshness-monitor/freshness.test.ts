import { describe, expect, it } from 'vitest';
import { FreshnessMonitorError, freshnessValues, inRequests } from '../../../domain/freshness-monitor/freshness.ts';
import { livePublishedAt } from '../../../domain/freshness-monitor/sql/freshness-monitor.ts';

const NOW = new Date('2026-12-01T08:00:00Z');

describe('freshnessValues', () => {
  it('measures the publish age and the data lag in seconds from warehouse times (UTC, no zone)', () => {
    expect(freshnessValues({ publishedAt: '2026-12-01 07:00:00', latestEventTime: '2026-11-30 00:00:00.5', now: NOW })).toEqual([
      { name: 'PublishAgeSeconds', seconds: 3600 },
      { name: 'LiveDataLagSeconds', seconds: 32 * 3600 - 0.5 },
    ]);
  });

  it('leaves out what cannot be measured (never published, an empty table), so that the alarm sees missing data', () => {
    expect(freshnessValues({ publishedAt: undefined, latestEventTime: undefined, now: NOW })).toEqual([]);
    expect(freshnessValues({ publishedAt: undefined, latestEventTime: '2026-12-01 07:59:00', now: NOW })).toEqual([
      { name: 'LiveDataLagSeconds', seconds: 60 },
    ]);
  });

  it("never reports a negative age (a clock behind the warehouse's)", () => {
    expect(freshnessValues({ publishedAt: '2026-12-01 08:00:02', latestEventTime: undefined, now: NOW })).toEqual([{ name: 'PublishAgeSeconds', seconds: 0 }]);
  });
});

describe("the monitor's contract pieces", () => {
  it('splits metrics into PutMetricData requests of at most 1,000', () => {
    expect(inRequests(Array.from({ length: 2001 }, (_, i) => i)).map((r) => r.length)).toEqual([1000, 1000, 1]);
    expect(inRequests([])).toEqual([]);
  });

  it('names every pipeline it could not measure, with why', () => {
    const error = new FreshnessMonitorError([
      { pipeline: 'a', error: 'WarehouseError: relation "x" does not exist' },
      { pipeline: 'b', error: 'TransientWarehouseError: unreachable' },
    ]);
    expect(error.name).toBe('FreshnessMonitorError');
    expect(error.message).toBe(
      'freshness not measured for 2 pipeline(s): a (WarehouseError: relation "x" does not exist); b (TransientWarehouseError: unreachable)',
    );
  });

  it("reads the live data's publication: neither a rollback nor rolled back, the pipeline a parameter", () => {
    const statement = livePublishedAt('sales_order_lines');
    expect(statement.sql).toMatch(/rollback_of IS NULL AND rolled_back_at IS NULL/);
    expect(statement.sql).not.toContain('sales_order_lines');
    expect(statement.parameters).toEqual({ pipeline: 'sales_order_lines' });
  });
});
