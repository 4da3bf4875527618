import { definePipeline } from '../../domain/define-pipeline.ts';
import type { Pipeline, PipelineSpec } from '../../domain/spec.ts';

/**
 * A minimal valid spec. Its source query reads `raw.order_events`, which
 * shares no name with the target `analytics.orders`, so a test can tell the
 * author's SQL from the SQL the tool generates around it.
 */
export const ordersSpec: PipelineSpec = {
  name: 'orders',
  target: { schema: 'analytics', table: 'orders' },
  sourceSql: 'SELECT order_id, ordered_at, amount FROM raw.order_events WHERE ordered_at >= :start AND ordered_at < :end',
  timeColumn: 'ordered_at',
  chunk: { grain: 'day' },
  historyStart: '2026-01-01T00:00:00Z',
  businessKey: ['order_id'],
  freshness: { slaMinutes: 1440 },
};

export function specWith(overrides: Partial<PipelineSpec>): PipelineSpec {
  return { ...ordersSpec, ...overrides };
}

export function pipelineWith(overrides: Partial<PipelineSpec> = {}): Pipeline {
  return definePipeline(specWith(overrides));
}

/** The error `act` throws; fails the test when it throws none. */
export function errorOf(act: () => unknown): Error {
  try {
    act();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the call to throw');
}

/** Seeded PRNG (mulberry32): property-style tests that fail the same way every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const localFormats = new Map<string, Intl.DateTimeFormat>();

/** Wall clock in a zone, computed independently of domain/time.ts. */
export function localParts(instant: Date | string, timeZone: string) {
  let format = localFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    localFormats.set(timeZone, format);
  }
  const parts = format.formatToParts(new Date(instant));
  const get = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  return { year: get('year'), month: get('month'), day: get('day'), hour: get('hour'), minute: get('minute'), second: get('second') };
}

export const HOUR_MS = 3_600_000;
