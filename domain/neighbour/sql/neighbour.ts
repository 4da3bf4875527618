/** The pause probe's look at the warehouse's queues and the circuit breaker's reads and writes (manifest version 7). */

import { sqlLiteral } from '../../identifiers.ts';
import { MANIFEST as M, type Statement } from '../../sql/statement.ts';
import { BreakerState } from '../neighbour.ts';

/**
 * Queries waiting in the warehouse's queues now: SYS_QUERY_HISTORY's `queued`
 * rows, on both target kinds; a regular user sees others' only with SYSLOG ACCESS
 * UNRESTRICTED (https://docs.aws.amazon.com/redshift/latest/dg/SYS_QUERY_HISTORY.html).
 * Why: docs/decisions/good-neighbour.md
 */
export function queuedQueries(): Statement {
  return { sql: `SELECT COUNT(*) AS queued FROM sys_query_history WHERE status = 'queued'` };
}

/** The breaker table's DDL and its one row (one breaker per warehouse: the manifest lives in it). */
export function breakerDdl(): string[] {
  return [
    // One row, written only under BREAKER_LOCK (Redshift enforces no key).
    // Two Plans installing version 7 at once may each insert it: every
    // write names the breaker, not a row, so the copies stay alike.
    `CREATE TABLE IF NOT EXISTS ${M}.circuit_breaker (
      breaker varchar(32) NOT NULL,
      state varchar(16) NOT NULL,
      consecutive_failures int NOT NULL,
      opened_at timestamp,
      last_error varchar(4096),
      last_failure_at timestamp,
      probe_execution varchar(512),
      probe_started_at timestamp,
      updated_at timestamp,
      PRIMARY KEY (breaker)
    )`,
    `INSERT INTO ${M}.circuit_breaker (breaker, state, consecutive_failures)
     SELECT 'warehouse', ${sqlLiteral(BreakerState.CLOSED)}, 0 WHERE NOT EXISTS (SELECT 1 FROM ${M}.circuit_breaker)`,
  ];
}

/**
 * First in every transaction that writes the breaker: its writers (Plan
 * taking the probe, RecordFailure counting, a success closing it) queue
 * here, so under SERIALIZABLE they do not fail each other.
 * https://docs.aws.amazon.com/redshift/latest/dg/r_LOCK.html
 */
const BREAKER_LOCK = `LOCK ${M}.circuit_breaker`;

const COLUMNS = 'state, consecutive_failures, opened_at, last_error, last_failure_at, probe_execution, probe_started_at';

export function readBreaker(): Statement {
  return { sql: `SELECT ${COLUMNS} FROM ${M}.circuit_breaker WHERE breaker = 'warehouse'` };
}

/** Makes `executionId` the half-open probe, unless another execution took it first or the cool-down has not passed (`due`: now less the cool-down). */
export function takeProbe(executionId: string, now: Date, due: Date): string[] {
  return [
    BREAKER_LOCK,
    `UPDATE ${M}.circuit_breaker SET state = ${sqlLiteral(BreakerState.HALF_OPEN)}, probe_execution = ${sqlLiteral(executionId)},
       probe_started_at = ${sqlLiteral(now)}, updated_at = ${sqlLiteral(now)}
     WHERE breaker = 'warehouse'
       AND ((state = ${sqlLiteral(BreakerState.OPEN)} AND opened_at <= ${sqlLiteral(due)})
         OR (state = ${sqlLiteral(BreakerState.HALF_OPEN)} AND probe_started_at <= ${sqlLiteral(due)}))`,
  ];
}

/**
 * A failed execution: a transient one counts (and opens a closed breaker at
 * `threshold`); any failure of the half-open probe opens it again; any
 * other failure ends the run of consecutive ones (the warehouse answered).
 */
export function recordBreakerFailure(executionId: string, transient: boolean, error: string, threshold: number, now: Date): string[] {
  const probe = `(state = ${sqlLiteral(BreakerState.HALF_OPEN)} AND probe_execution = ${sqlLiteral(executionId)})`;
  const opens = transient ? `(${probe} OR (state = ${sqlLiteral(BreakerState.CLOSED)} AND consecutive_failures + 1 >= ${threshold}))` : probe;
  const counted = transient ? 'consecutive_failures + 1' : `CASE WHEN state = ${sqlLiteral(BreakerState.CLOSED)} THEN 0 ELSE consecutive_failures END`;
  return [
    BREAKER_LOCK,
    `UPDATE ${M}.circuit_breaker SET
       state = CASE WHEN ${opens} THEN ${sqlLiteral(BreakerState.OPEN)} ELSE state END,
       opened_at = CASE WHEN ${opens} THEN ${sqlLiteral(now)} ELSE opened_at END,
       probe_execution = CASE WHEN ${probe} THEN NULL ELSE probe_execution END,
       consecutive_failures = ${counted},
       last_error = ${transient ? sqlLiteral(error.replace(/[\\\u0000-\u001f]/g, ' ').slice(0, 1000)) : 'last_error'},
       last_failure_at = ${transient ? sqlLiteral(now) : 'last_failure_at'},
       updated_at = ${sqlLiteral(now)}
     WHERE breaker = 'warehouse'`,
  ];
}

/** A successful run: the breaker closes and the count starts again. */
export function closeBreaker(now: Date): string[] {
  return [
    BREAKER_LOCK,
    `UPDATE ${M}.circuit_breaker SET state = ${sqlLiteral(BreakerState.CLOSED)}, consecutive_failures = 0, probe_execution = NULL,
       probe_started_at = NULL, updated_at = ${sqlLiteral(now)}
     WHERE breaker = 'warehouse' AND (state <> ${sqlLiteral(BreakerState.CLOSED)} OR consecutive_failures > 0)`,
  ];
}
