// RecordFailure itself fails (here: a Lambda error no Retry matches, as a
// timeout would be): the run still pages once, with the fallback alert that
// DescribeFailure builds from what the execution knows, and ends FAILED.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRunner } from '../../local/runner.ts';
import { unreachableRunner } from '../support/unreachable.ts';

let runner: LocalRunner;
let close: () => void = () => undefined;
let recordFailureCalls = 0;
beforeAll(async () => {
  ({ runner, close } = await unreachableRunner({
    taskOverrides: {
      RecordFailure: async () => {
        recordFailureCalls += 1;
        throw Object.assign(new Error('boom'), { name: 'Lambda.Unknown' });
      },
    },
  }));
});
afterAll(() => close());

describe('RecordFailure failing', () => {
  it('is not retried (Lambda.Unknown is no retried error name)', () => {
    expect(runner.workflow.retriers.RecordFailure?.flat()).not.toContain('Lambda.Unknown');
    expect(runner.workflow.retriers.RecordFailure?.flat()).not.toContain('States.ALL');
  });

  it('still pages exactly once, with the fallback alert, and the run ends FAILED', async () => {
    const result = await runner.run({ pipeline: 'sales_order_lines' }, { name: 'fallback-alert' });

    expect(result.status).toBe('FAILED');
    expect(result.error).toBe('AtomicPublishFailed');
    const entered = result.events.filter((e) => e.type === 'StateEntered').map((e) => e.state!.name);
    expect(entered.slice(-4)).toEqual(['RecordFailure', 'DescribeFailure', 'Notify', 'Failed']);
    expect(recordFailureCalls).toBe(1);

    expect(result.alerts).toHaveLength(1);
    const alert = result.alerts[0]!;
    expect(alert.subject).toBe('atomic-publish: a run failed (details unavailable)');
    expect(alert.message).toMatch(/^atomic-publish: a run failed, and recording the failure in the manifest failed too \(Lambda\.Unknown\)\. Error: /);
    // The original error (Plan could not reach the warehouse) and the execution are named.
    expect(alert.message).toContain('TransientWarehouseError');
    expect(alert.message).toContain(`Execution: ${result.executionId}. See`);
    expect(alert.message).toContain('atomic_publish.batch_attempts');
    expect(alert.message).toMatch(/^[\x20-\x7e]*$/);
  });
});
