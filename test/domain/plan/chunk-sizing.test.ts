import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../domain/errors.ts';
import { grainUnits, sizeChunks, sortKeyWarning, volumeByUnit, warehouseInstant } from '../../../domain/plan/chunk-sizing.ts';
import { planChunks } from '../../../domain/plan/plan.ts';
import { pipelineWith } from '../fixtures.ts';

const at = (iso: string) => new Date(iso);
const daily = pipelineWith({ chunk: { grain: 'day', targetRows: 100 } });
const days = (n: number) => grainUnits({ from: at('2026-01-01T00:00:00Z'), to: new Date(Date.UTC(2026, 0, 1 + n)) }, daily);
/** Rows per day of `days(n)`, by unit start. */
const volume = (rows: readonly number[]) => new Map(rows.map((n, i) => [Date.UTC(2026, 0, 1 + i), n]));
const spans = (chunks: readonly { start: string; end: string }[]) => chunks.map((c) => `${c.start.slice(5, 10)}..${c.end.slice(5, 10)}`);

describe('grainUnits', () => {
  it('are the calendar chunks, without their ceiling', () => {
    const berlin = pipelineWith({ chunk: { grain: 'day', timezone: 'Europe/Berlin' }, historyStart: '2026-03-27T23:00:00Z' });
    const interval = { from: at('2026-03-27T23:00:00Z'), to: at('2026-03-31T22:00:00Z') };

    // Across the change to summer time: a 23-hour day, boundaries at local midnight.
    expect(grainUnits(interval, berlin).map((u) => [u.start.toISOString(), u.end.toISOString()])).toEqual(
      planChunks(interval, berlin).map((c) => [c.start, c.end]),
    );
    const hourly = pipelineWith({ chunk: { grain: 'hour' } });
    expect(grainUnits({ from: at('2026-01-01T00:00:00Z'), to: at('2026-03-01T00:00:00Z') }, hourly)).toHaveLength(59 * 24);
  });
});

describe('sizeChunks', () => {
  it('merges adjacent units up to the target, keeping every boundary on the grain, half-open and gapless', () => {
    const chunks = sizeChunks(days(7), volume([30, 30, 30, 30, 30, 30, 30]), 100);

    expect(spans(chunks)).toEqual(['01-01..01-04', '01-04..01-07', '01-07..01-08']);
    expect(chunks.map((c) => c.index)).toEqual([0, 1, 2]);
  });

  it('keeps a unit bigger than the target as one chunk, closing the chunk before it', () => {
    const chunks = sizeChunks(days(5), volume([40, 40, 500, 10, 10]), 100);

    expect(spans(chunks)).toEqual(['01-01..01-03', '01-03..01-04', '01-04..01-06']);
  });

  it('lets empty units cost nothing: leading ones join the first chunk with rows, the others the chunk being filled', () => {
    const chunks = sizeChunks(days(6), volume([0, 0, 90, 0, 50, 0]), 100);

    expect(spans(chunks)).toEqual(['01-01..01-05', '01-05..01-07']);
    expect(spans(sizeChunks(days(3), new Map(), 100))).toEqual(['01-01..01-04']);
  });

  it('fills a chunk up to exactly the target', () => {
    expect(spans(sizeChunks(days(4), volume([50, 50, 50, 50]), 100))).toEqual(['01-01..01-03', '01-03..01-05']);
  });

  it('has no ceiling: more than a thousand chunks are cut into windows later (domain/plan/windows.ts)', () => {
    const hourly = pipelineWith({ chunk: { grain: 'hour', targetRows: 10 } });
    const units = grainUnits({ from: at('2026-01-01T00:00:00Z'), to: at('2026-03-01T00:00:00Z') }, hourly);
    const full = new Map(units.map((u) => [u.start.getTime(), 10]));

    const chunks = sizeChunks(units, full, 10);
    expect(chunks).toHaveLength(59 * 24);
    expect(chunks.at(-1)).toEqual({ index: 59 * 24 - 1, start: '2026-02-28T23:00:00.000Z', end: '2026-03-01T00:00:00.000Z' });
    // The same hours, merged by a larger target.
    expect(sizeChunks(units, full, 20)).toHaveLength((59 * 24) / 2);
  });
});

describe('volumeByUnit', () => {
  it("names each group's unit by its earliest time, floored in the pipeline's zone as boundaries are", () => {
    const berlin = pipelineWith({ chunk: { grain: 'day', timezone: 'Europe/Berlin' }, historyStart: '2025-12-31T23:00:00Z' });

    const units = volumeByUnit(
      [
        { firstAt: '2026-01-01 23:30:00', rows: 7 }, // 00:30 on January 2 in Berlin
        { firstAt: '2026-01-01 22:59:59.999', rows: 3 }, // 23:59:59.999 on January 1
      ],
      berlin,
    );

    expect([...units.entries()]).toEqual([
      [Date.parse('2026-01-01T23:00:00Z'), 7],
      [Date.parse('2025-12-31T23:00:00Z'), 3],
    ]);
  });

  it('reads timestamps as the warehouse returns them, and refuses anything else', () => {
    expect(warehouseInstant('2026-01-02 03:04:05.678').toISOString()).toBe('2026-01-02T03:04:05.678Z');
    expect(warehouseInstant('2026-01-02T03:04:05Z').toISOString()).toBe('2026-01-02T03:04:05.000Z');
    expect(() => warehouseInstant('yesterday')).toThrow(ValidationError);
  });
});

describe('sortKeyWarning', () => {
  const orders = { schema: 'raw', table: 'order_events' };
  const customers = { schema: 'raw', table: 'customers' };

  it('is silent when a table the source reads is sorted first on the time column', () => {
    expect(
      sortKeyWarning(daily, [
        { table: orders, firstSortColumn: 'ordered_at' },
        { table: customers, firstSortColumn: undefined },
      ]),
    ).toBeUndefined();
  });

  it('names each table and how it is sorted otherwise, and what to do', () => {
    const warning = sortKeyWarning(daily, [
      { table: orders, firstSortColumn: 'order_id' },
      { table: { table: 'customers' }, firstSortColumn: undefined },
    ]);

    expect(warning).toBe(
      'pipeline orders: no table the source reads is sorted first on the time column ordered_at: raw.order_events (sorted first on order_id), customers (no sort key). ' +
        "Each chunk's load then scans the whole source rather than the chunk's rows; give the source table a sort key starting with ordered_at " +
        '(locally: an index on it), or use fewer, larger chunks (chunk.grain, chunk.targetRows)',
    );
  });
});
