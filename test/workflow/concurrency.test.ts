// Executions of the same pipeline at the same time: two publishers racing
// for the swap, and a Plan overlapping another Plan's manifest DDL.
import { newClient } from '../../local/pg-clients.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestDdl } from '../../domain/sql/manifest.ts';
import {
  caughtError,
  caughtMessage,
  inputFor,
  LIVE,
  namesFor,
  useWorkflow,
  visited,
  type TaskOverride,
  type Workflow,
} from '../support/workflow.ts';

let wf: Workflow;
beforeAll(async () => {
  wf = await useWorkflow('wf_concurrency');
  await wf.sample({ rowsPerDay: 20, sourceDays: 12, liveDays: 5 });
});
afterAll(() => wf?.close());

describe('two executions publishing at the same moment', () => {
  it('exactly one wins; the other fails with PublishConflictError; live is exactly the winner', async () => {
    wf.reset();
    const old = await wf.fingerprint(LIVE);
    // Plans one after the other (see the next test for overlapping Plans), then both held at
    // Publish until both got there and released together: the swap transactions race.
    let planning = Promise.resolve();
    wf.faults.Plan = (input, next) => {
      const run = planning.then(() => next(input));
      planning = run.then(
        () => undefined,
        () => undefined,
      );
      return run;
    };
    let arrived = 0;
    let release!: () => void;
    const bothThere = new Promise<void>((resolve) => (release = resolve));
    const barrier: TaskOverride = async (input, next) => {
      arrived += 1;
      if (arrived === 2) release();
      await bothThere;
      return next(input);
    };
    wf.faults.Publish = barrier;
    const days = [8, 9] as const;
    // An execution that ends without reaching Publish releases the other one (and fails the test below).
    const results = await Promise.all(days.map((day) => wf.run(inputFor(day), `race-${day}`).finally(release)));
    wf.reset();

    expect(arrived, 'both executions reached Publish').toBe(2);
    expect(results.map((r) => r.status).sort()).toEqual(['FAILED', 'SUCCEEDED']);
    const winner = results.findIndex((r) => r.status === 'SUCCEEDED');
    const loser = 1 - winner;
    const loserResult = results[loser]!;
    expect(visited(loserResult).filter((s) => s !== 'LoadChunk').slice(-4)).toEqual(['Publish', 'RecordFailure', 'Notify', 'Failed']);
    expect(caughtError(loserResult)?.Error).toBe('PublishConflictError');
    expect(caughtMessage(loserResult)).toMatch(/^publish guard: pipeline sales_order_lines is at publication 1 but batch \w+ was planned on publication 0$/);

    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(days[winner]!));
    const publications = await wf.publications();
    expect(publications).toHaveLength(1);
    expect(publications[0]).toMatchObject({ seq: 1, batch_id: namesFor(days[winner]!).batchId });
    expect(await wf.fingerprint(namesFor(days[winner]!).previous)).toEqual(old);
    const lost = await wf.batch(namesFor(days[loser]!).batchId);
    expect(lost).toMatchObject({ status: 'FAILED' });
    expect(String(lost!.error)).toMatch(/^PublishConflictError: publish guard/);
    expect(await wf.tableExists(namesFor(days[loser]!).previous)).toBe(false);
    // The loser's staging is kept, unless the winner's Cleanup (after the loser failed) dropped it, and then the manifest says so.
    expect(await wf.tableExists(namesFor(days[loser]!).staging)).toBe(lost!.staging_dropped_at === null);
  });
});

// Fixed bug, kept as a regression test (domain/sql/manifest.ts manifestDdl; functions/plan): every Plan used to run the
// manifest DDL (`CREATE OR REPLACE PROCEDURE ...`), and two Plans doing so at once collided in the catalog
// ("tuple concurrently updated"), failing a run only because another execution was planning at the same
// moment. Plan now reads the installed manifest version and runs the DDL only when it is older.
describe('a Plan overlapping another session that holds the manifest DDL open', () => {
  it('neither waits for it nor fails: an installed manifest is only read', async () => {
    wf.reset();
    const other = newClient(wf.wh.pg);
    await other.connect();
    try {
      await other.query('BEGIN');
      for (const statement of manifestDdl(new Date())) await other.query(statement);
      const result = await wf.run(inputFor(10), 'overlapping-plan');
      expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(10));
    } finally {
      await other.query('COMMIT');
      await other.end();
    }
  });
});
