// The command line end to end against the local engine (test/support/cli.ts):
// main with argv (the real process for a killed follower and `local up`), the
// real SDK clients against the local endpoints, the synthesized state machine run
// by the test's runner, so a test can hold a chunk load to stop or kill mid-run.
// Each describe that acts works on a fork of its own (useFork); the commands that
// start nothing share one. Why: docs/decisions/command-line.md
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DescribeExecutionCommand, ListExecutionsCommand, StartExecutionCommand, StopExecutionCommand } from '@aws-sdk/client-sfn';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { executionArnOf } from '../../cli/executions.ts';
import { shortTime } from '../../cli/layout.ts';
import { runResult } from '../../cli/run.ts';
import { batchIdFor, resolveInterval } from '../../domain/plan/plan.ts';
import { checkRunName, manualRunName } from '../../domain/run-name.ts';
import { PROJECT_ROOT, STATE_DIR } from '../../lib/project.ts';
import { LOCAL_AWS_ENV } from '../../local/aws-clients.ts';
import { dropDatabase } from '../../local/postgres.ts';
import { MIN_SAMPLE_DAYS } from '../../local/recent-sample.ts';
import { pipelines } from '../../pipelines/index.ts';
import { day, fail, flat, runCli, spawnCli, spawnInTerminal, startCli, useCli } from '../support/cli.ts';
import { atomicPublish } from '../support/local-up-process.ts';
import { closedPort } from '../support/unreachable.ts';
import { LIVE, PIPELINE, useWorkflowFixture } from '../support/workflow.ts';

const history = { from: day(0) };
/** The fields every result of run, backfill and rollback has under --json, whatever happened. */
const RESULT_FIELDS = Object.keys(runResult(PIPELINE, 'published')).sort();
const fields = (out: string) => Object.keys(JSON.parse(out)).sort();

const batchOf = (from: string, to: string) => batchIdFor(PIPELINE, resolveInterval({ pipeline: PIPELINE.name, from, to }, PIPELINE, new Date()));
const nameOf = (from: string, to: string, attempt = 1) => manualRunName(PIPELINE.name, { from: new Date(from), to: new Date(to) }, attempt);

const SAMPLE = { rowsPerDay: 20, sourceDays: 10, liveDays: 4 };
/** The sample warehouse, nothing published yet. */
const sampled = useWorkflowFixture('cli_e2e', (wf) => wf.sample(SAMPLE));
/**
 * The sample warehouse after `run --to day 5` (publication 1, batch
 * batchOf(day 0, day 5)) and the same command again; what the two commands
 * answered, what was started, and the live table then.
 */
const published = useWorkflowFixture('cli_e2e_published', async (wf) => {
  await wf.sample(SAMPLE);
  const { cli, api, publicationsOf, close } = await startCli(wf);
  try {
    const ran = await cli(['--json', 'run', 'sales_order_lines', '--to', day(5), '--poll-ms', '50']);
    if (ran.code !== 0) throw new Error(`the arranged run to day 5 failed: ${ran.out} ${ran.err}`);
    const again = await cli(['--json', 'run', 'sales_order_lines', '--to', day(5)]);
    return {
      ran,
      again,
      started: [...api.started()],
      live: await wf.fingerprint(LIVE),
      expected: await wf.expected(5),
      publications: await publicationsOf(batchOf(day(0), day(5))),
    };
  } finally {
    await close();
  }
});

describe('before any publication', () => {
  // The CLI writes nothing itself, and nothing here starts an execution: one copy for all.
  const c = useCli(sampled);
  const { wf, api, sfn, cli } = c;

  describe('bad input: a non-zero exit, a message, nothing started', () => {
    // What was typed, what the error says, and its kind under --json: the command line wrong (usage) or Plan's checks refusing (refused).
    const cases: [string, string[], RegExp, 'usage' | 'refused'][] = [
      ['an unknown pipeline', ['run', 'nope'], /unknown pipeline "nope"; known pipelines: sales_order_lines/, 'refused'],
      ['a reversed interval', ['backfill', 'sales_order_lines', '--from', day(5), '--to', day(3)], /interval is empty or reversed/, 'refused'],
      [
        'an interval off the grain, naming the flag typed',
        ['plan', 'sales_order_lines', '--to', '2026-01-05T03:00:00Z'],
        /^--to 2026-01-05T03:00:00.000Z is not on a day boundary/m,
        'refused',
      ],
      ['a backfill without --from', ['backfill', 'sales_order_lines', '--to', day(5)], /backfill needs --from and --to/, 'usage'],
      [
        'a swap backfill not from historyStart',
        ['backfill', 'sales_order_lines', '--from', day(2), '--to', day(5)],
        /publishes by swap, which rebuilds the whole table: --from must be omitted or equal historyStart/,
        'refused',
      ],
      [
        'a rollback before any publication',
        ['rollback', 'sales_order_lines', '--to', '0123456789abcdef'],
        /has never published: there is nothing to roll back/,
        'refused',
      ],
      ['an unknown command', ['publish-everything'], /unknown command/, 'usage'],
      ['a check without --from', ['check', 'sales_order_lines', '--to', day(5)], /check needs --from and --to/, 'usage'],
      ['a check of an unknown pipeline', ['check', 'nope', '--from', day(0), '--to', day(5)], /unknown pipeline "nope"/, 'refused'],
      ['a reversed check', ['check', 'sales_order_lines', '--from', day(5), '--to', day(3)], /interval is empty or reversed/, 'refused'],
      ['a check off the grain', ['check', 'sales_order_lines', '--from', day(0), '--to', '2026-01-05T03:00:00Z'], /not on a day boundary/, 'refused'],
      ['a bad --poll-ms', ['run', 'sales_order_lines', '--poll-ms', 'soon'], /--poll-ms must be a whole number/, 'usage'],
    ];
    it.each(cases)('%s', async (_, argv, message) => {
      const ran = await cli(argv);
      expect(ran.code).toBe(2);
      expect(flat(ran.err).replace(/^atomic-publish: /, '')).toMatch(message);
      expect(ran.err).not.toMatch(/input\./);
      expect(api.started()).toEqual([]);
    });

    it.each(cases)('%s, under --json: one JSON object on stdout, {"error": {kind, message, exitCode}}, with that exit code', async (_, argv, message, kind) => {
      const ran = await cli(['--json', ...argv]);
      expect(ran.code).toBe(2);
      expect(ran.err).toBe('');
      const { error, ...rest } = JSON.parse(ran.out);
      expect(rest).toEqual({});
      expect(error).toEqual({ kind, message: expect.stringMatching(message), exitCode: 2 });
      expect(api.started()).toEqual([]);
    });

    it("--version prints package.json's version and exits 0", async () => {
      const { version } = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
      for (const flag of ['--version', '-V']) expect(await cli([flag])).toEqual({ code: 0, out: version, err: '' });
    });

    it('Ctrl-C before anything started: exit 130, saying so, as text or as JSON', async () => {
      const text = await cli(['run', 'sales_order_lines', '--to', day(5)], { signal: AbortSignal.abort() });
      expect(text).toMatchObject({ code: 130, err: 'atomic-publish: interrupted (Ctrl-C); nothing was started.' });
      const json = await cli(['--json', 'status'], { signal: AbortSignal.abort() });
      expect(json.code).toBe(130);
      expect(JSON.parse(json.out)).toEqual({ error: { kind: 'interrupted', message: 'interrupted (Ctrl-C); nothing was started.', exitCode: 130 } });
    });

    it('an unreachable Data API endpoint: refused before Step Functions is asked', async () => {
      const ran = await cli(['run', 'sales_order_lines', '--to', day(5)], {
        env: { ...c.env, REDSHIFT_DATA_ENDPOINT: `http://127.0.0.1:${await closedPort()}` },
      });
      expect(ran.code).toBe(2);
      expect(flat(ran.err)).toMatch(/cannot reach an endpoint.*nothing was started/);
      expect((await sfn.send(new ListExecutionsCommand({ stateMachineArn: wf.runner.workflow.stateMachineArn }))).executions).toEqual([]);
      const json = await cli(['--json', 'run', 'sales_order_lines', '--to', day(5)], {
        env: { ...c.env, REDSHIFT_DATA_ENDPOINT: `http://127.0.0.1:${await closedPort()}` },
      });
      expect(json.code).toBe(2);
      expect(JSON.parse(json.out)).toEqual({ error: { kind: 'unreachable', message: expect.stringMatching(/^cannot reach an endpoint/), exitCode: 2 } });
    });

    it('an unreachable Step Functions endpoint: nothing started', async () => {
      const ran = await cli(['--sfn-endpoint', `http://127.0.0.1:${await closedPort()}`, 'run', 'sales_order_lines', '--to', day(5)]);
      expect(ran.code).toBe(2);
      expect(ran.err).toMatch(/cannot reach an endpoint/);
      expect(api.started()).toEqual([]);
    });
  });

  describe('plan', () => {
    it('plan --json: the chunks, the load and gate SQL, nothing published, an estimate; starts nothing', async () => {
      const ran = await cli(['--json', 'plan', 'sales_order_lines', '--to', day(5)]);
      expect(ran.code).toBe(0);
      const plan = JSON.parse(ran.out);
      expect(plan.batchId).toBe(batchOf(day(0), day(5)));
      expect(plan.chunks.map((c: { start: string }) => c.start)).toEqual([0, 1, 2, 3, 4].map(day));
      expect(plan.sql.load.sql).toContain(`INSERT INTO "analytics"."sales_order_lines__stg_${plan.batchId}"`);
      expect(plan.sql.gate.sql).toContain('chunk_state');
      expect(plan.published).toEqual([]);
      expect(plan.estimate).toMatchObject({ chunksToLoad: 5, stateTransitions: 6, dataApiRequests: 23 });
      expect(plan.estimate.costUsd).toBeGreaterThan(0);
      expect(api.started()).toEqual([]);
    });
  });
});

describe('plan, run, status, history', () => {
  describe('a run', () => {
    // The run and its repetition are the arrangement of `published`.
    it('run --json publishes and says so; the same command again starts nothing', () => {
      const { ran, again, started, live, expected, publications } = published.arranged;
      expect(ran.code).toBe(0);
      const result = JSON.parse(ran.out);
      expect(result).toMatchObject({
        status: 'SUCCEEDED',
        outcome: 'published',
        started: true,
        execution: nameOf(day(0), day(5)),
        batchId: batchOf(day(0), day(5)),
        chunks: 5,
        chunksLoaded: 5,
        rows: 100,
      });
      expect(live).toEqual(expected);

      expect(again.code).toBe(0);
      expect(JSON.parse(again.out)).toMatchObject({
        status: 'SUCCEEDED',
        started: false,
        outcome: 'published',
        reason: `execution ${nameOf(day(0), day(5))} of this command already succeeded`,
      });
      // One shape: the run that published and the one that found it done.
      expect(fields(ran.out)).toEqual(RESULT_FIELDS);
      expect(fields(again.out)).toEqual(RESULT_FIELDS);
      expect(started).toEqual([nameOf(day(0), day(5))]);
      expect(publications).toBe(1);
    });
  });

  describe('after a publication', () => {
    const { wf, cli } = useCli(published);

    it('plan shows the interval published; status and history read the manifest', async () => {
      const plan = JSON.parse((await cli(['--json', 'plan', 'sales_order_lines', '--to', day(6)])).out);
      expect(plan.published).toEqual([expect.objectContaining({ seq: 1, batchId: batchOf(day(0), day(5)), rows: 100 })]);
      expect(plan.chunks.every((c: { loaded: boolean }) => !c.loaded)).toBe(true);
      // The batch published: its chunks are loaded.
      const replay = JSON.parse((await cli(['--json', 'plan', 'sales_order_lines', '--to', day(5)])).out);
      expect(replay).toMatchObject({ batchStatus: 'PUBLISHED', estimate: { chunksToLoad: 0 } });
      expect(replay.chunks.map((c: { loaded: boolean }) => c.loaded)).toEqual([true, true, true, true, true]);

      const statusRan = await cli(['--json', 'status', 'sales_order_lines']);
      expect(statusRan.code).toBe(0);
      expect(statusRan.err).toMatch(/alarms not read \(CloudWatch/);
      // One shape, a pipeline named or not: {"pipelines": [...]}, every pipeline of the registry without one.
      const named = JSON.parse(statusRan.out);
      expect(Object.keys(named)).toEqual(['pipelines']);
      expect(named.pipelines).toHaveLength(1);
      const all = JSON.parse((await cli(['--json', 'status'])).out);
      expect(Object.keys(all)).toEqual(['pipelines']);
      expect(all.pipelines.map((p: { pipeline: string }) => p.pipeline)).toEqual(pipelines.map((p) => p.name));
      const status = named.pipelines[0];
      expect(all.pipelines[0]).toMatchObject({ live: status.live, lastBatch: status.lastBatch });
      expect(status.alarms).toBeNull();
      expect(status).toMatchObject({
        live: { seq: 1, batchId: batchOf(day(0), day(5)) },
        lastBatch: { status: 'PUBLISHED' },
        freshness: { slaMinutes: PIPELINE.freshness.slaMinutes },
        running: [],
      });
      // The data's own age: the newest event time in the live table, as the monitor reads it.
      const [newest] = await wf.query<{ newest: string }>(`SELECT to_char(MAX(${PIPELINE.timeColumn}), 'YYYY-MM-DD HH24:MI:SS') AS newest FROM ${LIVE}`);
      expect(status.dataLag.newestEvent).toContain(newest!.newest);
      expect(status.dataLag.lagMinutes).toBeGreaterThanOrEqual(status.freshness.ageMinutes);
      expect((await cli(['status', 'sales_order_lines'])).out).toContain(`newest event ${status.dataLag.newestEvent}`);

      const { pipeline, batches } = JSON.parse((await cli(['--json', 'history', 'sales_order_lines'])).out);
      expect(pipeline).toBe('sales_order_lines');
      expect(batches).toHaveLength(1);
      expect(batches[0]).toMatchObject({ batchId: batchOf(day(0), day(5)), status: 'PUBLISHED', chunks: 5, rows: 100, checks: { failed: [] }, event: 'sent' });
      expect(batches[0].checks.passed).toBeGreaterThan(0);
      // How long the batch took, from the manifest's own times.
      const [times] = await wf.query<{ took: number }>(
        `SELECT ROUND(EXTRACT(EPOCH FROM finished_at - started_at))::int AS took FROM atomic_publish.batches WHERE batch_id = $1`,
        [batchOf(day(0), day(5))],
      );
      expect(batches[0].tookSeconds).toBe(times!.took);

      const table = await cli(['history', 'sales_order_lines']);
      // A row of two lines: the batch and its mode; its interval, status and event; chunks and rows; checks; when it started and how long it took.
      expect(table.out).toMatch(
        new RegExp(
          `│ ${batchOf(day(0), day(5))} +│ ${shortTime(day(0))} \\.\\. ${shortTime(day(5))} +│ PUBLISHED +│ 5 chunk\\(s\\) +│ \\d+ passed +│ [^│]+│\n` +
            `│ swap +│ +│ event sent +│ 100 rows +│ +│ took (\\d+h )?(\\d+m )?\\d+[sm] +│`,
        ),
      );

      // A publication whose event was never sent shows so, until it is.
      await wf.query(`UPDATE atomic_publish.publications SET event_sent_at = NULL WHERE batch_id = $1`, [batchOf(day(0), day(5))]);
      expect(JSON.parse((await cli(['--json', 'history', 'sales_order_lines'])).out).batches[0].event).toBe('unsent');
    });
  });
});

describe('check: the gate without publishing', () => {
  const interval = { from: new Date(day(0)), to: new Date(day(5)) };
  const checkOf = (n: number) =>
    batchIdFor(PIPELINE, resolveInterval({ pipeline: PIPELINE.name, from: day(0), to: day(5) }, PIPELINE, new Date()), { kind: 'check', n });

  describe('a first check, after a publication', () => {
    const { wf, api, cli } = useCli(published);
    const publications = async () => (await wf.publications()).length;

    it('passes with exit 0 and a table of every check; publishes nothing; status leaves it out, history shows it as a check', async () => {
      const live = await wf.fingerprint('analytics.sales_order_lines');
      const before = await publications();

      const ran = await cli(['check', 'sales_order_lines', '--from', day(0), '--to', day(5), '--poll-ms', '50']);

      expect(ran.code, ran.err).toBe(0);
      expect(ran.out).toMatch(/staging_rows_match_source\s+│ passed/);
      expect(flat(ran.out)).toContain(
        `Check 1 of sales_order_lines ${day(0)} .. ${day(5)} PASSED (execution ${checkRunName(PIPELINE.name, interval, 1, 1)}, batch ${checkOf(1)}); nothing was published.`,
      );
      expect(api.started()).toContain(checkRunName(PIPELINE.name, interval, 1, 1));
      expect(checkRunName(PIPELINE.name, interval, 1, 1)).not.toBe(nameOf(day(0), day(5)));
      expect(await wf.fingerprint('analytics.sales_order_lines')).toEqual(live);
      expect(await publications()).toBe(before);
      expect(JSON.parse((await cli(['--json', 'status', 'sales_order_lines'])).out).pipelines[0].lastBatch).toMatchObject({
        batchId: batchOf(day(0), day(5)),
        status: 'PUBLISHED',
      });
      expect((await cli(['history', 'sales_order_lines'])).out).toMatch(new RegExp(`│ ${checkOf(1)} +│.*\n│ swap \\(check\\) +│`));
      expect(JSON.parse((await cli(['--json', 'history', 'sales_order_lines'])).out).batches[0]).toMatchObject({
        batchId: checkOf(1),
        purpose: 'check',
        status: 'CHECK_PASSED',
      });

      // --json reports the gate's verdict, not how the execution ended.
      const json = await cli(['--json', 'check', 'sales_order_lines', '--from', day(0), '--to', day(5), '--poll-ms', '50']);
      expect(json.code, json.err).toBe(0);
      expect(JSON.parse(json.out)).toMatchObject({ status: 'SUCCEEDED', outcome: 'passed', passed: true, failed: [], check: 2, batchId: checkOf(2) });
    });
  });

  describe('checks of a planted difference, after a check that passed', () => {
    const { wf, cli } = useCli(published);
    beforeAll(async () => {
      // Check 1 of the interval, passed: the checks below are its 2nd and 3rd.
      const first = await cli(['check', 'sales_order_lines', '--from', day(0), '--to', day(5), '--poll-ms', '50']);
      if (first.code !== 0) throw new Error(`the arranged check 1 did not pass: ${first.out} ${first.err}`);
    });

    it('exits 1 for a planted difference, naming the failing check first and the next step; --json is one object; live untouched', async () => {
      const live = await wf.fingerprint('analytics.sales_order_lines');
      // A second source row with the key of an existing one: the business key is no longer unique.
      await wf.query(
        `INSERT INTO source.sales_order_lines SELECT * FROM source.sales_order_lines WHERE ordered_at >= $1 AND ordered_at < $2 ORDER BY order_id, line_no LIMIT 1`,
        [day(2).slice(0, 19), day(3).slice(0, 19)],
      );
      const ran = await cli(['--json', 'check', 'sales_order_lines', '--from', day(0), '--to', day(5), '--poll-ms', '50']);

      expect(ran.code).toBe(1);
      const result = JSON.parse(ran.out);
      expect(fields(ran.out)).toEqual([...RESULT_FIELDS, 'check', 'checks', 'failed', 'passed'].sort());
      expect(result).toMatchObject({
        status: 'SUCCEEDED',
        outcome: 'failed',
        check: 2,
        batchId: checkOf(2),
        passed: false,
        failed: ['business_key_unique'],
        execution: checkRunName(PIPELINE.name, interval, 2, 1),
      });
      expect(result.checks[0]).toMatchObject({
        check: 'business_key_unique',
        passed: false,
        observed: '1 key value(s) on more than one row',
        expected: 'each (order_id, line_no) on one row',
      });
      expect(result.checks.at(-1).passed).toBe(true);
      expect(result.next).toMatch(/^nothing was published\. The failing checks above say what differs/);

      const text = await cli(['check', 'sales_order_lines', '--from', day(0), '--to', day(5), '--poll-ms', '50']);
      expect(text.code).toBe(1);
      expect(text.out.split('\n').find((line) => /│ (passed|FAILED)/.test(line))).toMatch(/business_key_unique\s+│ FAILED/);
      expect(flat(text.out)).toContain(`Check 3 of sales_order_lines ${day(0)} .. ${day(5)} FAILED: business_key_unique`);
      expect(text.err).toMatch(/Next step: nothing was published\./);
      expect(await wf.fingerprint('analytics.sales_order_lines')).toEqual(live);
      expect(wf.runner.describe(executionArnOf(wf.runner.workflow.stateMachineArn, checkRunName(PIPELINE.name, interval, 3, 1)))).toBeDefined();
    });
  });
});

describe('a backfill interrupted and resumed by repeating the command', () => {
  describe('by a stop', () => {
    const { wf, sfn, cli, holdLoadsFrom, publicationsOf, doneChunks } = useCli(sampled);

    it('stopped execution: exits 1 with the next step; the command again resumes the batch under the next name, one publication', async () => {
      const [from, to] = [history.from, day(7)];
      const batchId = batchOf(from, to);
      const hold = holdLoadsFrom(3);
      const first = cli(['--json', 'backfill', 'sales_order_lines', '--from', from, '--to', to, '--poll-ms', '50']);
      await hold.entered;
      await sfn.send(new StopExecutionCommand({ executionArn: executionArnOf(wf.runner.workflow.stateMachineArn, nameOf(from, to)) }));
      const stopped = await first;
      hold.fail();
      await wf.quiesce();
      expect(stopped.code).toBe(1);
      const result = JSON.parse(stopped.out);
      expect(fields(stopped.out)).toEqual(RESULT_FIELDS);
      expect(result.outcome).toBe('stopped');
      expect(result).toMatchObject({ status: 'ABORTED', execution: nameOf(from, to), batchId });
      expect(result.next).toBe(
        `the execution was stopped; run \`atomic-publish backfill sales_order_lines --from ${from} --to ${to}\` to resume: a new execution resumes the same batch, loading only the chunks not loaded yet.`,
      );
      const loadedBefore = await doneChunks(batchId);
      expect(loadedBefore.length).toBeLessThan(7);

      wf.reset();
      delete wf.faults.LoadChunk;
      const resumed = await cli(['--json', 'backfill', 'sales_order_lines', '--from', from, '--to', to, '--poll-ms', '50']);
      expect(resumed.code).toBe(0);
      expect(JSON.parse(resumed.out)).toMatchObject({ status: 'SUCCEEDED', execution: nameOf(from, to, 2), batchId, chunks: 7, chunksLoaded: 7 });
      // The resumed run loaded only what the stopped one had not.
      expect(wf.loads.started.filter((c) => loadedBefore.includes(c))).toEqual([]);
      expect(await publicationsOf(batchId)).toBe(1);
      expect(await wf.fingerprint('analytics.sales_order_lines')).toEqual(await wf.expected(7));
    });
  });

  describe('by a killed follower', () => {
    const c = useCli(sampled);
    const { wf, api, sfn, cli, holdLoadsFrom, publicationsOf } = c;

    it('killed follower (a real process): the execution goes on; the command again follows the same execution, nothing duplicated', async () => {
      const [from, to] = [history.from, day(8)];
      const batchId = batchOf(from, to);
      const name = nameOf(from, to);
      const hold = holdLoadsFrom(2);
      const child = spawnCli(['--json', 'backfill', 'sales_order_lines', '--from', from, '--to', to, '--poll-ms', '50'], c.env);
      let [childOut, childErr] = ['', ''];
      child.stderr!.on('data', (chunk: Buffer) => (childErr += chunk.toString()));
      child.stdout!.on('data', (chunk: Buffer) => (childOut += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      await Promise.race([hold.entered, exited.then((code) => fail(`the command exited ${code} before a chunk load was held: ${childOut} ${childErr}`))]);
      child.kill('SIGTERM');
      expect(await exited).toBe(130);
      // --json: the run's result, the execution still running, and how to follow or stop it.
      const executionArn = executionArnOf(wf.runner.workflow.stateMachineArn, name);
      expect(JSON.parse(childOut)).toMatchObject({ outcome: 'interrupted', status: 'RUNNING', execution: name, executionArn, started: true, batchId });
      expect(JSON.parse(childOut).next).toContain(`\`aws stepfunctions stop-execution --execution-arn ${executionArn}\``);
      expect((await sfn.send(new DescribeExecutionCommand({ executionArn: executionArnOf(wf.runner.workflow.stateMachineArn, name) }))).status).toBe('RUNNING');

      const again = await cli(['--json', 'backfill', 'sales_order_lines', '--from', from, '--to', to, '--poll-ms', '50'], {
        onStderr: (line) => {
          if (line.startsWith('Following the running execution')) hold.release();
        },
      });
      expect(again.err).toContain(`Following the running execution ${name}`);
      expect(again.code).toBe(0);
      expect(JSON.parse(again.out)).toMatchObject({ status: 'SUCCEEDED', started: false, execution: name, batchId, chunksLoaded: 8 });
      expect(api.started().filter((n) => n.startsWith(name))).toEqual([name]);
      expect(await publicationsOf(batchId)).toBe(1);
    });
  });
});

describe('Ctrl-C while following, in a terminal (a real process)', () => {
  const c = useCli(sampled);
  const { wf, sfn, holdLoadsFrom, publicationsOf } = c;
  const [HIDE_CURSOR, SHOW_CURSOR, NO_WRAP, WRAP] = ['\x1b[?25l', '\x1b[?25h', '\x1b[?7l', '\x1b[?7h'];

  it('restores the terminal, says the execution goes on and how to follow or stop it, exits 130; the execution then publishes', async () => {
    const [from, to] = [history.from, day(6)];
    const executionArn = executionArnOf(wf.runner.workflow.stateMachineArn, nameOf(from, to));
    const hold = holdLoadsFrom(2);
    const child = spawnInTerminal(['backfill', 'sales_order_lines', '--from', from, '--to', to, '--poll-ms', '50'], c.env);
    let out = '';
    // The progress bar drawn: it hid the cursor and turned line wrapping off.
    const drawn = new Promise<void>((resolve) =>
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes(HIDE_CURSOR) && out.includes(NO_WRAP)) resolve();
      }),
    );
    child.stderr!.resume();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await Promise.race([
      Promise.all([hold.entered, drawn]),
      exited.then((code) => fail(`the command exited ${code} before its bar was drawn over a held load: ${out}`)),
    ]);

    child.stdin!.write('\x03');

    expect(await exited).toBe(130);
    child.stdin!.end();
    expect(out.lastIndexOf(SHOW_CURSOR)).toBeGreaterThan(out.lastIndexOf(HIDE_CURSOR));
    expect(out.lastIndexOf(WRAP)).toBeGreaterThan(out.lastIndexOf(NO_WRAP));
    const said = out.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '');
    expect(flat(said)).toContain(`Stopped following (interrupted). Execution ${nameOf(from, to)} goes on in Step Functions: ${executionArn}`);
    for (const line of [
      'Follow it:',
      '  atomic-publish status sales_order_lines',
      '  atomic-publish history sales_order_lines',
      `  atomic-publish backfill sales_order_lines --from ${from} --to ${to}   (follows it to its end again)`,
      'Stop it, if it should not go on:',
      `  aws stepfunctions stop-execution --execution-arn ${executionArn}`,
    ]) {
      expect(said.split('\n')).toContain(line);
    }
    expect((await sfn.send(new DescribeExecutionCommand({ executionArn }))).status).toBe('RUNNING');

    hold.release();
    expect((await wf.runner.describe(executionArn)!.running.result).status).toBe('SUCCEEDED');
    expect(await publicationsOf(batchOf(from, to))).toBe(1);
  });
});

describe('rollback', () => {
  /** Publications of days 0..7 and then 0..8 (backfills from historyStart): a rollback puts back the first. */
  const twice = useWorkflowFixture('cli_e2e_twice', async (wf) => {
    await wf.sample(SAMPLE);
    const { cli, close } = await startCli(wf);
    try {
      for (const to of [day(7), day(8)]) {
        const ran = await cli(['backfill', 'sales_order_lines', '--from', history.from, '--to', to, '--poll-ms', '50']);
        if (ran.code !== 0) throw new Error(`the arranged backfill to ${to} failed: ${ran.out} ${ran.err}`);
      }
    } finally {
      await close();
    }
  });

  describe('targets Plan would refuse', () => {
    const { wf, sfn, cli } = useCli(twice);
    const [first, second] = [batchOf(history.from, day(7)), batchOf(history.from, day(8))];
    const refused = async (argv: string[], message: RegExp) => {
      const ran = await cli(['rollback', 'sales_order_lines', ...argv]);
      expect(ran.code, ran.out).toBe(2);
      expect(flat(ran.err)).toMatch(message);
      expect(ran.err).toMatch(/Nothing was started\.$/);
    };

    it("refuses each with exit 2 and Plan's reason, before starting an execution or paging anyone", async () => {
      // What to do instead: the command, with a batch that is retained.
      await refused(
        ['--to', '0123456789abcdef'],
        new RegExp(
          `0123456789abcdef is not a batch of pipeline sales_order_lines .*roll back to one with \`atomic-publish rollback sales_order_lines --to ${first}\``,
        ),
      );
      await refused(['--to', 'yesterday'], /: --to must be a batch id \(16 hexadecimal digits/);
      // The old version of publication 2 (batch `first`) dropped outside atomic-publish, then marked dropped as Cleanup does.
      const [held] = await wf.query<{ old_version_table: string }>('SELECT old_version_table FROM atomic_publish.publications WHERE seq = 2');
      await wf.query(`DROP TABLE ${held!.old_version_table}`);
      await refused(['--to', first], new RegExp(`rows of batch ${first} are in ${held!.old_version_table}.*but that table does not exist`));
      await wf.query('UPDATE atomic_publish.publications SET dropped_at = CURRENT_TIMESTAMP WHERE seq = 2');
      await refused(['--to', first], new RegExp(`batch ${first} of sales_order_lines is past retention`));
      await refused([], /live before its latest publication \(batch [0-9a-f]{16}\) is no longer retained/);
      // The batch live now: nothing to do, and nothing started either.
      const live = await cli(['rollback', 'sales_order_lines', '--to', second]);
      expect(live).toMatchObject({ code: 0, out: `Nothing started: batch ${second} is live already.` });
      const json = await cli(['--json', 'rollback', 'sales_order_lines', '--to', second]);
      expect(JSON.parse(json.out)).toEqual(runResult(PIPELINE, 'nothing-to-publish', { batchId: second, reason: `batch ${second} is live already` }));

      expect((await sfn.send(new ListExecutionsCommand({ stateMachineArn: wf.runner.workflow.stateMachineArn }))).executions).toEqual([]);
      expect(wf.runner.alerts).toEqual([]);
    });
  });

  describe('of the latest publication, and of that rollback', () => {
    const { wf, cli } = useCli(twice);

    it('puts back the version before the latest publication; the same command again undoes it under a name of its own', async () => {
      const before = (await wf.publications()).length;
      const ran = await cli(['--json', 'rollback', 'sales_order_lines', '--poll-ms', '50']);
      expect(ran.code).toBe(0);
      expect(JSON.parse(ran.out)).toMatchObject({ status: 'SUCCEEDED', started: true, outcome: 'rolled-back', batchId: null });
      expect(fields(ran.out)).toEqual(RESULT_FIELDS);
      expect(await wf.fingerprint('analytics.sales_order_lines')).toEqual(await wf.expected(7));
      const after = await wf.publications();
      expect(after).toHaveLength(before + 1);
      const again = await cli(['--json', 'rollback', 'sales_order_lines', '--poll-ms', '50']);
      // The rollback is now the latest publication: the same command rolls that back (undoes it), under a name of its own.
      expect(again.code).toBe(0);
      expect(JSON.parse(again.out).execution).not.toBe(JSON.parse(ran.out).execution);
      expect(await wf.fingerprint('analytics.sales_order_lines')).toEqual(await wf.expected(8));
    });
  });
});

describe('a run while another execution holds the lease', () => {
  const { wf, sfn, cli, holdLoadsFrom, publicationsOf } = useCli(sampled);

  it('ends busy with exit 1, having run nothing; the command again after the holder ended runs its next attempt', async () => {
    const hold = holdLoadsFrom(0);
    const holder = await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: wf.runner.workflow.stateMachineArn,
        name: 'lease-holder',
        input: JSON.stringify({ pipeline: PIPELINE.name, to: day(9) }),
      }),
    );
    await hold.entered;
    const busy = await cli(['--json', 'run', 'sales_order_lines', '--to', day(9), '--poll-ms', '50']);
    expect(busy.code).toBe(1);
    expect(JSON.parse(busy.out)).toMatchObject({ status: 'SUCCEEDED', outcome: 'busy', execution: nameOf(day(0), day(9)) });
    expect(fields(busy.out)).toEqual(RESULT_FIELDS);
    expect(JSON.parse(busy.out).next).toBe(
      `run \`atomic-publish run sales_order_lines --to ${day(9)}\` again once that execution has ended: the next attempt runs.`,
    );

    hold.release();
    await wf.runner.describe(holder.executionArn!)!.running.result;
    delete wf.faults.LoadChunk;
    const again = await cli(['--json', 'run', 'sales_order_lines', '--to', day(9), '--poll-ms', '50']);
    expect(again.code).toBe(0);
    // The holder published this very batch: the next attempt finds it published.
    expect(JSON.parse(again.out)).toMatchObject({ status: 'SUCCEEDED', outcome: 'nothing-to-publish', execution: nameOf(day(0), day(9), 2), started: true });
    expect(await publicationsOf(batchOf(day(0), day(9)))).toBe(1);
  });
});

describe('a failed run', () => {
  const { wf, cli } = useCli(sampled);

  it("exits 1 with the alert's reason and its next step", async () => {
    wf.faults.Reconcile = async () => {
      throw Object.assign(new Error('1 check(s) failed for the batch: staging_rows_match_source'), { name: 'CheckFailedError' });
    };
    const ran = await cli(['run', 'sales_order_lines', '--to', day(10), '--poll-ms', '50']);
    delete wf.faults.Reconcile;
    expect(ran.code).toBe(1);
    expect(ran.err).toContain(`Execution ${nameOf(day(0), day(10))} FAILED`);
    expect(ran.err).toContain('CheckFailedError: 1 check(s) failed for the batch');
    // The alert's next step, with the command to repeat instead of the execution input.
    expect(flat(ran.err)).toContain(
      `Next step: fix the source rows the check names (atomic_publish.check_results holds them), then run \`atomic-publish run sales_order_lines --to ${day(10)}\`; only the chunks that differ reload.`,
    );
  });
});

describe('local up (a real process)', () => {
  /** The fewest days local up takes (local/recent-sample.ts MIN_SAMPLE_DAYS): the least work. */
  const UP_SAMPLE_DAYS = MIN_SAMPLE_DAYS;
  it('starts the engine, prints endpoints and environment the CLI works with, and stops on Ctrl-C', async () => {
    const database = `cli_up_${process.pid}`;
    const startedOn = new Date();
    // An engine of its own, on the suite's PostgreSQL (its data directory) in a database of its own.
    const child = spawnCli(['local', 'up', '--database', database, '--sample-days', String(UP_SAMPLE_DAYS), '--rows-per-day', '5'], {
      ...process.env,
      ...LOCAL_AWS_ENV,
      ATOMIC_PUBLISH_PG_DIR: path.join(STATE_DIR, 'test-pg'),
    });
    let out = '';
    const ready = new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('# ready')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`local up exited ${code} before it was ready: ${out}`)));
    });
    child.stderr!.resume();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await ready;
      const printed = Object.fromEntries([...out.matchAll(/^export (\w+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!.replace(/^'|'$/g, '')]));
      expect(printed).toMatchObject({ WAREHOUSE_DATABASE: database, ATOMIC_PUBLISH_STATE_MACHINE_ARN: expect.stringContaining(':stateMachine:') });
      expect(printed.AWS_ENDPOINT_URL_SFN).toBe(printed.ATOMIC_PUBLISH_SFN_ENDPOINT);
      // The publication events' endpoint, printed and exported.
      expect(out).toContain(`# EventBridge     ${printed.AWS_ENDPOINT_URL_EVENTBRIDGE} (the publication events)`);
      expect(printed.AWS_ENDPOINT_URL_EVENTBRIDGE).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const status = await runCli(['--json', 'status'], { ...process.env, ...printed });
      expect(status.code).toBe(0);
      const pipelines = JSON.parse(status.out).pipelines as { pipeline: string; alarms: { state: string }[] }[];
      expect(pipelines.map((p) => p.pipeline)).toEqual(['sales_order_lines', 'daily_sales']);
      const pipeline = pipelines[0]!;
      expect(pipeline).toMatchObject({ live: null, running: [] });
      // The stack's alarms of the pipeline, from the local CloudWatch endpoint, which local up evaluates on the real
      // clock (test/local/cloudwatch-local-up.test.ts: one turns ALARM after a failure).
      expect(pipeline.alarms.length).toBeGreaterThan(0);
      for (const alarm of pipeline.alarms as { state: string }[]) expect(['OK', 'ALARM', 'INSUFFICIENT_DATA']).toContain(alarm.state);
      // The sample ends today: a plain run plans its days, a rebuild of every one and the morning's run of daily_sales.
      // (Today when it started or when it was ready: a run across midnight UTC may take either.)
      const firstDays = [startedOn, new Date()].map((d) => new Date(Date.parse(`${d.toISOString().slice(0, 10)}T00:00:00Z`) - UP_SAMPLE_DAYS * 86_400_000));
      expect(firstDays.map((d) => d.toISOString().slice(0, 10))).toContain(printed.ATOMIC_PUBLISH_SAMPLE_START);
      const firstDay = printed.ATOMIC_PUBLISH_SAMPLE_START!;
      const today = new Date(Date.parse(`${firstDay}T00:00:00Z`) + UP_SAMPLE_DAYS * 86_400_000).toISOString().slice(0, 10);
      expect(out).toContain(`order lines of [${firstDay}, ${today})`);
      // Planned as another shell plans them: a process of its own, which reads the start from its environment.
      const plan = await atomicPublish(['--json', 'plan', 'sales_order_lines'], printed);
      expect(JSON.parse(plan.out).chunks).toHaveLength(UP_SAMPLE_DAYS);
      const morning = await atomicPublish(['--json', 'plan', 'daily_sales'], printed);
      expect(JSON.parse(morning.out).chunks).toHaveLength(2);
      const backfill = await atomicPublish(
        ['--json', 'plan', 'daily_sales', '--from', printed.ATOMIC_PUBLISH_SAMPLE_CORRECTED_FROM!, '--to', printed.ATOMIC_PUBLISH_SAMPLE_CORRECTED_TO!],
        printed,
      );
      expect(JSON.parse(backfill.out).chunks).toHaveLength(2);
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).toBe(0);
    await dropDatabase(inject('pg'), database);
  });
});
