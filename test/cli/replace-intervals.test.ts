// The command line on a pipeline published by replace-intervals
// (test/support/intervals-pipeline.ts, imported first): a rollback `--to` a
// batch, which Plan refuses for such a publication, is refused before
// anything starts; a rollback of the latest publication, and `status`
// after it. Two backfills are arranged once; each describe acts on its own
// copy (test/support/workflow.ts useFork).
import '../support/intervals-pipeline.ts';
import { ListExecutionsCommand } from '@aws-sdk/client-sfn';
import { describe, expect, it } from 'vitest';
import { batchIdFor, resolveInterval } from '../../domain/plan/plan.ts';
import { day, flat, startCli, useCli } from '../support/cli.ts';
import { PIPELINE, useWorkflowFixture } from '../support/workflow.ts';

const batchOf = (from: number, to: number) =>
  batchIdFor(PIPELINE, resolveInterval({ pipeline: PIPELINE.name, from: day(from), to: day(to) }, PIPELINE, new Date()));
const [EARLIER, LATER] = [batchOf(2, 4), batchOf(4, 6)];

/** Publication 1 replaced days 2..4 (batch EARLIER), publication 2 days 4..6 (batch LATER). */
const twice = useWorkflowFixture('cli_intervals', async (wf) => {
  await wf.sample({ rowsPerDay: 20, sourceDays: 8, liveDays: 4 });
  const { cli, close } = await startCli(wf);
  try {
    for (const [from, to] of [
      [2, 4],
      [4, 6],
    ] as const) {
      const ran = await cli(['backfill', PIPELINE.name, '--from', day(from), '--to', day(to), '--poll-ms', '50']);
      if (ran.code !== 0) throw new Error(`the arranged backfill of days ${from}..${to} failed: ${ran.out} ${ran.err}`);
    }
  } finally {
    await close();
  }
});

describe('rollback --to a batch after a publication of some intervals', () => {
  const { wf, sfn, cli } = useCli(twice);

  it('is refused with exit 2, as Plan refuses it, before an execution starts or anyone is paged', async () => {
    const live = await wf.fingerprint('analytics.sales_order_lines');

    const ran = await cli(['rollback', PIPELINE.name, '--to', EARLIER]);

    expect(ran.code, ran.out).toBe(2);
    // The flag typed, and the command to run instead.
    expect(flat(ran.err)).toContain(
      `latest publication (2) replaced some intervals: it is rolled back one publication at a time, newest first, with \`atomic-publish rollback ${PIPELINE.name}\`; --to, a batch to go back to, applies to whole-table versions only.`,
    );
    expect(ran.err).toMatch(/Nothing was started\.$/);
    expect((await sfn.send(new ListExecutionsCommand({ stateMachineArn: wf.runner.workflow.stateMachineArn }))).executions).toEqual([]);
    expect(wf.runner.alerts).toEqual([]);
    expect(await wf.fingerprint('analytics.sales_order_lines')).toEqual(live);
  });
});

describe('a rollback of the latest publication, and of that rollback', () => {
  const { cli } = useCli(twice);
  const status = async () => JSON.parse((await cli(['--json', 'status', PIPELINE.name])).out).pipelines[0];

  it('status names the batch live: the earlier one after the rollback, the later one once the rollback is undone', async () => {
    const rolledBack = await cli(['--json', 'rollback', PIPELINE.name, '--poll-ms', '50']);
    expect(rolledBack.code, rolledBack.err).toBe(0);
    // The manifest records the rollback (publication 3) under the batch it took away.
    expect(await status()).toMatchObject({
      live: { seq: 1, batchId: EARLIER, rollbackOf: null },
      latestPublication: { seq: 3, batchId: LATER, rollbackOf: 2 },
    });
    expect((await cli(['status', PIPELINE.name])).out).toMatch(new RegExp(`#1 ${EARLIER} .*\\n.*since #3 \\(rollback of #2\\)`));

    const undone = await cli(['--json', 'rollback', PIPELINE.name, '--poll-ms', '50']);
    expect(undone.code, undone.err).toBe(0);
    expect(await status()).toMatchObject({ live: { seq: 2, batchId: LATER, rollbackOf: null }, latestPublication: { seq: 4, rollbackOf: 3 } });
  });
});
