import type { ChunkGrain } from './spec.ts';

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

interface WallClock { year: number; month: number; day: number; hour: number; minute: number; second: number }

export function wallClock(instant: Date, timezone: string): WallClock {
  const parts: Record<string, number> = {};
  for (const part of formatter(timezone).formatToParts(instant)) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  return {
    year: parts.year!, month: parts.month!, day: parts.day!,
    hour: parts.hour!, minute: parts.minute!, second: parts.second!,
  };
}

function offsetMs(instant: number, timezone: string): number {
  const w = wallClock(new Date(instant), timezone);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return asUtc - Math.floor(instant / 1000) * 1000;
}

/** The instant at which the wall clock in `timezone` shows the given local time. */
export function fromWallClock(year: number, month: number, day: number, timezone: string, hour = 0): Date {
  const target = Date.UTC(year, month - 1, day, hour);
  let guess = target;
  for (let i = 0; i < 3; i++) {
    const next = target - offsetMs(guess, timezone);
    if (next === guess) break;
    guess = next;
  }
  return new Date(guess);
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
  if (grain === 'hour') return new Date(boundary.getTime() + HOUR_MS);
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
