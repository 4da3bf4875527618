/**
 * The pause probe (domain/neighbour/neighbour.ts): while at least `whenQueued` queries wait
 * in the warehouse's queues, LoadChunk pauses before submitting, looking again
 * every `intervalMs`, for at most half the invocation's remaining time, then loads
 * anyway. A probe that fails is logged and the load goes ahead: it is advice,
 * never a reason to skip or fail a chunk. docs/decisions/good-neighbour.md
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type PauseProbeSettings, pauseProbeFromEnv } from '../../domain/neighbour/neighbour.ts';
import { queuedQueries } from '../../domain/neighbour/sql/neighbour.ts';
import { logger } from '../commons/powertools.ts';
import type { Warehouse } from '../commons/warehouse.ts';

/** Logged on every look that finds the warehouse busy (with the queued count). */
const PAUSED_MESSAGE = 'warehouse busy: load paused';

export interface PauseOutcome {
  /** Looks that found the warehouse busy. */
  readonly pauses: number;
  /** Why the pause ended: not busy (or no probe), out of time, or the probe failed. */
  readonly ended: 'idle' | 'out-of-time' | 'probe-failed' | 'off';
}

export async function pauseWhileBusy(
  warehouse: Warehouse,
  statementName: string,
  remainingMs: () => number,
  log: Record<string, unknown>,
  settings: PauseProbeSettings | undefined = pauseProbeFromEnv(),
): Promise<PauseOutcome> {
  if (!settings) return { pauses: 0, ended: 'off' };
  const deadline = Date.now() + Math.max(0, remainingMs()) / 2;
  for (let pauses = 0; ; pauses += 1) {
    let queued: number;
    try {
      const [row] = await warehouse.query(queuedQueries(), statementName);
      queued = Number(row?.queued ?? 0);
    } catch (error) {
      logger.warn('pause probe failed; loading without it', { ...log, pauses, error: error as Error });
      return { pauses, ended: 'probe-failed' };
    }
    if (queued < settings.whenQueued) {
      if (pauses > 0) logger.info('warehouse no longer busy: load resumes', { ...log, pauses, queued });
      return { pauses, ended: 'idle' };
    }
    if (Date.now() + settings.intervalMs > deadline) {
      logger.warn('warehouse still busy, but the pause ran out of time: loading anyway', { ...log, pauses, queued, whenQueued: settings.whenQueued });
      return { pauses, ended: 'out-of-time' };
    }
    logger.warn(PAUSED_MESSAGE, { ...log, pause: pauses + 1, queued, whenQueued: settings.whenQueued, nextLookMs: settings.intervalMs });
    await sleep(settings.intervalMs);
  }
}
