import type { BatchRef } from '../../domain/batch.ts';
import { recordLiveFingerprint, stagingFingerprintQuery } from '../../domain/live-watch/sql/live-watch.ts';
import { liveColumnsQuery } from '../../domain/live-watch/sql/out-of-band.ts';
import type { Pipeline } from '../../domain/spec.ts';
import type { Warehouse } from '../commons/warehouse.ts';

/**
 * The end of a publish transaction that has no staging to fingerprint (in place;
 * a rollback) of a watched pipeline: it records on the publication the
 * fingerprint of the table live after the transaction, for the columns one
 * catalog read found (none if they differ then), outside the lock-wait bound;
 * with expected writers, of the rows before the batch's end. docs/decisions/live-watch.md
 */
export async function liveWatchStatements(
  warehouse: Warehouse,
  pipeline: Pipeline,
  batch: BatchRef,
  name: (step: string) => string,
  incoming: string = pipeline.target.table,
): Promise<string[]> {
  const columns = (await warehouse.query(liveColumnsQuery(pipeline.target.schema, incoming), name('live-watch-columns'))).map((r) => String(r.col));
  return [recordLiveFingerprint(pipeline, columns, pipeline.outOfBand.expectedWriters ? batch.to : undefined)];
}

/**
 * A watched swap's fingerprint of what it will publish: staging's, read
 * before the swap's transaction, so the live table's readers never wait
 * for the scan (domain/live-watch/sql/live-watch.ts stagingFingerprintQuery); the
 * swap records it on its publication. Undefined when nothing is recorded:
 * the pipeline is not watched, Plan took no baseline, or it migrates.
 */
export async function stagingFingerprint(
  warehouse: Warehouse,
  pipeline: Pipeline,
  batch: BatchRef,
  name: (step: string) => string,
): Promise<string | undefined> {
  if (!pipeline.outOfBand.watch || batch.live === undefined || pipeline.migrating) return undefined;
  const [row] = await warehouse.query(
    stagingFingerprintQuery(pipeline, batch.stagingTable, batch.live.columns, batch.live.carryFrom),
    name('live-watch-staging'),
  );
  return String(row?.fingerprint ?? '0:0');
}
