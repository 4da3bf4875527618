// The live watch on real parts: the synthesized state machine publishes
// into a real database and records the live table's fingerprint; the
// monitor's live watch recomputes it through the local Data API endpoint
// and writes LiveDrift with the real CloudWatch client to the local
// CloudWatch endpoint, which evaluates the stack's alarm as synthesized
// and pages through the local SNS outbox. The watch and the alarm run at
// chosen instants, one watch period apart, as the schedule would run them.
import { type CloudWatchClient, GetMetricStatisticsCommand } from '@aws-sdk/client-cloudwatch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_POLL, type Warehouse } from '../../functions/commons/warehouse.ts';
import { watchLive } from '../../functions/freshness-monitor/live-watch.ts';
import { acquireLease } from '../../domain/sql/lease.ts';
import { liveColumnsQuery, liveFingerprintQuery } from '../../domain/sql/out-of-band.ts';
import { monitorSetupStatements } from '../../domain/sql/setup.ts';
import { ensureLocalUser } from '../../local/database-users.ts';
import { localWarehouse } from '../../local/aws-clients.ts';
import type { MetricAlarm } from '../../local/cloudwatch-alarms.ts';
import type { AlarmTransition, LocalCloudWatchApi } from '../../local/cloudwatch-api.ts';
import type { SnsOutbox } from '../../local/sns-outbox.ts';
import { useLocalAlarm } from '../support/local-alarm.ts';
import { inputFor, LIVE, PIPELINE, useWorkflow, type Workflow } from '../support/workflow.ts';

let wf: Workflow;
let cw: LocalCloudWatchApi;
let client: CloudWatchClient;
let outbox: SnsOutbox;
let warehouse: Warehouse;
let alarm: MetricAlarm;
let period: number;
/** The next watch's instant: inside a period, one period after the last. */
let next: number;

const transitionsOfThisAlarm = (transitions: AlarmTransition[]) => transitions.filter((t) => t.alarmName === alarm.alarmName);

/** The watch at `next`, then the alarm evaluated at the end of that period; `next` moves on a period. */
async function watchThenEvaluate() {
  const at = next;
  next += period;
  const report = await watchLive({ warehouse, cloudWatch: client, now: new Date(at), pipelines: [PIPELINE] });
  const changed = transitionsOfThisAlarm(cw.evaluate(new Date(Math.ceil(at / period) * period)));
  return { at, result: report.watched[PIPELINE.name]!, changed };
}

/** LiveDrift of the pipeline in the period holding `at` (Maximum, SampleCount), as CloudWatch hands it back. */
async function liveDrift(at: number) {
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
}

const pages = () =>
  outbox.alerts.map((a) => ({ subject: a.subject ?? '', message: JSON.parse(a.message) as Record<string, unknown> })).filter((p) => p.message.AlarmName === alarm.alarmName);

/** What the latest publication recorded, and the live table's fingerprint now (computed as the watch does). */
async function recordedAndNow() {
  const [row] = await wf.query<{ seq: number; live_columns: string | null; live_fingerprint: string | null; rollback_of: number | null }>(
    `SELECT seq, live_columns, live_fingerprint, rollback_of FROM atomic_publish.publications WHERE pipeline = $1 ORDER BY seq DESC LIMIT 1`,
    [PIPELINE.name],
  );
  const columns = (await warehouse.query(liveColumnsQuery(PIPELINE.target.schema, PIPELINE.target.table), 'test-columns')).map((r) => String(r.col));
  const [fp] = await warehouse.query(liveFingerprintQuery(PIPELINE, columns), 'test-fingerprint');
  return { ...row!, columnsNow: columns.join(';'), fingerprintNow: String(fp!.fingerprint) };
}

beforeAll(async () => {
  wf = await useWorkflow('wf_live_watch');
  await wf.sample({ rowsPerDay: 10, sourceDays: 14, liveDays: 8 });
  ({ alarm, period, cw, client, outbox, warehouse } = await useLocalAlarm(wf, 'LiveDrift'));
  // Hours back, so every instant is one CloudWatch takes (at most two hours ahead): ten watch periods before this one.
  next = (Math.floor(Date.now() / period) - 10) * period + 30_000;
});
afterAll(async () => {
  await cw?.close();
  await wf?.close();
});

describe('the live watch of a swap pipeline, its alarm evaluated locally as synthesized', () => {
  it('is the stack\'s alarm: LiveDrift of the pipeline, one watch period of an hour, a skipped watch keeping the state, paging the on-call topic', () => {
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
    expect(alarm.description).toContain('Runbook: README.md, Operate, "Out-of-band change alarm"');
  });

  it('a publication records the live table as published: its columns and the fingerprint the watch computes', async () => {
    const run = await wf.run(inputFor(10), 'live-watch-first');
    expect(run.status, `${run.error}: ${run.cause}`).toBe('SUCCEEDED');

    const recorded = await recordedAndNow();

    expect(recorded.seq).toBe(1);
    expect(recorded.live_columns).toBe(recorded.columnsNow);
    expect(recorded.live_columns).toMatch(/^order_id bigint;line_no integer;ordered_at timestamp without time zone;.*;unit_price numeric\(12,4\)$/);
    expect(recorded.live_fingerprint).toBe(recorded.fingerprintNow);
    expect(recorded.live_fingerprint).toMatch(/^100:-?\d+$/);
  });

  it('finds the table as published: LiveDrift 0, and the alarm turns OK', async () => {
    const { at, result, changed } = await watchThenEvaluate();

    expect(result).toEqual({ outcome: 'matches', seq: 1 });
    expect(await liveDrift(at)).toEqual([{ max: 0, samples: 1 }]);
    expect(changed.map((t) => [t.from, t.to])).toEqual([['INSUFFICIENT_DATA', 'OK']]);
  });

  it('finds an out-of-band UPDATE of one live row: LiveDrift 1, the alarm turns to ALARM and pages with the runbook line; what differs is said without row values', async () => {
    const [updated] = await wf.query<{ amount: string }>(
      `UPDATE ${LIVE} SET amount = amount + 1 WHERE (order_id, line_no) = (SELECT order_id, line_no FROM ${LIVE} ORDER BY 1, 2 LIMIT 1) RETURNING amount::text AS amount`,
    );
    const before = pages().length;
    const logsBefore = wf.runner.logs.length;

    const { at, result, changed } = await watchThenEvaluate();

    expect(result).toMatchObject({ outcome: 'drifted', seq: 1 });
    const differences = result.outcome === 'drifted' ? result.differences : [];
    expect(differences).toEqual([expect.stringMatching(/^rows: 100 at publication 1, 100 now; checksum -?\d+ then, -?\d+ now$/)]);
    const logged = wf.runner.logs.slice(logsBefore).filter((line) => line.message === 'live table drifted since its publication');
    expect(logged).toEqual([expect.objectContaining({ level: 'WARN', pipeline: PIPELINE.name, publication: 1, differences })]);
    expect(JSON.stringify(logged)).not.toContain(updated!.amount);
    expect(await liveDrift(at)).toEqual([{ max: 1, samples: 1 }]);
    expect(changed.map((t) => [t.from, t.to])).toEqual([['OK', 'ALARM']]);
    const [page] = pages().slice(before);
    expect(page!.subject).toMatch(/^ALARM: /);
    expect(page!.message).toMatchObject({ NewStateValue: 'ALARM', Trigger: { MetricName: 'LiveDrift' } });
    const description = String(page!.message.AlarmDescription);
    expect(description).toContain(`pipeline ${PIPELINE.name}: out-of-band change (drift) between runs`);
    expect(description).toContain('Runbook: README.md, Operate, "Out-of-band change alarm" (README.md#out-of-band-change-alarm).');
  });

  it('leaves the pipeline alone while a run holds its lease: nothing written, the alarm keeps its state', async () => {
    const lease = { pipeline: PIPELINE.name, executionId: 'arn:local:execution:held-by-a-test', now: new Date(next - period), expiresAt: new Date(next + period) };
    await wf.query(['BEGIN', ...acquireLease(lease), 'COMMIT'].join(';\n'));
    try {
      const { at, result, changed } = await watchThenEvaluate();

      expect(result).toEqual({ outcome: 'skipped', reason: expect.stringContaining('a run holds its lease') });
      expect(await liveDrift(at)).toEqual([]);
      expect(changed).toEqual([]);
      expect(cw.state(alarm.alarmName)).toBe('ALARM');
    } finally {
      await wf.query(`DELETE FROM atomic_publish.pipeline_leases WHERE execution_id = $1`, [lease.executionId]);
    }
  });

  it('a run that republishes from the source records the new table, and the next watch brings the alarm back to OK', async () => {
    const run = await wf.run(inputFor(12), 'live-watch-republish');
    expect(run.status, `${run.error}: ${run.cause}`).toBe('SUCCEEDED');
    const before = pages().length;

    const { result, changed } = await watchThenEvaluate();

    expect(result).toEqual({ outcome: 'matches', seq: 2 });
    expect(changed.map((t) => [t.from, t.to])).toEqual([['ALARM', 'OK']]);
    expect(pages().slice(before)).toEqual([expect.objectContaining({ subject: expect.stringMatching(/^OK: /) })]);
  });

  it('a rollback records the version it restores, as restored (the stray UPDATE in it included): the watch finds it matching', async () => {
    const run = await wf.run({ pipeline: PIPELINE.name, rollback: {} }, 'live-watch-rollback');
    expect(run.status, `${run.error}: ${run.cause}`).toBe('SUCCEEDED');
    const recorded = await recordedAndNow();
    expect(recorded).toMatchObject({ seq: 3, rollback_of: 2 });
    expect(recorded.live_fingerprint).toBe(recorded.fingerprintNow);

    const { result, changed } = await watchThenEvaluate();

    expect(result).toEqual({ outcome: 'matches', seq: 3 });
    expect(changed).toEqual([]);
  });
});

describe('a publication that recorded nothing (made before manifest version 11, or by a group, view or migration publish)', () => {
  it('is skipped, saying so: no datapoint, the alarm keeps its state', async () => {
    const [kept] = await wf.query<{ live_columns: string; live_fingerprint: string }>(`SELECT live_columns, live_fingerprint FROM atomic_publish.publications WHERE seq = 3`);
    await wf.query(`UPDATE atomic_publish.publications SET live_columns = NULL, live_fingerprint = NULL WHERE seq = 3`);
    try {
      const state = cw.state(alarm.alarmName);
      const { at, result, changed } = await watchThenEvaluate();

      expect(result).toEqual({ outcome: 'skipped', reason: expect.stringMatching(/^publication 3 recorded nothing of the live table/) });
      expect(await liveDrift(at)).toEqual([]);
      expect(changed).toEqual([]);
      expect(cw.state(alarm.alarmName)).toBe(state);
    } finally {
      await wf.query(`UPDATE atomic_publish.publications SET live_columns = $1, live_fingerprint = $2 WHERE seq = 3`, [kept!.live_columns, kept!.live_fingerprint]);
    }
  });
});

describe('the live watch as the monitor\'s database user', () => {
  it('watches with exactly what the monitor\'s setup SQL grants, the lease included', async () => {
    const user = 'IAMR:atomic-publish-local-monitor';
    await ensureLocalUser(wf.wh.pg, user);
    const asMonitor = localWarehouse(wf.wh.endpoint, wf.wh.pg.database, DEFAULT_POLL, user);
    const watch = () => watchLive({ warehouse: asMonitor, cloudWatch: client, now: new Date(next), pipelines: [PIPELINE] });

    await expect(watch()).rejects.toThrow(/live table not watched for 1 pipeline\(s\): sales_order_lines \(.*permission denied/);

    for (const sql of monitorSetupStatements(PIPELINE, { database: wf.wh.pg.database, user })) await wf.query(sql);
    const report = await watch();
    expect(report.watched[PIPELINE.name]).toEqual({ outcome: 'matches', seq: 3 });
  });
});

describe('the deployed handler, invoked as the live watch schedule invokes it', () => {
  it('watches every pipeline of the registry and writes LiveDrift to the CloudWatch endpoint it is given', async () => {
    const result = (await wf.runner.fireFreshnessMonitor(cw.endpoint, { liveWatch: true })) as { watched: Record<string, unknown> };

    expect(result.watched).toEqual({ [PIPELINE.name]: { outcome: 'matches', seq: 3 } });
    expect(await liveDrift(Date.now())).toEqual([expect.objectContaining({ max: 0 })]);
  });
});
