import { describe, expect, it } from 'vitest';
import { timestampParam } from '../../../domain/sql/statement.ts';
import { at } from './support.ts';

describe('timestampParam', () => {
  it('renders a Date or an ISO string as UTC text with milliseconds', () => {
    expect(timestampParam(at('2026-01-02T03:04:05.678Z'))).toBe('2026-01-02 03:04:05.678');
    expect(timestampParam('2026-01-02T04:04:05.678+01:00')).toBe('2026-01-02 03:04:05.678');
  });
});
