import type { BatchRef } from '../../domain/batch.ts';
import { replaceIntervals } from '../../domain/publish/sql/intervals.ts';
import type { PublishWaits } from '../../domain/publish/waits.ts';
import type { Warehouse } from '../commons/warehouse.ts';
import { publishInPlace } from './in-place.ts';

/**
 * publishMode 'replace-intervals': the batch's intervals of the live table
 * replaced by staging in one transaction (domain/publish/sql/intervals.ts),
 * the replaced rows kept as the publication's old version for rollback
 * (functions/publish/in-place.ts).
 */
export function publishIntervals(
  event: { readonly batch: BatchRef },
  warehouse: Warehouse,
  waits: PublishWaits,
  name: (step: string) => string,
  recheck: readonly string[] = [],
): Promise<void> {
  return publishInPlace(event, warehouse, waits, name, {
    recheck,
    statements: replaceIntervals,
    what: (batch, live) => `the replace of ${batch.from} to ${batch.to} in ${live}`,
  });
}
