import type { BatchRef } from '../../domain/batch.ts';
import { rewriteLive } from '../../domain/publish/sql/rewrite.ts';
import type { PublishWaits } from '../../domain/publish/waits.ts';
import type { Warehouse } from '../commons/warehouse.ts';
import { publishInPlace } from './in-place.ts';

/**
 * A swap pipeline with `snapshotReaders: 'in-place'`: the live rows
 * replaced by staging's in one transaction (domain/publish/sql/rewrite.ts),
 * no rename, so every snapshot reads the old rows or the new and none is
 * waited for (docs/decisions/snapshot-readers-without-locks.md).
 */
export function publishRewrite(
  event: { readonly batch: BatchRef },
  warehouse: Warehouse,
  waits: PublishWaits,
  name: (step: string) => string,
  recheck: readonly string[] = [],
): Promise<void> {
  return publishInPlace(event, warehouse, waits, name, {
    recheck,
    statements: rewriteLive,
    what: (batch, live) => `the in-place publish of ${batch.from} to ${batch.to} into ${live}`,
  });
}
