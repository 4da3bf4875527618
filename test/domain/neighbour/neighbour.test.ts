import { describe, expect, it } from 'vitest';
import { type BreakerRow, breakerDecision, breakerOpenMessage, manifestTime, readBreakerRow } from '../../../domain/neighbour/neighbour.ts';

const SETTINGS = { failures: 3, coolDownSeconds: 600 };
const OPENED = new Date('2026-03-15T10:00:00Z');
const open: BreakerRow = { state: 'open', consecutiveFailures: 3, openedAt: OPENED, lastError: 'TransientWarehouseError: busy' };
const at = (minutes: number) => new Date(OPENED.getTime() + minutes * 60_000);

describe('breakerDecision', () => {
  it('lets every execution run while closed or before the breaker exists', () => {
    expect(breakerDecision(undefined, 'e1', at(0), SETTINGS)).toEqual({ action: 'run' });
    expect(breakerDecision({ state: 'closed', consecutiveFailures: 2 }, 'e1', at(0), SETTINGS)).toEqual({ action: 'run' });
  });

  it('refuses within the cool-down, naming when the next probe may run, and offers the probe after it', () => {
    expect(breakerDecision(open, 'e1', at(9), SETTINGS)).toEqual({ action: 'refuse', nextProbeAt: at(10) });
    expect(breakerDecision(open, 'e1', at(10), SETTINGS)).toEqual({ action: 'probe' });
  });

  it('half-open: the probe itself runs (a retried Plan), others are refused until a stale probe may be taken over', () => {
    const half: BreakerRow = { ...open, state: 'half_open', probeExecution: 'e1', probeStartedAt: at(12) };
    expect(breakerDecision(half, 'e1', at(13), SETTINGS)).toEqual({ action: 'run' });
    expect(breakerDecision(half, 'e2', at(13), SETTINGS)).toEqual({ action: 'refuse', nextProbeAt: at(22) });
    expect(breakerDecision(half, 'e2', at(22), SETTINGS)).toEqual({ action: 'probe' });
  });
});

describe('the breaker row and its page', () => {
  it('reads manifest timestamps as UTC', () => {
    expect(manifestTime('2026-03-15 10:00:00')).toEqual(OPENED);
    expect(manifestTime('2026-03-15 10:00:00.250')).toEqual(new Date('2026-03-15T10:00:00.250Z'));
    expect(manifestTime(null)).toBeUndefined();
    expect(readBreakerRow({ state: 'open', consecutive_failures: '3', opened_at: '2026-03-15 10:00:00', last_error: 'x', probe_execution: null })).toEqual({
      state: 'open',
      consecutiveFailures: 3,
      openedAt: OPENED,
      lastError: 'x',
    });
  });

  it('says since when, after how many failures, the last error and when the next probe may run', () => {
    const message = breakerOpenMessage(open, at(10), SETTINGS);
    expect(message).toContain('failed 3 consecutive run(s) with transient errors (opens at 3)');
    expect(message).toContain('open since 2026-03-15T10:00:00.000Z');
    expect(message).toContain('last error: TransientWarehouseError: busy.');
    expect(message).toContain('The next probe may run from 2026-03-15T10:10:00.000Z');
  });
});
