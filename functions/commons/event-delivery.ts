/**
 * Publication events delivered at least once, even when the run failed after
 * its publish: the publication rows are the outbox. EmitMetrics sends its own
 * and then the pipeline's older unsent ones; the freshness monitor those a grace
 * period old. Every delivery is built by publicationEvent from the row, so it has
 * the same eventId and detail whoever sends it. docs/decisions/every-publications-event-delivered.md
 */
import { AtomicPublishError } from '../../domain/errors.ts';
import { type PublicationEvent, publicationEvent, publicationFacts } from '../../domain/publication-events/publication-event.ts';
import { markEventSent, publicationForEvent, unsentPublications } from '../../domain/publication-events/sql/event-redelivery.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { logger } from './powertools.ts';
import type { SendPublicationEvent } from './publication-event-sender.ts';
import type { Warehouse } from './warehouse.ts';

/**
 * How old an unsent event must be before the monitor sends it: longer than
 * a run takes from its publish through EmitMetrics' retries (5 attempts,
 * 1 s doubling: about half a minute), so the monitor does not race the
 * run's own delivery in the normal case. A race only sends a duplicate.
 */
export const REDELIVERY_GRACE_MS = 10 * 60_000;
/**
 * At most this many events a monitor invocation sends, oldest first in each
 * pipeline: each is a PutEvents and a Data API statement (about a second on
 * Redshift), and the monitor measures every pipeline too within its 2-minute
 * timeout (lib/workflow-steps.ts). 20 every 5 minutes clears a backlog of
 * 240 an hour; a backlog comes only from failed runs or an outage.
 */
export const REDELIVERY_LIMIT = 20;

/** The monitor's redelivery: how it sends, and (tests) the grace and the cap. */
export interface EventRedeliveryOptions {
  readonly send: SendPublicationEvent;
  /** @default REDELIVERY_GRACE_MS */
  readonly graceMs?: number;
  /** @default REDELIVERY_LIMIT */
  readonly limit?: number;
}

/** An event that could not be redelivered, or a pipeline whose unsent events could not be read. */
export interface RedeliveryFailure {
  readonly pipeline: string;
  readonly error: string;
}

/** Events the monitor found unsent and could not send: thrown after its metrics were written. */
export class EventRedeliveryError extends AtomicPublishError {
  override name = 'EventRedeliveryError';

  constructor(readonly failures: readonly RedeliveryFailure[]) {
    super(`publication events not redelivered for ${failures.length} pipeline(s): ${failures.map((f) => `${f.pipeline} (${f.error})`).join('; ')}`);
  }
}

const describe = (error: unknown) => `${(error as Error)?.name ?? 'Error'}: ${(error as Error)?.message ?? String(error)}`;

/** Sends one publication's event as the manifest records it, then marks it sent. */
async function deliver(warehouse: Warehouse, row: Readonly<Record<string, unknown>>, send: SendPublicationEvent, step: string): Promise<PublicationEvent> {
  const event = publicationEvent(publicationFacts(row));
  const { pipeline, publication } = event.detail;
  await send(event);
  await warehouse.execute(markEventSent(pipeline, publication, new Date()), `atomic-publish:${pipeline}:${step}:event-sent:${publication}`);
  return event;
}

/**
 * EmitMetrics' delivery: the event of publication `seq`, sent whether or
 * not an earlier attempt marked it sent (a retried step sends it again).
 */
export async function announcePublication(warehouse: Warehouse, pipeline: string, seq: number, send: SendPublicationEvent): Promise<PublicationEvent> {
  const [row] = await warehouse.query(publicationForEvent(pipeline, seq), `atomic-publish:${pipeline}:emit-metrics:publication:${seq}`);
  if (row === undefined) throw new AtomicPublishError(`publication ${seq} of pipeline ${pipeline} is not in the manifest: no event to send`);
  const event = await deliver(warehouse, row, send, 'emit-metrics');
  logger.info('publication event sent', { detailType: event.detailType, eventId: event.detail.eventId });
  return event;
}

/**
 * Sends the pipeline's events never marked sent, published at or before
 * `publishedBefore` (and below publication `belowSeq`), oldest first, at
 * most `limit`; stops at the first that fails (EventBridge refusing one
 * likely refuses the next). Never throws: what failed is returned.
 */
export async function redeliverUnsent(
  warehouse: Warehouse,
  pipeline: string,
  send: SendPublicationEvent,
  options: { readonly now: Date; readonly publishedBefore?: Date; readonly limit?: number; readonly belowSeq?: number; readonly step?: string },
): Promise<{ redelivered: string[]; failure?: RedeliveryFailure }> {
  const step = options.step ?? 'emit-metrics';
  const redelivered: string[] = [];
  try {
    const rows = await warehouse.query(
      unsentPublications(pipeline, {
        publishedBefore: options.publishedBefore ?? options.now,
        limit: options.limit ?? REDELIVERY_LIMIT,
        ...(options.belowSeq === undefined ? {} : { belowSeq: options.belowSeq }),
      }),
      `atomic-publish:${pipeline}:${step}:unsent-events`,
    );
    for (const row of rows) {
      const event = await deliver(warehouse, row, send, step);
      redelivered.push(event.detail.eventId);
      logger.warn('publication event redelivered: it had not been sent after its publish', {
        pipeline,
        eventId: event.detail.eventId,
        detailType: event.detailType,
        publishedAt: event.detail.publishedAt,
      });
    }
    return { redelivered };
  } catch (error) {
    logger.error('publication events not redelivered', { pipeline, redelivered, error: error as Error });
    return { redelivered, failure: { pipeline, error: describe(error) } };
  }
}

/**
 * The monitor's pass over every pipeline: events unsent for longer than the
 * grace, at most the cap in all. Returns the eventIds sent and what failed.
 */
export async function redeliverEvents(
  pipelines: readonly Pipeline[],
  warehouse: Warehouse,
  now: Date,
  options: EventRedeliveryOptions,
): Promise<{ redelivered: string[]; failures: RedeliveryFailure[] }> {
  const publishedBefore = new Date(now.getTime() - (options.graceMs ?? REDELIVERY_GRACE_MS));
  let left = options.limit ?? REDELIVERY_LIMIT;
  const redelivered: string[] = [];
  const failures: RedeliveryFailure[] = [];
  for (const pipeline of pipelines) {
    if (left <= 0) break;
    const done = await redeliverUnsent(warehouse, pipeline.name, options.send, { now, publishedBefore, limit: left, step: 'freshness-monitor' });
    redelivered.push(...done.redelivered);
    left -= done.redelivered.length;
    if (done.failure) failures.push(done.failure);
  }
  return { redelivered, failures };
}
