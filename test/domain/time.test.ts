import { describe, expect, it } from 'vitest';
import type { ChunkGrain } from '../../domain/plan/chunk.ts';
import { floorToGrain, fromWallClock, isOnGrain, nextBoundary, wallClock } from '../../domain/time.ts';
import { HOUR_MS } from './fixtures.ts';

const at = (iso: string) => new Date(iso);
const floor = (iso: string, grain: ChunkGrain, zone: string) => floorToGrain(at(iso), grain, zone).toISOString();
const next = (iso: string, grain: ChunkGrain, zone: string) => nextBoundary(at(iso), grain, zone).toISOString();

describe('time in UTC', () => {
  it.each([
    ['2026-01-15T10:59:59.999Z', 'hour', '2026-01-15T10:00:00.000Z'],
    ['2026-01-15T10:00:00.000Z', 'hour', '2026-01-15T10:00:00.000Z'],
    ['2026-01-15T23:59:59.999Z', 'day', '2026-01-15T00:00:00.000Z'],
    ['2026-01-15T00:00:00.000Z', 'day', '2026-01-15T00:00:00.000Z'],
    ['2026-01-31T12:00:00.000Z', 'month', '2026-01-01T00:00:00.000Z'],
    ['2028-02-29T13:00:00.000Z', 'month', '2028-02-01T00:00:00.000Z'],
    ['2028-02-29T13:00:00.000Z', 'day', '2028-02-29T00:00:00.000Z'],
  ] as const)('floors %s to the %s starting %s', (instant, grain, expected) => {
    expect(floor(instant, grain, 'UTC')).toBe(expected);
  });

  it.each([
    ['2026-01-15T10:00:00.000Z', 'hour', '2026-01-15T11:00:00.000Z'],
    ['2026-01-15T23:00:00.000Z', 'hour', '2026-01-16T00:00:00.000Z'],
    ['2026-01-31T00:00:00.000Z', 'day', '2026-02-01T00:00:00.000Z'],
    ['2026-12-31T00:00:00.000Z', 'day', '2027-01-01T00:00:00.000Z'],
    ['2026-02-28T00:00:00.000Z', 'day', '2026-03-01T00:00:00.000Z'],
    ['2028-02-28T00:00:00.000Z', 'day', '2028-02-29T00:00:00.000Z'],
    ['2028-02-29T00:00:00.000Z', 'day', '2028-03-01T00:00:00.000Z'],
    ['2026-01-01T00:00:00.000Z', 'month', '2026-02-01T00:00:00.000Z'],
    ['2028-02-01T00:00:00.000Z', 'month', '2028-03-01T00:00:00.000Z'],
    ['2026-12-01T00:00:00.000Z', 'month', '2027-01-01T00:00:00.000Z'],
  ] as const)('moves from the %s boundary %s to %s', (boundary, grain, expected) => {
    expect(next(boundary, grain, 'UTC')).toBe(expected);
  });

  it.each([
    ['2026-01-15T10:00:00.000Z', 'hour', true],
    ['2026-01-15T10:00:00.001Z', 'hour', false],
    ['2026-01-15T10:30:00.000Z', 'hour', false],
    ['2026-01-15T00:00:00.000Z', 'day', true],
    ['2026-01-15T01:00:00.000Z', 'day', false],
    ['2026-02-01T00:00:00.000Z', 'month', true],
    ['2026-02-02T00:00:00.000Z', 'month', false],
  ] as const)('says %s is on the %s grain: %s', (instant, grain, expected) => {
    expect(isOnGrain(at(instant), grain, 'UTC')).toBe(expected);
  });
});

describe('time in Europe/Berlin across DST', () => {
  const zone = 'Europe/Berlin';

  it('makes the day of the March change (2026-03-29) 23 hours long', () => {
    const start = floorToGrain(at('2026-03-29T12:00:00Z'), 'day', zone);

    const end = nextBoundary(start, 'day', zone);

    expect(start.toISOString()).toBe('2026-03-28T23:00:00.000Z');
    expect(end.toISOString()).toBe('2026-03-29T22:00:00.000Z');
    expect(end.getTime() - start.getTime()).toBe(23 * HOUR_MS);
  });

  it('makes the day of the October change (2026-10-25) 25 hours long', () => {
    const start = floorToGrain(at('2026-10-25T12:00:00Z'), 'day', zone);

    const end = nextBoundary(start, 'day', zone);

    expect(start.toISOString()).toBe('2026-10-24T22:00:00.000Z');
    expect(end.toISOString()).toBe('2026-10-25T23:00:00.000Z');
    expect(end.getTime() - start.getTime()).toBe(25 * HOUR_MS);
  });

  it('keeps hour chunks 60 minutes of absolute time through the spring-forward gap', () => {
    // 00:59:59Z is 01:59:59 CET; 01:00Z is 03:00 CEST (02:xx local never happens).
    expect(floor('2026-03-29T00:59:59Z', 'hour', zone)).toBe('2026-03-29T00:00:00.000Z');
    expect(next('2026-03-29T00:00:00Z', 'hour', zone)).toBe('2026-03-29T01:00:00.000Z');
    expect(isOnGrain(at('2026-03-29T01:00:00Z'), 'hour', zone)).toBe(true);
  });

  it('keeps the repeated local hour of the fall-back as two separate hour chunks', () => {
    // 00:30Z is 02:30 CEST and 01:30Z is 02:30 CET: same wall clock, different chunks.
    expect(floor('2026-10-25T00:30:00Z', 'hour', zone)).toBe('2026-10-25T00:00:00.000Z');
    expect(floor('2026-10-25T01:30:00Z', 'hour', zone)).toBe('2026-10-25T01:00:00.000Z');
  });

  it('starts months at local midnight: March 2026 runs from 2026-02-28T23:00Z to 2026-03-31T22:00Z', () => {
    const start = floorToGrain(at('2026-03-15T00:00:00Z'), 'month', zone);

    expect(start.toISOString()).toBe('2026-02-28T23:00:00.000Z');
    expect(nextBoundary(start, 'month', zone).toISOString()).toBe('2026-03-31T22:00:00.000Z');
  });

  it('puts an instant just before local midnight in the earlier day', () => {
    // 2026-01-31T22:59:59Z is 23:59:59 on Jan 31 in Berlin.
    expect(floor('2026-01-31T22:59:59Z', 'day', zone)).toBe('2026-01-30T23:00:00.000Z');
    expect(floor('2026-01-31T23:00:00Z', 'month', zone)).toBe('2026-01-31T23:00:00.000Z');
  });

  it('says UTC midnight is not a Berlin day boundary', () => {
    expect(isOnGrain(at('2026-01-01T00:00:00Z'), 'day', zone)).toBe(false);
    expect(isOnGrain(at('2025-12-31T23:00:00Z'), 'day', zone)).toBe(true);
  });
});

describe('time in Asia/Kolkata (+05:30)', () => {
  const zone = 'Asia/Kolkata';

  it('aligns hours to the local hour, which falls at half past in UTC', () => {
    expect(floor('2026-01-01T00:00:00Z', 'hour', zone)).toBe('2025-12-31T23:30:00.000Z');
    expect(floor('2026-01-01T00:29:59Z', 'hour', zone)).toBe('2025-12-31T23:30:00.000Z');
    expect(floor('2026-01-01T00:30:00Z', 'hour', zone)).toBe('2026-01-01T00:30:00.000Z');
    expect(next('2025-12-31T23:30:00Z', 'hour', zone)).toBe('2026-01-01T00:30:00.000Z');
  });

  it('says a whole UTC hour is not on the local hour grain', () => {
    expect(isOnGrain(at('2026-01-01T00:00:00Z'), 'hour', zone)).toBe(false);
    expect(isOnGrain(at('2026-01-01T00:30:00Z'), 'hour', zone)).toBe(true);
  });

  it('starts days at 18:30 UTC of the previous day', () => {
    expect(floor('2026-01-01T12:00:00Z', 'day', zone)).toBe('2025-12-31T18:30:00.000Z');
    expect(next('2025-12-31T18:30:00Z', 'day', zone)).toBe('2026-01-01T18:30:00.000Z');
  });
});

describe('wallClock and fromWallClock', () => {
  it('read and write the local time of an instant', () => {
    expect(wallClock(at('2026-07-01T10:15:30Z'), 'Europe/Berlin')).toEqual({ year: 2026, month: 7, day: 1, hour: 12, minute: 15, second: 30 });
    expect(fromWallClock(2026, 7, 1, 'Europe/Berlin', 12).toISOString()).toBe('2026-07-01T10:00:00.000Z');
    expect(fromWallClock(2026, 1, 1, 'America/New_York').toISOString()).toBe('2026-01-01T05:00:00.000Z');
  });
});

/*
 * A day whose local midnight does not exist (DST starting at 00:00 east of UTC:
 * Cairo, Beirut; west, Santiago) starts at the first instant of its local date,
 * so floorToGrain stays on the grain and nextBoundary always moves on: an
 * iteration that landed an hour before the gap once planned zero-length chunks
 * until Plan refused, failing every run whose history spanned such a day.
 */
describe('days whose local midnight does not exist', () => {
  it('floors an instant of Cairo 2025-04-25 (DST starts at 00:00) to the first instant of that day', () => {
    expect(floor('2025-04-25T06:00:00Z', 'day', 'Africa/Cairo')).toBe('2025-04-24T22:00:00.000Z');
  });

  it('moves from Cairo 2025-04-24 to 2025-04-25 at the DST change, 24 hours later', () => {
    expect(next('2025-04-23T22:00:00Z', 'day', 'Africa/Cairo')).toBe('2025-04-24T22:00:00.000Z');
  });

  it('moves from Beirut 2025-03-29 to 2025-03-30 at the DST change', () => {
    expect(next('2025-03-28T22:00:00Z', 'day', 'Asia/Beirut')).toBe('2025-03-29T22:00:00.000Z');
  });

  it('gets the same gap right in Santiago (2026-09-06 starts at 01:00 local = 04:00Z)', () => {
    expect(next('2026-09-05T04:00:00Z', 'day', 'America/Santiago')).toBe('2026-09-06T04:00:00.000Z');
    expect(floor('2026-09-06T12:00:00Z', 'day', 'America/Santiago')).toBe('2026-09-06T04:00:00.000Z');
  });
});

/*
 * Hour chunks follow the LOCAL hour: across Lord Howe's 30-minute DST change
 * (2025-04-05T15:00Z, 02:00 +11 -> 01:30 +10:30) nextBoundary gives the next local
 * full hour, a chunk of 90 minutes (14:00Z -> 15:30Z), not 60 absolute minutes,
 * which left every later boundary off the hour (see plan.test.ts).
 */
describe('hours in a zone with a 30-minute DST shift', () => {
  it('moves to the next local hour across the Lord Howe fall-back', () => {
    const boundary = next('2025-04-05T14:00:00Z', 'hour', 'Australia/Lord_Howe');

    expect(isOnGrain(at(boundary), 'hour', 'Australia/Lord_Howe')).toBe(true);
    expect(boundary).toBe('2025-04-05T15:30:00.000Z');
  });
});
