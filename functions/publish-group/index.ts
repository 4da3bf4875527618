/**
 * PublishGroup: every member of a publish group swapped in ONE
 * BatchExecuteStatement transaction, all or none (domain/publish/sql/group.ts).
 * The same machinery as Publish (functions/commons/swap.ts): the wait for
 * older snapshots over every member's tables, the bounded lock wait and
 * its retries, the catalog checks read again when a live table's
 * dependents changed, the carry-over of late changes once committed.
 */
import type { Context } from 'aws-lambda';
import { type BatchRef, BatchStatus } from '../../domain/batch.ts';
import { DependentViewError, OutOfBandChangeError, PublishConflictError, WarehouseError } from '../../domain/errors.ts';
import { describeOutOfBandChange, OUT_OF_BAND, outOfBandRefusal } from '../../domain/live-watch/out-of-band.ts';
import { publishGuardRefusal } from '../../domain/manifest/sql/manifest.ts';
import { previousVersionTableFor } from '../../domain/plan/plan.ts';
import { dependentViewProblems, type LiveTableFacts } from '../../domain/publish/dependents.ts';
import { groupSwapPublish, type MemberSwap } from '../../domain/publish/sql/group.ts';
import { rewritesInPlace } from '../../domain/publish/sql/rewrite.ts';
import { batchState } from '../../domain/publish/sql/swap.ts';
import { PublishWaitEnv, type PublishWaits, publishWaitsFromEnv } from '../../domain/publish/waits.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { stepHandler } from '../commons/handler.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { logger } from '../commons/powertools.ts';
import { carryOverLateChanges, readLiveTableFacts, retryPublishTransaction, type Swap, swapLocks, waitForSnapshotsOlderThanSwap } from '../commons/swap.ts';
import { type Row, type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';
import { type PublishResult, toResult } from '../publish/result.ts';

export interface PublishGroupEvent {
  readonly group: string;
  /** Plan's members: each member's batch (its chunks are not read). */
  readonly members: readonly { readonly batch: BatchRef }[];
}

/** One member's batch and what publishing it did: the items of the GroupMetrics Map. */
export interface PublishedMember {
  readonly batch: BatchRef;
  readonly publish: PublishResult;
}

export interface PublishGroupResult {
  readonly group: string;
  /** True when an earlier attempt had already published every member (a retry after a lost response). */
  readonly alreadyPublished: boolean;
  readonly members: readonly PublishedMember[];
}

interface Member {
  readonly pipeline: Pipeline;
  readonly batch: BatchRef;
  readonly previous: string;
  /** Publish's swap of this member alone: its tables, for the snapshot wait, the lock holders and the carry-over. */
  readonly swap: Swap;
}

const liveOf = (pipeline: Pipeline) => `${pipeline.target.schema}.${pipeline.target.table}`;

/** Every member's batch state now: all PUBLISHED (by one transaction), none, or a mix only a run of a single member can make. */
async function memberStates(warehouse: Warehouse, members: readonly Member[], name: (step: string) => string): Promise<(Row | undefined)[]> {
  const states: (Row | undefined)[] = [];
  for (const member of members) states.push((await warehouse.query(batchState(member.batch.batchId), name('state')))[0]);
  return states;
}

function published(members: readonly Member[], states: readonly (Row | undefined)[], alreadyPublished: boolean): PublishedMember[] {
  return members.map((m, i) => ({ batch: m.batch, publish: toResult(states[i]!, liveOf(m.pipeline), alreadyPublished) }));
}

/**
 * After the group transaction failed: an earlier attempt whose response was
 * lost may have committed (then every member is PUBLISHED: that publish is
 * this group's own). A guard refusal of any member (something published
 * since Plan, older data than live, staging changed) refuses the whole
 * group: superseding one member alone would break all-or-none.
 */
async function afterFailedGroupPublish(error: WarehouseError, group: string, members: readonly Member[], name: (step: string) => string, warehouse: Warehouse) {
  const states = await memberStates(warehouse, members, name);
  if (states.every((s) => s?.status === BatchStatus.PUBLISHED)) return published(members, states, true);
  const refusal = publishGuardRefusal(error.message);
  if (refusal !== undefined) {
    throw new PublishConflictError(`publish group ${group}: ${refusal}. Nothing of the group was published: every member's live table is untouched`, {
      cause: error,
    });
  }
  const outOfBand = outOfBandRefusal(error.message);
  const changed =
    outOfBand === undefined ? undefined : members.find((m) => m.batch.live !== undefined && error.message.includes(`${OUT_OF_BAND}: ${m.batch.liveTable}: `));
  if (outOfBand !== undefined && changed !== undefined) {
    throw new OutOfBandChangeError(
      `publish group ${group}: ${describeOutOfBandChange(changed.batch, changed.batch.live!, outOfBand)} Nothing of the group was published: every member's live table is untouched`,
      { cause: error },
    );
  }
  throw error;
}

/**
 * The group swap: a replay of a published group returns what it published;
 * otherwise the wait for older snapshots over every member's tables, the
 * one transaction (read again and rebuilt when a live table's dependents
 * changed in between), and each member's late changes carried over.
 */
export async function publishGroup(
  event: PublishGroupEvent,
  warehouse: Warehouse = warehouseFromEnv(),
  waits: PublishWaits = publishWaitsFromEnv(),
): Promise<PublishGroupResult> {
  const { group } = event;
  const name = (step: string) => `atomic-publish:${group}:publish-group:${step}:${event.members.map((m) => m.batch.batchId).join('+')}`;
  const members: Member[] = event.members.map(({ batch }) => {
    const pipeline = frozenPipeline(batch);
    const previous = previousVersionTableFor(pipeline, batch.batchId);
    const swap: Swap = {
      pipeline,
      step: 'PublishGroup',
      incoming: batch.stagingTable,
      incomingLabel: 'its staging table',
      retainedAs: previous,
      waits,
      name,
      statements: () => [],
    };
    return { pipeline, batch, previous, swap };
  });
  const liveTables = members.map((m) => liveOf(m.pipeline)).join(', ');

  const before = await memberStates(warehouse, members, name);
  if (before.every((s) => s?.status === BatchStatus.PUBLISHED)) {
    logger.info('group already published; nothing to do', { group });
    return { group, alreadyPublished: true, members: published(members, before, true) };
  }
  // A member rewritten in place is read as old or new by any snapshot: only renamed members' readers are waited for.
  const renamed = members.filter((m) => !rewritesInPlace(m.pipeline));
  if (renamed.length > 0) {
    await waitForSnapshotsOlderThanSwap(warehouse, {
      step: 'PublishGroup',
      name,
      waits,
      tables: renamed.flatMap((m) => swapLocks(m.swap)),
      what: `publish group ${group} (${liveTables})`,
      untouched: "Nothing was published; every member's live table keeps its rows.",
    });
  }

  let committed: { facts: LiveTableFacts | undefined }[];
  try {
    committed = await retryPublishTransaction(
      warehouse,
      name,
      async () => {
        const swaps: MemberSwap[] = [];
        for (const m of members) {
          const swap = { pipeline: m.pipeline, batch: m.batch, previousVersionTable: m.previous };
          // Rewritten in place: nothing is renamed, its dependents stay on it.
          if (rewritesInPlace(m.pipeline)) {
            swaps.push(swap);
            continue;
          }
          const { facts, factsQuery } = await readLiveTableFacts(warehouse, { ...m.pipeline.target, incoming: m.batch.stagingTable }, name);
          const refusal = dependentViewProblems(liveOf(m.pipeline), facts);
          if (refusal !== undefined) throw new DependentViewError(`publish group ${group}: ${refusal}`);
          swaps.push({ ...swap, dependents: { facts, factsQuery } });
        }
        return {
          statements: groupSwapPublish(group, swaps, new Date(), waits.lockWaitMs),
          locks: swaps.flatMap((s, i) => [
            ...swapLocks(members[i]!.swap),
            ...(s.dependents?.facts.views ?? []).map((v) => ({ schema: v.schema, table: v.view })),
          ]),
          carried: swaps.map((s) => ({ facts: s.dependents?.facts })),
        };
      },
      (holders) =>
        `the swap of publish group ${group} (${liveTables}) gave up after waiting ${waits.lockWaitMs} ms for its locks (no reader waited behind it longer) and is retried; ` +
        `holding a member's live table, its staging table, its views or the publications: ${holders}. ` +
        `Nothing was published; every member's live table keeps its rows. End those transactions, or raise ${PublishWaitEnv.LOCK_WAIT_MS}.`,
    );
  } catch (error) {
    if (!(error instanceof WarehouseError)) throw error;
    // Only an earlier attempt's commit comes back: every member published.
    return { group, alreadyPublished: true, members: await afterFailedGroupPublish(error, group, members, name, warehouse) };
  }
  for (const [i, m] of members.entries()) {
    const facts = committed[i]!.facts;
    if (facts !== undefined) await carryOverLateChanges(warehouse, m.swap, facts);
  }
  const after = await memberStates(warehouse, members, name);
  const result = { group, alreadyPublished: false, members: published(members, after, false) };
  logger.info('group published', { group, members: result.members.map((m) => ({ pipeline: m.batch.pipeline, ...m.publish })) });
  return result;
}

export const handler = stepHandler((event: PublishGroupEvent, context: Context) => publishGroup(event, warehouseFor(context)));
