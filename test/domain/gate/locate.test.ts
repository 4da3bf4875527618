import { describe, expect, it } from 'vitest';
import { definePipeline } from '../../../domain/define-pipeline.ts';
import { ValidationError } from '../../../domain/errors.ts';
import {
  checkDimensionColumns,
  chunksToLocate,
  keySample,
  type Location,
  locationChecks,
  locationText,
  MAX_LOCATED_CHUNKS,
  segmentText,
} from '../../../domain/gate/locate.ts';
import type { ChunkCount } from '../../../domain/gate/reconcile.ts';
import { errorOf, ordersSpec, specWith } from '../fixtures.ts';

const columns = [
  { name: 'order_id', dataType: 'bigint' },
  { name: 'region', dataType: 'character varying' },
  { name: 'product_id', dataType: 'integer' },
  { name: 'weight', dataType: 'double precision' },
];
const withDimensions = (dimensions: unknown) => definePipeline(specWith({ checks: { dimensions: dimensions as string[] } }));

describe('checks.dimensions', () => {
  it('accepts columns of the live table that are not floating-point', () => {
    expect(() => checkDimensionColumns(withDimensions(['region', 'product_id']), columns)).not.toThrow();
  });

  it.each([
    [['region', 'channel'], /^pipeline orders: checks\.dimensions names channel, which is not a column of analytics\.orders: /],
    [
      ['weight'],
      /^pipeline orders: checks\.dimensions names weight of analytics\.orders, which is double precision: a floating-point value is no business dimension/,
    ],
  ])('refuses %j in Plan, naming the pipeline, the check and the column', (dimensions, message) => {
    expect(() => checkDimensionColumns(withDimensions(dimensions), columns)).toThrow(ValidationError);
    expect(() => checkDimensionColumns(withDimensions(dimensions), columns)).toThrow(message);
  });

  it.each([
    [['a', 'b', 'c', 'd'], 'checks.dimensions must list at most 3 columns'],
    [['region', 'region'], 'checks.dimensions names region more than once'],
    [['not a column'], 'checks.dimensions[0]'],
    ['region', 'checks.dimensions must list columns of the live table to locate differences by'],
  ])('refuses %j at synth, naming the pipeline and the field', (dimensions, message) => {
    const error = errorOf(() => withDimensions(dimensions));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toMatch(/^pipeline orders: /);
    expect(error.message).toContain(message);
  });

  it('leaves the spec hash as it was: dimensions decide no published row', () => {
    const hash = definePipeline(ordersSpec).specHash;
    expect(withDimensions(undefined).specHash).toBe(hash);
    expect(withDimensions(null).specHash).toBe(hash);
    expect(withDimensions([]).specHash).toBe(hash);
    expect(withDimensions(['region']).specHash).toBe(hash);
    expect(withDimensions(['region']).checks.dimensions).toEqual(['region']);
    expect(definePipeline(ordersSpec).checks).not.toHaveProperty('dimensions');
  });
});

const chunk = (index: number, status = 'DONE'): ChunkCount => ({
  index,
  start: `2026-01-0${index + 1} 00:00:00`,
  status,
  recordedRows: 10,
  sourceRows: 10,
  stagingRows: 10,
});

describe('chunksToLocate', () => {
  it('examines the first few loaded chunks that differ, once each, and counts them all', () => {
    const differing = [7, 2, 2, 9, 1, 4, 5, 3].map((i) => chunk(i));
    expect(chunksToLocate([...differing, chunk(0, 'PENDING')])).toEqual({ chunks: [1, 2, 3, 4, 5], differing: 7 });
    expect(MAX_LOCATED_CHUNKS).toBe(5);
  });

  it('examines nothing when no loaded chunk differs', () => {
    expect(chunksToLocate([chunk(0, 'PENDING')])).toEqual({ chunks: [], differing: 0 });
  });
});

const location: Location = {
  chunks: [1, 2, 3, 4, 5],
  differingChunks: 8,
  unit: 'day',
  dimensions: ['region'],
  measures: ['amount'],
  segments: [
    {
      chunk: 3,
      segment: '2026-01-04',
      dimensions: ['EU'],
      rows: { source: '120', staging: '120' },
      checksum: { source: '10', staging: '11' },
      measures: [{ source: '160503.80', staging: '60503.80' }],
    },
  ],
  segmentCount: 4,
  missingInStaging: { count: 0, samples: [] },
  missingInSource: { count: 7, samples: ['(order_id) = (5)', '(order_id) = (6)'] },
  rowsChanged: { count: 1, samples: ['(order_id) = (9): amount source 2.00, staging 1.00'] },
  businessKey: ['order_id'],
};

describe('a located difference', () => {
  it('is recorded as failed checks with the segments, the keys and what was capped', () => {
    const checks = locationChecks(location);
    expect(checks.map((c) => [c.check, c.passed])).toEqual([
      ['difference_located', false],
      ['missing_in_staging', true],
      ['missing_in_source', false],
      ['rows_changed', false],
    ]);
    expect(checks[0]).toMatchObject({
      observed: '4 segment(s) by day, region differ; chunk(s) #1, #2, #3, #4, #5 examined: the first 5 of 8 that differ',
      details:
        '#3 2026-01-04 region=EU: rows source 120, staging 120; amount source 160503.80, staging 60503.80, source - staging 100000.00; checksum differs; ... and 3 more',
    });
    expect(checks[2]).toMatchObject({
      observed: '7 key(s) (order_id) in staging missing from the source',
      details: 'first keys: (order_id) = (5); (order_id) = (6); and 5 more',
    });
  });

  it('is shown as a table of segments and the keys in each direction', () => {
    const text = locationText(location);
    expect(text.split('\n')[0]).toBe(
      'Where the content differs (1 of 4 segment(s) by day, region; chunk(s) #1, #2, #3, #4, #5 examined: the first 5 of 8 that differ):',
    );
    expect(text).toContain(
      '│ chunk │ day        │ region │ rows source │ rows staging │ amount source │ amount staging │ amount source - staging │ checksum │',
    );
    expect(text).toContain(
      '│     3 │ 2026-01-04 │ EU     │         120 │          120 │     160503.80 │       60503.80 │               100000.00 │ differs  │',
    );
    expect(text).toContain('  in the source, missing from staging: 0\n');
    expect(text).toContain('  in staging, missing from the source: 7 (first keys: (order_id) = (5); (order_id) = (6); and 5 more)');
  });
});

describe('keySample', () => {
  const key = ['order_id', 'line_no'];
  const figures = (rows: [string, string], amount: [string, string]) => ({
    rows: { source: rows[0], staging: rows[1] },
    measures: [{ source: amount[0], staging: amount[1] }],
  });
  it.each([
    [figures(['1', '0'], ['5.00', '0']), '(order_id, line_no) = (17, NULL)'],
    [figures(['1', '2'], ['5.00', '10.00']), '(order_id, line_no) = (17, NULL): rows source 1, staging 2'],
    [figures(['1', '1'], ['1005.00', '5.00']), '(order_id, line_no) = (17, NULL): amount source 1005.00, staging 5.00'],
    [figures(['1', '1'], ['5.00', '5.00']), '(order_id, line_no) = (17, NULL): a value differs'],
  ])('names the key and what differs (%#)', (f, text) => {
    expect(keySample(key, [17, null], f, ['amount'])).toBe(text);
  });
});

describe('segmentText', () => {
  it('shows the day, or the hour', () => {
    expect(segmentText('2026-01-04 00:00:00', 'day')).toBe('2026-01-04');
    expect(segmentText('2026-01-04 05:00:00', 'hour')).toBe('2026-01-04 05:00');
  });
});
