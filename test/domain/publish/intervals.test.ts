import { describe, expect, it } from 'vitest';
import { intervalSources } from '../../../domain/publish/intervals.ts';

const day = (n: number) => new Date(Date.UTC(2026, 0, 1 + n)).toISOString();

describe('intervalSources: which publication last wrote each stretch of a table', () => {
  it('gives every stretch to the newest publication that wrote it', () => {
    const sources = intervalSources([
      { seq: 1, mode: 'swap', start: day(0), end: day(30) },
      { seq: 2, mode: 'replace-intervals', start: day(28), end: day(31) },
      { seq: 3, mode: 'replace-intervals', start: day(10), end: day(17) },
    ]);

    expect(sources).toEqual([
      { start: day(0), end: day(10), seq: 1, mode: 'swap' },
      { start: day(10), end: day(17), seq: 3, mode: 'replace-intervals' },
      { start: day(17), end: day(28), seq: 1, mode: 'swap' },
      { start: day(28), end: day(31), seq: 2, mode: 'replace-intervals' },
    ]);
  });

  it('lets a later swap take back everything up to its end and leaves gaps no publication wrote out', () => {
    const sources = intervalSources([
      { seq: 1, mode: 'replace-intervals', start: day(5), end: day(6) },
      { seq: 2, mode: 'replace-intervals', start: day(8), end: day(9) },
      { seq: 3, mode: 'swap', start: day(0), end: day(7) },
    ]);

    expect(sources).toEqual([
      { start: day(0), end: day(7), seq: 3, mode: 'swap' },
      { start: day(8), end: day(9), seq: 2, mode: 'replace-intervals' },
    ]);
  });
});
