import type { Context } from 'aws-lambda';
import { BatchStatus, CHECK_ENDED } from '../../domain/batch.ts';
import { ValidationError } from '../../domain/errors.ts';
import { installedManifestVersion } from '../../domain/manifest/sql/manifest.ts';
import { isMigrationInput } from '../../domain/migration/migration.ts';
import type { BatchInterval } from '../../domain/plan/chunk.ts';
import type { ExecutionInput } from '../../domain/plan/plan.ts';
import { batchIdFor, isCheck, isRestatement, nextRerun, planningTime, type Rerun, resolveInterval, resolvePipeline } from '../../domain/plan/plan.ts';
import { findBatch } from '../../domain/plan/sql/plan.ts';
import { isGroupInput } from '../../domain/publish/groups.ts';
import { liveRelation, readLiveRelation, viewVersionProblem } from '../../domain/publish/sql/view.ts';
import { isRollbackInput } from '../../domain/rollback/rollback.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { pipelines } from '../../pipelines/index.ts';
import { breakerGuard, breakerSuccess } from '../commons/breaker.ts';
import { stepHandler } from '../commons/handler.ts';
import { type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';
import { checkWarehouseSide, type PlanEvent, type PlanResult, startOrResume } from './batch.ts';
import { type GroupPlanResult, planGroup } from './group.ts';
import { planMigration, refuseUnmigrated } from './migration.ts';
import { planRollback } from './rollback.ts';
import { isWindowEvent, planWindow, type WindowEvent, type WindowPlan } from './window.ts';

/**
 * With publishVia 'view': the version table the live view reads, which
 * staging is created LIKE (Redshift's CREATE TABLE LIKE copies a table's
 * encodings, distribution and sort keys; a view has none). A live table,
 * or a view over anything else, is refused before anything is written.
 */
async function liveViewVersion(warehouse: Warehouse, pipeline: Pipeline, statementName: string): Promise<string> {
  const found = viewVersionProblem(
    pipeline,
    readLiveRelation(await warehouse.query(liveRelation(pipeline.target.schema, pipeline.target.table), statementName)),
  );
  if ('problem' in found) throw new ValidationError(found.problem);
  return found.version;
}

/**
 * Validates the input and the warehouse side (privileges, live table,
 * source query, columns and their types) before writing anything; then creates or resumes the batch.
 */
export async function plan(event: PlanEvent, warehouse: Warehouse = warehouseFromEnv(), registry: readonly Pipeline[] = pipelines): Promise<PlanResult> {
  refuseCheckOfOtherInputs(event?.input);
  if (isRollbackInput(event?.input)) return planRollback(event, warehouse, registry);
  if (isMigrationInput(event?.input)) return planMigration(event, warehouse, registry);
  const pipeline = resolvePipeline(event?.input, registry);
  const now = planningTime(event.startedAt, new Date());
  const interval = resolveInterval(event.input as ExecutionInput, pipeline, now);
  const restate = isRestatement(event.input);
  const check = isCheck(event.input);
  const baseId = batchIdFor(pipeline, interval);
  const baseName = (step: string) => `atomic-publish:${pipeline.name}:plan:${step}:${baseId}`;

  if (pipeline.migration) await refuseUnmigrated(warehouse, pipeline, baseName);

  const { columns: liveColumns, generated } = await checkWarehouseSide(warehouse, pipeline, interval, baseName);

  const stagingLike = pipeline.publishVia === 'view' ? await liveViewVersion(warehouse, pipeline, baseName('live-view')) : undefined;
  const rerun = restate
    ? await nextRestatement(warehouse, pipeline, interval, baseName)
    : check
      ? await nextCheck(warehouse, pipeline, interval, baseName)
      : undefined;
  const batchId = rerun === undefined ? baseId : batchIdFor(pipeline, interval, rerun);
  const name = (step: string) => `atomic-publish:${pipeline.name}:plan:${step}:${batchId}`;
  return startOrResume(event, warehouse, pipeline, interval, {
    batchId,
    name,
    columns: liveColumns,
    generated,
    ...(stagingLike !== undefined ? { stagingLike } : {}),
    ...(rerun?.kind === 'restatement' ? { restatement: rerun.n } : {}),
    ...(rerun?.kind === 'check' ? { check: rerun.n } : {}),
  });
}

/**
 * `check` belongs to a pipeline run's input: a rollback, migration or
 * group input with it is refused before anything is written, saying why
 * (their own checks of unknown fields would only list their fields).
 */
export function refuseCheckOfOtherInputs(input: unknown): void {
  if (typeof input !== 'object' || input === null || !('check' in input)) return;
  const kind = isRollbackInput(input) ? 'a rollback' : isMigrationInput(input) ? 'a migration' : isGroupInput(input) ? 'a publish group' : undefined;
  if (kind !== undefined) {
    throw new ValidationError(`input.check runs the gate of one pipeline's interval without publishing; ${kind} input takes no check. Nothing was written`);
  }
}

/** Statuses a batch ends with: a restatement so ended is not resumed; the next one is started. */
const ENDED: readonly string[] = [BatchStatus.PUBLISHED, BatchStatus.SUPERSEDED];

/** Whether the manifest exists (only read: with none, no batch was ever recorded). */
async function manifestExists(warehouse: Warehouse, name: (step: string) => string): Promise<boolean> {
  const [present] = await warehouse.query(installedManifestVersion()[0]!, name('manifest-present'));
  return Number(present?.present ?? 0) > 0;
}

/**
 * The check an input `"check": true` runs: the first check 1, 2, ... of
 * the interval that has not ended (CHECK_PASSED or CHECK_FAILED): one that
 * failed or was interrupted is resumed, keeping the chunks it loaded; once
 * all have ended, a new one checks the source as it is now.
 */
async function nextCheck(warehouse: Warehouse, pipeline: Pipeline, interval: BatchInterval, name: (step: string) => string): Promise<Rerun> {
  if (!(await manifestExists(warehouse, name))) return { kind: 'check', n: 1 };
  return nextRerun(
    'check',
    CHECK_ENDED,
    async (n) => (await warehouse.query(findBatch(batchIdFor(pipeline, interval, { kind: 'check', n })), name(`find-check-${n}`)))[0]?.status,
  );
}

/**
 * The restatement a `"restate": true` input runs: the interval's batch must be
 * PUBLISHED, or the input is refused before anything is written. Then the first
 * restatement 1, 2, ... that has not ended (a failed one resumed), or a new one
 * once all have; its id follows from (pipeline, interval, spec, n), so a retried
 * Plan finds the same one. docs/decisions/restating-a-published-interval.md
 */
async function nextRestatement(warehouse: Warehouse, pipeline: Pipeline, interval: BatchInterval, name: (step: string) => string): Promise<Rerun> {
  // Only read: with no manifest yet, nothing was ever published.
  const [base] = (await manifestExists(warehouse, name)) ? await warehouse.query(findBatch(batchIdFor(pipeline, interval)), name('find-restated')) : [];
  if (base?.status !== BatchStatus.PUBLISHED) {
    throw new ValidationError(
      `pipeline ${pipeline.name}: input.restate re-runs an interval already published, but the batch of ${interval.from.toISOString()} to ${interval.to.toISOString()} ` +
        `with this spec is ${base === undefined ? 'not recorded' : String(base.status)}. Nothing was written. Run it without restate to publish it`,
    );
  }
  return nextRerun(
    'restatement',
    ENDED,
    async (n) => (await warehouse.query(findBatch(batchIdFor(pipeline, interval, n)), name(`find-restatement-${n}`)))[0]?.status,
  );
}

/** A group input (`{"group": ...}`) is planned as a group (functions/plan/group.ts), any other as a pipeline run. */
export const handler = stepHandler(async (event: PlanEvent | WindowEvent, context: Context): Promise<PlanResult | GroupPlanResult | WindowPlan> => {
  const warehouse = warehouseFor(context);
  // A window's first step (PlanWindow) of a batch planned in windows.
  if (isWindowEvent(event)) return planWindow(event, warehouse);
  // First: with the warehouse's circuit breaker open, the execution ends here (functions/commons/breaker.ts).
  refuseCheckOfOtherInputs(event?.input);
  await breakerGuard(warehouse, event?.executionId);
  const result = isGroupInput(event?.input) ? await planGroup(event, warehouse, pipelines) : await plan(event, warehouse);
  // A replay is a successful run.
  if (result.alreadyPublished) await breakerSuccess(warehouse);
  return result;
});
