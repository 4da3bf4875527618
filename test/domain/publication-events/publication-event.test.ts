import { describe, expect, it } from 'vitest';
import { type PublicationFacts, publicationEvent, publicationFacts } from '../../../domain/publication-events/publication-event.ts';

/** A publications row as the warehouse answers it (domain/publication-events/sql/event-redelivery.ts). */
const row = {
  pipeline: 'sales_order_lines',
  seq: 7,
  batch_id: '0123456789abcdef',
  published_at: '2026-03-01 04:05:06.789',
  live_table: 'analytics.sales_order_lines',
  rows_published: 1234,
  publish_mode: 'swap',
  interval_start: '2026-01-01 00:00:00',
  interval_end: '2026-03-01 00:00:00',
  restatement: null,
  rollback_of: null,
};
const facts: PublicationFacts = publicationFacts(row);

describe('publicationEvent', () => {
  it('announces a publish under an id of the pipeline and its publication, the times as ISO instants in UTC', () => {
    expect(publicationEvent(facts)).toEqual({
      source: 'atomic-publish',
      detailType: 'Publication Published',
      detail: {
        eventId: 'sales_order_lines:7',
        pipeline: 'sales_order_lines',
        batchId: '0123456789abcdef',
        interval: { from: '2026-01-01T00:00:00.000Z', to: '2026-03-01T00:00:00.000Z' },
        rows: 1234,
        publication: 7,
        publishedAt: '2026-03-01T04:05:06.789Z',
        liveTable: 'analytics.sales_order_lines',
        publishMode: 'swap',
      },
    });
  });

  it('gives every delivery of one publication the same id and detail, and another publication another id', () => {
    expect(publicationEvent(publicationFacts({ ...row }))).toEqual(publicationEvent(facts));
    expect(publicationEvent({ ...facts, publication: 8 }).detail.eventId).not.toBe(publicationEvent(facts).detail.eventId);
  });

  it('names a restatement by its number, and a rollback by the publication it undid (never as a restatement)', () => {
    expect(publicationEvent(publicationFacts({ ...row, restatement: 2 })).detail.restatement).toBe(2);
    const rollback = publicationEvent(publicationFacts({ ...row, seq: 9, rollback_of: 8, restatement: 2 }));
    expect(rollback.detailType).toBe('Publication Rolled Back');
    expect(rollback.detail).toMatchObject({ eventId: 'sales_order_lines:9', publication: 9, rollbackOf: 8 });
    expect('restatement' in rollback.detail).toBe(false);
    expect('rollbackOf' in publicationEvent(facts).detail).toBe(false);
  });
});
