import type { ChunkGrain } from './plan/chunk.ts';

/**
 * Chunk boundaries in a time zone. Instants are absolute (`Date`); a day or
 * month starts at local midnight in the pipeline's zone, so a day chunk is
 * 23 or 25 hours long across a DST change. Hour chunks are 60 minutes of
 * absolute time, aligned to the local hour.
 */

const HOUR_MS = 3_600_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timezone: string): Intl.DateTimeFormat {
  let f = formatters.get(timezone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timezone, f);
  }
  return f;
}

interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

export function wallClock(instant: Date, timezone: string): WallClock {
  const parts: Record<string, number> = {};
  for (const part of formatter(timezone).formatToParts(instant)) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  return {
    year: parts.year!,
    month: parts.month!,
    day: parts.day!,
    hour: parts.hour!,
    minute: parts.minute!,
    second: parts.second!,
  };
}

function offsetMs(instant: number, timezone: string): number {
  const w = wallClock(new Date(instant), timezone);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return asUtc - Math.floor(instant / 1000) * 1000;
}

const DAY_MS = 86_400_000;

/**
 * The first instant at which the wall clock in `timezone` shows the given
 * local time; when that local time does not exist (clocks jumped over it,
 * as at midnight in Cairo or Beirut), the instant of the jump.
 */
export function fromWallClock(year: number, month: number, day: number, timezone: string, hour = 0): Date {
  const target = Date.UTC(year, month - 1, day, hour);
  // The offset in force a day before and a day after brackets any change.
  const before = target - offsetMs(target - DAY_MS, timezone);
  const after = target - offsetMs(target + DAY_MS, timezone);
  const shows = (instant: number) => {
    const w = wallClock(new Date(instant), timezone);
    return w.year === year && w.month === month && w.day === day && w.hour === hour && w.minute === 0 && w.second === 0;
  };
  const exact = [before, after].filter(shows);
  if (exact.length > 0) return new Date(Math.min(...exact));
  // A gap: offset `before` names the instant the clocks jumped forward.
  return new Date(before);
}

/** Start of the chunk containing `instant`. */
export function floorToGrain(instant: Date, grain: ChunkGrain, timezone: string): Date {
  const w = wallClock(instant, timezone);
  if (grain === 'hour') {
    const intoHour = (w.minute * 60 + w.second) * 1000 + instant.getUTCMilliseconds();
    return new Date(instant.getTime() - intoHour);
  }
  return fromWallClock(w.year, w.month, grain === 'day' ? w.day : 1, timezone);
}

/** Start of the chunk after the one starting at `boundary`. */
export function nextBoundary(boundary: Date, grain: ChunkGrain, timezone: string): Date {
  if (grain === 'hour') {
    // The next local full hour: 60 minutes, except across a 30-minute DST
    // change (Lord Howe), where it is 30 or 90. When the wall clock shows a
    // full hour 60 minutes on, no earlier quarter does (offsets change by
    // quarters of an hour, at most once an hour), so that one look decides
    // the common case; planning ten years of hours makes 87,600 of them.
    const hourLater = new Date(boundary.getTime() + HOUR_MS);
    if (isOnGrain(hourLater, 'hour', timezone)) return hourLater;
    for (let minutes = 15; minutes <= 180; minutes += 15) {
      const candidate = new Date(boundary.getTime() + minutes * 60_000);
      if (isOnGrain(candidate, 'hour', timezone)) return candidate;
    }
    return new Date(boundary.getTime() + HOUR_MS);
  }
  const w = wallClock(boundary, timezone);
  if (grain === 'day') {
    const next = new Date(Date.UTC(w.year, w.month - 1, w.day + 1));
    return fromWallClock(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), timezone);
  }
  const next = new Date(Date.UTC(w.year, w.month, 1));
  return fromWallClock(next.getUTCFullYear(), next.getUTCMonth() + 1, 1, timezone);
}

export function isOnGrain(instant: Date, grain: ChunkGrain, timezone: string): boolean {
  return floorToGrain(instant, grain, timezone).getTime() === instant.getTime();
}

const ISO_INSTANT = /^(\d{4})-(\d{2})-(\d{2})(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/;

/**
 * Parses `2026-01-01` (midnight UTC) or a date-time with an explicit zone.
 * `malformed` for anything else, including a zoneless date-time (it would
 * mean a different instant on every host); `not-a-date` for a day or time
 * that does not exist (2026-02-30 is not March 2).
 */
export function parseInstant(value: unknown): Date | 'malformed' | 'not-a-date' {
  if (typeof value !== 'string') return 'malformed';
  const match = ISO_INSTANT.exec(value);
  if (!match) return 'malformed';
  const [, year, month, day] = match;
  const date = new Date(value.length === 10 ? `${value}T00:00:00Z` : value);
  if (Number.isNaN(date.getTime())) return 'not-a-date';
  const calendar = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  if (calendar.getUTCFullYear() !== Number(year) || calendar.getUTCMonth() + 1 !== Number(month) || calendar.getUTCDate() !== Number(day)) {
    return 'not-a-date';
  }
  return date;
}

/** Parses the warehouse's `2026-01-02 03:04:05[.fff]` (UTC, as timestamps come back) or an ISO string. */
export function parseWarehouseTime(value: string): Date {
  return new Date(/[zZ]|[+-]\d\d(:?\d\d)?$/.test(value) ? value : `${value.replace(' ', 'T')}Z`);
}

/** A warehouse time (parseWarehouseTime) as an ISO instant, `2026-01-02T03:04:05.000Z`. */
export function warehouseTimeIso(value: unknown): string {
  return parseWarehouseTime(String(value)).toISOString();
}
