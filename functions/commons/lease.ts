import { releaseLease } from '../../domain/lease/sql/lease.ts';
import { installedManifestVersion } from '../../domain/manifest/sql/manifest.ts';
import { logger } from './powertools.ts';
import type { Warehouse } from './warehouse.ts';

/**
 * Releases the pipeline lease the execution holds, if any: the last thing
 * an execution does, on every way it ends. Returns whether a lease was
 * released. A warehouse without a manifest holds no lease.
 */
export async function releaseExecutionLease(warehouse: Warehouse, executionId: string, name: string): Promise<boolean> {
  if (!executionId) return false;
  const [manifest] = await warehouse.query(installedManifestVersion()[0]!, `${name}:manifest`);
  if (Number(manifest?.present ?? 0) === 0) return false;
  const outcome = await warehouse.execute(releaseLease(executionId), `${name}:release-lease`);
  // The DELETE runs after its LOCK, as the batch's last statement.
  const released = (outcome.subStatements.at(-1)?.resultRows ?? outcome.resultRows) > 0;
  if (released) logger.info('pipeline lease released', { executionId });
  return released;
}
