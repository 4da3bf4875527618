// Cleanup after a publish: staging tables of batches whose execution ended
// without RecordFailure (aborted, timed out) are dropped once they are a day
// old; a batch that may still be running keeps its staging table.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inputFor, namesFor, useWorkflow, type Workflow } from '../support/workflow.ts';

let wf: Workflow;
beforeAll(async () => {
  wf = await useWorkflow('wf_cleanup');
  await wf.sample({ rowsPerDay: 20, sourceDays: 9, liveDays: 4 });
});
afterAll(() => wf?.close());

describe('cleanup of abandoned batches', () => {
  it('drops the staging table of a batch left RUNNING for over a day, and keeps a recent one', async () => {
    // Two runs that stop at Reconcile, then are left RUNNING as an aborted execution would leave them.
    wf.faults.Reconcile = async () => {
      throw Object.assign(new Error('aborted by an operator'), { name: 'WarehouseError' });
    };
    for (const day of [5, 6]) expect((await wf.run(inputFor(day), `left-running-${day}`)).status).toBe('FAILED');
    wf.reset();
    const abandoned = namesFor(5);
    const recent = namesFor(6);
    await wf.query(`UPDATE atomic_publish.batches SET status = 'RUNNING', started_at = now() - interval '2 days' WHERE batch_id = $1`, [abandoned.batchId]);
    await wf.query(`UPDATE atomic_publish.batches SET status = 'RUNNING', started_at = now() - interval '1 hour' WHERE batch_id = $1`, [recent.batchId]);

    const result = await wf.run(inputFor(8), 'publishes-and-cleans');

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect((result.output as { cleanup: { dropped: string[] } }).cleanup.dropped).toEqual([abandoned.staging]);
    expect(await wf.tableExists(abandoned.staging)).toBe(false);
    expect(await wf.tableExists(recent.staging)).toBe(true);
    expect((await wf.batch(abandoned.batchId))!.staging_dropped_at).not.toBeNull();
    expect((await wf.batch(recent.batchId))!.staging_dropped_at).toBeNull();
  });
});
