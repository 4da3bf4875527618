// Failures at the last step: the swap transaction failing for real in the
// warehouse, and another batch publishing after this one was planned. The
// live table is never half-swapped, the manifest records no publication
// that did not happen, and a re-run reaches the state of one clean run.
// Each failure is arranged once; the tests read a copy of what it left, and
// each re-run acts on a copy of its own (test/support/workflow.ts useFork).
import { beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionResult } from '../../local/runner.ts';
import {
  caughtError,
  caughtMessage,
  type Fingerprint,
  inputFor,
  LIVE,
  loadedChunks,
  namesFor,
  planOf,
  useFork,
  useWorkflowFixture,
  visited,
  visitedOutsideChunks,
} from '../support/workflow.ts';

const ROWS_PER_DAY = 20;
const SAMPLE = { rowsPerDay: ROWS_PER_DAY, sourceDays: 14, liveDays: 6 };

describe('a swap transaction that fails in the warehouse', () => {
  const names = namesFor(9);
  const fixture = useWorkflowFixture('wf_publish_failure', async (wf) => {
    await wf.sample(SAMPLE);
    const old = await wf.fingerprint(LIVE);
    // The name the live table would be renamed to is taken: ALTER TABLE ... RENAME fails inside the swap.
    await wf.query(`CREATE TABLE ${names.previous} (blocker int)`);
    const failed = await wf.run(inputFor(9), 'swap-blocked');
    return { old, failed };
  });
  const wf = useFork(fixture);
  let old: Fingerprint;
  let failed: ExecutionResult;
  beforeAll(() => {
    ({ old, failed } = fixture.arranged);
  });

  it('fails the run at Publish with the database message, after the checks passed', async () => {
    expect(failed.status).toBe('FAILED');
    expect(visitedOutsideChunks(failed)).toEqual([
      'Input',
      'Plan',
      'AlreadyPublished',
      'LoadChunks',
      'Reconcile',
      'CheckOnly',
      'Publish',
      'RecordFailure',
      'Notify',
      'Failed',
    ]);
    expect(caughtError(failed)?.Error).toBe('WarehouseError');
    expect(caughtMessage(failed)).toContain(`relation "${names.previous.replace('analytics.', '')}" already exists`);
  });

  it('rolls the whole swap back: live untouched, staging still present with the new data, the blocker unchanged', async () => {
    expect(await wf.fingerprint(LIVE)).toEqual(old);
    expect(await wf.tableExists(names.staging)).toBe(true);
    expect(await wf.fingerprint(names.staging)).toEqual(await wf.expected(9));
    const blocker = await wf.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'analytics' AND table_name = $1`,
      [names.previous.replace('analytics.', '')],
    );
    expect(blocker.map((c) => c.column_name)).toEqual(['blocker']);
  });

  it('records no publication and marks the batch FAILED with the database message', async () => {
    expect(await wf.publications()).toEqual([]);
    const batch = await wf.batch(names.batchId);
    expect(batch).toMatchObject({ status: 'FAILED', attempt: 1 });
    expect(String(batch!.error)).toMatch(/^WarehouseError: .*publish:swap.* failed: .*already exists/);
    const checks = await wf.query<{ passed: boolean }>('SELECT passed FROM atomic_publish.check_results WHERE batch_id = $1', [names.batchId]);
    expect(checks.map((c) => c.passed)).toEqual([true, true, true, true, true, true, true, true]);
  });

  it('pages once, saying the live table is untouched', () => {
    expect(failed.alerts).toHaveLength(1);
    expect(failed.alerts[0]!.subject).toBe('atomic-publish: sales_order_lines failed (WarehouseError)');
    expect(failed.alerts[0]!.message).toContain(`Live table: ${LIVE} untouched`);
    expect(failed.metrics.find((m) => 'BatchFailed' in m.values)?.values.BatchFailed).toBe(1);
  });

  it("counts it as PublishFailed for the pipeline (the batch passed the gate; the swap did not commit), its publish-failed alarm's metric", () => {
    const records = failed.metrics.filter((m) => 'BatchFailed' in m.values);
    expect(records).toEqual([
      expect.objectContaining({ dimensions: { service: 'atomic-publish', Pipeline: 'sales_order_lines' }, values: { BatchFailed: 1, PublishFailed: 1 } }),
    ]);
  });

  describe('once the name is free', () => {
    const wf = useFork(fixture);
    it('publishes on re-run: same batch, attempt 2, no chunk reloaded', async () => {
      await wf.query(`DROP TABLE ${names.previous}`);
      const rerun = await wf.run(inputFor(9), 'swap-unblocked');
      expect(rerun.status, `${rerun.error}: ${rerun.cause}`).toBe('SUCCEEDED');
      expect(planOf(rerun).batch.batchId).toBe(names.batchId);
      expect(loadedChunks(rerun)).toEqual([]);
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(9));
      expect(await wf.fingerprint(names.previous)).toEqual(old);
      expect(await wf.tableExists(names.staging)).toBe(false);
      expect(await wf.batch(names.batchId)).toMatchObject({ status: 'PUBLISHED', attempt: 2, error: null });
      expect(await wf.publications()).toMatchObject([{ seq: 1, batch_id: names.batchId, old_version_table: names.previous }]);
    });
  });
});

describe('another batch publishing after this one was planned (its lease expired and was taken over)', () => {
  const loser = namesFor(10);
  const winner = namesFor(12);
  const fixture = useWorkflowFixture('wf_publish_conflict', async (wf) => {
    await wf.sample(SAMPLE);
    const publicationsBefore = (await wf.schemaExists('atomic_publish')) ? (await wf.publications()).length : 0;
    let leaseBefore: { execution_id: string }[] = [];
    let second: ExecutionResult | undefined;
    // The first execution is held at Publish while its lease expires and a second, full execution (another `to`) takes it over and publishes.
    let armed = true;
    wf.faults.Publish = async (input, next) => {
      if (armed) {
        armed = false;
        leaseBefore = await wf.query('SELECT execution_id FROM atomic_publish.pipeline_leases');
        await wf.query("UPDATE atomic_publish.pipeline_leases SET expires_at = TIMESTAMP '2000-01-01 00:00:00'");
        second = await wf.run(inputFor(12), 'publishes-meanwhile');
      }
      return next(input);
    };
    const first = await wf.run(inputFor(10), 'planned-before');
    return { first, second, publicationsBefore, leaseBefore };
  });
  const wf = useFork(fixture);
  let first: ExecutionResult;
  let second: ExecutionResult | undefined;
  let publicationsBefore: number;
  let leaseBefore: { execution_id: string }[];
  beforeAll(() => {
    ({ first, second, publicationsBefore, leaseBefore } = fixture.arranged);
  });

  it('lets the second execution take the expired lease over and publish', async () => {
    expect(leaseBefore).toEqual([{ execution_id: first.executionId }]);
    expect(second?.status, `${second?.error}: ${second?.cause}`).toBe('SUCCEEDED');
    expect(visited(second!).at(-1)).toBe('Published');
    // Its Cleanup released the lease it took over; the first's RecordFailure found none of its own.
    expect(await wf.query('SELECT execution_id FROM atomic_publish.pipeline_leases')).toEqual([]);
    expect(await wf.batch(winner.batchId)).toMatchObject({ status: 'PUBLISHED' });
  });

  it('fails the first Publish with PublishConflictError naming both publications', () => {
    expect(first.status).toBe('FAILED');
    expect(caughtError(first)?.Error).toBe('PublishConflictError');
    expect(caughtMessage(first)).toBe(
      `publish guard: pipeline sales_order_lines is at publication ${publicationsBefore + 1} but batch ${loser.batchId} was planned on publication ${publicationsBefore}`,
    );
    const alerts = first.alerts.filter((a) => a.executionId === first.executionId);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.subject).toBe('atomic-publish: sales_order_lines failed (PublishConflictError)');
    expect(alerts[0]!.message).toContain('publish guard');
    // What readers see now (the winner, by the manifest) and what to do next (nothing for this batch).
    expect(alerts[0]!.message).toMatch(
      new RegExp(
        `^Live table: ${LIVE} shows publication ${publicationsBefore + 1} \\(batch ${winner.batchId}, published at [^)]+ UTC\\), published by another batch; this batch was not published and is superseded\\.$`,
        'm',
      ),
    );
    expect(alerts[0]!.message).toMatch(
      /^Next: +no re-run of this batch: another batch published after it was planned\. For the newest data start an execution with input \{"pipeline":"sales_order_lines"\}\.$/m,
    );
  });

  it("leaves the second execution's data live and records only its publication", async () => {
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(12));
    const publications = await wf.publications();
    expect(publications).toHaveLength(publicationsBefore + 1);
    expect(publications.at(-1)).toMatchObject({ seq: publicationsBefore + 1, batch_id: winner.batchId });
    expect(publications.some((p) => p.batch_id === loser.batchId)).toBe(false);
    const batch = await wf.batch(loser.batchId);
    expect(batch).toMatchObject({ status: 'FAILED', base_publication: publicationsBefore });
    expect(String(batch!.error)).toMatch(/^PublishConflictError: publish guard/);
    expect(await wf.tableExists(loser.staging)).toBe(true);
    expect(await wf.tableExists(loser.previous)).toBe(false);
  });

  describe("the loser's re-run", () => {
    const wf = useFork(fixture);
    it("ends SUPERSEDED without a page: the winner's newer data stays live", async () => {
      const winnerData = await wf.fingerprint(LIVE);
      const rerun = await wf.run(inputFor(10), 'planned-again');
      expect(rerun.status, `${rerun.error}: ${rerun.cause}`).toBe('SUCCEEDED');
      expect(visitedOutsideChunks(rerun).slice(-3)).toEqual(['Publish', 'NewerDataLive', 'Superseded']);
      expect(planOf(rerun).batch).toMatchObject({ batchId: loser.batchId, basePublication: publicationsBefore + 1 });
      expect(rerun.alerts).toEqual([]);
      expect(await wf.fingerprint(LIVE)).toEqual(winnerData);
      expect((await wf.publications()).at(-1)).toMatchObject({ seq: publicationsBefore + 1, batch_id: winner.batchId });
      const batch = await wf.batch(loser.batchId);
      expect(batch).toMatchObject({ status: 'SUPERSEDED', attempt: 2 });
      expect(String(batch!.error)).toMatch(
        new RegExp(
          `^publish guard: pipeline sales_order_lines already publishes data up to 2026-01-13 00:00:00, later than the 2026-01-11 00:00:00 of batch ${loser.batchId}$`,
        ),
      );
      expect(await wf.query('SELECT attempt, status FROM atomic_publish.batch_attempts WHERE batch_id = $1 ORDER BY attempt', [loser.batchId])).toEqual([
        { attempt: 1, status: 'FAILED' },
        { attempt: 2, status: 'SUPERSEDED' },
      ]);
      expect(await wf.query('SELECT execution_id FROM atomic_publish.pipeline_leases')).toEqual([]);
    });
  });
});
