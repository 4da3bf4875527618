import { describe, expect, it } from 'vitest';
import { duration } from '../../cli/status.ts';

describe('history: how long a batch took', () => {
  it('reads as seconds, minutes and seconds, or hours and minutes', () => {
    expect(duration(0)).toBe('0s');
    expect(duration(59)).toBe('59s');
    expect(duration(60)).toBe('1m 00s');
    expect(duration(245)).toBe('4m 05s');
    expect(duration(3600)).toBe('1h 00m');
    expect(duration(3720 + 59)).toBe('1h 02m');
    expect(duration(26 * 3600)).toBe('26h 00m');
  });
});
