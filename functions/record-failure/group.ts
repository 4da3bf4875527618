/**
 * RecordFailure for a publish group run: every member's batch handled as
 * RecordFailure handles a pipeline's (its running statements cancelled,
 * marked FAILED unless published), then one page naming the group and what
 * every member's live table shows now.
 */
import type { BatchRef } from '../../domain/batch.ts';
import { batchOfExecution, markExecutionStopped } from '../../domain/cancel-orphans/sql/cancel-orphans.ts';
import { installedManifestVersion } from '../../domain/manifest/sql/manifest.ts';
import { batchState } from '../../domain/publish/sql/swap.ts';
import { describeError, type FailureReport, type RecordFailureEvent } from '../../domain/record-failure/record-failure.ts';
import { type GroupFailureFacts, groupFailureReport, type MemberFailureFacts } from '../../domain/record-failure/record-failure-group.ts';
import { livePublication, markBatchFailed } from '../../domain/record-failure/sql/record-failure.ts';
import { releaseExecutionLease } from '../commons/lease.ts';
import { cancelOrphans } from '../commons/orphans.ts';
import { logger } from '../commons/powertools.ts';
import type { Warehouse } from '../commons/warehouse.ts';

export async function recordGroupFailure(
  event: RecordFailureEvent,
  group: { name: string; members: readonly BatchRef[] },
  warehouse: () => Warehouse,
): Promise<FailureReport> {
  const { name, message } = describeError(event.state?.error);
  const statementName = `atomic-publish:${group.name}:record-failure:group`;
  let facts: GroupFailureFacts = { members: [] };
  try {
    const target = warehouse();
    const members: MemberFailureFacts[] = [];
    for (const batch of group.members) {
      const orphans = await cancelOrphans(target, batch, statementName).catch(() => ({ cancelled: [], stillRunning: [] }));
      if (!event.state.publish) {
        for (const statement of markBatchFailed(batch.batchId, `${name}: ${message}`, new Date())) await target.execute(statement, statementName);
      }
      const [now] = await target.query(batchState(batch.batchId), statementName);
      const [live] = await target.query(livePublication(batch.pipeline), statementName);
      members.push({
        batch,
        ...(now ? { status: String(now.status) } : {}),
        ...(live ? { live: { seq: Number(live.seq), batchId: String(live.batch_id), publishedAt: String(live.published_at) } } : {}),
        cancelled: orphans.cancelled.length,
      });
    }
    facts = { members, ...(group.members.length === 0 ? { planBatches: await planBatches(target, event, `${name}: ${message}`, statementName) } : {}) };
  } catch (error) {
    facts = { members: [], recordError: (error as Error).message };
    logger.error('could not record the group failure in the manifest', { group: group.name, error: error as Error });
  }
  try {
    if (event.executionId) await releaseExecutionLease(warehouse(), event.executionId, `${statementName}:lease`);
  } catch (error) {
    logger.error('could not release the group leases; they expire at the state machine timeout', { executionId: event.executionId, error: error as Error });
  }
  return groupFailureReport(event, group, facts);
}

/**
 * The run stopped in Plan: the batches Plan had started for some members
 * before failing (found by execution, as CancelOrphans finds them), each
 * marked FAILED as CancelOrphans marks it, so none stays RUNNING.
 */
async function planBatches(target: Warehouse, event: RecordFailureEvent, error: string, statementName: string) {
  if (!event.executionId) return [];
  const [manifest] = await target.query(installedManifestVersion()[0]!, statementName);
  if (!(Number(manifest?.present) > 0)) return [];
  const found: { batchId: string; pipeline: string; status: string }[] = [];
  for (const row of await target.query(batchOfExecution(event.executionId), statementName)) {
    const batchId = String(row.batch_id);
    for (const statement of markExecutionStopped(batchId, event.executionId, error, new Date())) await target.execute(statement, statementName);
    const [now] = await target.query(batchState(batchId), statementName);
    found.push({ batchId, pipeline: String(row.pipeline), status: String(now?.status ?? row.status) });
  }
  return found;
}
