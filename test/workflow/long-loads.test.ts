// A chunk load that outlasts its Lambda invocation: LoadChunk ends with
// LoadStillRunningError, which the chunk's iteration catches; it waits
// (WaitForLoad) and invokes LoadChunk again, which re-attaches to the load by its statement
// name. Here LoadChunk's time-out is shortened to 32 s (its waits end 30 s
// before that, at about 2 s) and every chunk's INSERT is held at a lock on
// the staging table until each chunk has been looked at several times:
// the loads are waited for, never submitted twice, never retried or failed
// for their length.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadStatementPrefix } from '../../domain/load-chunk/sql/load-chunk.ts';
import { holdGate, type LockGate } from '../support/lock-gate.ts';
import { until } from '../support/until.ts';
import { inputFor, LIVE, namesFor, PIPELINE, stateEvents, useWorkflow, type Workflow } from '../support/workflow.ts';

const TO_DAY = 4;
const CHUNKS = 4;
const { batchId, staging } = namesFor(TO_DAY);

let wf: Workflow;
beforeAll(async () => {
  wf = await useWorkflow('wf_long_loads', { functionTimeoutsSeconds: { LoadChunk: 32 } });
  await wf.sample({ rowsPerDay: 25, sourceDays: 6, liveDays: 2 });
});
afterAll(() => wf?.close());

describe('a load longer than a LoadChunk invocation', () => {
  it('is waited for by the workflow: LoadChunk comes back to it until it ends, and it is submitted once', async () => {
    let gate: LockGate | undefined;
    // Staging exists once Plan returns: hold it before any chunk loads.
    wf.faults.Plan = async (input, next) => {
      const output = await next(input);
      gate = await holdGate(wf.wh.pg, { table: staging });
      return output;
    };
    const looks = (chunk: number) => wf.calls.filter((c) => c.state === 'LoadChunk' && c.chunk === chunk).length;
    try {
      const running = await wf.start(inputFor(TO_DAY), 'long-loads');
      // Each chunk's load outlasted at least two invocations before it may end.
      await until(() => [...Array(CHUNKS).keys()].every((chunk) => looks(chunk) >= 3), 'every chunk looked at three times');
      await gate!.release();
      const result = await running.result;

      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(TO_DAY));
      // Never retried for its length, and the workflow's wait loop did the waiting.
      expect(stateEvents(result, 'StateRetried', 'LoadChunk')).toEqual([]);
      expect(stateEvents(result, 'StateCaught', 'LoadChunk').length).toBeGreaterThanOrEqual(2 * CHUNKS);
      expect(result.events.filter((e) => e.type === 'StateEntered' && e.state?.name === 'WaitForLoad').length).toBeGreaterThanOrEqual(2 * CHUNKS);
      // One load submitted per chunk, however often it was looked at.
      const prefix = loadStatementPrefix(PIPELINE.name, batchId);
      const submits = wf.wh.api.requests().filter((r) => r.operation === 'BatchExecuteStatement' && r.statementName?.startsWith(prefix));
      expect(submits).toHaveLength(CHUNKS);
      expect(new Set(submits.map((r) => r.statementName)).size).toBe(CHUNKS);
      const loads = await wf.query<{ loads: string }>('SELECT loads FROM atomic_publish.chunk_state WHERE batch_id = $1 ORDER BY chunk_index', [batchId]);
      expect(loads.map((r) => Number(r.loads))).toEqual([1, 1, 1, 1]);
    } finally {
      await gate?.release();
      wf.reset();
    }
  });
});
