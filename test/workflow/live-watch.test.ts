// The live watch on real parts: a publish records the live table's fingerprint;
// the monitor's watch recomputes it through the local Data API, writes LiveDrift
// to the local CloudWatch, which evaluates the synthesized alarm and pages through
// the local SNS outbox. Watch and alarm run at chosen instants, a watch period
// apart. Why: docs/decisions/live-watch.md
import { GetMetricStatisticsCommand } from '@aws-sdk/client-cloudwatch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireLease } from '../../domain/lease/sql/lease.ts';
import { liveColumnsQuery, liveFingerprintQuery } from '../../domain/live-watch/sql/out-of-band.ts';
import { monitorSetupStatements } from '../../domain/setup/sql/setup.ts';
import { DEFAULT_POLL } from '../../functions/commons/warehouse.ts';
import { watchLive } from '../../functions/freshness-monitor/live-watch.ts';
import { localWarehouse } from '../../local/aws-clients.ts';
import type { AlarmTransition } from '../../local/cloudwatch-api.ts';
import { ensureLocalUser } from '../../local/database-users.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { type LocalAlarm, useLocalAlarm } from '../support/local-alarm.ts';
import { inputFor, LIVE, PIPELINE, useFork, useWorkflowFixture, type Workflow } from '../support/workflow.ts';

const fixture = useWorkflowFixture('wf_live_watch', async (wf) => {
  await wf.sample({ rowsPerDay: 10, sourceDays: 14, liveDays: 8 });
  return { first: await wf.run(inputFor(10), 'live-watch-first') };
});

type Watched = Awaited<ReturnType<typeof watchLive>>['watched'][string];

/**
 * The live watch of `wf` and the stack's LiveDrift alarm, on a local
 * CloudWatch endpoint of the calling describe's own (made in its
 * beforeAll, after the fork; closed in its afterAll).
 */
function useLiveWatch(wf: Workflow) {
  let local: LocalAlarm | undefined;
  /** The next watch's instant: inside a period, one period after the last. */
  let next = 0;
  beforeAll(async () => {
    local = await useLocalAlarm(wf, 'LiveDrift');
    // Hours back, so every instant is one CloudWatch takes (at most two hours ahead): ten watch periods before this one.
    next = (Math.floor(Date.now() / local.period) - 10) * local.period + 30_000;
  });
  afterAll(() => local?.cw.close());
  const made = () => {
    if (!local) throw new Error('the live watch used before its beforeAll ran');
    return local;
  };
  const transitionsOfThisAlarm = (transitions: AlarmTransition[]) => transitions.filter((t) => t.alarmName === made().alarm.alarmName);
  return {
    get alarm() {
      return made().alarm;
    },
    get cw() {
      return made().cw;
    },
    get client() {
      return made().client;
    },
    get period() {
      return made().period;
    },
    get next() {
      return next;
    },
    /** The alarm's state now. */
    state: () => made().cw.state(made().alarm.alarmName),
    /** The watch at `next`, then the alarm evaluated at the end of that period; `next` moves on a period. */
    async watchThenEvaluate(): Promise<{ at: number; result: Watched; changed: AlarmTransition[] }> {
      const { warehouse, client, cw, period } = made();
      const at = next;
      next += period;
      const report = await watchLive({ warehouse, cloudWatch: client, now: new Date(at), pipelines: [PIPELINE] });
      const changed = transitionsOfThisAlarm(cw.evaluate(new Date(Math.ceil(at / period) * period)));
      return { at, result: report.watched[PIPELINE.name]!, changed };
    },
    /** LiveDrift of the pipeline in the period holding `at` (Maximum, SampleCount), as CloudWatch hands it back. */
    async liveDrift(at: number) {
      const { client, period } = made();
      const start = Math.floor(at / period) * period;
      const out = await client.send(
        new GetMetricStatisticsCommand({
          Namespace: 'AtomicPublish',
          MetricName: 'LiveDrift',
          Dimensions: [{ Name: 'Pipeline', Value: PIPELINE.name }],
          StartTime: new Date(start),
          EndTime: new Date(start + period),
          Period: period / 1000,
          Statistics: ['Maximum', 'SampleCount'],
        }),
      );
      return out.Datapoints!.map((d) => ({ max: d.Maximum, samples: d.SampleCount }));
    },
    pages() {
      const { outbox, alarm } = made();
      return outbox.alerts
        .map((a) => ({ subject: a.subject ?? '', message: JSON.parse(a.message) as Record<string, unknown> }))
        .filter((p) => p.message.AlarmName === alarm.alarmName);
    },
    /** What the latest publication recorded, and the live table's fingerprint now (computed as the watch does). */
    async recordedAndNow() {
      const { warehouse } = made();
      const [row] = await wf.query<{ seq: number; live_columns: string | null; live_fingerprint: string | null; rollback_of: number | null }>(
        `SELECT seq, live_columns, live_fingerprint, rollback_of FROM atomic_publish.publications WHERE pipeline = $1 ORDER BY seq DESC LIMIT 1`,
        [PIPELINE.name],
      );
      const columns = (await warehouse.query(liveColumnsQuery(PIPELINE.target.schema, PIPELINE.target.table), 'test-columns')).map((r) => String(r.col));
      const [fp] = await warehouse.query(liveFingerprintQuery(PIPELINE, columns), 'test-fingerprint');
      return { ...row!, columnsNow: columns.join(';'), fingerprintNow: String(fp!.fingerprint) };
    },
  };
}

/** An out-of-band UPDATE of the first live row; returns its new amount. */
async function updateOneLiveRow(wf: Workflow): Promise<string> {
  const [updated] = await wf.query<{ amount: string }>(
    `UPDATE ${LIVE} SET amount = amount + 1 WHERE (order_id, line_no) = (SELECT order_id, line_no FROM ${LIVE} ORDER BY 1, 2 LIMIT 1) RETURNING amount::text AS amount`,
  );
  return updated!.amount;
}

describe('the live watch of a swap pipeline, its alarm evaluated locally as synthesized', () => {
  describe('after the first publication', () => {
    const wf = useFork(fixture);
    const watch = useLiveWatch(wf);
    let first: Awaited<ReturnType<typeof watch.watchThenEvaluate>>;
    beforeAll(async () => {
      first = await watch.watchThenEvaluate();
    });

    it("is the stack's alarm: LiveDrift of the pipeline, one watch period of an hour, a skipped watch keeping the state, paging the on-call topic", () => {
      const { alarm } = watch;
      expect(alarm).toMatchObject({
        namespace: 'AtomicPublish',
        statistic: 'Maximum',
        periodSeconds: 3600,
        threshold: 1,
        comparison: 'GreaterThanOrEqualToThreshold',
        treatMissingData: 'ignore',
        evaluationPeriods: 1,
      });
      expect(alarm.dimensions).toEqual({ Pipeline: PIPELINE.name });
      expect(alarm.actions.ALARM).toHaveLength(1);
      expect(alarm.actions.OK).toEqual(alarm.actions.ALARM);
      expect(alarm.description).toContain('Runbook: docs/runbook.md, "Out-of-band change alarm"');
    });

    it('a publication records the live table as published: its columns and the fingerprint the watch computes', async () => {
      const run = fixture.arranged.first;
      expect(run.status, `${run.error}: ${run.cause}`).toBe('SUCCEEDED');

      const recorded = await watch.recordedAndNow();

      expect(recorded.seq).toBe(1);
      expect(recorded.live_columns).toBe(recorded.columnsNow);
      expect(recorded.live_columns).toMatch(/^order_id bigint;line_no integer;ordered_at timestamp without time zone;.*;unit_price numeric\(12,4\)$/);
      expect(recorded.live_fingerprint).toBe(recorded.fingerprintNow);
      expect(recorded.live_fingerprint).toMatch(/^100:-?\d+$/);
    });

    it('finds the table as published: LiveDrift 0, and the alarm turns OK', async () => {
      const { at, result, changed } = first;

      expect(result).toEqual({ outcome: 'matches', seq: 1 });
      expect(await watch.liveDrift(at)).toEqual([{ max: 0, samples: 1 }]);
      expect(changed.map((t) => [t.from, t.to])).toEqual([['INSUFFICIENT_DATA', 'OK']]);
    });
  });

  describe('an out-of-band UPDATE of one live row, the alarm OK', () => {
    const wf = useFork(fixture);
    const watch = useLiveWatch(wf);
    let amount: string;
    let pagesBefore: number;
    let logsBefore: number;
    let drifted: Awaited<ReturnType<typeof watch.watchThenEvaluate>>;
    beforeAll(async () => {
      expect((await watch.watchThenEvaluate()).changed.map((t) => t.to)).toEqual(['OK']);
      amount = await updateOneLiveRow(wf);
      pagesBefore = watch.pages().length;
      logsBefore = wf.runner.logs.length;
      drifted = await watch.watchThenEvaluate();
    });

    it('is found: LiveDrift 1, the alarm turns to ALARM and pages with the runbook line; what differs is said without row values', async () => {
      const { at, result, changed } = drifted;

      expect(result).toMatchObject({ outcome: 'drifted', seq: 1 });
      const differences = result.outcome === 'drifted' ? result.differences : [];
      expect(differences).toEqual([expect.stringMatching(/^rows: 100 at publication 1, 100 now; checksum -?\d+ then, -?\d+ now$/)]);
      const logged = wf.runner.logs.slice(logsBefore).filter((line) => line.message === 'live table drifted since its publication');
      expect(logged).toEqual([expect.objectContaining({ level: 'WARN', pipeline: PIPELINE.name, publication: 1, differences })]);
      expect(JSON.stringify(logged)).not.toContain(amount);
      expect(await watch.liveDrift(at)).toEqual([{ max: 1, samples: 1 }]);
      expect(changed.map((t) => [t.from, t.to])).toEqual([['OK', 'ALARM']]);
      const [page] = watch.pages().slice(pagesBefore);
      expect(page!.subject).toMatch(/^ALARM: /);
      expect(page!.message).toMatchObject({ NewStateValue: 'ALARM', Trigger: { MetricName: 'LiveDrift' } });
      const description = String(page!.message.AlarmDescription);
      expect(description).toContain(`pipeline ${PIPELINE.name}: out-of-band change (drift) between runs`);
      expect(description).toContain('Runbook: docs/runbook.md, "Out-of-band change alarm" (docs/runbook.md#out-of-band-change-alarm).');
    });
  });

  describe('while a run holds the lease, the alarm in ALARM', () => {
    const wf = useFork(fixture);
    const watch = useLiveWatch(wf);
    let skipped: Awaited<ReturnType<typeof watch.watchThenEvaluate>>;
    beforeAll(async () => {
      await updateOneLiveRow(wf);
      expect((await watch.watchThenEvaluate()).changed.map((t) => t.to)).toEqual(['ALARM']);
      const lease = {
        pipeline: PIPELINE.name,
        executionId: 'arn:local:execution:held-by-a-test',
        now: new Date(watch.next - watch.period),
        expiresAt: new Date(watch.next + watch.period),
      };
      await wf.query(['BEGIN', ...acquireLease(lease), 'COMMIT'].join(';\n'));
      try {
        skipped = await watch.watchThenEvaluate();
      } finally {
        await wf.query(`DELETE FROM atomic_publish.pipeline_leases WHERE execution_id = $1`, [lease.executionId]);
      }
    });

    it('leaves the pipeline alone: nothing written, the alarm keeps its state', async () => {
      const { at, result, changed } = skipped;

      expect(result).toEqual({ outcome: 'skipped', reason: expect.stringContaining('a run holds its lease') });
      expect(await watch.liveDrift(at)).toEqual([]);
      expect(changed).toEqual([]);
      expect(watch.state()).toBe('ALARM');
    });
  });

  describe('a run that republishes from the source after an out-of-band UPDATE, the alarm in ALARM', () => {
    const wf = useFork(fixture);
    const watch = useLiveWatch(wf);
    let run: ExecutionResult;
    let pagesBefore: number;
    let after: Awaited<ReturnType<typeof watch.watchThenEvaluate>>;
    beforeAll(async () => {
      await updateOneLiveRow(wf);
      expect((await watch.watchThenEvaluate()).changed.map((t) => t.to)).toEqual(['ALARM']);
      run = await wf.run(inputFor(12), 'live-watch-republish');
      pagesBefore = watch.pages().length;
      after = await watch.watchThenEvaluate();
    });

    it('records the new table, and the next watch brings the alarm back to OK', () => {
      expect(run.status, `${run.error}: ${run.cause}`).toBe('SUCCEEDED');
      const { result, changed } = after;

      expect(result).toEqual({ outcome: 'matches', seq: 2 });
      expect(changed.map((t) => [t.from, t.to])).toEqual([['ALARM', 'OK']]);
      expect(watch.pages().slice(pagesBefore)).toEqual([expect.objectContaining({ subject: expect.stringMatching(/^OK: /) })]);
    });
  });

  describe('a rollback of that republication, the alarm OK', () => {
    const wf = useFork(fixture);
    const watch = useLiveWatch(wf);
    let run: ExecutionResult;
    let recorded: Awaited<ReturnType<typeof watch.recordedAndNow>>;
    let after: Awaited<ReturnType<typeof watch.watchThenEvaluate>>;
    beforeAll(async () => {
      // The version the rollback restores is publication 1 with a stray UPDATE in it.
      await updateOneLiveRow(wf);
      const republished = await wf.run(inputFor(12), 'live-watch-republish');
      expect(republished.status, `${republished.error}: ${republished.cause}`).toBe('SUCCEEDED');
      expect((await watch.watchThenEvaluate()).changed.map((t) => t.to)).toEqual(['OK']);
      run = await wf.run({ pipeline: PIPELINE.name, rollback: {} }, 'live-watch-rollback');
      recorded = await watch.recordedAndNow();
      after = await watch.watchThenEvaluate();
    });

    it('records the version it restores, as restored (the stray UPDATE in it included): the watch finds it matching', () => {
      expect(run.status, `${run.error}: ${run.cause}`).toBe('SUCCEEDED');
      expect(recorded).toMatchObject({ seq: 3, rollback_of: 2 });
      expect(recorded.live_fingerprint).toBe(recorded.fingerprintNow);

      const { result, changed } = after;

      expect(result).toEqual({ outcome: 'matches', seq: 3 });
      expect(changed).toEqual([]);
    });
  });
});

describe('a publication that recorded nothing (made before manifest version 11, or by a group, view or migration publish)', () => {
  const wf = useFork(fixture);
  const watch = useLiveWatch(wf);
  let state: string | undefined;
  let skipped: Awaited<ReturnType<typeof watch.watchThenEvaluate>>;
  beforeAll(async () => {
    // The alarm has a state to keep: the watch found the publication as recorded.
    expect((await watch.watchThenEvaluate()).changed.map((t) => t.to)).toEqual(['OK']);
    await wf.query(`UPDATE atomic_publish.publications SET live_columns = NULL, live_fingerprint = NULL WHERE seq = 1`);
    state = watch.state();
    skipped = await watch.watchThenEvaluate();
  });

  it('is skipped, saying so: no datapoint, the alarm keeps its state', async () => {
    const { at, result, changed } = skipped;

    expect(result).toEqual({ outcome: 'skipped', reason: expect.stringMatching(/^publication 1 recorded nothing of the live table/) });
    expect(await watch.liveDrift(at)).toEqual([]);
    expect(changed).toEqual([]);
    expect(watch.state()).toBe(state);
  });
});

describe("the live watch as the monitor's database user", () => {
  const wf = useFork(fixture);
  const watch = useLiveWatch(wf);

  it("watches with exactly what the monitor's setup SQL grants, the lease included", async () => {
    const user = 'IAMR:atomic-publish-local-monitor';
    await ensureLocalUser(wf.wh.pg, user);
    const asMonitor = localWarehouse(wf.wh.endpoint, wf.wh.pg.database, DEFAULT_POLL, user);
    const run = () => watchLive({ warehouse: asMonitor, cloudWatch: watch.client, now: new Date(watch.next), pipelines: [PIPELINE] });

    await expect(run()).rejects.toThrow(/live table not watched for 1 pipeline\(s\): sales_order_lines \(.*permission denied/);

    for (const sql of monitorSetupStatements(PIPELINE, { database: wf.wh.pg.database, user })) await wf.query(sql);
    const report = await run();
    expect(report.watched[PIPELINE.name]).toEqual({ outcome: 'matches', seq: 1 });
  });
});

describe('the deployed handler, invoked as the live watch schedule invokes it', () => {
  const wf = useFork(fixture);
  const watch = useLiveWatch(wf);

  it('watches every pipeline of the registry and writes LiveDrift to the CloudWatch endpoint it is given', async () => {
    const result = (await wf.runner.fireFreshnessMonitor(watch.cw.endpoint, { liveWatch: true })) as { watched: Record<string, unknown> };

    expect(result.watched).toEqual({ [PIPELINE.name]: { outcome: 'matches', seq: 1 } });
    expect(await watch.liveDrift(Date.now())).toEqual([expect.objectContaining({ max: 0 })]);
  });
});
