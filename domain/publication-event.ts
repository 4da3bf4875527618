/**
 * The publication event: what downstream consumers receive on EventBridge
 * when a pipeline's live table changed (a publish or a rollback). One
 * contract, read by the emitter (functions/emit-metrics), the stack's IAM
 * condition (lib/publish-workflow.ts) and the local endpoint's tests. Pure.
 *
 * Delivery is at least once: a retried EmitMetrics sends the same event
 * again, with the same `eventId`; consumers dedupe on it.
 */
import type { BatchRef } from './batch.ts';
import { AtomicPublishError } from './errors.ts';
import type { Pipeline } from './spec.ts';
import { parseWarehouseTime } from './time.ts';

/** The `source` of every event atomic-publish sends (the handlers' role may put no other). */
export const PUBLICATION_EVENT_SOURCE = 'atomic-publish';

/**
 * EventBridge refused the event (PutEvents answered with a failed entry:
 * throttled, an internal failure). The state machine retries EmitMetrics on
 * it (lib/publish-workflow.ts), which sends the same event again.
 */
export class PublicationEventError extends AtomicPublishError {
  override name = 'PublicationEventError';
}

/** The `detail-type` of a publication event. */
export const PublicationDetailType = {
  PUBLISHED: 'Publication Published',
  ROLLED_BACK: 'Publication Rolled Back',
} as const;
export type PublicationDetailType = (typeof PublicationDetailType)[keyof typeof PublicationDetailType];

/** The answer of Publish, Rollback or a PublishGroup member, as far as the event needs it (functions/publish PublishResult). */
export interface PublishedFacts {
  readonly publication: number;
  readonly publishedAt: string;
  readonly liveTable: string;
  readonly rowsPublished: number;
  /** A rollback's: the publication it undid. */
  readonly rollbackOf?: number;
}

export interface PublicationEventDetail {
  /** `<pipeline>:<publication>`: the same for every delivery of one publication. */
  readonly eventId: string;
  readonly pipeline: string;
  /** The batch now live (a rollback's: the batch it restored). */
  readonly batchId: string;
  /** The batch's interval, half-open `[from, to)`, ISO instants. */
  readonly interval: { readonly from: string; readonly to: string };
  /** Rows the publication recorded (`atomic_publish.publications.rows_published`). */
  readonly rows: number;
  /** `atomic_publish.publications.seq`: the pipeline's live version, rising by one a publication. */
  readonly publication: number;
  /** When it committed, ISO 8601 in UTC. */
  readonly publishedAt: string;
  /** `schema.table` readers query. */
  readonly liveTable: string;
  readonly publishMode: string;
  /** A restatement's number (input `"restate": true`). */
  readonly restatement?: number;
  /** A rollback's: the publication it undid. */
  readonly rollbackOf?: number;
}

export interface PublicationEvent {
  readonly source: typeof PUBLICATION_EVENT_SOURCE;
  readonly detailType: PublicationDetailType;
  readonly detail: PublicationEventDetail;
}

/** The id consumers dedupe on: one per publication of a pipeline (the sequence is the pipeline's own). */
export function publicationEventId(pipeline: string, publication: number): string {
  return `${pipeline}:${publication}`;
}

/** The event of a publication the manifest recorded. */
export function publicationEvent(batch: BatchRef, pipeline: Pipeline, published: PublishedFacts): PublicationEvent {
  const rolledBack = published.rollbackOf !== undefined;
  return {
    source: PUBLICATION_EVENT_SOURCE,
    detailType: rolledBack ? PublicationDetailType.ROLLED_BACK : PublicationDetailType.PUBLISHED,
    detail: {
      eventId: publicationEventId(pipeline.name, published.publication),
      pipeline: pipeline.name,
      batchId: batch.batchId,
      interval: { from: batch.from, to: batch.to },
      rows: published.rowsPublished,
      publication: published.publication,
      publishedAt: isoInstant(published.publishedAt),
      liveTable: published.liveTable,
      publishMode: pipeline.publishMode,
      ...(batch.restatement === undefined ? {} : { restatement: batch.restatement }),
      ...(rolledBack ? { rollbackOf: published.rollbackOf } : {}),
    },
  };
}

/** The warehouse's `2026-01-02 03:04:05.678` (UTC) as `2026-01-02T03:04:05.678Z`; anything unreadable as it came. */
function isoInstant(value: string): string {
  const instant = parseWarehouseTime(value);
  return Number.isNaN(instant.getTime()) ? value : instant.toISOString();
}
