// The freshness alarm on real parts: the synthesized state machine publishes
// into a real database, the freshness monitor measures it through the local
// Data API endpoint and writes with the real CloudWatch client to the local
// CloudWatch endpoint, which evaluates the stack's alarm as synthesized and
// pages through the local SNS outbox. Time is the test's: the monitor and
// the alarm are run at chosen instants (the monitor every 5 minutes, as its
// schedule would), never by sleeping.
import { type CloudWatchClient, DescribeAlarmsCommand, GetMetricStatisticsCommand } from '@aws-sdk/client-cloudwatch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FreshnessMonitorError } from '../../domain/freshness.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { monitorFreshness } from '../../functions/freshness-monitor/index.ts';
import { DEFAULT_POLL, type Warehouse } from '../../functions/commons/warehouse.ts';
import { monitorSetupStatements } from '../../domain/sql/setup.ts';
import { ensureLocalUser } from '../../local/database-users.ts';
import { localWarehouse } from '../../local/aws-clients.ts';
import type { MetricAlarm } from '../../local/cloudwatch-alarms.ts';
import type { AlarmTransition, LocalCloudWatchApi } from '../../local/cloudwatch-api.ts';
import type { SnsOutbox } from '../../local/sns-outbox.ts';
import { useLocalAlarm } from '../support/local-alarm.ts';
import { closedPort } from '../support/unreachable.ts';
import { inputFor, PIPELINE, useWorkflow, type Workflow } from '../support/workflow.ts';

const MINUTE = 60_000;
const SLA_MS = PIPELINE.freshness.slaMinutes * MINUTE;

let wf: Workflow;
let cw: LocalCloudWatchApi;
let client: CloudWatchClient;
let outbox: SnsOutbox;
let warehouse: Warehouse;
let alarm: MetricAlarm;
let period: number;

/** The first period boundary at or after `instant`, plus 30 s: an instant well inside one alarm period. */
const intoPeriod = (instant: number) => Math.ceil(instant / period) * period + 30_000;

/**
 * The monitor as its schedule runs it: `runs` times, one period apart, from
 * `start` (inside a period); then the alarm evaluated at the end of the last
 * of those periods. Returns the transitions.
 */
async function monitorThenEvaluate(start: number, runs: number) {
  for (let k = 0; k < runs; k++) await monitorFreshness({ warehouse, cloudWatch: client, now: new Date(start + k * period), pipelines: [PIPELINE] });
  return transitionsOfThisAlarm(cw.evaluate(new Date(start - 30_000 + runs * period)));
}

/** The stack's other alarms (failed and timed-out executions) are evaluated beside it: leave them out. */
const transitionsOfThisAlarm = (transitions: AlarmTransition[]) => transitions.filter((t) => t.alarmName === alarm.alarmName);

/** The pipeline's PublishAgeSeconds as CloudWatch hands it back (GetMetricStatistics), one statistic per period. */
const publishAge = (start: Date, end: Date, periodSeconds: number, statistic: 'Maximum' | 'SampleCount') =>
  client.send(
    new GetMetricStatisticsCommand({
      Namespace: 'AtomicPublish',
      MetricName: 'PublishAgeSeconds',
      Dimensions: [{ Name: 'Pipeline', Value: PIPELINE.name }],
      StartTime: start,
      EndTime: end,
      Period: periodSeconds,
      Statistics: [statistic],
    }),
  );

/** This alarm's pages (the stack's other alarms page too: each OK they enter from INSUFFICIENT_DATA). */
const pages = () =>
  outbox.alerts.map((a) => ({ subject: a.subject ?? '', message: JSON.parse(a.message) as Record<string, unknown> })).filter((p) => p.message.AlarmName === alarm.alarmName);
const livePublishedAt = async () =>
  (await wf.query<{ at: Date }>(`SELECT max(published_at) AS at FROM atomic_publish.publications WHERE pipeline = $1`, [PIPELINE.name]))[0]!.at;

beforeAll(async () => {
  wf = await useWorkflow('wf_freshness');
  await wf.sample({ rowsPerDay: 10, sourceDays: 14, liveDays: 8 });
  ({ alarm, period, cw, client, outbox, warehouse } = await useLocalAlarm(wf, 'PublishAgeSeconds'));
});
afterAll(async () => {
  await cw?.close();
  await wf?.close();
});

describe('the freshness alarm of a pipeline, evaluated locally as synthesized', () => {
  let firstPublishedAt: number;

  it('is the stack\'s alarm: PublishAgeSeconds of the pipeline against its SLA, missing data breaching, paging the on-call topic', () => {
    expect(alarm).toMatchObject({
      namespace: 'AtomicPublish',
      statistic: 'Maximum',
      threshold: PIPELINE.freshness.slaMinutes * 60,
      comparison: 'GreaterThanThreshold',
      treatMissingData: 'breaching',
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
    });
    expect(alarm.actions.ALARM).toHaveLength(1);
    expect(alarm.actions.ALARM[0]).toMatch(/^arn:aws:sns:/);
    expect(alarm.actions.OK).toEqual(alarm.actions.ALARM);
    expect(cw.state(alarm.alarmName)).toBe('INSUFFICIENT_DATA');
  });

  it('turns OK once the monitor measured a fresh publication for three periods, and says so', async () => {
    const run = await wf.run(inputFor(10), 'freshness-first');
    expect(run.status, `${run.error}: ${run.cause}`).toBe('SUCCEEDED');
    // The manifest is the monitor's only source of publish time: the publication is set to have been made
    // one SLA and two hours ago, so that the test can move the clock past the SLA and still publish afresh now.
    await wf.query(`UPDATE atomic_publish.publications SET published_at = published_at - make_interval(mins => $1)`, [PIPELINE.freshness.slaMinutes + 120]);
    firstPublishedAt = (await livePublishedAt()).getTime();

    const start = intoPeriod(firstPublishedAt);
    const changed = await monitorThenEvaluate(start, 3);

    expect(changed).toEqual([expect.objectContaining({ alarmName: alarm.alarmName, from: 'INSUFFICIENT_DATA', to: 'OK' })]);
    const age = await publishAge(new Date(start - 30_000), new Date(start - 30_000 + 3 * period), period / 1000, 'Maximum');
    expect(age.Datapoints!.map((d) => d.Maximum)).toEqual([0, 1, 2].map((k) => (start + k * period - firstPublishedAt) / 1000));
    expect(pages().at(-1)).toMatchObject({ subject: expect.stringMatching(/^OK: /), message: { NewStateValue: 'OK', AlarmName: alarm.alarmName } });
  });

  it('measures the data lag too: now minus the newest event time in the live table', async () => {
    const now = intoPeriod(firstPublishedAt) + 30_000;
    const report = await monitorFreshness({ warehouse, cloudWatch: client, now: new Date(now), pipelines: [PIPELINE] });
    // The column holds UTC wall times (timestamp without time zone).
    const [row] = await wf.query<{ latest: string }>(`SELECT to_char(max(ordered_at), 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS latest FROM analytics.sales_order_lines`);
    expect(report.measured[PIPELINE.name]).toContainEqual({ name: 'LiveDataLagSeconds', seconds: (now - Date.parse(row!.latest)) / 1000 });
  });

  it('turns to ALARM when the publication grows older than the SLA, paging on-call with the pipeline, what it means and the runbook', async () => {
    const start = intoPeriod(firstPublishedAt + SLA_MS + MINUTE);
    const before = pages().length;

    const changed = await monitorThenEvaluate(start, 3);

    expect(changed.map((t) => [t.from, t.to])).toEqual([['OK', 'ALARM']]);
    const [page] = pages().slice(before);
    expect(page!.subject).toMatch(/^ALARM: /);
    expect(page!.message).toMatchObject({ NewStateValue: 'ALARM', OldStateValue: 'OK', Trigger: { MetricName: 'PublishAgeSeconds', Threshold: PIPELINE.freshness.slaMinutes * 60 } });
    const description = String(page!.message.AlarmDescription);
    expect(description).toContain(`pipeline ${PIPELINE.name} is stale`);
    expect(description).toContain(`more than ${PIPELINE.freshness.slaMinutes} minutes ago`);
    expect(description).toContain('Runbook: README.md');
    // Three datapoints over the threshold, none missing.
    expect(String(page!.message.NewStateReason)).toMatch(/^3 of the last 3 datapoints \[\d/);
    const described = await client.send(new DescribeAlarmsCommand({ AlarmNames: [alarm.alarmName] }));
    expect(described.MetricAlarms).toEqual([expect.objectContaining({ StateValue: 'ALARM', AlarmDescription: description })]);
  });

  it('returns to OK after a fresh publish, and tells on-call', async () => {
    const run = await wf.run(inputFor(12), 'freshness-second');
    expect(run.status, `${run.error}: ${run.cause}`).toBe('SUCCEEDED');
    const secondPublishedAt = (await livePublishedAt()).getTime();
    expect(secondPublishedAt).toBeGreaterThan(firstPublishedAt + SLA_MS);
    const before = pages().length;

    const changed = await monitorThenEvaluate(intoPeriod(secondPublishedAt), 3);

    expect(changed.map((t) => [t.from, t.to])).toEqual([['ALARM', 'OK']]);
    expect(pages().slice(before)).toEqual([expect.objectContaining({ subject: expect.stringMatching(/^OK: /), message: expect.objectContaining({ NewStateValue: 'OK' }) })]);
  });

  it('turns to ALARM when the monitor stops running: missing data breaches', async () => {
    const lastEvaluated = Date.parse(cw.transitions.filter((t) => t.alarmName === alarm.alarmName).at(-1)!.at);
    const before = pages().length;

    // Two periods without a datapoint, the third one's still there: one missing run does not page, two do.
    expect(transitionsOfThisAlarm(cw.evaluate(new Date(lastEvaluated + period)))).toEqual([]);
    const changed = transitionsOfThisAlarm(cw.evaluate(new Date(lastEvaluated + 2 * period)));

    expect(changed.map((t) => [t.from, t.to])).toEqual([['OK', 'ALARM']]);
    expect(changed[0]!.reason).toMatch(/missing, missing/);
    expect(pages().slice(before)).toEqual([expect.objectContaining({ subject: expect.stringMatching(/^ALARM: /) })]);
  });
});

describe('a rollback', () => {
  it('does not count as a publish: the age is again that of the publication it puts back', async () => {
    const [first] = await wf.query<{ at: Date }>(`SELECT published_at AS at FROM atomic_publish.publications WHERE pipeline = $1 AND seq = 1`, [PIPELINE.name]);
    const run = await wf.run({ pipeline: PIPELINE.name, rollback: {} }, 'freshness-rollback');
    expect(run.status, `${run.error}: ${run.cause}`).toBe('SUCCEEDED');
    const [latest] = await wf.query<{ rollback_of: number | null }>(`SELECT rollback_of FROM atomic_publish.publications WHERE pipeline = $1 ORDER BY seq DESC LIMIT 1`, [PIPELINE.name]);
    expect(latest!.rollback_of).toBe(2);
    const now = Date.now();

    const report = await monitorFreshness({ warehouse, cloudWatch: client, now: new Date(now), pipelines: [PIPELINE] });

    expect(report.measured[PIPELINE.name]).toContainEqual({ name: 'PublishAgeSeconds', seconds: (now - first!.at.getTime()) / 1000 });
    expect((now - first!.at.getTime()) / 1000).toBeGreaterThan(PIPELINE.freshness.slaMinutes * 60);
  });
});

describe('the monitor as a database user of its own', () => {
  it('cannot measure without its grants, and measures with exactly what its setup SQL grants', async () => {
    const user = 'IAMR:atomic-publish-local-monitor';
    await ensureLocalUser(wf.wh.pg, user);
    const asMonitor = localWarehouse(wf.wh.endpoint, wf.wh.pg.database, DEFAULT_POLL, user);
    const measure = (now: number) => monitorFreshness({ warehouse: asMonitor, cloudWatch: client, now: new Date(now), pipelines: [PIPELINE] });

    await expect(measure(Date.now() - 100 * MINUTE)).rejects.toThrow(/permission denied/);

    for (const sql of monitorSetupStatements(PIPELINE, { database: wf.wh.pg.database, user })) await wf.query(sql);
    const report = await measure(Date.now() - 110 * MINUTE);
    expect(report.measured[PIPELINE.name]!.map((v) => v.name)).toEqual(['PublishAgeSeconds', 'LiveDataLagSeconds']);
  });
});

describe('the deployed handler, invoked as its schedule invokes it', () => {
  it('measures every pipeline of the registry at the real time and writes to the CloudWatch endpoint it is given', async () => {
    const before = Date.now();
    const result = (await wf.runner.fireFreshnessMonitor(cw.endpoint)) as { measured: Record<string, { name: string; seconds: number }[]> };
    const after = Date.now();

    expect(Object.keys(result.measured)).toEqual([PIPELINE.name]);
    const age = result.measured[PIPELINE.name]!.find((v) => v.name === 'PublishAgeSeconds')!;
    const written = await publishAge(new Date(before - 1000), new Date(after + 1000), 1, 'Maximum');
    expect(written.Datapoints!.map((d) => d.Maximum)).toContain(age.seconds);
    expect(written.Datapoints!.every((d) => d.Unit === 'Seconds')).toBe(true);
  });
});

describe('a pipeline the monitor cannot measure', () => {
  it('does not keep the others\' metrics from being written, and fails the run naming it', async () => {
    const missing: Pipeline = { ...PIPELINE, name: 'gone_pipeline', target: { schema: 'analytics', table: 'no_such_table' } };
    // An instant no other test measured at.
    const now = Date.now() - 60 * MINUTE;

    const run = monitorFreshness({ warehouse, cloudWatch: client, now: new Date(now), pipelines: [missing, PIPELINE] });

    await expect(run).rejects.toThrow(FreshnessMonitorError);
    await expect(run).rejects.toThrow(/freshness not measured for 1 pipeline\(s\): gone_pipeline \(WarehouseError: .*no_such_table/);
    const written = await publishAge(new Date(now - 1000), new Date(now + 1000), 60, 'SampleCount');
    expect(written.Datapoints!.map((d) => d.SampleCount)).toEqual([1]);
  });

  it('when the warehouse does not answer: fails naming every pipeline, having written nothing', async () => {
    const unreachable = localWarehouse(`http://127.0.0.1:${await closedPort()}`, wf.wh.pg.database);
    const now = Date.now() - 3 * 3600_000;

    const run = monitorFreshness({ warehouse: unreachable, cloudWatch: client, now: new Date(now), pipelines: [PIPELINE] });

    await expect(run).rejects.toThrow(new RegExp(`freshness not measured for 1 pipeline\\(s\\): ${PIPELINE.name} \\(`));
    const written = await publishAge(new Date(now - 60_000), new Date(now + 60_000), 60, 'SampleCount');
    expect(written.Datapoints).toEqual([]);
  });
});
