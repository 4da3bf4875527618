import { describe, expect, it } from 'vitest';
import type { BatchRef } from '../../domain/batch.ts';
import { publicationEvent } from '../../domain/publication-event.ts';
import { definePipeline } from '../../domain/spec.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';

const pipeline = definePipeline(salesOrderLines);
const batch: BatchRef = {
  pipeline: pipeline.name,
  batchId: '0123456789abcdef',
  specHash: 'h',
  liveTable: 'analytics.sales_order_lines',
  from: '2026-01-01T00:00:00.000Z',
  to: '2026-03-01T00:00:00.000Z',
  stagingTable: 'sales_order_lines__stg_0123456789abcdef',
  columns: ['order_id'],
  basePublication: 6,
};
const published = { publication: 7, publishedAt: '2026-03-01 04:05:06.789', liveTable: 'analytics.sales_order_lines', rowsPublished: 1234 };

describe('publicationEvent', () => {
  it('announces a publish under an id of the pipeline and its publication, the time as an ISO instant in UTC', () => {
    expect(publicationEvent(batch, pipeline, published)).toEqual({
      source: 'atomic-publish',
      detailType: 'Publication Published',
      detail: {
        eventId: `${pipeline.name}:7`,
        pipeline: pipeline.name,
        batchId: '0123456789abcdef',
        interval: { from: '2026-01-01T00:00:00.000Z', to: '2026-03-01T00:00:00.000Z' },
        rows: 1234,
        publication: 7,
        publishedAt: '2026-03-01T04:05:06.789Z',
        liveTable: 'analytics.sales_order_lines',
        publishMode: pipeline.publishMode,
      },
    });
  });

  it('gives every delivery of one publication the same id, and another publication another', () => {
    const again = publicationEvent(batch, pipeline, { ...published });
    expect(again.detail.eventId).toBe(publicationEvent(batch, pipeline, published).detail.eventId);
    expect(publicationEvent(batch, pipeline, { ...published, publication: 8 }).detail.eventId).not.toBe(again.detail.eventId);
  });

  it('names a restatement by its number, and a rollback by the publication it undid', () => {
    expect(publicationEvent({ ...batch, restatement: 2 }, pipeline, published).detail.restatement).toBe(2);
    const rollback = publicationEvent(batch, pipeline, { ...published, publication: 9, rollbackOf: 8 });
    expect(rollback.detailType).toBe('Publication Rolled Back');
    expect(rollback.detail).toMatchObject({ eventId: `${pipeline.name}:9`, publication: 9, rollbackOf: 8 });
    expect('rollbackOf' in publicationEvent(batch, pipeline, published).detail).toBe(false);
  });
});
