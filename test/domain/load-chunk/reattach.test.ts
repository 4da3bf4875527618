import { describe, expect, it } from 'vitest';
import { stillRunningMessage, stillRunningStatement, withRunningLoads } from '../../../domain/load-chunk/reattach.ts';
import { loadStatementName } from '../../../domain/load-chunk/sql/load-chunk.ts';
import { batch, chunks, pipeline } from '../sql/support.ts';

const ID = '9a8b7c6d-0000-4000-8000-123456789abc';

describe('the load a LoadChunk attempt is told to wait for', () => {
  it('is the statement its LoadStillRunningError named, as the Catch keeps it: Cause the Lambda error as JSON', () => {
    const message = stillRunningMessage(3, ID, 870);
    const caught = { Error: 'LoadStillRunningError', Cause: JSON.stringify({ errorType: 'LoadStillRunningError', errorMessage: message, trace: [] }) };

    expect(message).toBe(`chunk 3's load ${ID} still runs after 870 s; the workflow waits for it`);
    expect(stillRunningStatement(caught)).toBe(ID);
    expect(stillRunningStatement({ Error: 'LoadStillRunningError', Cause: message })).toBe(ID);
  });

  it('is none for a first attempt, another error, or a Cause without an id', () => {
    expect(stillRunningStatement(undefined)).toBeUndefined();
    expect(stillRunningStatement({ Error: 'TransientWarehouseError', Cause: stillRunningMessage(3, ID, 1) })).toBeUndefined();
    expect(stillRunningStatement({ Error: 'LoadStillRunningError', Cause: '{"errorMessage":"something else"}' })).toBeUndefined();
    expect(stillRunningStatement({ Error: 'LoadStillRunningError', Cause: 42 })).toBeUndefined();
  });
});

describe('the loads an ended execution left running, as Plan hands them out', () => {
  const nameOf = (c: (typeof chunks)[number]) => loadStatementName(pipeline, batch, c);

  it('go to the chunk and generation whose statement name they run under, and to no other', () => {
    const toLoad = [chunks[1]!, { ...chunks[2]!, generation: 1 }, chunks[10]!];
    const running = [
      { id: 'a', name: nameOf(chunks[1]!) },
      // Chunk 2's load of generation 0: Plan moved the chunk to generation 1, so it is not waited for.
      { id: 'b', name: nameOf(chunks[2]!) },
      { id: 'c', name: 'atomic-publish:orders:pause-probe:x:10' },
    ];

    expect(withRunningLoads(toLoad, running, nameOf).map((c) => [c.index, c.running])).toEqual([
      [1, 'a'],
      [2, undefined],
      [10, undefined],
    ]);
  });

  it('leave the chunks as they are when none runs', () => {
    expect(withRunningLoads(chunks.slice(0, 3), [], nameOf)).toEqual(chunks.slice(0, 3));
  });
});
