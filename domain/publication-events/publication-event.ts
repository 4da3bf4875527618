/**
 * The publication event consumers receive on EventBridge when a live table
 * changed (a publish or a rollback): one contract for the emitter, the stack's
 * IAM condition and the local endpoint's tests. Pure. Delivered at least once,
 * always with the same `eventId`, on which consumers dedupe.
 * Why: docs/decisions/every-publications-event-delivered.md
 */
import { AtomicPublishError } from '../errors.ts';
import { parseWarehouseTime } from '../time.ts';

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

/**
 * A publication as the manifest records it (`atomic_publish.publications`,
 * written in the publish or rollback transaction): all an event says. The
 * one source of the event, for EmitMetrics right after the publish and for
 * the redelivery of an event never sent (domain/publication-events/sql/event-redelivery.ts).
 */
export interface PublicationFacts {
  readonly pipeline: string;
  /** `seq`: the pipeline's live version. */
  readonly publication: number;
  /** The batch now live (a rollback's: the batch it restored). */
  readonly batchId: string;
  /** As the warehouse answers it: `2026-01-02 03:04:05.678` (UTC). */
  readonly publishedAt: string;
  readonly liveTable: string;
  readonly rowsPublished: number;
  readonly publishMode: string;
  /** The batch's interval as the warehouse answers it. */
  readonly intervalStart: string;
  readonly intervalEnd: string;
  /** A restatement's number (not recorded for a rollback). */
  readonly restatement?: number;
  /** A rollback's: the publication it undid. */
  readonly rollbackOf?: number;
}

const present = (value: unknown): boolean => value !== null && value !== undefined;

/** A row of domain/publication-events/sql/event-redelivery.ts PUBLICATION_FACTS as PublicationFacts. */
export function publicationFacts(row: Readonly<Record<string, unknown>>): PublicationFacts {
  return {
    pipeline: String(row.pipeline),
    publication: Number(row.seq),
    batchId: String(row.batch_id),
    publishedAt: String(row.published_at),
    liveTable: String(row.live_table),
    rowsPublished: Number(row.rows_published ?? 0),
    publishMode: String(row.publish_mode ?? ''),
    intervalStart: String(row.interval_start ?? ''),
    intervalEnd: String(row.interval_end ?? ''),
    ...(present(row.restatement) ? { restatement: Number(row.restatement) } : {}),
    ...(present(row.rollback_of) ? { rollbackOf: Number(row.rollback_of) } : {}),
  };
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

/**
 * The event of a publication the manifest recorded: the same for every
 * delivery of it, whoever sends it (EmitMetrics, or the freshness monitor
 * redelivering one never sent).
 */
export function publicationEvent(facts: PublicationFacts): PublicationEvent {
  const rolledBack = facts.rollbackOf !== undefined;
  return {
    source: PUBLICATION_EVENT_SOURCE,
    detailType: rolledBack ? PublicationDetailType.ROLLED_BACK : PublicationDetailType.PUBLISHED,
    detail: {
      eventId: publicationEventId(facts.pipeline, facts.publication),
      pipeline: facts.pipeline,
      batchId: facts.batchId,
      interval: { from: isoInstant(facts.intervalStart), to: isoInstant(facts.intervalEnd) },
      rows: facts.rowsPublished,
      publication: facts.publication,
      publishedAt: isoInstant(facts.publishedAt),
      liveTable: facts.liveTable,
      publishMode: facts.publishMode,
      ...(facts.restatement === undefined || rolledBack ? {} : { restatement: facts.restatement }),
      ...(rolledBack ? { rollbackOf: facts.rollbackOf } : {}),
    },
  };
}

/** The warehouse's `2026-01-02 03:04:05.678` (UTC) as `2026-01-02T03:04:05.678Z`; anything unreadable as it came. */
function isoInstant(value: string): string {
  const instant = parseWarehouseTime(value);
  return Number.isNaN(instant.getTime()) ? value : instant.toISOString();
}
