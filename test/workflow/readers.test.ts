// The promise as a reader sees it: dashboards polling the live table over
// their own PostgreSQL connections while a real run loads 30 day chunks and
// swaps. Every read returns the old table or the new one, never a mix, never
// an error, and once a reader has seen the new table it never sees the old.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { warehouseFromEnv } from '../../functions/commons/warehouse.ts';
import { naiveRebuild } from '../../local/naive-rebuild.ts';
import { addBadSourceRow, sampleDay } from '../../local/sample-data.ts';
import { inputFor, LIVE, useWorkflow, type Workflow } from '../support/workflow.ts';

const ROWS_PER_DAY = 200;
const TO_DAY = 30;

interface Read {
  readonly reader: number;
  readonly at: number;
  readonly version?: string;
  readonly error?: string;
}

/** Readers counting rows and summing keys of the live table in a loop until stopped. */
async function startReaders(conn: pg.ClientConfig, count: number, table = LIVE): Promise<{ stop: () => Promise<Read[]> }> {
  const clients = await Promise.all(
    Array.from({ length: count }, async () => {
      const client = new pg.Client(conn);
      await client.connect();
      return client;
    }),
  );
  const reads: Read[] = [];
  let running = true;
  const loops = clients.map(async (client, reader) => {
    while (running) {
      try {
        const { rows } = await client.query<{ n: number; s: string }>(
          `SELECT count(*)::int AS n, COALESCE(sum(order_id * 1000 + line_no), 0)::text AS s FROM ${table}`,
        );
        reads.push({ reader, at: Date.now(), version: `${rows[0]!.n}/${rows[0]!.s}` });
      } catch (error) {
        reads.push({ reader, at: Date.now(), error: (error as Error).message });
      }
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      await Promise.all(clients.map((c) => c.end()));
      return reads;
    },
  };
}

const versionOf = (f: { rows: number; keySum: string }) => `${f.rows}/${f.keySum}`;

let wf: Workflow;
beforeAll(async () => {
  wf = await useWorkflow('wf_readers');
  await wf.sample({ rowsPerDay: ROWS_PER_DAY, sourceDays: TO_DAY + 1, liveDays: 20, copies: ['naive'] });
});
afterAll(() => wf?.close());

describe('readers during a run', () => {
  it('do catch a mix: an in-place rebuild (DELETE, then INSERT day by day) shows them partial tables', async () => {
    const readers = await startReaders(wf.wh.pg, 2, 'naive.sales_order_lines');
    const outcome = await naiveRebuild(warehouseFromEnv(), { table: 'naive.sales_order_lines', days: TO_DAY, firstDay: sampleDay(0) }, () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const reads = await readers.stop();
    expect(outcome.failed).toBe(false);
    // Old (20 days), new (30 days) and the partial states in between.
    expect(new Set(reads.map((r) => r.version)).size).toBeGreaterThan(2);
  });

  it('see the old table or the new one, never a mix, during a 30-chunk run that publishes', async () => {
    const old = versionOf(await wf.fingerprint(LIVE));
    const expected = await wf.expected(TO_DAY);
    const fresh = versionOf(expected);
    expect(fresh).not.toBe(old);

    const readers = await startReaders(wf.wh.pg, 2);
    const started = Date.now();
    const result = await wf.run(inputFor(TO_DAY), 'readers-publish');
    const ended = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 150));
    const reads = await readers.stop();

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(expected);
    expect(reads.filter((r) => r.error)).toEqual([]);
    const during = reads.filter((r) => r.at >= started && r.at <= ended);
    expect(during.length, 'reads while the run executed').toBeGreaterThan(50);
    const seen = new Set(reads.map((r) => r.version));
    expect([...seen].sort()).toEqual([old, fresh].sort());
    for (const reader of [0, 1]) {
      const versions = reads.filter((r) => r.reader === reader).map((r) => r.version);
      expect(versions[0], `reader ${reader} first read`).toBe(old);
      expect(versions.at(-1), `reader ${reader} last read`).toBe(fresh);
      // One switch from old to new, never back.
      const switches = versions.filter((v, i) => i > 0 && v !== versions[i - 1]).length;
      expect(switches, `reader ${reader} switches`).toBe(1);
    }
  });

  it('see only the current table during a run that fails at 80% of its chunks', async () => {
    const current = versionOf(await wf.fingerprint(LIVE));
    const client = new pg.Client(wf.wh.pg);
    await client.connect();
    try {
      await addBadSourceRow(client, sampleDay(24));
    } finally {
      await client.end();
    }
    wf.reset();
    const readers = await startReaders(wf.wh.pg, 2);
    const result = await wf.run(inputFor(TO_DAY + 1), 'readers-failure');
    await wf.quiesce();
    const reads = await readers.stop();

    expect(result.status).toBe('FAILED');
    expect(reads.length).toBeGreaterThan(20);
    expect(reads.filter((r) => r.error)).toEqual([]);
    expect(new Set(reads.map((r) => r.version))).toEqual(new Set([current]));
    expect(versionOf(await wf.fingerprint(LIVE))).toBe(current);
  });
});
