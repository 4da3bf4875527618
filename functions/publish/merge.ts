import type { BatchRef } from '../../domain/batch.ts';
import { mergeIntoLive } from '../../domain/publish/sql/merge.ts';
import type { PublishWaits } from '../../domain/publish/waits.ts';
import type { Warehouse } from '../commons/warehouse.ts';
import { publishInPlace } from './in-place.ts';

/**
 * publishMode 'merge': staging upserted into the live table by the
 * business key in one transaction (domain/publish/sql/merge.ts), the
 * replaced live rows kept as the publication's old version for rollback
 * (functions/publish/in-place.ts).
 */
export function publishMerge(
  event: { readonly batch: BatchRef },
  warehouse: Warehouse,
  waits: PublishWaits,
  name: (step: string) => string,
  recheck: readonly string[] = [],
): Promise<void> {
  return publishInPlace(event, warehouse, waits, name, {
    recheck,
    statements: mergeIntoLive,
    what: (batch, live) => `the merge of ${batch.from} to ${batch.to} into ${live}`,
  });
}
