import { describe, expect, it } from 'vitest';
import { BatchPurpose, type BatchRef, BatchStatus } from '../../../domain/batch.ts';
import { OUT_OF_BAND } from '../../../domain/live-watch/out-of-band.ts';
import { OLDER_DATA, PUBLISH_GUARD, SOURCE_CHANGED } from '../../../domain/manifest/sql/manifest.ts';
import { catchUpOf, failedPublish, publishRoute } from '../../../domain/publish/route.ts';
import type { Pipeline } from '../../../domain/spec.ts';
import { pipelineWith } from '../fixtures.ts';

const batch: BatchRef = {
  pipeline: 'orders',
  batchId: '0123456789abcdef',
  specHash: 'h',
  liveTable: 'analytics.orders',
  from: '2026-01-01T00:00:00.000Z',
  to: '2026-01-02T00:00:00.000Z',
  stagingTable: 'orders__stage_0123456789abcdef',
  columns: ['order_id', 'ordered_at', 'amount'],
  basePublication: 0,
};
const live = { columns: ['order_id integer', 'ordered_at timestamp without time zone', 'amount numeric(12,2)'], rows: 10, checksum: '42' };
const swap = pipelineWith();
const migrating: Pipeline = { ...swap, migrating: { columns: ['order_id', 'amount'], from: ['order_id', 'amount'] } };

describe("Publish's route", () => {
  it('refuses a check, by its payload or by the manifest, before anything else', () => {
    for (const [checked, state] of [
      [{ ...batch, check: 1 }, undefined],
      [batch, { status: BatchStatus.PUBLISHED, purpose: BatchPurpose.check }],
    ] as const) {
      const route = publishRoute(checked, swap, state);
      expect(route.kind).toBe('refuse-check');
      expect(route).toMatchObject({ message: expect.stringContaining(`batch ${batch.batchId} of pipeline orders is a check`) });
    }
  });

  it('answers a batch published or superseded by an earlier attempt without publishing again', () => {
    expect(publishRoute(batch, swap, { status: BatchStatus.PUBLISHED })).toEqual({ kind: 'already-published' });
    expect(publishRoute(batch, swap, { status: BatchStatus.SUPERSEDED })).toEqual({
      kind: 'already-superseded',
      reason: 'an earlier attempt of Publish found newer data live (see batches.error)',
    });
    expect(publishRoute({ ...batch, restatement: 2 }, swap, { status: BatchStatus.SUPERSEDED })).toMatchObject({
      reason: expect.stringContaining('or staging equal to the live rows'),
    });
  });

  it.each([
    ['a swap', {}, 'swap', true],
    ['replace-intervals', { publishMode: 'replace-intervals' }, 'intervals', true],
    ['a merge', { publishMode: 'merge', merge: { versionColumn: 'updated_at' } }, 'merge', true],
    ['a swap for in-place snapshot readers', { snapshotReaders: 'in-place' }, 'rewrite', true],
    ['a view', { publishVia: 'view' }, 'view', false],
  ] as const)('publishes %s by its method, re-checking the source unless through a view', (_what, spec, method, recheckSource) => {
    expect(publishRoute(batch, pipelineWith(spec as never), { status: BatchStatus.CHECKED })).toEqual({
      kind: 'publish',
      compareRestatement: false,
      recheckSource,
      method,
      renamesDespiteInPlace: false,
    });
  });

  it('renames a migration even for in-place snapshot readers, says so, and re-checks no source then', () => {
    const inPlace = { ...pipelineWith({ snapshotReaders: 'in-place' }), migrating: migrating.migrating };
    expect(publishRoute(batch, inPlace, undefined)).toMatchObject({ method: 'swap', renamesDespiteInPlace: true, recheckSource: false });
    expect(publishRoute(batch, migrating, undefined)).toMatchObject({ method: 'swap', renamesDespiteInPlace: false, recheckSource: false });
  });

  it('compares a restatement with the live rows first', () => {
    expect(publishRoute({ ...batch, restatement: 1 }, swap, undefined)).toMatchObject({ kind: 'publish', compareRestatement: true });
  });
});

describe('a failed publish transaction, as Publish acts on it', () => {
  const refusal = (words: string) => `ERROR: ${words}: pipeline orders and more`;

  it('tells a moved source, older data, a conflict and an out-of-band write apart, and rethrows the rest', () => {
    expect(failedPublish(refusal(`${SOURCE_CHANGED}`), batch)).toEqual({ kind: 'source-changed', refusal: `${SOURCE_CHANGED}: pipeline orders and more` });
    expect(failedPublish(refusal(`${PUBLISH_GUARD}: pipeline orders ${OLDER_DATA} 2026-02-01`), batch)).toMatchObject({ kind: 'superseded' });
    expect(failedPublish(refusal(`${PUBLISH_GUARD}: batch 7 is not the next publication`), batch)).toEqual({
      kind: 'conflict',
      refusal: `${PUBLISH_GUARD}: batch 7 is not the next publication: pipeline orders and more`,
    });
    const outOfBand = `ERROR: analytics.orders: ${OUT_OF_BAND}: live rows now [11:43]`;
    expect(failedPublish(outOfBand, { ...batch, live })).toMatchObject({ kind: 'out-of-band', description: expect.stringContaining('analytics.orders') });
    // Without Plan's baseline there is nothing to describe the change against.
    expect(failedPublish(outOfBand, batch)).toEqual({ kind: 'rethrow' });
    expect(failedPublish('ERROR: could not serialize access', batch)).toEqual({ kind: 'rethrow' });
  });
});

describe('the catch-up after a swap', () => {
  it("copies expected writers' rows from carryFrom, in a migration's new columns, and never through a view", () => {
    const carried = { ...batch, live: { ...live, carryFrom: '2026-01-01T12:00:00.000Z' } };
    expect(catchUpOf(swap, carried)).toEqual({ carryFrom: '2026-01-01T12:00:00.000Z', columns: live.columns });
    expect(catchUpOf(migrating, carried)).toEqual({ carryFrom: '2026-01-01T12:00:00.000Z', columns: ['order_id', 'amount'] });
    expect(catchUpOf(pipelineWith({ publishVia: 'view' }), carried)).toBeUndefined();
    expect(catchUpOf(swap, { ...batch, live })).toBeUndefined();
  });
});
