import { describe, expect, it } from 'vitest';
import { markEventSent, publicationForEvent, unsentPublications } from '../../../../domain/publication-events/sql/event-redelivery.ts';

const pipeline = "o'rders";

describe('the publication events delivery record', () => {
  it('reads a publication and the unsent ones with every value a parameter, oldest first, bounded', () => {
    const one = publicationForEvent(pipeline, 7);
    expect(one.parameters).toEqual({ pipeline, seq: '7' });
    const unsent = unsentPublications(pipeline, { publishedBefore: new Date('2026-03-01T00:10:00Z'), limit: 20 });
    expect(unsent.parameters).toEqual({ pipeline, published_before: '2026-03-01 00:10:00.000', limit: '20' });
    expect(unsent.sql).toMatch(/event_sent_at IS NULL AND published_at <= :published_before\s+ORDER BY seq\s+LIMIT CAST\(:limit AS int\)$/);
    const below = unsentPublications(pipeline, { publishedBefore: new Date('2026-03-01T00:10:00Z'), limit: 20, belowSeq: 9 });
    expect(below.sql).toContain('AND seq < CAST(:below_seq AS int)');
    expect(below.parameters).toMatchObject({ below_seq: '9' });
    for (const statement of [one, unsent, below]) expect(statement.sql).not.toContain(pipeline);
  });

  it('marks an event sent once: a second mark keeps the first time', () => {
    const mark = markEventSent(pipeline, 7, new Date('2026-03-01T00:00:01Z'));
    expect(mark.sql).toMatch(
      /^UPDATE "atomic_publish".publications SET event_sent_at = :now WHERE pipeline = :pipeline AND seq = CAST\(:seq AS int\) AND event_sent_at IS NULL$/,
    );
    expect(mark.parameters).toEqual({ pipeline, seq: '7', now: '2026-03-01 00:00:01.000' });
  });
});
