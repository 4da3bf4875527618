// The width of human output (cli/layout.ts): sentences wrapped, tables
// fitted, times shortened.
import { describe, expect, it } from 'vitest';
import { fitColumns, MAX_WIDTH, outputWidth, shortTime, wrap } from '../../cli/layout.ts';

describe('outputWidth', () => {
  it("is 120, or a narrower terminal's width", () => {
    expect(outputWidth(undefined)).toBe(MAX_WIDTH);
    expect(outputWidth(200)).toBe(MAX_WIDTH);
    expect(outputWidth(80)).toBe(80);
    // A width no terminal has (a pipe reporting 0): not believed.
    expect(outputWidth(0)).toBe(MAX_WIDTH);
  });
});

describe('wrap', () => {
  it('breaks a long line at spaces, leaving a line that fits as it is', () => {
    expect(wrap('one two three four', 9)).toBe('one two\nthree\nfour');
    expect(wrap('short  line', 20)).toBe('short  line');
  });

  it('keeps a `command` whole, and a word wider than the line on a line of its own', () => {
    expect(wrap('then run `atomic-publish run orders --to 2026-01-06` to resume', 30)).toBe('then run\n`atomic-publish run orders --to 2026-01-06`\nto resume');
    expect(wrap('see arn:aws:states:local:0:execution:a-very-long-name now', 20)).toBe('see\narn:aws:states:local:0:execution:a-very-long-name\nnow');
  });

  it('with breakWords, cuts a word wider than the line into pieces, losing nothing', () => {
    expect(wrap('ab 0123456789abcdef', 6, { breakWords: true })).toBe('ab\n012345\n6789ab\ncdef');
  });

  it("repeats a line's indentation on the lines it continues on", () => {
    expect(wrap('  one two three', 9)).toBe('  one two\n  three');
  });
});

describe('fitColumns', () => {
  const borders = (n: number) => 3 * n + 1;

  it('keeps a table that fits as it is', () => {
    expect(
      fitColumns(
        [
          ['a', 'bb'],
          ['ccc', 'd'],
        ],
        40,
      ),
    ).toEqual([3, 2]);
  });

  it('narrows the widest column first, to the width its wrapped cells take, down to its longest word', () => {
    const cells = [
      ['batch', 'observed'],
      ['0123456789abcdef', 'one two three four five six seven'],
    ];
    const widths = fitColumns(cells, 16 + 14 + borders(2));
    expect(widths[0]).toBe(16);
    expect(widths[1]).toBeLessThanOrEqual(14);
    // No room left unused: the widest wrapped line of the column is its width.
    expect(
      Math.max(
        ...wrap(cells[1]![1]!, widths[1]!)
          .split('\n')
          .map((l) => l.length),
      ),
    ).toBe(widths[1]);
  });

  it('cuts words only when every column is down to its longest word', () => {
    const widths = fitColumns([['0123456789abcdef', 'fedcba9876543210']], 20 + borders(2));
    expect(widths.reduce((a, b) => a + b)).toBeLessThanOrEqual(20);
  });
});

describe('shortTime', () => {
  it('drops the fraction of a second, and the time of day at midnight', () => {
    expect(shortTime('2026-01-06 00:41:41.05')).toBe('2026-01-06 00:41:41');
    expect(shortTime('2026-01-06T00:00:00.000Z')).toBe('2026-01-06');
    expect(shortTime('2026-01-06 00:00:00')).toBe('2026-01-06');
  });

  it('leaves a time in another zone, or no time, as it is', () => {
    expect(shortTime('2026-01-06T00:00:00+01:00')).toBe('2026-01-06T00:00:00+01:00');
    expect(shortTime('-')).toBe('-');
  });
});
