// The words of an out-of-band refusal: what changed in the live table
// since Plan, parsed from the swap's error, and the message Publish raises.
import { describe, expect, it } from 'vitest';
import type { BatchRef } from '../../../domain/batch.ts';
import type { LiveBaseline } from '../../../domain/live-watch/baseline.ts';
import { columnChanges, describeOutOfBandChange, outOfBandRefusal } from '../../../domain/live-watch/out-of-band.ts';

const COLUMNS = ['order_id bigint', 'ordered_at timestamp without time zone', 'amount numeric(12,2)'];
const baseline: LiveBaseline = { columns: COLUMNS, rows: 100, checksum: '12345' };
const batch = { liveTable: 'analytics.orders', to: '2026-02-01T00:00:00.000Z' } as BatchRef;

describe('outOfBandRefusal', () => {
  it('reads the columns and the fingerprint the swap found, after the database prefix', () => {
    expect(outOfBandRefusal('ERROR: out-of-band change: analytics.t: live columns now [a integer;b numeric(12,2)], planned on [a integer]')).toEqual({
      columns: ['a integer', 'b numeric(12,2)'],
    });
    expect(outOfBandRefusal('ERROR: out-of-band change: analytics.t: live rows now [101:999], planned on [100:12345]')).toEqual({ rows: 101, checksum: '999' });
  });

  it('is undefined for any other failure', () => {
    expect(outOfBandRefusal('ERROR: publish guard: pipeline orders is at publication 3')).toBeUndefined();
    expect(outOfBandRefusal('ERROR: relation does not exist')).toBeUndefined();
  });
});

describe('columnChanges', () => {
  it('names added, dropped and retyped columns', () => {
    expect(columnChanges(COLUMNS, ['order_id bigint', 'ordered_at timestamp without time zone', 'amount numeric(14,2)', 'note character varying(20)'])).toEqual(
      ['column(s) added: note character varying(20)', 'column(s) retyped: amount numeric(12,2) -> amount numeric(14,2)'],
    );
    expect(columnChanges(COLUMNS, ['order_id bigint', 'amount numeric(12,2)'])).toEqual(['column(s) dropped: ordered_at timestamp without time zone']);
  });

  it('names a reorder when nothing else changed', () => {
    expect(columnChanges(COLUMNS, [COLUMNS[1]!, COLUMNS[0]!, COLUMNS[2]!])).toEqual(['columns reordered: now ordered_at, order_id, amount']);
  });
});

describe('describeOutOfBandChange', () => {
  it('names the row counts, says nothing was published and what to do', () => {
    const message = describeOutOfBandChange(batch, baseline, { rows: 98, checksum: '777' });
    expect(message).toMatch(/^out-of-band change: analytics\.orders was changed by someone else since this batch was planned: /);
    expect(message).toContain('its rows changed: 100 row(s) at Plan, 98 now (2 fewer), checksum 12345 then, 777 now');
    expect(message).toContain('Nothing was published: readers still see analytics.orders as it is, the out-of-band change included.');
    expect(message).toContain('declare the writer expected');
  });

  it('says an equal count with another checksum means updated rows', () => {
    expect(describeOutOfBandChange(batch, baseline, { rows: 100, checksum: '1' })).toContain('(rows updated, or as many deleted as inserted)');
  });

  it('tells a column change to go into the source query', () => {
    const message = describeOutOfBandChange(batch, baseline, { columns: [...COLUMNS, 'note character varying(20)'] });
    expect(message).toContain('its columns changed: column(s) added: note character varying(20)');
    expect(message).toContain('add it to the source query');
  });

  it('with expected writers, says only rows before the batch end count', () => {
    const message = describeOutOfBandChange(batch, { ...baseline, carryFrom: batch.to }, { rows: 101, checksum: '1' });
    expect(message).toContain('(rows before 2026-02-01T00:00:00.000Z; rows at or after it are carried over from expected writers)');
  });
});
