// What the command line prints for people keeps within 120 columns (or a
// narrower terminal's width): every command's human output, on the
// pipeline whose words are the longest (published by replace-intervals,
// test/support/intervals-pipeline.ts), with the stack's alarms, a check
// that failed, a run that failed and a refusal. The SQL plan prints is the
// one thing left as it is: it is code to read and paste, not sentences.
import '../support/intervals-pipeline.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_WIDTH } from '../../cli/layout.ts';
import { alarmsFromTemplate } from '../../local/cloudwatch-alarms.ts';
import { type LocalCloudWatchApi, startLocalCloudWatchApi } from '../../local/cloudwatch-api.ts';
import { day, type Ran, startCli, useCli } from '../support/cli.ts';
import { PIPELINE, useWorkflowFixture } from '../support/workflow.ts';

const P = PIPELINE.name;

/** Two publications (days 2..4, 4..6), then a source row whose key another has: the check and the run of days 4..7 fail. */
const arranged = useWorkflowFixture('cli_width', async (wf) => {
  await wf.sample({ rowsPerDay: 20, sourceDays: 8, liveDays: 4 });
  const { cli, close } = await startCli(wf);
  try {
    for (const [from, to] of [
      [2, 4],
      [4, 6],
    ] as const) {
      const ran = await cli(['backfill', P, '--from', day(from), '--to', day(to), '--poll-ms', '50']);
      if (ran.code !== 0) throw new Error(`the arranged backfill of days ${from}..${to} failed: ${ran.out} ${ran.err}`);
    }
  } finally {
    await close();
  }
  await wf.query(
    `INSERT INTO source.sales_order_lines SELECT * FROM source.sales_order_lines WHERE ordered_at >= $1 AND ordered_at < $2 ORDER BY order_id, line_no LIMIT 1`,
    [day(6).slice(0, 19), day(7).slice(0, 19)],
  );
});

/** The lines of what a command printed, stdout and stderr. */
const linesOf = (ran: Ran) => [...ran.out.split('\n'), ...ran.err.split('\n')];
/** Lines wider than `width`, but for a word that is wider alone (an ARN): it is never cut, so that it can be pasted. */
const tooWide = (lines: readonly string[], width: number) => lines.filter((line) => line.length > width && /\S\s+\S/.test(line.trim()));

describe('human output within the width', () => {
  const c = useCli(arranged);
  let cw: LocalCloudWatchApi;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    cw = await startLocalCloudWatchApi({ alarms: alarmsFromTemplate(c.wf.runner.workflow.template) });
    env = { ...c.env, ATOMIC_PUBLISH_CLOUDWATCH_ENDPOINT: cw.endpoint };
  });
  afterAll(() => cw?.close());
  const cli = (argv: string[], columns?: number) => c.cli(argv, { env, ...(columns === undefined ? {} : { columns }) });

  it('every line of every command is at most 120 columns; the tables of status and history fit a terminal of 100', async () => {
    const failing = ['--from', day(4), '--to', day(7)];
    const ran = {
      check: await cli(['check', P, ...failing, '--poll-ms', '50']),
      backfill: await cli(['backfill', P, ...failing, '--poll-ms', '50']),
      rollback: await cli(['rollback', P, '--to', '0123456789abcdef']),
      plan: await cli(['plan', P, ...failing]),
      status: await cli(['status', P]),
      history: await cli(['history', P]),
    };
    // They are what they should be: a failed check, a failed run, a refusal, and the alarms read.
    expect([ran.check.code, ran.backfill.code, ran.rollback.code]).toEqual([1, 1, 2]);
    expect(ran.check.out).toMatch(/business_key_unique/);
    expect(ran.backfill.err).toMatch(/Next step: /);
    expect(ran.status.out).toMatch(/Freshness\S*: (OK|ALARM|INSUFFICIENT_DATA)/);
    expect(ran.history.out).toMatch(/replace-intervals.*\n.*\(check\)/);

    const { sql } = JSON.parse((await cli(['--json', 'plan', P, ...failing])).out) as { sql: { load: { sql: string }; gate: { sql: string } } };
    const listing = new Set([...sql.load.sql.split('\n'), ...sql.gate.sql.split('\n')]);
    const printed = Object.entries(ran).flatMap(([command, r]) => linesOf(r).filter((line) => command !== 'plan' || !listing.has(line)));
    expect(printed.length).toBeGreaterThan(50);
    expect(tooWide(printed, MAX_WIDTH)).toEqual([]);
    // Without the fitting, these tables are wider than 120.
    expect(Math.max(...linesOf(ran.history).map((l) => l.length))).toBeGreaterThan(100);

    for (const argv of [
      ['status', P],
      ['history', P],
    ]) {
      const narrow = await cli(argv, 100);
      expect(narrow.code).toBe(0);
      expect(tooWide(narrow.out.split('\n'), 100)).toEqual([]);
    }
  });
});
