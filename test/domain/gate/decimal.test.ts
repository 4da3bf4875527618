import { describe, expect, it } from 'vitest';
import { decimalDifference, decimalEqual, decimalSum } from '../../../domain/gate/decimal.ts';

describe('decimal texts', () => {
  it('subtracts exactly beyond the 15 digits a number holds', () => {
    expect(decimalDifference('45176850.00', '45076850.00')).toBe('100000.00');
    expect(decimalDifference('12345678901234567890123456789.01', '0.02')).toBe('12345678901234567890123456788.99');
    expect(decimalDifference('1.5', '2.25')).toBe('-0.75');
    expect(decimalDifference('-3', '-3')).toBe('0');
  });

  it('adds at the larger scale', () => {
    expect(decimalSum('0', '10.25')).toBe('10.25');
    expect(decimalSum('-0.5', '0.25')).toBe('-0.25');
  });

  it('compares by value, and texts that are not decimals as texts', () => {
    expect(decimalEqual('10.5', '10.50')).toBe(true);
    expect(decimalEqual('10.5', '10.51')).toBe(false);
    expect(decimalEqual('null', 'null')).toBe(true);
    expect(decimalDifference('x', '1')).toBeUndefined();
  });
});
