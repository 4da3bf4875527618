/**
 * The warehouse's circuit breaker (domain/neighbour/neighbour.ts), kept in the
 * manifest's circuit_breaker table: Plan consults it first (breakerGuard),
 * RecordFailure counts a failed run (breakerFailure), and a successful run
 * closes it (breakerSuccess). Without BREAKER_FAILURES in the environment
 * each is a no-op.
 */
import { CircuitOpenError } from '../../domain/errors.ts';
import { manifestTablePresent } from '../../domain/manifest/sql/manifest.ts';
import {
  BREAKER_FAILURE_NAMES,
  type BreakerSettings,
  breakerDecision,
  breakerFromEnv,
  breakerOpenMessage,
  readBreakerRow,
} from '../../domain/neighbour/neighbour.ts';
import { closeBreaker, readBreaker, recordBreakerFailure, takeProbe } from '../../domain/neighbour/sql/neighbour.ts';
import { logger } from './powertools.ts';
import type { Warehouse } from './warehouse.ts';

const NAME = 'atomic-publish:breaker';

async function breakerRow(warehouse: Warehouse, step: string) {
  const [present] = await warehouse.query(manifestTablePresent('circuit_breaker'), `${NAME}:${step}:present`);
  if (!(Number(present?.present) > 0)) return { installed: false, row: undefined };
  return { installed: true, row: await readRow(warehouse, step) };
}

/** The breaker's row, once its table is known to be there. */
async function readRow(warehouse: Warehouse, step: string) {
  const [row] = await warehouse.query(readBreaker(), `${NAME}:${step}:read`);
  return readBreakerRow(row);
}

/**
 * Plan's first look: a closed breaker (or none installed yet) lets the run
 * go; an open one past its cool-down makes this execution the half-open
 * probe, if no other took it first; otherwise the execution ends here with
 * CircuitOpenError, whose message is the page. A warehouse that does not
 * answer fails this read like any other statement (retried as transient).
 */
export async function breakerGuard(
  warehouse: Warehouse,
  executionId: string | undefined,
  settings: BreakerSettings | undefined = breakerFromEnv(),
): Promise<void> {
  if (!settings) return;
  const now = new Date();
  const { row } = await breakerRow(warehouse, 'plan');
  const decision = breakerDecision(row, executionId ?? '', now, settings);
  if (decision.action === 'run') return;
  if (decision.action === 'probe' && executionId) {
    const due = new Date(now.getTime() - settings.coolDownSeconds * 1000);
    await warehouse.batch(takeProbe(executionId, now, due), `${NAME}:plan:probe`);
    const after = await readRow(warehouse, 'plan');
    if (after?.probeExecution === executionId) {
      logger.warn('circuit breaker half-open: this execution runs as its probe', {
        executionId,
        failures: after.consecutiveFailures,
        lastError: after.lastError,
      });
      return;
    }
    const again = breakerDecision(after, executionId, now, settings);
    throw new CircuitOpenError(breakerOpenMessage(after ?? row!, again.action === 'refuse' ? again.nextProbeAt : now, settings));
  }
  throw new CircuitOpenError(breakerOpenMessage(row!, decision.action === 'refuse' ? decision.nextProbeAt : now, settings));
}

/** What RecordFailure adds to the page about the breaker. */
export interface BreakerReport {
  readonly state?: string;
  readonly failures?: number;
  readonly openedAt?: string;
  readonly error?: string;
}

/**
 * RecordFailure's count: a transient failure (BREAKER_FAILURE_NAMES) adds
 * one and opens the breaker at the threshold; a failed probe opens it
 * again; CircuitOpenError (a run the breaker ended) changes nothing.
 * Never throws: the page goes out either way.
 */
export async function breakerFailure(
  warehouse: () => Warehouse,
  executionId: string | undefined,
  errorName: string,
  error: string,
  settings: BreakerSettings | undefined = breakerFromEnv(),
): Promise<BreakerReport | undefined> {
  if (!settings || !executionId || errorName === 'CircuitOpenError') return undefined;
  try {
    const target = warehouse();
    if (!(await breakerRow(target, 'record-failure')).installed) return undefined;
    await target.batch(recordBreakerFailure(executionId, BREAKER_FAILURE_NAMES.has(errorName), error, settings.failures, new Date()), `${NAME}:record-failure`);
    const row = await readRow(target, 'record-failure');
    return row ? { state: row.state, failures: row.consecutiveFailures, ...(row.openedAt ? { openedAt: row.openedAt.toISOString() } : {}) } : undefined;
  } catch (error) {
    logger.error('could not count the failure in the circuit breaker', { executionId, error: error as Error });
    return { error: (error as Error).message };
  }
}

/** A successful run closes the breaker (and restarts the count); a failure to write it is logged, never fails the run. */
export async function breakerSuccess(warehouse: Warehouse, settings: BreakerSettings | undefined = breakerFromEnv()): Promise<void> {
  if (!settings) return;
  try {
    const { row } = await breakerRow(warehouse, 'success');
    if (!row || (row.state === 'closed' && row.consecutiveFailures === 0)) return;
    await warehouse.batch(closeBreaker(new Date()), `${NAME}:success`);
    logger.info('circuit breaker closed by a successful run', { was: row.state, failures: row.consecutiveFailures });
  } catch (error) {
    logger.error('could not close the circuit breaker; the next successful run does', { error: error as Error });
  }
}
