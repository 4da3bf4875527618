// What Publish does with a batch, and with a failed publish transaction:
// pure choices from the manifest's state, the frozen spec and the
// warehouse's refusal. functions/publish/ runs what they name
// (docs/decisions/publishing.md).
import { BatchPurpose, type BatchRef, BatchStatus } from '../batch.ts';
import { describeOutOfBandChange, outOfBandRefusal } from '../live-watch/out-of-band.ts';
import { isOlderDataRefusal, publishGuardRefusal, sourceChangedRefusal } from '../manifest/sql/manifest.ts';
import type { Pipeline } from '../spec.ts';
import { rewritesInPlace } from './sql/rewrite.ts';

/** How the batch reaches the live table. */
export type PublishMethod =
  /** publishVia 'view': the view is pointed at the new version. */
  | 'view'
  /** replace-intervals: the batch's intervals deleted and inserted in live. */
  | 'intervals'
  /** merge: staging's rows upserted by key. */
  | 'merge'
  /** snapshotReaders 'in-place': every live row rewritten, nothing renamed. */
  | 'rewrite'
  /** The rename swap. */
  | 'swap';

export type PublishRoute =
  /** A check (the gate without publishing) reached Publish: refused, nothing written. */
  | { readonly kind: 'refuse-check'; readonly message: string }
  /** A retry after the publish committed: answer it again (and run the catch-up, which may not have run). */
  | { readonly kind: 'already-published' }
  /** A retry after an attempt that ended the batch SUPERSEDED but failed before answering. */
  | { readonly kind: 'already-superseded'; readonly reason: string }
  | {
      readonly kind: 'publish';
      /** A restatement publishes only if its rows differ from the live rows it would replace. */
      readonly compareRestatement: boolean;
      /** Re-check the source's newest chunk inside the publish transaction. */
      readonly recheckSource: boolean;
      readonly method: PublishMethod;
      /** snapshotReaders 'in-place' asked for, but a migration's new columns make it rename (logged). */
      readonly renamesDespiteInPlace: boolean;
    };

/** The batch's state in the manifest, as Publish reads it first. */
export interface PublishState {
  readonly status?: string;
  readonly purpose?: string;
}

export function publishRoute(batch: BatchRef, pipeline: Pipeline, state: PublishState | undefined): PublishRoute {
  // A check publishes nothing, whatever leads here: its payload says so, and so does the manifest.
  if (batch.check !== undefined || state?.purpose === BatchPurpose.check) {
    return {
      kind: 'refuse-check',
      message:
        `batch ${batch.batchId} of pipeline ${pipeline.name} is a check (the gate run without publishing): Publish refuses it; nothing was published. ` +
        'To publish the interval, run it without check',
    };
  }
  if (state?.status === BatchStatus.PUBLISHED) return { kind: 'already-published' };
  if (state?.status === BatchStatus.SUPERSEDED) {
    const earlier = batch.restatement === undefined ? 'found newer data live' : 'found newer data live, or staging equal to the live rows';
    return { kind: 'already-superseded', reason: `an earlier attempt of Publish ${earlier} (see batches.error)` };
  }
  return {
    kind: 'publish',
    compareRestatement: batch.restatement !== undefined,
    // A view's versions and a migration's new columns leave the source query nothing to re-run against inside the transaction.
    recheckSource: pipeline.publishVia !== 'view' && pipeline.migrating === undefined,
    method: publishMethod(pipeline),
    renamesDespiteInPlace:
      pipeline.publishVia !== 'view' && pipeline.publishMode === 'swap' && pipeline.snapshotReaders === 'in-place' && !rewritesInPlace(pipeline),
  };
}

function publishMethod(pipeline: Pipeline): PublishMethod {
  if (pipeline.publishVia === 'view') return 'view';
  if (pipeline.publishMode === 'replace-intervals') return 'intervals';
  if (pipeline.publishMode === 'merge') return 'merge';
  // A migration changes the table's columns: rows cannot be rewritten into it, so it renames (docs/decisions/snapshot-readers-without-locks.md).
  return rewritesInPlace(pipeline) ? 'rewrite' : 'swap';
}

/**
 * What a publish transaction's refusal means, once Publish has found that no
 * other attempt published the batch meanwhile: the source moved since
 * Reconcile (its newest chunk goes STALE), older data than live (the batch
 * ends SUPERSEDED), another publish in the way (a conflict), a write to live
 * nobody should make (out of band); anything else is rethrown.
 */
export type FailedPublish =
  | { readonly kind: 'source-changed'; readonly refusal: string }
  | { readonly kind: 'superseded'; readonly refusal: string }
  | { readonly kind: 'conflict'; readonly refusal: string }
  | { readonly kind: 'out-of-band'; readonly description: string }
  | { readonly kind: 'rethrow' };

export function failedPublish(message: string, batch: BatchRef): FailedPublish {
  const changed = sourceChangedRefusal(message);
  if (changed !== undefined) return { kind: 'source-changed', refusal: changed };
  const refusal = publishGuardRefusal(message);
  if (refusal !== undefined) return { kind: isOlderDataRefusal(refusal) ? 'superseded' : 'conflict', refusal };
  const outOfBand = batch.live === undefined ? undefined : outOfBandRefusal(message);
  if (outOfBand !== undefined) return { kind: 'out-of-band', description: describeOutOfBandChange(batch, batch.live!, outOfBand) };
  return { kind: 'rethrow' };
}

/**
 * After a swap that carried expected writers' rows over (a migration, or
 * outOfBand.expectedWriters): the rows at or after `carryFrom` the swap's
 * snapshot missed are copied from the old version; none through a view.
 */
export function catchUpOf(pipeline: Pipeline, batch: BatchRef): { readonly carryFrom: string; readonly columns: readonly string[] } | undefined {
  const carryFrom = batch.live?.carryFrom;
  if (carryFrom === undefined || pipeline.publishVia === 'view') return undefined;
  return { carryFrom, columns: pipeline.migrating?.columns ?? batch.live!.columns };
}
