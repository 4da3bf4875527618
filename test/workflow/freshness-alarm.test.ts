// The freshness alarm on real parts: a publish into a real database, the
// freshness monitor measuring it through the local Data API and writing to the
// local CloudWatch, which evaluates the synthesized alarm and pages through the
// local SNS outbox. Monitor and alarm run at chosen instants (every 5 minutes, as
// scheduled), never by sleeping. Why: docs/decisions/freshness-monitor-and-its-alarm.md
import { DescribeAlarmsCommand, type DescribeAlarmsCommandOutput, GetMetricStatisticsCommand } from '@aws-sdk/client-cloudwatch';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FreshnessMonitorError } from '../../domain/freshness-monitor/freshness.ts';
import { monitorSetupStatements } from '../../domain/setup/sql/setup.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { DEFAULT_POLL } from '../../functions/commons/warehouse.ts';
import { monitorFreshness } from '../../functions/freshness-monitor/index.ts';
import { localWarehouse } from '../../local/aws-clients.ts';
import type { AlarmTransition } from '../../local/cloudwatch-api.ts';
import { ensureLocalUser } from '../../local/database-users.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { pipelines } from '../../pipelines/index.ts';
import { type LocalAlarm, useLocalAlarm } from '../support/local-alarm.ts';
import { closedPort } from '../support/unreachable.ts';
import { inputFor, PIPELINE, useFork, useWorkflowFixture, type Workflow } from '../support/workflow.ts';

const MINUTE = 60_000;
const SLA_MS = PIPELINE.freshness.slaMinutes * MINUTE;

const fixture = useWorkflowFixture('wf_freshness', async (wf) => {
  await wf.sample({ rowsPerDay: 10, sourceDays: 14, liveDays: 8 });
  const first = await wf.run(inputFor(10), 'freshness-first');
  // The manifest is the monitor's only source of publish time: the publication is set to have been made
  // one SLA and two hours ago, so that a test can move the clock past the SLA and still publish afresh now.
  await wf.query(`UPDATE atomic_publish.publications SET published_at = published_at - make_interval(mins => $1)`, [PIPELINE.freshness.slaMinutes + 120]);
  return { first, firstPublishedAt: (await livePublishedAt(wf)).getTime() };
});

/** The stack's alarms on a CloudWatch endpoint of their own (each INSUFFICIENT_DATA at first), and the monitor's view of `wf`. */
interface Monitored extends LocalAlarm {
  wf: Workflow;
}

/** A Monitored of `wf` for the calling describe ('all'), or for each of its tests. */
function useMonitored(wf: Workflow, scope: 'all' | 'each' = 'all'): Monitored {
  const monitored = {} as Monitored;
  (scope === 'all' ? beforeAll : beforeEach)(async () => {
    const local = await useLocalAlarm(wf, 'PublishAgeSeconds');
    Object.assign(monitored, local, { wf });
    return () => local.cw.close();
  });
  return monitored;
}

/** The first period boundary at or after `instant`, plus 30 s: an instant well inside one alarm period. */
const intoPeriod = (m: Monitored, instant: number) => Math.ceil(instant / m.period) * m.period + 30_000;

/**
 * The monitor as its schedule runs it: `runs` times, one period apart, from
 * `start` (inside a period); then the alarm evaluated at the end of the last
 * of those periods. Returns the transitions.
 */
async function monitorThenEvaluate(m: Monitored, start: number, runs: number) {
  for (let k = 0; k < runs; k++)
    await monitorFreshness({ warehouse: m.warehouse, cloudWatch: m.client, now: new Date(start + k * m.period), pipelines: [PIPELINE] });
  return transitionsOfThisAlarm(m, m.cw.evaluate(new Date(start - 30_000 + runs * m.period)));
}

/** The stack's other alarms (failed and timed-out executions) are evaluated beside it: leave them out. */
const transitionsOfThisAlarm = (m: Monitored, transitions: AlarmTransition[]) => transitions.filter((t) => t.alarmName === m.alarm.alarmName);

/** The pipeline's PublishAgeSeconds as CloudWatch hands it back (GetMetricStatistics), one statistic per period. */
const publishAge = (m: Monitored, start: Date, end: Date, periodSeconds: number, statistic: 'Maximum' | 'SampleCount') =>
  m.client.send(
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
const pages = (m: Monitored) =>
  m.outbox.alerts
    .map((a) => ({ subject: a.subject ?? '', message: JSON.parse(a.message) as Record<string, unknown> }))
    .filter((p) => p.message.AlarmName === m.alarm.alarmName);
async function livePublishedAt(wf: Workflow): Promise<Date> {
  return (await wf.query<{ at: Date }>(`SELECT max(published_at) AS at FROM atomic_publish.publications WHERE pipeline = $1`, [PIPELINE.name]))[0]!.at;
}
const firstPublishedAt = () => fixture.arranged.firstPublishedAt;
/** The alarm OK: the monitor measured the first publication fresh for three periods. */
const fresh = (m: Monitored) => monitorThenEvaluate(m, intoPeriod(m, firstPublishedAt()), 3);

describe('the freshness alarm of a pipeline, evaluated locally as synthesized', () => {
  // The arranged publication, only read here: each describe acts on a CloudWatch endpoint of its own.
  const wf = useFork(fixture);

  describe('before any measurement', () => {
    const m = useMonitored(wf);

    it("is the stack's alarm: PublishAgeSeconds of the pipeline against its SLA, missing data breaching, paging the on-call topic", () => {
      expect(m.alarm).toMatchObject({
        namespace: 'AtomicPublish',
        statistic: 'Maximum',
        threshold: PIPELINE.freshness.slaMinutes * 60,
        comparison: 'GreaterThanThreshold',
        treatMissingData: 'breaching',
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
      });
      expect(m.alarm.actions.ALARM).toHaveLength(1);
      expect(m.alarm.actions.ALARM[0]).toMatch(/^arn:aws:sns:/);
      expect(m.alarm.actions.OK).toEqual(m.alarm.actions.ALARM);
      expect(m.cw.state(m.alarm.alarmName)).toBe('INSUFFICIENT_DATA');
    });
  });

  describe('measuring a fresh publication', () => {
    const m = useMonitored(wf);
    let start: number;
    let changed: AlarmTransition[];
    beforeAll(async () => {
      start = intoPeriod(m, firstPublishedAt());
      changed = await monitorThenEvaluate(m, start, 3);
    });

    it('turns OK once the monitor measured a fresh publication for three periods, and says so', async () => {
      const { first } = fixture.arranged;
      expect(first.status, `${first.error}: ${first.cause}`).toBe('SUCCEEDED');
      expect(changed).toEqual([expect.objectContaining({ alarmName: m.alarm.alarmName, from: 'INSUFFICIENT_DATA', to: 'OK' })]);
      const age = await publishAge(m, new Date(start - 30_000), new Date(start - 30_000 + 3 * m.period), m.period / 1000, 'Maximum');
      expect(age.Datapoints!.map((d) => d.Maximum)).toEqual([0, 1, 2].map((k) => (start + k * m.period - firstPublishedAt()) / 1000));
      expect(pages(m).at(-1)).toMatchObject({ subject: expect.stringMatching(/^OK: /), message: { NewStateValue: 'OK', AlarmName: m.alarm.alarmName } });
    });
  });

  describe('measuring the live table', () => {
    const m = useMonitored(wf);

    it('measures the data lag too: now minus the newest event time in the live table', async () => {
      const now = intoPeriod(m, firstPublishedAt()) + 30_000;
      const report = await monitorFreshness({ warehouse: m.warehouse, cloudWatch: m.client, now: new Date(now), pipelines: [PIPELINE] });
      // The column holds UTC wall times (timestamp without time zone).
      const [row] = await m.wf.query<{ latest: string }>(
        `SELECT to_char(max(ordered_at), 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS latest FROM analytics.sales_order_lines`,
      );
      expect(report.measured[PIPELINE.name]).toContainEqual({ name: 'LiveDataLagSeconds', seconds: (now - Date.parse(row!.latest)) / 1000 });
    });
  });

  describe('once OK, measuring a publication older than the SLA', () => {
    const m = useMonitored(wf);
    let changed: AlarmTransition[];
    let page: ReturnType<typeof pages>[number] | undefined;
    let described: DescribeAlarmsCommandOutput;
    beforeAll(async () => {
      await fresh(m);
      const before = pages(m).length;
      changed = await monitorThenEvaluate(m, intoPeriod(m, firstPublishedAt() + SLA_MS + MINUTE), 3);
      [page] = pages(m).slice(before);
      described = await m.client.send(new DescribeAlarmsCommand({ AlarmNames: [m.alarm.alarmName] }));
    });

    it('turns to ALARM when the publication grows older than the SLA, paging on-call with the pipeline, what it means and the runbook', () => {
      expect(changed.map((t) => [t.from, t.to])).toEqual([['OK', 'ALARM']]);
      expect(page!.subject).toMatch(/^ALARM: /);
      expect(page!.message).toMatchObject({
        NewStateValue: 'ALARM',
        OldStateValue: 'OK',
        Trigger: { MetricName: 'PublishAgeSeconds', Threshold: PIPELINE.freshness.slaMinutes * 60 },
      });
      const description = String(page!.message.AlarmDescription);
      expect(description).toContain(`pipeline ${PIPELINE.name} is stale`);
      expect(description).toContain(`more than ${PIPELINE.freshness.slaMinutes} minutes ago`);
      expect(description).toContain('Runbook: docs/runbook.md, "Freshness alarm"');
      // Three datapoints over the threshold, none missing.
      expect(String(page!.message.NewStateReason)).toMatch(/^3 of the last 3 datapoints \[\d/);
      expect(described.MetricAlarms).toEqual([expect.objectContaining({ StateValue: 'ALARM', AlarmDescription: description })]);
    });
  });

  describe('once OK, when the monitor stops running', () => {
    const m = useMonitored(wf);
    beforeAll(async () => {
      await fresh(m);
    });

    it('turns to ALARM when the monitor stops running: missing data breaches', () => {
      const lastEvaluated = Date.parse(m.cw.transitions.filter((t) => t.alarmName === m.alarm.alarmName).at(-1)!.at);
      expect(m.cw.state(m.alarm.alarmName)).toBe('OK');
      const before = pages(m).length;

      // Two periods without a datapoint, the third one's still there: one missing run does not page, two do.
      expect(transitionsOfThisAlarm(m, m.cw.evaluate(new Date(lastEvaluated + m.period)))).toEqual([]);
      const changed = transitionsOfThisAlarm(m, m.cw.evaluate(new Date(lastEvaluated + 2 * m.period)));

      expect(changed.map((t) => [t.from, t.to])).toEqual([['OK', 'ALARM']]);
      expect(changed[0]!.reason).toMatch(/missing, missing/);
      expect(pages(m).slice(before)).toEqual([expect.objectContaining({ subject: expect.stringMatching(/^ALARM: /) })]);
    });
  });
});

describe('the freshness alarm of a pipeline, once in ALARM', () => {
  const m = useMonitored(useFork(fixture));
  let second: ExecutionResult;
  let secondPublishedAt: number;
  let changed: AlarmTransition[];
  let pagesAfter: ReturnType<typeof pages>;
  beforeAll(async () => {
    await fresh(m);
    await monitorThenEvaluate(m, intoPeriod(m, firstPublishedAt() + SLA_MS + MINUTE), 3);
    second = await m.wf.run(inputFor(12), 'freshness-second');
    secondPublishedAt = (await livePublishedAt(m.wf)).getTime();
    const before = pages(m).length;
    changed = await monitorThenEvaluate(m, intoPeriod(m, secondPublishedAt), 3);
    pagesAfter = pages(m).slice(before);
  });

  it('returns to OK after a fresh publish, and tells on-call', () => {
    expect(second.status, `${second.error}: ${second.cause}`).toBe('SUCCEEDED');
    expect(secondPublishedAt).toBeGreaterThan(firstPublishedAt() + SLA_MS);
    expect(changed.map((t) => [t.from, t.to])).toEqual([['ALARM', 'OK']]);
    expect(pagesAfter).toEqual([
      expect.objectContaining({ subject: expect.stringMatching(/^OK: /), message: expect.objectContaining({ NewStateValue: 'OK' }) }),
    ]);
  });
});

describe('a rollback', () => {
  const m = useMonitored(useFork(fixture));
  let second: ExecutionResult;
  beforeAll(async () => {
    // A second publication, which the rollback undoes.
    second = await m.wf.run(inputFor(12), 'freshness-second');
  });

  it('does not count as a publish: the age is again that of the publication it puts back', async () => {
    expect(second.status, `${second.error}: ${second.cause}`).toBe('SUCCEEDED');
    const [first] = await m.wf.query<{ at: Date }>(`SELECT published_at AS at FROM atomic_publish.publications WHERE pipeline = $1 AND seq = 1`, [
      PIPELINE.name,
    ]);
    const run = await m.wf.run({ pipeline: PIPELINE.name, rollback: {} }, 'freshness-rollback');
    expect(run.status, `${run.error}: ${run.cause}`).toBe('SUCCEEDED');
    const [latest] = await m.wf.query<{ rollback_of: number | null }>(
      `SELECT rollback_of FROM atomic_publish.publications WHERE pipeline = $1 ORDER BY seq DESC LIMIT 1`,
      [PIPELINE.name],
    );
    expect(latest!.rollback_of).toBe(2);
    const now = Date.now();

    const report = await monitorFreshness({ warehouse: m.warehouse, cloudWatch: m.client, now: new Date(now), pipelines: [PIPELINE] });

    expect(report.measured[PIPELINE.name]).toContainEqual({ name: 'PublishAgeSeconds', seconds: (now - first!.at.getTime()) / 1000 });
    expect((now - first!.at.getTime()) / 1000).toBeGreaterThan(PIPELINE.freshness.slaMinutes * 60);
  });
});

describe('the monitor as a database user of its own', () => {
  const m = useMonitored(useFork(fixture));

  it('cannot measure without its grants, and measures with exactly what its setup SQL grants', async () => {
    const user = 'IAMR:atomic-publish-local-monitor';
    await ensureLocalUser(m.wf.wh.pg, user);
    const asMonitor = localWarehouse(m.wf.wh.endpoint, m.wf.wh.pg.database, DEFAULT_POLL, user);
    const measure = (now: number) => monitorFreshness({ warehouse: asMonitor, cloudWatch: m.client, now: new Date(now), pipelines: [PIPELINE] });

    await expect(measure(Date.now() - 100 * MINUTE)).rejects.toThrow(/permission denied/);

    for (const sql of monitorSetupStatements(PIPELINE, { database: m.wf.wh.pg.database, user })) await m.wf.query(sql);
    const report = await measure(Date.now() - 110 * MINUTE);
    expect(report.measured[PIPELINE.name]!.map((v) => v.name)).toEqual(['PublishAgeSeconds', 'LiveDataLagSeconds']);
  });
});

describe('the deployed handler, invoked as its schedule invokes it', () => {
  const m = useMonitored(useFork(fixture));

  it('measures every pipeline of the registry at the real time and writes to the CloudWatch endpoint it is given', async () => {
    const before = Date.now();
    const result = (await m.wf.runner.fireFreshnessMonitor(m.cw.endpoint)) as { measured: Record<string, { name: string; seconds: number }[]> };
    const after = Date.now();

    expect(Object.keys(result.measured)).toEqual(pipelines.map((p) => p.name));
    const age = result.measured[PIPELINE.name]!.find((v) => v.name === 'PublishAgeSeconds')!;
    const written = await publishAge(m, new Date(before - 1000), new Date(after + 1000), 1, 'Maximum');
    expect(written.Datapoints!.map((d) => d.Maximum)).toContain(age.seconds);
    expect(written.Datapoints!.every((d) => d.Unit === 'Seconds')).toBe(true);
  });
});

describe('a pipeline the monitor cannot measure', () => {
  // Only read: each test measures onto a CloudWatch endpoint of its own.
  const m = useMonitored(useFork(fixture), 'each');

  it("does not keep the others' metrics from being written, and fails the run naming it", async () => {
    const missing: Pipeline = { ...PIPELINE, name: 'gone_pipeline', target: { schema: 'analytics', table: 'no_such_table' } };
    const now = Date.now() - 60 * MINUTE;

    const run = monitorFreshness({ warehouse: m.warehouse, cloudWatch: m.client, now: new Date(now), pipelines: [missing, PIPELINE] });

    await expect(run).rejects.toThrow(FreshnessMonitorError);
    await expect(run).rejects.toThrow(/freshness not measured for 1 pipeline\(s\): gone_pipeline \(WarehouseError: .*no_such_table/);
    const written = await publishAge(m, new Date(now - 1000), new Date(now + 1000), 60, 'SampleCount');
    expect(written.Datapoints!.map((d) => d.SampleCount)).toEqual([1]);
  });

  it('when the warehouse does not answer: fails naming every pipeline, having written nothing', async () => {
    const unreachable = localWarehouse(`http://127.0.0.1:${await closedPort()}`, m.wf.wh.pg.database);
    const now = Date.now() - 3 * 3600_000;

    const run = monitorFreshness({ warehouse: unreachable, cloudWatch: m.client, now: new Date(now), pipelines: [PIPELINE] });

    await expect(run).rejects.toThrow(new RegExp(`freshness not measured for 1 pipeline\\(s\\): ${PIPELINE.name} \\(`));
    const written = await publishAge(m, new Date(now - 60_000), new Date(now + 60_000), 60, 'SampleCount');
    expect(written.Datapoints).toEqual([]);
  });
});
