import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../domain/errors.ts';
import { checkLoadFits, estimateLoad, MIN_CHUNK_SECONDS } from '../../../domain/plan/duration.ts';
import { errorOf, pipelineWith } from '../fixtures.ts';

const HOUR = 3600;
const hourly = pipelineWith({ chunk: { grain: 'hour', maxConcurrency: 4 } });

describe('estimateLoad', () => {
  it('takes the rate of the last published batch, per chunk at its concurrency', () => {
    const estimate = estimateLoad(1000, hourly, { batchId: 'b1', chunks: 100, seconds: 50 });
    expect(estimate.perChunkSeconds).toBe(0.5);
    expect(estimate.seconds).toBe(500);
    expect(estimate.basis).toBe('as batch b1 took (100 chunks in 50 s)');
  });

  it('never goes below the least a chunk takes, with or without a history', () => {
    expect(estimateLoad(1000, hourly, undefined).seconds).toBe((1000 * MIN_CHUNK_SECONDS) / 4);
    const fast = estimateLoad(1000, hourly, { batchId: 'b1', chunks: 1000, seconds: 10 });
    expect(fast.seconds).toBe(250);
    expect(fast.basis).toBe(`at the least a chunk takes (${MIN_CHUNK_SECONDS} s per chunk, 4 at a time)`);
  });
});

describe('checkLoadFits', () => {
  it('lets through a load that ends before the time-out, and refuses one that would not, saying how to make it fit', () => {
    // 87,600 chunks, 4 at a time, at least 1 s each: about 6.1 hours.
    expect(() => checkLoadFits(hourly, 87_600, estimateLoad(87_600, hourly, undefined), 12 * HOUR, 12 * HOUR)).not.toThrow();
    expect(() => checkLoadFits(hourly, 87_600, estimateLoad(87_600, hourly, undefined), 6 * HOUR, 12 * HOUR)).toThrow(ValidationError);

    const error = errorOf(() => checkLoadFits(hourly, 87_600, estimateLoad(87_600, hourly, undefined), 6 * HOUR, 12 * HOUR));
    expect(error.message).toBe(
      "pipeline orders: its 87600 chunks still to load would take about 6.1 h at the least a chunk takes (1 s per chunk, 4 at a time), longer than the 6.0 h left before the state machine's time-out (12.0 h) ends the execution; nothing was written. " +
        'Make it fit: raise chunk.maxConcurrency (now 4), use coarser chunks (chunk.grain, or chunk.targetRows), or deploy with a longer executionTimeout.',
    );
    // A mode that loads an interval of its own (replace-intervals) may also load a shorter one first.
    const merge = { ...hourly, publishMode: 'replace-intervals' as const };
    expect(errorOf(() => checkLoadFits(merge, 87_600, estimateLoad(87_600, merge, undefined), HOUR, 12 * HOUR)).message).toContain(
      'load a shorter interval (input from/to) first',
    );
  });
});
