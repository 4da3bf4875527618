/** How every publish transaction bounds its lock waits, and only them. */

/**
 * The bound on each lock wait that comes first in every publish
 * transaction. Redshift has no lock_timeout; statement_timeout bounds a
 * statement's whole time, its lock wait included, and SET LOCAL ends with
 * the transaction (https://docs.aws.amazon.com/redshift/latest/dg/r_statement_timeout.html,
 * https://docs.aws.amazon.com/redshift/latest/dg/r_SET.html).
 */
export function boundLockWaits(lockWaitMs: number): string {
  return `SET LOCAL statement_timeout TO ${Math.max(1, Math.round(lockWaitMs))}`;
}

/**
 * Turns the bound off once every lock is held (0 turns statement_timeout
 * off): the work under the locks (the guard's count, the scans of the
 * out-of-band check, the renames, the grants, the record) runs to
 * completion however long it takes or queues in WLM, and a timeout can
 * only ever mean a lock wait given up.
 */
export const LOCKS_HELD = 'SET LOCAL statement_timeout TO 0';
