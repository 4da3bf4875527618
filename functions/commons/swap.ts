/**
 * The swap machinery Publish and Rollback share: the wait for older
 * snapshots, the swap transaction with its bounded lock wait and its
 * catalog check (read again and rebuilt when the live table's dependents
 * changed in between), and the carry-over of what changed on the live table
 * while the swap waited.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DependentViewError, PERMISSION_DENIED, TransientWarehouseError, WarehouseError } from '../../domain/errors.ts';
import type { Relation } from '../../domain/identifiers.ts';
import { CATALOG_CHANGED } from '../../domain/manifest/sql/manifest.ts';
import { carryOverCorrections, dependentViewProblems, type FactRow, type LiveTableFacts, liveTableFacts } from '../../domain/publish/dependents.ts';
import { carryOverStatements, dependentsFacts, openTransactions, policyFacts } from '../../domain/publish/sql/swap.ts';
import { PublishWaitEnv, type PublishWaits } from '../../domain/publish/waits.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { MANIFEST_SCHEMA, type Statement } from '../../domain/sql/statement.ts';
import { logger } from './powertools.ts';
import type { Row, Warehouse } from './warehouse.ts';

/** One swap: which table becomes live, what the live table becomes, and the transaction that does it. */
export interface Swap {
  readonly pipeline: Pipeline;
  /** The step, as messages name it: `Publish`, `Rollback`. */
  readonly step: string;
  /** The table that becomes live (staging, or a restored version), and how messages name it. */
  readonly incoming: string;
  readonly incomingLabel: string;
  /** The name the live table takes. */
  readonly retainedAs: string;
  readonly waits: PublishWaits;
  readonly name: (step: string) => string;
  /** The swap transaction for the live table's dependents as just read. */
  readonly statements: (facts: LiveTableFacts, factsQuery: Statement) => string[];
}

/** The transactions of openTransactions() as an alert names them: user, start, what they run. */
export function describeTransactions(rows: readonly Row[]): string {
  if (rows.length === 0) return 'none any more';
  return rows
    .map((r) => {
      const text = r.query === null || r.query === undefined || String(r.query).trim() === '' ? undefined : String(r.query).trim().replace(/\s+/g, ' ');
      const running =
        text === undefined ? 'no statement running (idle in its transaction)' : `running "${text.length > 120 ? `${text.slice(0, 120)}...` : text}"`;
      return `user ${String(r.txn_owner)} (session ${String(r.pid)}, transaction started ${String(r.txn_start)} UTC, ${running})`;
    })
    .join('; ');
}

const liveName = (swap: Pick<Swap, 'pipeline'>) => `${swap.pipeline.target.schema}.${swap.pipeline.target.table}`;

/** What the swap locks: the live table, the incoming table, the publications. */
export function swapLocks(swap: Pick<Swap, 'pipeline' | 'incoming'>): Relation[] {
  return [swap.pipeline.target, { schema: swap.pipeline.target.schema, table: swap.incoming }, { schema: MANIFEST_SCHEMA, table: 'publications' }];
}

/**
 * Waits until every transaction of another user that was open when the step
 * began, and holds no lock on a table the swap locks, has ended: after the
 * rename it could find a table whose rows its snapshot cannot see. Gives up with
 * a TransientWarehouseError naming them. docs/decisions/publishing.md ("Snapshot readers")
 */
export async function waitForOlderSnapshots(warehouse: Warehouse, swap: Pick<Swap, 'pipeline' | 'incoming' | 'name' | 'waits' | 'step'>): Promise<void> {
  await waitForSnapshotsOlderThanSwap(warehouse, {
    ...swap,
    tables: swapLocks(swap),
    what: liveName(swap),
    untouched: 'Nothing was published; the live table keeps its rows.',
  });
}

/** A swap over any set of tables (a publish group's), as the snapshot wait names it. */
export interface SnapshotWait extends Pick<Swap, 'name' | 'waits' | 'step'> {
  /** Every table the swap locks. */
  readonly tables: readonly Relation[];
  /** What the swap publishes, as its message names it. */
  readonly what: string;
  /** What the message says became of the live tables. */
  readonly untouched: string;
}

/** waitForOlderSnapshots for the tables a swap locks, whichever swap it is. */
export async function waitForSnapshotsOlderThanSwap(warehouse: Warehouse, swap: SnapshotWait): Promise<void> {
  const statement = openTransactions({ snapshotHolders: swap.tables });
  const name = swap.name('snapshots');
  const key = (r: Row) => `${String(r.pid)}|${String(r.txn_start)}`;
  let remaining = await warehouse.query(statement, name);
  const older = new Set(remaining.map(key));
  const waitMs = swap.waits.snapshotWaitMs;
  const deadline = Date.now() + waitMs;
  for (let delay = 50; remaining.length > 0; delay = Math.min(1_000, delay * 2)) {
    if (Date.now() + delay > deadline) {
      throw new TransientWarehouseError(
        `${swap.step} of ${swap.what} waited ${waitMs} ms for the transactions older than the new rows to end ` +
          `(a snapshot reader reading the live table after the swap would see none or part of them), and these are still open: ` +
          `${describeTransactions(remaining)}. ${swap.untouched} End or commit them, or raise ${PublishWaitEnv.SNAPSHOT_WAIT_MS}.`,
      );
    }
    await sleep(delay);
    remaining = (await warehouse.query(statement, name)).filter((r) => older.has(key(r)));
  }
}

/** Redshift's and PostgreSQL's words for a statement ended by statement_timeout. */
const STATEMENT_TIMEOUT = /statement timeout|canceled on user's request|cancelled on user's request/i;

/** How often the swap is rebuilt when the live table's grants, defaults, comments or views changed between the read and the swap. */
export const CATALOG_CHANGE_ATTEMPTS = 3;

/** One attempt of a publish transaction, prepared from what was just read. */
export interface SwapAttempt<T> {
  readonly statements: string[];
  /** The tables its locks wait for, to name who held them if it gives up. */
  readonly locks: readonly Relation[];
  /** What the attempt returns once committed. */
  readonly carried: T;
}

/**
 * Runs a publish transaction prepared by `prepare` (which reads what it is
 * built from and may refuse); a catalog check that finds what it was built
 * from changed prepares it again. A transaction that gave up its lock wait
 * fails with a TransientWarehouseError built by `gaveUp` from who held the
 * tables (Step Functions retries it with backoff and jitter).
 */
export async function retryPublishTransaction<T>(
  warehouse: Warehouse,
  name: (step: string) => string,
  prepare: () => Promise<SwapAttempt<T>>,
  gaveUp: (holders: string) => string,
): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    const prepared = await prepare();
    try {
      try {
        await warehouse.batch(prepared.statements, name('swap'));
      } catch (error) {
        if (!(error instanceof WarehouseError) || !STATEMENT_TIMEOUT.test(error.message)) throw error;
        // It gave up its lock wait and rolled back; readers queued behind it
        // go on. Who held what it waited for, for the alert if the retries
        // all fail.
        const holders = await warehouse.query(openTransactions({ lockHolders: prepared.locks }), name('lock-holders'));
        throw new TransientWarehouseError(gaveUp(describeTransactions(holders)), { cause: error });
      }
      return prepared.carried;
    } catch (error) {
      if (!(error instanceof WarehouseError) || !error.message.includes(`${CATALOG_CHANGED}: `) || attempt >= CATALOG_CHANGE_ATTEMPTS) throw error;
      logger.warn('the live table changed between reading its dependents and the swap; reading them again', { attempt, error: error.message });
    }
  }
}

/** A refusal to read a catalog view the user may not see (Redshift's and PostgreSQL's words). */

/**
 * The live table's dependents (dependentsFacts) and, when the user may
 * read their catalog, its RLS and masking policies (policyFacts): a user
 * without sys:secadmin publishes a table without policies as before, and
 * one with policies cannot be published by it anyway (its ATTACH would be
 * refused: docs/decisions/security-policies-through-a-swap.md).
 */
export async function readLiveTableFacts(
  warehouse: Warehouse,
  relation: { readonly schema: string; readonly table: string; readonly incoming: string },
  name: (step: string) => string,
): Promise<{ facts: LiveTableFacts; factsQuery: Statement }> {
  const factsQuery = dependentsFacts(relation.schema, relation.table, relation.incoming);
  const rows = (await warehouse.query(factsQuery, name('dependents'))) as unknown as FactRow[];
  let policies: FactRow[] | undefined;
  try {
    policies = (await warehouse.query(policyFacts(relation.schema, relation.table, relation.incoming), name('policies'))) as unknown as FactRow[];
  } catch (error) {
    if (!(error instanceof WarehouseError) || !PERMISSION_DENIED.test(error.message)) throw error;
    logger.info('the RLS and masking policies are not readable by this user; a table with none publishes as before', { error: error.message });
  }
  return { facts: liveTableFacts(rows, policies), factsQuery };
}

/**
 * Reads the live table's dependents, refuses a view the swap could not
 * re-point, and runs the swap transaction (retryPublishTransaction).
 * Returns the facts carried over.
 */
export async function runSwap(warehouse: Warehouse, swap: Swap): Promise<LiveTableFacts> {
  const { pipeline, name, waits } = swap;
  const liveTable = liveName(swap);
  return retryPublishTransaction(
    warehouse,
    name,
    async () => {
      const { facts, factsQuery } = await readLiveTableFacts(warehouse, { ...pipeline.target, incoming: swap.incoming }, name);
      const refusal = dependentViewProblems(liveTable, facts);
      if (refusal !== undefined) throw new DependentViewError(refusal);
      return {
        statements: swap.statements(facts, factsQuery),
        locks: [...swapLocks(swap), ...facts.views.map((v) => ({ schema: v.schema, table: v.view }))],
        carried: facts,
      };
    },
    (holders) =>
      `the swap of ${liveTable} gave up after waiting ${waits.lockWaitMs} ms for its locks (no reader waited behind it longer) and is retried; ` +
      `holding ${liveTable}, ${swap.incomingLabel}, its views or the publications: ${holders}. ` +
      `Nothing was published; the live table keeps its rows. End those transactions, or raise ${PublishWaitEnv.LOCK_WAIT_MS}.`,
  );
}

/**
 * After the swap committed: a GRANT, REVOKE or comment issued on
 * the live table while the swap waited for its locks reached the table now
 * at `retainedAs`; carry it over to the new live table.
 */
export async function carryOverLateChanges(warehouse: Warehouse, swap: Swap, carried: LiveTableFacts): Promise<void> {
  const { pipeline, retainedAs, name } = swap;
  const oldVersion = liveTableFacts(
    (await warehouse.query(dependentsFacts(pipeline.target.schema, retainedAs, retainedAs), name('old-version'))) as unknown as FactRow[],
  );
  const corrections = carryOverCorrections(carried, oldVersion);
  if (corrections !== undefined) {
    const statements = carryOverStatements(pipeline, corrections, retainedAs);
    logger.warn('the live table changed while the swap waited; carrying the change over to the new live table', { statements });
    await warehouse.batch(statements, name('carry-over'));
  }
}

/**
 * A step's whole swap: the wait for older snapshots, the swap, the
 * carry-over once it committed. A WarehouseError of the swap goes to
 * `recover` (an earlier attempt may have committed; a guard may have
 * refused), whose answer ends the step; undefined: swapped.
 */
export async function swapAndCarryOver<T>(warehouse: Warehouse, swap: Swap, recover: (error: WarehouseError) => Promise<T>): Promise<T | undefined> {
  await waitForOlderSnapshots(warehouse, swap);
  let carried: LiveTableFacts;
  try {
    carried = await runSwap(warehouse, swap);
  } catch (error) {
    if (!(error instanceof WarehouseError)) throw error;
    return recover(error);
  }
  await carryOverLateChanges(warehouse, swap, carried);
  return undefined;
}
