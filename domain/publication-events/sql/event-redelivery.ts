/**
 * The SQL of the publication events' delivery record (manifest version 11):
 * `publications.event_sent_at` is set once PutEvents accepted the event of
 * that publication. The publication rows are the outbox: each is written in
 * the publish or rollback transaction, so a publication without a sent
 * event is one whose event may never have reached EventBridge.
 */
import { MANIFEST as M, type Statement, timestampParam } from '../../sql/statement.ts';

/** The columns an event is built from (domain/publication-events/publication-event.ts publicationFacts). */
const PUBLICATION_FACTS = `pipeline, seq, batch_id, published_at, live_table, rows_published, publish_mode, interval_start, interval_end, restatement, rollback_of`;

/** Publication `seq` of `pipeline`, as its event tells it. */
export function publicationForEvent(pipeline: string, seq: number): Statement {
  return {
    sql: `SELECT ${PUBLICATION_FACTS} FROM ${M}.publications WHERE pipeline = :pipeline AND seq = CAST(:seq AS int)`,
    parameters: { pipeline, seq: String(seq) },
  };
}

/**
 * The pipeline's publications whose event was never marked sent, made at or
 * before `publishedBefore` and (when given) before publication `belowSeq`,
 * oldest first, at most `limit`.
 */
export function unsentPublications(
  pipeline: string,
  options: { readonly publishedBefore: Date; readonly limit: number; readonly belowSeq?: number },
): Statement {
  const below = options.belowSeq === undefined ? '' : ' AND seq < CAST(:below_seq AS int)';
  return {
    sql: `SELECT ${PUBLICATION_FACTS} FROM ${M}.publications
           WHERE pipeline = :pipeline AND event_sent_at IS NULL AND published_at <= :published_before${below}
           ORDER BY seq
           LIMIT CAST(:limit AS int)`,
    parameters: {
      pipeline,
      published_before: timestampParam(options.publishedBefore),
      limit: String(options.limit),
      ...(options.belowSeq === undefined ? {} : { below_seq: String(options.belowSeq) }),
    },
  };
}

/**
 * Marks the event of publication `seq` sent; a second mark (a retried step,
 * the monitor after EmitMetrics) keeps the first time. A single UPDATE,
 * as Cleanup's record of a dropped version (domain/cleanup/sql/cleanup.ts).
 */
export function markEventSent(pipeline: string, seq: number, now: Date): Statement {
  return {
    sql: `UPDATE ${M}.publications SET event_sent_at = :now WHERE pipeline = :pipeline AND seq = CAST(:seq AS int) AND event_sent_at IS NULL`,
    parameters: { pipeline, seq: String(seq), now: timestampParam(now) },
  };
}
