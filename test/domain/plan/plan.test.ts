import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../domain/errors.ts';
import { quoteIdent } from '../../../domain/identifiers.ts';
import type { BatchInterval, Chunk, ChunkGrain } from '../../../domain/plan/chunk.ts';
import type { LiveColumn } from '../../../domain/plan/live-column.ts';
import type { ExecutionInput } from '../../../domain/plan/plan.ts';
import {
  batchIdFor,
  checkSourceColumns,
  isCheck,
  isRestatement,
  liveTableColumns,
  nextRerun,
  planChunks,
  planningTime,
  previousVersionTableFor,
  resolveInterval,
  resolvePipeline,
  stagingTableFor,
} from '../../../domain/plan/plan.ts';
import type { Pipeline } from '../../../domain/spec.ts';
import { MAX_TABLE_NAME_LENGTH } from '../../../domain/spec.ts';
import { floorToGrain } from '../../../domain/time.ts';
import { errorOf, HOUR_MS, localParts, pipelineWith, seededRandom } from '../fixtures.ts';

const DAY_MS = 24 * HOUR_MS;
const at = (iso: string) => new Date(iso);
const orders = pipelineWith();
const NOW = at('2026-03-15T10:20:00Z');

function interval(from: string, to: string): BatchInterval {
  return { from: at(from), to: at(to) };
}

const MEGABYTE = 1024 * 1024;

function rejectionOf(input: ExecutionInput, pipeline: Pipeline = orders, now: Date = NOW): Error {
  return errorOf(() => resolveInterval(input, pipeline, now));
}

describe('resolvePipeline', () => {
  const known = [orders, pipelineWith({ name: 'returns' })];

  it.each([null, 'orders', 42, ['orders'], undefined])('rejects the non-object execution input %j', (input) => {
    expect(() => resolvePipeline(input, known)).toThrow(ValidationError);
    expect(() => resolvePipeline(input, known)).toThrow(/execution input must be a JSON object like \{"pipeline": "name"\}/);
  });

  it.each([{}, { pipeline: '' }, { pipeline: 7 }, { from: '2026-01-01' }])('rejects %j, which names no pipeline', (input) => {
    expect(() => resolvePipeline(input, known)).toThrow(/^input\.pipeline is required$/);
  });

  it('lists the known pipelines when the name is unknown', () => {
    expect(() => resolvePipeline({ pipeline: 'ordrs' }, known)).toThrow(/^unknown pipeline "ordrs"; known pipelines: orders, returns$/);
  });

  it('says there are none when no pipeline is deployed', () => {
    expect(() => resolvePipeline({ pipeline: 'orders' }, [])).toThrow(/known pipelines: \(none\)/);
  });

  it('returns the pipeline the input names', () => {
    expect(resolvePipeline({ pipeline: 'returns' }, known).name).toBe('returns');
  });

  it('quotes at most a bounded part of a megabyte-long input that is not an object, and says how long it was', () => {
    const error = errorOf(() => resolvePipeline('x'.repeat(MEGABYTE), known));

    expect(error.message.length).toBeLessThan(400);
    expect(error.message).toMatch(/got "x{100,}\.\.\. \(1048578 characters\)$/);
  });

  it('quotes at most a bounded part of a megabyte-long pipeline name', () => {
    const error = errorOf(() => resolvePipeline({ pipeline: 'p'.repeat(MEGABYTE) }, known));

    expect(error.message.length).toBeLessThan(400);
    expect(error.message).toMatch(/^unknown pipeline "p{100,}\.\.\. \(1048578 characters\); known pipelines: orders, returns$/);
  });
});

describe('resolveInterval', () => {
  it('covers historyStart up to the start of the current chunk for a scheduled run', () => {
    const result = resolveInterval({ pipeline: 'orders' }, orders, NOW);

    expect(result.from.toISOString()).toBe('2026-01-01T00:00:00.000Z');
    expect(result.to.toISOString()).toBe('2026-03-15T00:00:00.000Z');
  });

  it('floors now in the pipeline zone for a scheduled Berlin day pipeline', () => {
    const berlin = pipelineWith({ chunk: { grain: 'day', timezone: 'Europe/Berlin' }, historyStart: '2025-12-31T23:00:00Z' });

    const result = resolveInterval({ pipeline: 'orders' }, berlin, NOW);

    expect(result.to.toISOString()).toBe('2026-03-14T23:00:00.000Z');
  });

  it('floors now to the local half-hour-offset hour for a scheduled Kolkata hour pipeline', () => {
    const kolkata = pipelineWith({ chunk: { grain: 'hour', timezone: 'Asia/Kolkata' }, historyStart: '2026-01-01T00:00:00+05:30' });

    expect(resolveInterval({ pipeline: 'orders' }, kolkata, NOW).to.toISOString()).toBe('2026-03-15T09:30:00.000Z');
  });

  it('takes an explicit date-only to as UTC midnight', () => {
    expect(resolveInterval({ pipeline: 'orders', to: '2026-02-01' }, orders, NOW).to.toISOString()).toBe('2026-02-01T00:00:00.000Z');
  });

  it.each(['2026-01-01', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00.000Z', '2026-01-01T01:00:00+01:00', '2025-12-31T19:00-05:00'])(
    'accepts from %s, which is historyStart written another way',
    (from) => {
      const result = resolveInterval({ pipeline: 'orders', from, to: '2026-02-01T00:00:00Z' }, orders, NOW);

      expect(result).toEqual(interval('2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z'));
    },
  );

  it('accepts a to equal to now when now is on a boundary', () => {
    const now = at('2026-03-15T00:00:00Z');

    expect(resolveInterval({ pipeline: 'orders', to: '2026-03-15' }, orders, now).to).toEqual(now);
  });

  it.each([
    ['before from', '2025-12-01'],
    ['equal to from', '2026-01-01'],
  ])('rejects a to %s as an empty or reversed interval', (_what, to) => {
    expect(rejectionOf({ pipeline: 'orders', to }).message).toMatch(/^interval is empty or reversed: from 2026-01-01T00:00:00\.000Z is not before to/);
  });

  it('rejects a scheduled run while the first chunk is still open', () => {
    expect(rejectionOf({ pipeline: 'orders' }, orders, at('2026-01-01T05:00:00Z')).message).toMatch(/empty or reversed/);
  });

  it.each([
    ['a 13th month', '2026-13-01', /^input\.to is not a real date: 2026-13-01$/],
    ['a 32nd day', '2026-01-32', /not a real date/],
    ['hour 25', '2026-01-01T25:00:00Z', /not a real date/],
    ['a word', 'yesterday', /^input\.to must be an ISO 8601 date or a date-time with a zone .*got "yesterday"$/],
    ['a number', 20260201, /got 20260201$/],
    ['null', null, /got null$/],
    ['a date-time without a zone', '2026-02-01T00:00:00', /must be an ISO 8601 date or a date-time with a zone/],
    ['single-digit month and day', '2026-2-1', /must be an ISO 8601/],
    ['slashes', '2026/02/01', /must be an ISO 8601/],
    ['an empty string', '', /must be an ISO 8601/],
    ['a date with trailing text', '2026-02-01; DROP TABLE x', /must be an ISO 8601/],
  ])('rejects %s as input.to', (_what, to, message) => {
    const error = rejectionOf({ pipeline: 'orders', to } as unknown as ExecutionInput);

    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toMatch(message);
  });

  it('rejects a malformed input.from naming the field', () => {
    expect(rejectionOf({ pipeline: 'orders', from: 'last week' }).message).toMatch(/^input\.from must be an ISO 8601/);
  });

  // Fixed bug, kept as a regression test (domain/plan/plan.ts): only NaN dates are
  // refused, and V8 rolls a day past the month's end over instead of
  // failing, so '2026-02-30' is accepted as 2026-03-02 (and '2026-02-29' as
  // 2026-03-01, '2026-04-31' as 2026-05-01). A typo silently publishes a
  // different interval. Expected: ValidationError "not a real date".
  it('rejects 2026-02-30, a day that does not exist, instead of rolling it over to March 2', () => {
    expect(rejectionOf({ pipeline: 'orders', to: '2026-02-30' }).message).toMatch(/not a real date/);
  });

  it('rejects a to off the day grain and names the nearest earlier boundary', () => {
    const error = rejectionOf({ pipeline: 'orders', to: '2026-02-01T06:00:00Z' });

    expect(error.message).toBe('input.to 2026-02-01T06:00:00.000Z is not on a day boundary in UTC (nearest earlier boundary: 2026-02-01T00:00:00.000Z)');
  });

  it('rejects a UTC midnight to for a Berlin pipeline and names the Berlin boundary', () => {
    const berlin = pipelineWith({ chunk: { grain: 'day', timezone: 'Europe/Berlin' }, historyStart: '2025-12-31T23:00:00Z' });

    expect(rejectionOf({ pipeline: 'orders', to: '2026-02-01' }, berlin).message).toMatch(
      /in Europe\/Berlin \(nearest earlier boundary: 2026-01-31T23:00:00\.000Z\)/,
    );
  });

  it('rejects a from that differs from historyStart for a swap pipeline', () => {
    const error = rejectionOf({ pipeline: 'orders', from: '2026-02-01', to: '2026-03-01' });

    expect(error.message).toBe(
      'pipeline orders publishes by swap, which rebuilds the whole table: input.from must be omitted or equal historyStart 2026-01-01T00:00:00.000Z',
    );
  });

  it('lets a pipeline that does not publish by swap start after historyStart', () => {
    const intervals: Pipeline = { ...orders, publishMode: 'replace-intervals' };

    const result = resolveInterval({ pipeline: 'orders', from: '2026-02-01', to: '2026-03-01' }, intervals, NOW);

    expect(result).toEqual(interval('2026-02-01T00:00:00Z', '2026-03-01T00:00:00Z'));
  });

  it('covers the newest complete day and lookback days before it on a scheduled run of a replace-intervals pipeline', () => {
    const intervals = pipelineWith({ publishMode: 'replace-intervals', lookback: 2 });

    expect(resolveInterval({ pipeline: 'orders' }, intervals, NOW)).toEqual(interval('2026-03-12T00:00:00Z', '2026-03-15T00:00:00Z'));
    expect(resolveInterval({ pipeline: 'orders' }, pipelineWith({ publishMode: 'replace-intervals' }), NOW)).toEqual(
      interval('2026-03-14T00:00:00Z', '2026-03-15T00:00:00Z'),
    );
  });

  it('covers the same days before a given to when from is left out (a scheduled start passes only to)', () => {
    const intervals = pipelineWith({ publishMode: 'replace-intervals', lookback: 1 });

    expect(resolveInterval({ pipeline: 'orders', to: '2026-03-10' }, intervals, NOW)).toEqual(interval('2026-03-08T00:00:00Z', '2026-03-10T00:00:00Z'));
  });

  it('steps a scheduled run back over local days across a DST change (a 23-hour day) and never before historyStart', () => {
    const berlin = pipelineWith({
      publishMode: 'replace-intervals',
      lookback: 3,
      chunk: { grain: 'day', timezone: 'Europe/Berlin' },
      historyStart: '2026-03-27T23:00:00Z',
    });

    // Berlin springs forward on 2026-03-29: that day is 23 hours long.
    const result = resolveInterval({ pipeline: 'orders' }, berlin, new Date('2026-03-31T08:00:00Z'));

    expect(result).toEqual(interval('2026-03-27T23:00:00Z', '2026-03-30T22:00:00Z'));
  });

  it('rejects a from before historyStart for a replace-intervals pipeline, naming where history starts', () => {
    const intervals = pipelineWith({ publishMode: 'replace-intervals' });

    expect(rejectionOf({ pipeline: 'orders', from: '2025-12-01', to: '2026-02-01' }, intervals).message).toBe(
      'input.from 2025-12-01T00:00:00.000Z is before the history of pipeline orders, which starts at 2026-01-01T00:00:00.000Z (historyStart): start at or after it',
    );
  });

  it('rejects a from off the grain for a replace-intervals pipeline', () => {
    const intervals = pipelineWith({ publishMode: 'replace-intervals' });

    expect(rejectionOf({ pipeline: 'orders', from: '2026-02-01T12:00:00Z', to: '2026-03-01' }, intervals).message).toMatch(
      /^input\.from 2026-02-01T12:00:00\.000Z is not on a day boundary in UTC/,
    );
  });

  it.each([
    ['to', { pipeline: 'orders', to: '9'.repeat(MEGABYTE) }],
    ['from', { pipeline: 'orders', from: { nested: 'y'.repeat(MEGABYTE) } }],
    ['an unknown field', { pipeline: 'orders', ['z'.repeat(MEGABYTE)]: true }],
  ])('keeps the message bounded when %s carries a megabyte', (_what, input) => {
    const error = rejectionOf(input as unknown as ExecutionInput);

    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message.length).toBeLessThan(400);
    expect(error.message).toMatch(/\.\.\. \(\d{7} characters\)/);
  });

  it('rejects unknown extra fields and lists them', () => {
    const input = { pipeline: 'orders', force: true, dryRun: 1 } as unknown as ExecutionInput;

    expect(rejectionOf(input).message).toBe('input has unknown field(s): force, dryRun (allowed: pipeline, from, to, restate, check)');
  });

  it('rejects a to in the future', () => {
    expect(rejectionOf({ pipeline: 'orders', to: '2026-04-01' }).message).toBe('input.to 2026-04-01T00:00:00.000Z is in the future');
  });

  it('rejects a to later today, whose chunk is not complete', () => {
    expect(rejectionOf({ pipeline: 'orders', to: '2026-03-16' }).message).toMatch(/in the future/);
  });
});

describe('planChunks', () => {
  it('cuts January into 31 day chunks numbered from 0', () => {
    const chunks = planChunks(interval('2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z'), orders);

    expect(chunks).toHaveLength(31);
    expect(chunks[0]).toEqual({ index: 0, start: '2026-01-01T00:00:00.000Z', end: '2026-01-02T00:00:00.000Z' });
    expect(chunks[30]).toEqual({ index: 30, start: '2026-01-31T00:00:00.000Z', end: '2026-02-01T00:00:00.000Z' });
  });

  it('plans one chunk for a one-chunk interval', () => {
    expect(planChunks(interval('2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z'), orders)).toHaveLength(1);
  });

  it('includes the 23-hour and 25-hour days of a Berlin year', () => {
    const berlin = pipelineWith({ chunk: { grain: 'day', timezone: 'Europe/Berlin' }, historyStart: '2025-12-31T23:00:00Z' });

    const chunks = planChunks(interval('2025-12-31T23:00:00Z', '2026-12-31T23:00:00Z'), berlin);
    const hours = chunks.map((c) => (Date.parse(c.end) - Date.parse(c.start)) / HOUR_MS);

    expect(chunks).toHaveLength(365);
    expect(hours.filter((h) => h === 23)).toHaveLength(1);
    expect(hours.filter((h) => h === 25)).toHaveLength(1);
    expect(hours.filter((h) => h === 24)).toHaveLength(363);
  });

  it('plans ten years of hours (87,600 chunks): no ceiling, a long batch runs in windows', () => {
    const hourly = pipelineWith({ chunk: { grain: 'hour' } });
    const from = at('2016-01-01T00:00:00Z');
    const hours = 87_600;

    const chunks = planChunks({ from, to: new Date(from.getTime() + hours * HOUR_MS) }, hourly);

    expect(chunks).toHaveLength(hours);
    expect(chunks.every((c, i) => c.index === i && new Date(c.end).getTime() - new Date(c.start).getTime() === HOUR_MS)).toBe(true);
    expect(chunks.at(-1)!.end).toBe(new Date(from.getTime() + hours * HOUR_MS).toISOString());
  });

  describe('over random intervals (seeded)', () => {
    // Zones whose DST shifts are whole hours at times other than midnight,
    // so every boundary is local hh:00 and every day starts at 00:00.
    const zones = ['UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Sydney', 'Asia/Kolkata', 'America/St_Johns'];
    const grains: ChunkGrain[] = ['hour', 'day', 'month'];
    const maxSpan: Record<ChunkGrain, number> = { hour: 41 * DAY_MS, day: 600 * DAY_MS, month: 25 * 365 * DAY_MS };
    const minStep: Record<ChunkGrain, number> = { hour: HOUR_MS, day: 25 * HOUR_MS, month: 32 * DAY_MS };
    const CASES = 4;
    // Random windows rarely contain a DST change, so every zone also gets
    // intervals spanning all of its 2026 changes (Mar 8 - Apr 5, Oct 4 - Nov 1).
    const anchors: Record<ChunkGrain, [string, string][]> = {
      hour: [
        ['2026-03-07T00:00:00Z', '2026-03-10T00:00:00Z'],
        ['2026-03-28T00:00:00Z', '2026-03-30T00:00:00Z'],
        ['2026-04-04T00:00:00Z', '2026-04-06T00:00:00Z'],
        ['2026-10-03T00:00:00Z', '2026-10-05T00:00:00Z'],
        ['2026-10-24T00:00:00Z', '2026-10-26T00:00:00Z'],
        ['2026-10-31T00:00:00Z', '2026-11-03T00:00:00Z'],
      ],
      day: [['2026-01-01T12:00:00Z', '2027-01-01T12:00:00Z']],
      month: [['2020-01-15T00:00:00Z', '2045-01-15T00:00:00Z']],
    };

    /** Why the plan is wrong, or '' when it is right. */
    function problemsWith(chunks: Chunk[], from: Date, to: Date, grain: ChunkGrain, zone: string): string {
      if (chunks.length === 0) return 'no chunks';
      if (chunks[0]!.start !== from.toISOString()) return `first chunk starts at ${chunks[0]!.start}, not ${from.toISOString()}`;
      if (chunks.at(-1)!.end !== to.toISOString()) return `last chunk ends at ${chunks.at(-1)!.end}, not ${to.toISOString()}`;
      // Local wall clock of every boundary, read once each.
      const local = [chunks[0]!.start, ...chunks.map((c) => c.end)].map((instant) => localParts(instant, zone));
      for (const [i, chunk] of chunks.entries()) {
        if (chunk.index !== i) return `chunk ${i} has index ${chunk.index}`;
        const next = chunks[i + 1];
        if (next && next.start !== chunk.end) return `gap or overlap between chunk ${i} (ends ${chunk.end}) and ${i + 1} (starts ${next.start})`;
        const ms = Date.parse(chunk.end) - Date.parse(chunk.start);
        const a = local[i]!;
        const b = local[i + 1]!;
        const onHour = a.minute === 0 && a.second === 0 && b.minute === 0 && b.second === 0;
        if (!onHour) return `chunk ${i} ${chunk.start}..${chunk.end} is not on local hours`;
        if (grain === 'hour' && ms !== HOUR_MS) return `hour chunk ${i} lasts ${ms} ms`;
        if (grain !== 'hour' && (a.hour !== 0 || b.hour !== 0)) return `chunk ${i} does not run from local midnight to local midnight`;
        const dayAfter = new Date(Date.UTC(a.year, a.month - 1, a.day + 1));
        if (grain === 'day' && (b.year !== dayAfter.getUTCFullYear() || b.month !== dayAfter.getUTCMonth() + 1 || b.day !== dayAfter.getUTCDate())) {
          return `day chunk ${i} ends on ${b.year}-${b.month}-${b.day}, not the day after ${a.year}-${a.month}-${a.day}`;
        }
        if (grain === 'month' && (a.day !== 1 || b.day !== 1 || b.year * 12 + b.month - (a.year * 12 + a.month) !== 1)) {
          return `month chunk ${i} ${chunk.start}..${chunk.end} is not one calendar month`;
        }
      }
      return '';
    }

    for (const zone of zones) {
      for (const grain of grains) {
        it(`covers [from, to) exactly with contiguous ${grain} chunks in ${zone}`, () => {
          const random = seededRandom(zone.length * 1000 + grain.length);
          const pipeline = pipelineWith({
            chunk: { grain, timezone: zone },
            historyStart: floorToGrain(at('2020-01-01T12:00:00Z'), grain, zone).toISOString(),
          });
          const problems: string[] = [];

          const intervals: [number, number][] = anchors[grain].map(([a, b]) => [Date.parse(a), Date.parse(b)]);
          for (let c = 0; c < CASES; c++) {
            const a = Date.parse('2024-01-01T00:00:00Z') + random() * 5 * 365 * DAY_MS;
            intervals.push([a, a + minStep[grain] + random() * maxSpan[grain]]);
          }

          for (const [a, b] of intervals) {
            const from = floorToGrain(new Date(a), grain, zone);
            const to = floorToGrain(new Date(b), grain, zone);
            const problem = problemsWith(planChunks({ from, to }, pipeline), from, to, grain, zone);
            if (problem) problems.push(`[${from.toISOString()}, ${to.toISOString()}): ${problem}`);
          }

          expect(problems).toEqual([]);
        });
      }
    }
  });

  // Fixed bug, kept as a regression test (domain/time.ts nextBoundary): hour chunks
  // in Australia/Lord_Howe drift off the local hour after the 30-minute DST
  // change, so the last chunk ends at 18:00Z, past `to` (17:30Z, itself a
  // valid local-hour boundary): the union is not [from, to).
  it('ends the last Lord Howe hour chunk exactly at to across the 30-minute DST change', () => {
    const lordHowe = pipelineWith({ chunk: { grain: 'hour', timezone: 'Australia/Lord_Howe' }, historyStart: '2025-04-05T13:00:00Z' });

    const chunks = planChunks(interval('2025-04-05T13:00:00Z', '2025-04-05T17:30:00Z'), lordHowe);

    expect(chunks.at(-1)!.end).toBe('2025-04-05T17:30:00.000Z');
  });

  // Fixed bug, kept as a regression test (domain/time.ts fromWallClock): across
  // Cairo's DST start at local midnight (2025-04-25) nextBoundary stops
  // advancing, so planChunks emits zero-length chunks and throws "needs more
  // than 1000 day chunks" for a 10-day interval. Every swap run of a Cairo or
  // Beirut day pipeline whose history spans such a date fails.
  it('plans ten Cairo day chunks for the ten days around the April 2025 DST start', () => {
    const cairo = pipelineWith({ chunk: { grain: 'day', timezone: 'Africa/Cairo' }, historyStart: '2025-03-31T22:00:00Z' });

    const chunks = planChunks(interval('2025-04-20T22:00:00Z', '2025-04-30T21:00:00Z'), cairo);

    expect(chunks).toHaveLength(10);
    expect(chunks.map((c) => c.start)).toContain('2025-04-24T22:00:00.000Z');
  });
});

describe('batchIdFor', () => {
  const january = interval('2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z');

  it('is a 16-character hex id', () => {
    expect(batchIdFor(orders, january)).toMatch(/^[0-9a-f]{16}$/);
  });

  it('is the same for the same pipeline, interval and spec, even from a separately defined pipeline', () => {
    expect(batchIdFor(pipelineWith(), interval('2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z'))).toBe(batchIdFor(orders, january));
  });

  it.each([
    ['to', interval('2026-01-01T00:00:00Z', '2026-02-02T00:00:00Z'), orders],
    ['from', interval('2026-01-02T00:00:00Z', '2026-02-01T00:00:00Z'), orders],
    ['the source query', january, pipelineWith({ sourceSql: 'SELECT * FROM raw.order_events_v2 WHERE ordered_at >= :start AND ordered_at < :end' })],
    ['the pipeline name', january, pipelineWith({ name: 'orders_copy' })],
  ])('changes when %s changes', (_what, otherInterval, otherPipeline) => {
    expect(batchIdFor(otherPipeline, otherInterval)).not.toBe(batchIdFor(orders, january));
  });

  it('gives each restatement an id of its own, and restatement 0 the batch id as before', () => {
    const ids = [0, 1, 2].map((n) => batchIdFor(orders, january, n));
    expect(ids[0]).toBe(batchIdFor(orders, january));
    expect(new Set(ids).size).toBe(3);
    expect(batchIdFor(pipelineWith(), january, 2)).toBe(ids[2]);
  });
});

describe('isRestatement', () => {
  it('is true only for restate: true', () => {
    expect(isRestatement({ pipeline: 'orders', restate: true })).toBe(true);
    expect(isRestatement({ pipeline: 'orders', restate: false })).toBe(false);
    expect(isRestatement({ pipeline: 'orders' })).toBe(false);
  });

  it.each([['yes'], [1], [null]])('refuses restate: %j', (value) => {
    expect(() => isRestatement({ pipeline: 'orders', restate: value })).toThrow(ValidationError);
    expect(() => isRestatement({ pipeline: 'orders', restate: value })).toThrow(/^input\.restate must be true or false, got /);
  });
});

describe('isCheck', () => {
  it('is true only for check: true', () => {
    expect(isCheck({ pipeline: 'orders', check: true })).toBe(true);
    expect(isCheck({ pipeline: 'orders', check: false })).toBe(false);
    expect(isCheck({ pipeline: 'orders' })).toBe(false);
  });

  it.each([['yes'], [1], [null]])('refuses check: %j', (value) => {
    expect(() => isCheck({ pipeline: 'orders', check: value })).toThrow(/^input\.check must be true or false, got /);
  });

  it('is a known field of a run input, refused together with restate', () => {
    const now = new Date('2026-03-01T00:00:00Z');
    const input = { pipeline: 'orders', from: '2026-01-01', to: '2026-02-01' };
    expect(resolveInterval({ ...input, check: true }, pipelineWith(), now)).toEqual(resolveInterval(input, pipelineWith(), now));
    expect(() => resolveInterval({ ...input, check: true, restate: true }, pipelineWith(), now)).toThrow(/^input\.check and input\.restate exclude each other/);
  });
});

describe('check batch ids', () => {
  const january = interval('2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z');

  it("gives check n an id of its own: not the interval's batch, not restatement n, not check m", () => {
    const ids = [
      batchIdFor(pipelineWith(), january),
      batchIdFor(pipelineWith(), january, 1),
      batchIdFor(pipelineWith(), january, { kind: 'check', n: 1 }),
      batchIdFor(pipelineWith(), january, { kind: 'check', n: 2 }),
    ];
    expect(new Set(ids).size).toBe(4);
    expect(batchIdFor(pipelineWith(), january, { kind: 'restatement', n: 1 })).toBe(ids[1]);
    expect(batchIdFor(pipelineWith(), january, { kind: 'check', n: 1 })).toBe(ids[2]);
  });

  it('runs the first check that has not ended: a failed one is resumed, an ended one is followed by the next', async () => {
    const statuses: Record<number, string> = { 1: 'CHECK_PASSED', 2: 'CHECK_FAILED', 3: 'FAILED' };
    const ended = ['CHECK_PASSED', 'CHECK_FAILED'];
    expect(await nextRerun('check', ended, async (n) => statuses[n])).toEqual({ kind: 'check', n: 3 });
    expect(await nextRerun('check', ended, async (n) => (n < 3 ? statuses[n] : undefined))).toEqual({ kind: 'check', n: 3 });
    expect(await nextRerun('check', ended, async () => undefined)).toEqual({ kind: 'check', n: 1 });
  });
});

describe('derived table names', () => {
  const longest = pipelineWith({ target: { schema: 'analytics', table: 'x'.repeat(MAX_TABLE_NAME_LENGTH) } });
  const batchId = batchIdFor(longest, interval('2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z'));

  it.each([
    ['stagingTableFor', stagingTableFor],
    ['previousVersionTableFor', previousVersionTableFor],
  ])('%s fits 63 characters for a 40-character table and is a valid identifier', (_what, derive) => {
    const name = derive(longest, batchId);

    expect(name.length).toBeLessThanOrEqual(63);
    expect(() => quoteIdent(name)).not.toThrow();
    expect(name.startsWith(`${longest.target.table}__`)).toBe(true);
  });

  it('gives staging, previous version and live three different names', () => {
    const names = new Set([stagingTableFor(orders, batchId), previousVersionTableFor(orders, batchId), orders.target.table]);

    expect(names.size).toBe(3);
  });
});

describe('planningTime', () => {
  const clock = at('2026-03-15T10:20:00Z');

  it("takes the execution's start time, so a retried Plan plans the same interval", () => {
    expect(planningTime('2026-03-15T06:00:00.123Z', clock)).toEqual(at('2026-03-15T06:00:00.123Z'));
  });

  it.each([undefined, null, ''])('takes the clock when the execution gave no start time (%j)', (startedAt) => {
    expect(planningTime(startedAt, clock)).toBe(clock);
  });

  it.each([
    ['a word', 'soon'],
    ['a number', 42],
  ])('rejects %s as a start time, naming the field', (_what, startedAt) => {
    expect(() => planningTime(startedAt, clock)).toThrow(new ValidationError(`startedAt is not a time: ${String(startedAt)}`));
  });

  it('quotes at most a bounded part of a megabyte-long start time', () => {
    const error = errorOf(() => planningTime('t'.repeat(MEGABYTE), clock));

    expect(error.message.length).toBeLessThan(400);
    expect(error.message).toMatch(/\(1048576 characters\)$/);
  });
});

describe('liveTableColumns', () => {
  const column = (name: string, dataType = 'integer'): LiveColumn => ({ name, dataType });
  const live = [column('order_id'), column('ordered_at', 'timestamp without time zone'), column('amount', 'numeric')];

  it('returns the live columns in catalog order when the table fits the spec', () => {
    expect(liveTableColumns(orders, live)).toEqual(['order_id', 'ordered_at', 'amount']);
  });

  it('rejects a live table that does not exist (no columns) and says to create it', () => {
    expect(() => liveTableColumns(orders, [])).toThrow(
      new ValidationError(
        'live table analytics.orders does not exist: create it once with its DDL (columns, keys, encodings); atomic-publish then rebuilds it',
      ),
    );
  });

  it('rejects a timeColumn the live table does not have, naming the pipeline and the field', () => {
    const withoutTime = live.filter((c) => c.name !== 'ordered_at');

    expect(() => liveTableColumns(orders, withoutTime)).toThrow(
      new ValidationError('pipeline orders: timeColumn ordered_at is not a column of analytics.orders'),
    );
  });

  it('rejects a businessKey column the live table does not have', () => {
    const keyed = pipelineWith({ businessKey: ['order_id', 'line_no'] });

    expect(() => liveTableColumns(keyed, live)).toThrow(new ValidationError('pipeline orders: businessKey line_no is not a column of analytics.orders'));
  });

  it.each(['timestamp with time zone', 'date', 'character varying'])('rejects a timeColumn of type %s: it must hold UTC timestamps', (dataType) => {
    const zoned = live.map((c) => (c.name === 'ordered_at' ? column('ordered_at', dataType) : c));

    expect(() => liveTableColumns(orders, zoned)).toThrow(
      new ValidationError(`pipeline orders: timeColumn ordered_at of analytics.orders is ${dataType}; it must be a timestamp without time zone holding UTC`),
    );
  });
});

describe('checkSourceColumns', () => {
  it('accepts a source that produces every live column, in any order and with more besides', () => {
    expect(() => checkSourceColumns(orders, ['order_id', 'ordered_at'], ['ordered_at', 'extra', 'order_id'])).not.toThrow();
  });

  it('rejects a source missing live columns, naming them and what the source produces', () => {
    expect(() => checkSourceColumns(orders, ['order_id', 'ordered_at', 'discount', 'amount'], ['order_id', 'ordered_at'])).toThrow(
      new ValidationError(
        'pipeline orders: the source query does not produce column(s) discount, amount of analytics.orders (it produces: order_id, ordered_at)',
      ),
    );
  });
});
