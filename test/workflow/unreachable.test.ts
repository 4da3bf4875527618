// An unreachable warehouse: Plan retries (locally without the waits), then the run fails
// with an error that says so, pages, and has written nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRunner } from '../../local/runner.ts';
import { unreachableRunner } from '../support/unreachable.ts';
import { caughtError, caughtMessage, inputFor, stateEvents, visited } from '../support/workflow.ts';

let runner: LocalRunner;
let close: () => void = () => undefined;
beforeAll(async () => {
  ({ runner, close } = await unreachableRunner());
});
afterAll(() => close());

describe('a warehouse that cannot be reached', () => {
  it('retries Plan eight times, then fails saying the warehouse is unreachable, pages, and writes nothing', async () => {
    const result = await runner.run(inputFor(5), { name: 'unreachable' });

    expect(result.status).toBe('FAILED');
    expect(visited(result)).toEqual(expect.arrayContaining(['Plan', 'RecordFailure', 'Notify', 'Failed']));
    expect(visited(result)).not.toContain('LoadChunks');
    // 8 retries of the transient error: 9 attempts in all.
    expect(stateEvents(result, 'StateRetried', 'Plan')).toHaveLength(8);
    expect(caughtError(result)?.Error).toBe('TransientWarehouseError');
    expect(caughtMessage(result)).toMatch(
      /^warehouse unreachable while trying to submit atomic-publish:sales_order_lines:plan:privileges:[0-9a-f]{16} \(ECONNREFUSED\)/,
    );

    expect(result.alerts).toHaveLength(1);
    expect(result.alerts[0]!.subject).toBe('atomic-publish: sales_order_lines failed (TransientWarehouseError)');
    expect(result.alerts[0]!.message).toContain('Live table: untouched; the run stopped in Plan, before loading anything.');
    expect(result.alerts[0]!.message).toMatch(
      /^Next: +the warehouse kept failing after every retry .*; once that has ended, start an execution with input \{"pipeline":"sales_order_lines"/m,
    );
    expect(result.metrics.find((m) => 'BatchFailed' in m.values)?.dimensions).toEqual({ service: 'atomic-publish', Pipeline: 'sales_order_lines' });
  });
});
