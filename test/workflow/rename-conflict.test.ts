// A rename failing with a concurrency conflict (beside a VACUUM, or ERROR 1023),
// which PostgreSQL cannot provoke: the local endpoint fails the swap's SECOND
// rename with Redshift's words after the first ran. The whole swap rolls back and
// Publish runs it again from its first statement, readers polling throughout.
// Why: docs/redshift.md ("Rename conflicts"), docs/decisions/publishing.md
import { describe, expect, it } from 'vitest';
import type { StatementFault } from '../../local/data-api/runner.ts';
import { ReaderPool, type ReaderSample } from '../../local/readers.ts';
import { inputFor, LIVE, namesFor, stateEvents, useFork, useWorkflowFixture, visited } from '../support/workflow.ts';

const ROWS_PER_DAY = 20;
const SECOND_RENAME = /^ALTER TABLE "analytics"\."sales_order_lines__stg_[^"]+" RENAME TO "sales_order_lines"$/;

/** Every part of a swap batch as the endpoint was about to run it: which attempt of the batch, its index. */
interface SwapPart {
  readonly batch: number;
  readonly index: number;
  readonly sql: string;
}

/** An endpoint fault of one workflow's own: once armed, fails the swap's second rename once with the message; records every swap part. */
function renameConflict(): {
  statementError: StatementFault;
  arm(message: string): void;
  fired(): boolean;
  swapParts: SwapPart[];
  batchesSeen: Map<string, number>;
} {
  let failWith: string | undefined;
  let fired = false;
  const swapParts: SwapPart[] = [];
  const batchesSeen = new Map<string, number>();
  return {
    swapParts,
    batchesSeen,
    arm: (message) => (failWith = message),
    fired: () => fired,
    statementError: ({ sql, index, sqls, name }) => {
      if (!name?.includes(':publish:swap:')) return undefined;
      const key = sqls.join('\n');
      if (index === 0) batchesSeen.set(key, batchesSeen.size + 1);
      swapParts.push({ batch: batchesSeen.get(key) ?? 0, index, sql });
      if (failWith === undefined || !SECOND_RENAME.test(sql)) return undefined;
      const message = failWith;
      failWith = undefined;
      fired = true;
      return message;
    },
  };
}

const fixture = useWorkflowFixture('wf_rename_conflict', async (wf) => {
  await wf.sample({ rowsPerDay: ROWS_PER_DAY, sourceDays: 12, liveDays: 4 });
});

const versionRead = (r: ReaderSample) => `${r.count}/${r.keySum}`;

describe.each([
  ['conflict with concurrent transaction', 6, 'ERROR: could not complete because of conflict with concurrent transaction'],
  [
    'serializable isolation violation (1023)',
    8,
    'ERROR: 1023 DETAIL: Serializable isolation violation on table - 104421, transactions forming the cycle are: 7211, 7214 (pid:30822)',
  ],
])('a rename conflict in the swap: %s', (_, day, message) => {
  const fault = renameConflict();
  const { swapParts, batchesSeen } = fault;
  const wf = useFork(fixture, { statementError: fault.statementError });
  it('on the second rename: the whole swap is retried, readers never miss the live table, one publication', async () => {
    const names = namesFor(day);
    const old = await wf.fingerprint(LIVE);
    const expected = await wf.expected(day);
    const readers = new ReaderPool(wf.wh.pg, 2, { keyExpression: 'order_id * 1000 + line_no', pauseMs: 1 });
    readers.watch(LIVE, 'before');
    await readers.readAll();
    fault.arm(message);

    const result = await wf.run(inputFor(day));
    readers.phase('after');
    await readers.readAll();
    const reads = await readers.close();

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(fault.fired(), 'the fault fired').toBe(true);
    // Step Functions retried Publish once (TransientWarehouseError), and nothing else failed.
    expect(stateEvents(result, 'StateRetried', 'Publish')).toHaveLength(1);
    expect(visited(result)).not.toContain('RecordFailure');
    // The first attempt ran up to the second rename and failed there; the retry ran the whole
    // transaction again from its first statement, the first rename included, to its last.
    const first = swapParts.filter((p) => p.batch === 1);
    const second = swapParts.filter((p) => p.batch === 2);
    expect(SECOND_RENAME.test(first.at(-1)!.sql)).toBe(true);
    expect(first.map((p) => p.index)).toEqual(first.map((_, i) => i));
    expect(second.map((p) => p.index)).toEqual(second.map((_, i) => i));
    expect(second.length).toBeGreaterThan(first.length);
    expect(second.slice(0, first.length).map((p) => p.sql)).toEqual(first.map((p) => p.sql));
    expect(second.some((p) => p.sql.startsWith('ALTER TABLE "analytics"."sales_order_lines" RENAME TO'))).toBe(true);
    expect(batchesSeen.size).toBe(2);
    // Published once, with exactly the source's rows; the old version retained under its name.
    const publications = await wf.publications();
    expect(publications.filter((p) => p.batch_id === names.batchId)).toHaveLength(1);
    expect(publications.at(-1)).toMatchObject({ batch_id: names.batchId });
    expect(await wf.fingerprint(LIVE)).toEqual(expected);
    expect(await wf.fingerprint(names.previous)).toEqual(old);
    // Readers: never an error (no missing live table), the old version, then the new one, never back.
    expect(reads.filter((r) => r.error)).toEqual([]);
    const oldRead = `${old.rows}/${old.keySum}`;
    const freshRead = `${expected.rows}/${expected.keySum}`;
    expect(new Set(reads.map(versionRead))).toEqual(new Set([oldRead, freshRead]));
    for (const reader of [0, 1]) {
      const versions = reads.filter((r) => r.reader === reader).map(versionRead);
      expect(versions[0]).toBe(oldRead);
      expect(versions.at(-1)).toBe(freshRead);
      expect(versions.filter((v, i) => i > 0 && v !== versions[i - 1])).toHaveLength(1);
    }
  });
});
