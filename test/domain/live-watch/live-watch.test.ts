import { describe, expect, it } from 'vitest';
import { isLiveWatchEvent, LIVE_WATCH_EVENT, liveDifferences, type RecordedLive } from '../../../domain/live-watch/live-watch.ts';

const COLUMNS = ['order_id bigint', 'amount numeric(12,2)', 'note character varying(64)'];
const recorded: RecordedLive = { seq: 4, columns: COLUMNS, fingerprint: '100:12345', rowsBefore: undefined };

describe('liveDifferences', () => {
  it('is empty when the columns and the fingerprint are those recorded', () => {
    expect(liveDifferences(recorded, { columns: COLUMNS, fingerprint: '100:12345' })).toEqual([]);
  });

  it('says rows then and now with both checksums, and nothing of the rows themselves', () => {
    expect(liveDifferences(recorded, { columns: COLUMNS, fingerprint: '101:-99' })).toEqual([
      'rows: 100 at publication 4, 101 now; checksum 12345 then, -99 now',
    ]);
    expect(liveDifferences({ ...recorded, rowsBefore: '2026-03-01T00:00:00.000Z' }, { columns: COLUMNS, fingerprint: '100:7' })).toEqual([
      "rows: 100 at publication 4, 100 now; checksum 12345 then, 7 now (rows before 2026-03-01T00:00:00.000Z; later rows are expected writers')",
    ]);
  });

  it('names columns added, dropped and retyped before comparing rows', () => {
    expect(liveDifferences(recorded, { columns: [...COLUMNS, 'extra integer'] })).toEqual(['column(s) added: extra integer']);
    expect(liveDifferences(recorded, { columns: ['order_id bigint', 'amount numeric(14,2)', 'note character varying(64)'] })).toEqual([
      'column(s) retyped: amount numeric(12,2) -> amount numeric(14,2)',
    ]);
    expect(liveDifferences(recorded, { columns: COLUMNS.slice(0, 2) })).toEqual(['column(s) dropped: note character varying(64)']);
  });

  it('counts a publication that recorded columns but no fingerprint (altered while it published) as differing', () => {
    expect(liveDifferences({ ...recorded, fingerprint: undefined }, { columns: COLUMNS })).toEqual([expect.stringMatching(/recorded no fingerprint/)]);
  });
});

describe('the live watch input', () => {
  it("is recognised by its schedule's input only", () => {
    expect(isLiveWatchEvent(JSON.parse(JSON.stringify(LIVE_WATCH_EVENT)))).toBe(true);
    expect(isLiveWatchEvent({})).toBe(false);
    expect(isLiveWatchEvent(undefined)).toBe(false);
    expect(isLiveWatchEvent({ watch: 'freshness' })).toBe(false);
  });
});
