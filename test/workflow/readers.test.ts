// The promise as a reader sees it: dashboards polling the live table over
// their own PostgreSQL connections while a real run loads 30 day chunks and
// swaps. Every read returns the old table or the new one, never a mix, never
// an error, and once a reader has seen the new table it never sees the old.
// The sample is arranged once; each run acts on a copy of its own
// (test/support/workflow.ts useFork).
import { describe, expect, it } from 'vitest';
import { DEFAULT_POLL } from '../../functions/commons/warehouse.ts';
import { localWarehouse } from '../../local/aws-clients.ts';
import { naiveRebuild } from '../../local/naive-rebuild.ts';
import { ReaderPool, type ReaderSample } from '../../local/readers.ts';
import { addBadSourceRow, sampleDay } from '../../local/sample-data.ts';
import { inputFor, LIVE, useFork, useWorkflowFixture, type Workflow } from '../support/workflow.ts';

const ROWS_PER_DAY = 200;
const TO_DAY = 30;

/** Readers of `table` (the live table by default) that tell tables apart by row count and key sum. */
function startReaders(wf: Workflow, table = LIVE): ReaderPool {
  const readers = new ReaderPool(wf.wh.pg, 2, { keyExpression: 'order_id * 1000 + line_no', pauseMs: 1 });
  readers.watch(table, 'before');
  return readers;
}

const versionOf = (f: { rows: number; keySum: string }) => `${f.rows}/${f.keySum}`;
const versionRead = (r: ReaderSample) => `${r.count}/${r.keySum}`;

const fixture = useWorkflowFixture('wf_readers', async (wf) => {
  await wf.sample({ rowsPerDay: ROWS_PER_DAY, sourceDays: TO_DAY + 1, liveDays: 20, copies: ['naive'] });
});

describe('readers during an in-place rebuild', () => {
  const wf = useFork(fixture);
  it('do catch a mix: an in-place rebuild (DELETE, then INSERT day by day) shows them partial tables', async () => {
    const old = versionOf(await wf.fingerprint('naive.sales_order_lines'));
    const readers = startReaders(wf, 'naive.sales_order_lines');
    await readers.readAll();
    readers.phase('rebuilding');
    // After 10 of 30 days every reader takes a read before the rebuild goes on.
    const outcome = await naiveRebuild(
      localWarehouse(wf.wh.endpoint, wf.wh.pg.database, DEFAULT_POLL, wf.wh.pg.user),
      { table: 'naive.sales_order_lines', days: TO_DAY, firstDay: sampleDay(0) },
      async (done) => {
        if (done !== 10) return;
        readers.phase('after day 10');
        await readers.readAll();
        readers.phase('rebuilding');
      },
    );
    const reads = await readers.close();
    expect(outcome.failed).toBe(false);
    const partial = reads.filter((r) => r.phase === 'after day 10').map((r) => Number(r.count));
    expect(partial.length).toBeGreaterThanOrEqual(2);
    // 10 days of rows: neither the old table (20 days) nor the new one (30 days).
    expect(new Set(partial)).toEqual(new Set([10 * ROWS_PER_DAY]));
    const first = reads.find((r) => r.phase === 'before');
    expect(first && versionRead(first)).toBe(old);
  });
});

describe('readers during a run that publishes', () => {
  const wf = useFork(fixture);
  it('see the old table or the new one, never a mix, during a 30-chunk run that publishes', async () => {
    const old = versionOf(await wf.fingerprint(LIVE));
    const expected = await wf.expected(TO_DAY);
    const fresh = versionOf(expected);
    expect(fresh).not.toBe(old);

    const readers = startReaders(wf);
    await readers.readAll();
    // Every reader reads while chunks load (halfway) and again once all are loaded, before the swap.
    wf.faults.LoadChunk = async (input, next) => {
      if ((input as { chunk: { index: number } }).chunk.index === TO_DAY / 2) {
        readers.phase('loading');
        await readers.readAll();
      }
      return next(input);
    };
    wf.faults.Publish = async (input, next) => {
      readers.phase('before the swap');
      await readers.readAll();
      readers.phase('swapping');
      return next(input);
    };
    const result = await wf.run(inputFor(TO_DAY), 'readers-publish');
    readers.phase('after');
    await readers.readAll();
    const reads = await readers.close();
    wf.reset();

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(expected);
    expect(reads.filter((r) => r.error)).toEqual([]);
    for (const phase of ['before', 'loading', 'before the swap']) {
      const inPhase = reads.filter((r) => r.phase === phase);
      expect(inPhase.length, `reads ${phase}`).toBeGreaterThanOrEqual(2);
      expect(new Set(inPhase.map((r) => versionRead(r))), `reads ${phase}`).toEqual(new Set([old]));
    }
    expect(new Set(reads.filter((r) => r.phase === 'after').map((r) => versionRead(r)))).toEqual(new Set([fresh]));
    const seen = new Set(reads.map((r) => versionRead(r)));
    expect([...seen].sort()).toEqual([old, fresh].sort());
    for (const reader of [0, 1]) {
      const versions = reads.filter((r) => r.reader === reader).map((r) => versionRead(r));
      expect(versions[0], `reader ${reader} first read`).toBe(old);
      expect(versions.at(-1), `reader ${reader} last read`).toBe(fresh);
      // One switch from old to new, never back.
      const switches = versions.filter((v, i) => i > 0 && v !== versions[i - 1]).length;
      expect(switches, `reader ${reader} switches`).toBe(1);
    }
  });
});

describe('readers during a run that fails', () => {
  const wf = useFork(fixture);
  it('see only the current table during a run that fails at 80% of its chunks', async () => {
    const current = versionOf(await wf.fingerprint(LIVE));
    await wf.withClient((client) => addBadSourceRow(client, sampleDay(24)));
    wf.reset();
    const readers = startReaders(wf);
    await readers.readAll();
    wf.faults.LoadChunk = async (input, next) => {
      if ((input as { chunk: { index: number } }).chunk.index === 20) {
        readers.phase('loading');
        await readers.readAll();
      }
      return next(input);
    };
    const result = await wf.run(inputFor(TO_DAY + 1), 'readers-failure');
    await wf.quiesce();
    readers.phase('after');
    await readers.readAll();
    const reads = await readers.close();
    wf.reset();

    expect(result.status).toBe('FAILED');
    for (const phase of ['before', 'loading', 'after']) expect(reads.filter((r) => r.phase === phase).length, `reads ${phase}`).toBeGreaterThanOrEqual(2);
    expect(reads.filter((r) => r.error)).toEqual([]);
    expect(new Set(reads.map((r) => versionRead(r)))).toEqual(new Set([current]));
    expect(versionOf(await wf.fingerprint(LIVE))).toBe(current);
  });
});
