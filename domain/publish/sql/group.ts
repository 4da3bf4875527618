/**
 * The SQL of PublishGroup: every member's swap in ONE transaction, all or
 * none (domain/publish/groups.ts). Each member's swap is Publish's (publish.ts),
 * taken apart so that the locks of all members come first, in one global
 * order, and no member is renamed before every member's guard and catalog
 * check has passed.
 */
import type { BatchRef } from '../../batch.ts';
import { ValidationError } from '../../errors.ts';
import { qualifiedName } from '../../identifiers.ts';
import type { Pipeline } from '../../spec.ts';
import { MANIFEST as M, MAX_BATCH_STATEMENTS, MAX_SQL_BYTES, type Statement } from '../../sql/statement.ts';
import type { LiveTableFacts } from '../dependents.ts';
import { boundLockWaits, LOCKS_HELD } from './lock-waits.ts';
import { fitsOneBatch, withinOneBatch } from './one-transaction.ts';
import { rewritesInPlace, rewrittenRows } from './rewrite.ts';
import {
  captureViews,
  catalogCheck,
  copyComments,
  dependentLockStatements,
  liveCheckStatements,
  publishGuard,
  reapplyStatements,
  recordPublished,
  recreateViews,
  renameStatements,
} from './swap.ts';

/**
 * Statements a group swap has once whatever its members: the bounded lock
 * wait (SET LOCAL statement_timeout), the lock of the publications, and
 * the bound off once the locks are held (one more, recreate_views, when a
 * member has bound views).
 */
export const GROUP_SWAP_SHARED_STATEMENTS = 3;

/**
 * Statements each member adds at least: LOCK of its staging and of its live
 * table, its guard (assert_publishable), its catalog check, its out-of-band
 * check, two renames, and its publication, attempt and batch recorded. A
 * member rewritten in place has as many: no live table lock and no catalog
 * check, four statements of rows for the two renames.
 */
export const MEMBER_SWAP_MIN_STATEMENTS = 10;

/** One member of a group swap: its batch, where its live table goes, and its live table's dependents as just read. */
export interface MemberSwap {
  readonly pipeline: Pipeline;
  readonly batch: BatchRef;
  readonly previousVersionTable: string;
  /**
   * The live table's dependents, read for the renames; undefined for a
   * member whose rows are rewritten in place (rewritesInPlace): its table is
   * never renamed, so its grants, policies, comments and views stay on it.
   */
  readonly dependents?: { readonly facts: LiveTableFacts; readonly factsQuery: Statement };
}

const liveName = (member: MemberSwap) => qualifiedName(member.pipeline.target.schema, member.pipeline.target.table);

/** A member's statements, by the stretch of the group swap they go in. */
interface MemberParts {
  readonly dependentLocks: readonly string[];
  /** LOCK of the live table: a member rewritten in place takes none (its readers read on; its DELETE takes the write lock). */
  readonly liveLock: readonly string[];
  readonly guard: string;
  readonly catalogCheck: readonly string[];
  readonly liveChecks: readonly string[];
  readonly capture: readonly string[];
  /** The renames, or the rows rewritten in place. */
  readonly change: readonly string[];
  readonly comments: readonly string[];
  readonly reapply: readonly string[];
}

function partsOf(m: MemberSwap): MemberParts {
  const { pipeline, batch } = m;
  const common = { guard: publishGuard(pipeline, batch), liveChecks: liveCheckStatements(pipeline, batch) };
  if (m.dependents === undefined) {
    if (!rewritesInPlace(pipeline)) throw new Error(`publish group member ${pipeline.name}: a renamed member needs its live table's dependents`);
    return {
      ...common,
      dependentLocks: [],
      liveLock: [],
      catalogCheck: [],
      capture: [],
      change: rewrittenRows(pipeline, batch, m.previousVersionTable),
      comments: [],
      reapply: [],
    };
  }
  const { facts, factsQuery } = m.dependents;
  return {
    ...common,
    dependentLocks: dependentLockStatements(facts),
    liveLock: [`LOCK ${liveName(m)}`],
    catalogCheck: [catalogCheck(pipeline, facts, factsQuery)],
    capture: captureViews(pipeline, facts),
    change: renameStatements(pipeline, batch.stagingTable, m.previousVersionTable),
    comments: facts.commented ? [copyComments(pipeline.target.schema, m.previousVersionTable, pipeline.target.table)] : [],
    reapply: reapplyStatements(pipeline, facts),
  };
}

/**
 * The group swap as ONE transaction, members in name order: the bounded lock wait
 * and the locks in one global order (every staging, every view, every referencing
 * table, the renamed live tables, each sorted by name; the publications once); every
 * guard and catalog check before anything changes; every rename (or in-place
 * rewrite), the views re-created once, everything re-applied; the records, with one
 * published_at. Refused over the Data API's limits. Why: docs/decisions/publish-groups.md
 */
export function groupSwapPublish(group: string, members: readonly MemberSwap[], now: Date, lockWaitMs: number): string[] {
  const ordered = [...members].sort((a, b) => compare(a.pipeline.name, b.pipeline.name));
  const parts = ordered.map(partsOf);
  const unique = (statements: string[]) => [...new Set(statements)];
  const statements = [
    boundLockWaits(lockWaitMs),
    ...ordered.map((m) => `LOCK ${qualifiedName(m.pipeline.target.schema, m.batch.stagingTable)}`),
    ...byLockedName(unique(parts.flatMap((p) => p.dependentLocks))),
    ...ordered
      .map((m, i) => ({ name: liveName(m), lock: parts[i]!.liveLock }))
      .sort((a, b) => compare(a.name, b.name))
      .flatMap((l) => l.lock),
    `LOCK ${M}.publications`,
    LOCKS_HELD,
    ...parts.map((p) => p.guard),
    ...parts.flatMap((p) => p.catalogCheck),
    // Every member's out-of-band check (and expected writers' carry-over).
    ...parts.flatMap((p) => p.liveChecks),
    ...parts.flatMap((p) => p.capture),
    ...parts.flatMap((p) => p.change),
    ...recreateViews(ordered.flatMap((m) => (m.dependents === undefined ? [] : [m.dependents.facts]))),
    ...parts.flatMap((p) => p.comments),
    ...parts.flatMap((p) => p.reapply),
    ...ordered.flatMap((m) => recordPublished(m.pipeline, m.batch.batchId, m.previousVersionTable, now, m.batch.live?.carryFrom !== undefined)),
  ];
  return fitGroupSwap(group, ordered, statements);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The views' locks (ALTER TABLE ... OWNER TO), then the referencing
 * tables' (LOCK), each sorted by the name locked: one order whichever
 * group or member they came from (two groups sharing two views lock them
 * alike).
 */
function byLockedName(statements: readonly string[]): string[] {
  const key = (sql: string) => `${sql.startsWith('ALTER TABLE ') ? 0 : 1}${sql.replace(/^ALTER TABLE |^LOCK /, '').replace(/ OWNER TO .*$/, '')}`;
  return [...statements].sort((a, b) => compare(key(a), key(b)));
}

/**
 * A group swap as it goes (one-transaction.ts withinOneBatch), refused
 * when it is still over the Data API's limits for one BatchExecuteStatement,
 * saying what each member needs.
 */
export function fitGroupSwap(group: string, members: readonly MemberSwap[], statements: readonly string[]): string[] {
  const fitted = withinOneBatch(statements);
  if (fitsOneBatch(fitted)) return fitted;
  const bytes = fitted.reduce((sum, sql) => sum + Buffer.byteLength(sql, 'utf8'), 0);
  const needs = members
    .map((m) => {
      const p = partsOf(m);
      const own = [p.dependentLocks, p.liveLock, p.catalogCheck, p.liveChecks, p.capture, p.change, p.comments, p.reapply].reduce(
        (sum, list) => sum + list.length,
        0,
      );
      // Its staging's lock, its guard and its three records.
      return `${m.pipeline.name} ${own + 5}`;
    })
    .join(', ');
  throw new ValidationError(
    `the swap of publish group ${group} would be ${fitted.length} statements and ${bytes} bytes of SQL, over the Data API's ` +
      `${MAX_BATCH_STATEMENTS} statements / ${MAX_SQL_BYTES} bytes for one transaction (statements per member: ${needs}; ${GROUP_SWAP_SHARED_STATEMENTS} shared). ` +
      `Nothing was published. Split the group, or reduce the privileges, keys, policies or dependent views of its live tables`,
  );
}
