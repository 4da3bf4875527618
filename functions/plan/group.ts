/**
 * Plan for a group input (`{"group": ...}`): every member checked as Plan
 * checks a pipeline, before anything is written; then every member's lease,
 * all or none; then one batch per member. The state machine then loads and
 * reconciles each member (GroupMembers) and publishes them together
 * (PublishGroup).
 */
import { type BatchRef, BatchStatus } from '../../domain/batch.ts';
import { ValidationError } from '../../domain/errors.ts';
import { type ChunkStateRow, chunksToLoad } from '../../domain/load-chunk/chunk-loads.ts';
import type { BatchInterval, Chunk } from '../../domain/plan/chunk.ts';
import { batchIdFor, planChunks, planningTime, resolveInterval, stagingTableFor } from '../../domain/plan/plan.ts';
import { doneChunks, findBatch, latestPublication, startBatch } from '../../domain/plan/sql/plan.ts';
import { chunksPerWindow } from '../../domain/plan/windows.ts';
import { type PublishGroup, resolveGroup } from '../../domain/publish/groups.ts';
import { rewritesInPlace } from '../../domain/publish/sql/rewrite.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { groups } from '../../pipelines/index.ts';
import { releaseExecutionLease } from '../commons/lease.ts';
import { codeVersion, logger } from '../commons/powertools.ts';
import type { Warehouse } from '../commons/warehouse.ts';
import { checkWarehouseSide, ensureManifest, liveBaseline, type PlanEvent } from './batch.ts';
import { batchChunks, sortKeyCheck, withLoadsStillRunning } from './chunks.ts';
import { type PipelineBusy, takeLease } from './lease.ts';
import { refuseUnmigrated } from './migration.ts';

/** One member's plan: what the member's iteration of GroupMembers loads and reconciles. */
export interface MemberPlan {
  readonly maxConcurrency: number;
  readonly chunks: readonly Chunk[];
  readonly chunkCount: number;
  readonly batch: BatchRef;
  /** As a pipeline run's `plan.warnings` (functions/plan/chunks.ts sortKeyCheck). */
  readonly warnings?: readonly string[];
}

export interface GroupPlanResult {
  /** Every member's batch is PUBLISHED already (a replay): nothing to do. */
  readonly alreadyPublished: boolean;
  /** Another execution holds a member's lease (`skipped` says which); this one holds none and wrote nothing. */
  readonly busy: boolean;
  readonly skipped?: PipelineBusy;
  readonly group: { readonly name: string; readonly members: readonly string[] };
  /** In member name order. */
  readonly members: readonly MemberPlan[];
}

interface Planned {
  readonly pipeline: Pipeline;
  readonly interval: BatchInterval;
  readonly chunks: readonly Chunk[];
  readonly batch: BatchRef;
  readonly existing: Record<string, unknown> | undefined;
  readonly name: (step: string) => string;
}

/** A member's interval: the input's `from`/`to` resolved per the member's own spec (its grain, zone and history start). */
function memberInterval(group: PublishGroup, pipeline: Pipeline, fields: { from?: unknown; to?: unknown }, now: Date): BatchInterval {
  try {
    return resolveInterval(fields as never, pipeline, now);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new ValidationError(`publish group ${group.name}, member ${pipeline.name}: ${error.message}. Nothing was written`);
  }
}

export async function planGroup(
  event: PlanEvent,
  warehouse: Warehouse,
  registry: readonly Pipeline[],
  declared: readonly PublishGroup[] = groups,
): Promise<GroupPlanResult> {
  const { group, interval: fields } = resolveGroup(event.input, declared);
  const now = planningTime(event.startedAt, new Date());
  const groupName = (step: string) => `atomic-publish:${group.name}:plan-group:${step}`;
  const planned: Planned[] = [];
  // Every member checked before anything is written.
  for (const member of group.members) {
    const pipeline = registry.find((p) => p.name === member.name) ?? member;
    const interval = memberInterval(group, pipeline, fields, now);
    // Calendar chunks are checked before anything is read; the batch's own chunks are resolved once the manifest is read.
    const chunks = pipeline.chunk.targetRows === undefined ? planChunks(interval, pipeline) : [];
    const batchId = batchIdFor(pipeline, interval);
    const name = (step: string) => `atomic-publish:${pipeline.name}:plan:${step}:${batchId}`;
    if (pipeline.migration) await refuseUnmigrated(warehouse, pipeline, name);
    const { columns, generated, identities } = await checkWarehouseSide(warehouse, pipeline, interval, name);
    // A member renamed into place would number from its seed again (docs/decisions/identity-columns.md).
    if (identities.length > 0 && !rewritesInPlace(pipeline)) {
      throw new ValidationError(
        `publish group ${group.name}, member ${pipeline.name}: ${pipeline.target.schema}.${pipeline.target.table} has identity column(s) ${identities.join(', ')}, ` +
          "and the group publishes this member by rename swap (its migration changes the table's columns), whose new table's identity would count from its seed again " +
          'and reuse numbers the live table already gave. Publish the migration on its own. Nothing was written',
      );
    }
    const batch: BatchRef = {
      pipeline: pipeline.name,
      batchId,
      specHash: pipeline.specHash,
      liveTable: `${pipeline.target.schema}.${pipeline.target.table}`,
      from: interval.from.toISOString(),
      to: interval.to.toISOString(),
      stagingTable: stagingTableFor(pipeline, batchId),
      columns,
      ...(generated.length === 0 ? {} : { generated }),
      basePublication: 0,
    };
    planned.push({ pipeline, interval, chunks, batch, existing: undefined, name });
  }

  await ensureManifest(warehouse, groupName('manifest'));
  for (const [i, p] of planned.entries()) {
    const [existing] = await warehouse.query(findBatch(p.batch.batchId), p.name('find-batch'));
    const basePublication = Number((await warehouse.query(latestPublication(p.pipeline.name), p.name('base')))[0]?.seq ?? 0);
    const { chunks } = await batchChunks(warehouse, p.pipeline, p.interval, p.batch.batchId, existing !== undefined, p.name, Number.POSITIVE_INFINITY);
    planned[i] = { ...p, chunks, existing, batch: { ...p.batch, basePublication } };
  }
  // A group's members load inline, one after another, in this one execution (no windows): their chunks share its history.
  const windowSize = chunksPerWindow(process.env);
  const total = planned.reduce((sum, p) => sum + p.chunks.length, 0);
  if (total > windowSize) {
    throw new ValidationError(
      `publish group ${group.name}: its members need ${total} chunks in all (${planned.map((p) => `${p.pipeline.name} ${p.chunks.length}`).join(', ')}), ` +
        `more than the ${windowSize} one execution loads; a group's members load in one execution, without windows. Use coarser chunks or a shorter interval`,
    );
  }
  const warnings = new Map<string, string>();
  const result = (extra: Pick<GroupPlanResult, 'alreadyPublished' | 'busy' | 'skipped'>, chunksOf: (p: Planned) => readonly Chunk[]): GroupPlanResult => ({
    ...extra,
    group: { name: group.name, members: planned.map((p) => p.pipeline.name) },
    members: planned.map((p) => {
      const warning = warnings.get(p.pipeline.name);
      return {
        maxConcurrency: p.pipeline.chunk.maxConcurrency,
        chunks: chunksOf(p),
        chunkCount: p.chunks.length,
        batch: p.batch,
        ...(warning === undefined ? {} : { warnings: [warning] }),
      };
    }),
  });
  const publishedAlready = planned.filter((p) => p.existing?.status === BatchStatus.PUBLISHED);
  if (publishedAlready.length === planned.length) {
    logger.info('group already published; nothing to do', { group: group.name });
    return result({ alreadyPublished: true, busy: false }, () => []);
  }
  if (publishedAlready.length > 0) {
    const names = publishedAlready.map((p) => p.pipeline.name).join(', ');
    throw new ValidationError(
      `publish group ${group.name}: the batch of ${names} for this interval was already published by a run of its own, so the group cannot publish all its members together for it. ` +
        `Nothing was written. Run the other members alone ({"pipeline": "<name>"} with the same from/to), or the group for a later interval`,
    );
  }

  // All leases or none, in name order (two group runs cannot hold one each and wait).
  for (const p of planned) {
    const skipped = await takeLease(warehouse, p.pipeline.name, event, p.name, p.batch.batchId);
    if (!skipped) continue;
    await releaseExecutionLease(warehouse, event.executionId ?? '', groupName('busy'));
    // A group waits for every member's lease: a member's holder never publishes the group.
    const busy: PipelineBusy = {
      ...skipped,
      sameBatch: false,
      wait: true,
      message: `publish group ${group.name}: member ${skipped.message} This execution holds no lease of the group (those it took are released).`,
    };
    logger.warn('group busy: another execution holds a member lease; this one wrote nothing', { group: group.name, ...busy });
    return result({ alreadyPublished: false, busy: true, skipped: busy }, () => []);
  }

  const remaining = new Map<string, readonly Chunk[]>();
  for (const p of planned) {
    const warning = await sortKeyCheck(warehouse, p.pipeline, p.name);
    if (warning !== undefined) warnings.set(p.pipeline.name, warning);
  }
  for (const [i, p] of planned.entries()) {
    // What the member's swap compares its live table with (functions/plan/index.ts liveBaseline).
    planned[i] = { ...p, batch: { ...p.batch, live: await liveBaseline(warehouse, p.pipeline, p.batch.to, p.name) } };
  }
  for (const p of planned) {
    await warehouse.batch(
      startBatch({
        batchId: p.batch.batchId,
        pipeline: p.pipeline,
        interval: p.interval,
        codeVersion: codeVersion(),
        executionId: event.executionId ?? '',
        basePublication: p.batch.basePublication,
        stagingTable: p.batch.stagingTable,
        chunks: p.chunks,
        now: new Date(),
      }),
      p.name('start-batch'),
    );
    const rows = (await warehouse.query(doneChunks(p.batch.batchId), p.name('done-chunks'))) as unknown as ChunkStateRow[];
    remaining.set(p.pipeline.name, await withLoadsStillRunning(warehouse, p.pipeline, p.batch, chunksToLoad(p.chunks, rows).remaining));
  }
  logger.info('group planned', { group: group.name, batches: planned.map((p) => p.batch.batchId) });
  return result({ alreadyPublished: false, busy: false }, (p) => remaining.get(p.pipeline.name) ?? []);
}
