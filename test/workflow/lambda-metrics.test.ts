// The AWS/Lambda metrics on real parts: every invocation the local engine runs is
// sent as Invocations, Errors and Duration to the local CloudWatch, stamped by the
// runner's clock, which the test sets; the synthesized `Errors:<fn>` alarms page
// through the local SNS outbox; GetMetricData reads back what was written and
// every metric the dashboard graphs. Why: docs/decisions/lambda-metrics-locally-and-getmetricdata.md

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CloudWatchClient, GetMetricDataCommand, type MetricDataQuery } from '@aws-sdk/client-cloudwatch';
import { beforeAll, describe, expect, it } from 'vitest';
import type { StartRunResult } from '../../functions/start-run/index.ts';
import { type CfnResource, resolveToken } from '../../lib/definition.ts';
import { stepEntry } from '../../lib/workflow-steps.ts';
import { localCloudWatchClient } from '../../local/aws-clients.ts';
import { alarmsFromTemplate, type MetricAlarm } from '../../local/cloudwatch-alarms.ts';
import { type AlarmTransition, type LocalCloudWatchApi, startLocalCloudWatchApi } from '../../local/cloudwatch-api.ts';
import { LAMBDA_NAMESPACE } from '../../local/lambda-metrics.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { SnsOutbox } from '../../local/sns-outbox.ts';
import { type LocalStepFunctionsApi, startLocalStepFunctionsApi } from '../../local/step-functions-api.ts';
import { synthesizeTemplate, type Template } from '../../local/template.ts';
import { closedPort } from '../support/unreachable.ts';
import { caughtError, inputFor, LIVE, namesFor, PIPELINE, useWorkflowFixture, type Workflow } from '../support/workflow.ts';

const MINUTE = 60_000;
const PERIOD = 5 * MINUTE;
/** 30 s into a five-minute period about three hours ago: the Lambda service's clock starts there. */
const T = Math.floor((Date.now() - 3 * 3600_000) / PERIOD) * PERIOD + 30_000;

let template: Template;
let alarms: MetricAlarm[];
beforeAll(async () => {
  template = await synthesizeTemplate();
  alarms = alarmsFromTemplate(template);
});

const fixture = useWorkflowFixture('wf_lambda_metrics', async (wf) => {
  await wf.sample({ rowsPerDay: 5, sourceDays: 12, liveDays: 5 });
});

/** A copy of the sample warehouse whose runner writes to a CloudWatch endpoint of its own (every alarm INSUFFICIENT_DATA at first). */
interface Metered {
  /** The Lambda service's clock: the runner's invocations are timestamped with it. */
  now: number;
  wf: Workflow;
  cw: LocalCloudWatchApi;
  client: CloudWatchClient;
  /** Where the alarms page. */
  outbox: SnsOutbox;
  /** A local Step Functions endpoint serving the runner (the schedules' StartRun starts executions there). */
  api: LocalStepFunctionsApi;
}

/** A Metered for the calling describe, its clock at `at`. */
function useMetered(options: { at?: number; concurrencyLimit?: number } = {}): Metered {
  const metered = { now: options.at ?? T } as Metered;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atomic-publish-lambda-metrics-'));
    const closing: (() => Promise<unknown> | void)[] = [() => rmSync(dir, { recursive: true, force: true })];
    const close = async () => {
      for (const step of closing.splice(0).reverse()) await step();
    };
    try {
      const outbox = new SnsOutbox(join(dir, 'alarms.jsonl'));
      const cw = await startLocalCloudWatchApi({ alarms, outbox });
      closing.push(() => cw.close());
      const wf = await fixture.fork({
        cloudWatchEndpoint: cw.endpoint,
        clock: () => new Date(metered.now),
        ...(options.concurrencyLimit ? { concurrencyLimit: options.concurrencyLimit } : {}),
      });
      closing.push(() => wf.close());
      const api = await startLocalStepFunctionsApi(wf.runner);
      closing.push(() => api.close());
      Object.assign(metered, { wf, cw, client: localCloudWatchClient(cw.endpoint), outbox, api });
    } catch (error) {
      await close();
      throw error;
    }
    return close;
  });
  return metered;
}

/** The end of the period that holds `at`: the first instant an alarm's evaluation sees that period. */
const periodEnd = (at: number) => Math.floor(at / PERIOD) * PERIOD + PERIOD;
const lambdaAlarm = (metricName: 'Errors' | 'Throttles', functionName: string) =>
  alarms.find((a) => a.namespace === LAMBDA_NAMESPACE && a.metricName === metricName && a.dimensions.FunctionName === functionName)!;
const pagesOf = (m: Metered, alarm: MetricAlarm) =>
  m.outbox.alerts
    .filter((a) => a.executionId === alarm.alarmArn)
    .map((a) => ({ subject: a.subject, ...(JSON.parse(a.message) as { NewStateValue: string; AlarmDescription: string }) }));
const startRunOf = (wf: Workflow) => wf.runner.workflow.scheduleTargets.find((t) => t.entry === stepEntry('StartRun'))!.functionLogicalId;

/** One function's AWS/Lambda metric, `stat` per five minutes, oldest first, from `from` for `periods` periods. */
async function lambdaMetric(
  m: Metered,
  functionName: string,
  metricName: string,
  stat: string,
  from: number,
  periods = 1,
): Promise<{ at: number; value: number }[]> {
  const { MetricDataResults } = await m.client.send(
    new GetMetricDataCommand({
      StartTime: new Date(Math.floor(from / PERIOD) * PERIOD),
      EndTime: new Date(Math.floor(from / PERIOD) * PERIOD + periods * PERIOD),
      ScanBy: 'TimestampAscending',
      MetricDataQueries: [
        {
          Id: 'm',
          MetricStat: {
            Metric: { Namespace: LAMBDA_NAMESPACE, MetricName: metricName, Dimensions: [{ Name: 'FunctionName', Value: functionName }] },
            Period: 300,
            Stat: stat,
          },
        },
      ],
    }),
  );
  const [result] = MetricDataResults!;
  return result!.Timestamps!.map((at, i) => ({ at: at.getTime(), value: result!.Values![i]! }));
}

describe('a failed StartRun, then a clean invocation of it in the next period', () => {
  // Due at 06:00 in Berlin on sample day 8: plans up to the start of day 8.
  const due = new Date(sampleDay(8).getTime() + 5 * 3600_000);
  const m = useMetered({ at: T });
  /** What the failed invocation threw, and what StartRun's errors alarm did and paged right after it. */
  let failure: unknown;
  let lastInvocationAfterFailure: unknown;
  let changedAfterFailure: AlarmTransition[];
  let pagesAfterFailure: ReturnType<typeof pagesOf>;
  /** The execution the clean invocation started, a period later, and what the alarms did at the end of that period. */
  let cleanRun: ExecutionResult;
  let cleanAt: number;
  let changedAfterClean: AlarmTransition[];
  beforeAll(async () => {
    const alarm = lambdaAlarm('Errors', startRunOf(m.wf));
    failure = await m.wf.runner.fireSchedule(PIPELINE.name, due, `http://127.0.0.1:${await closedPort()}`).then(
      () => undefined,
      (error: unknown) => error,
    );
    lastInvocationAfterFailure = m.wf.runner.invocations.at(-1);
    changedAfterFailure = m.cw.evaluate(new Date(periodEnd(T))).filter((t) => t.alarmName === alarm.alarmName);
    pagesAfterFailure = pagesOf(m, alarm);

    m.now = cleanAt = T + PERIOD;
    const started = (await m.wf.runner.fireSchedule(PIPELINE.name, due, m.api.endpoint)) as StartRunResult;
    cleanRun = await m.wf.runner.describe(started.executionArn!)!.running.result;
    // Every alarm of the stack evaluated at the end of the clean run's period.
    changedAfterClean = m.cw.evaluate(new Date(periodEnd(cleanAt)));
  });

  describe('StartRun, which no state machine Catch watches', () => {
    it('failing (Step Functions unreachable) writes Errors 1 for it, and its errors alarm pages with the runbook line', async () => {
      const startRun = startRunOf(m.wf);
      const alarm = lambdaAlarm('Errors', startRun);
      expect(alarm).toMatchObject({
        statistic: 'Sum',
        threshold: 1,
        comparison: 'GreaterThanOrEqualToThreshold',
        periodSeconds: 300,
        treatMissingData: 'notBreaching',
      });

      expect(() => {
        throw failure;
      }).toThrow(/ECONNREFUSED|connect/);

      expect(lastInvocationAfterFailure).toMatchObject({ functionName: startRun, at: T, outcome: 'functionError' });
      expect(await lambdaMetric(m, startRun, 'Errors', 'Sum', T)).toEqual([{ at: T - 30_000, value: 1 }]);
      expect(await lambdaMetric(m, startRun, 'Invocations', 'Sum', T)).toEqual([{ at: T - 30_000, value: 1 }]);

      expect(changedAfterFailure).toEqual([expect.objectContaining({ from: 'INSUFFICIENT_DATA', to: 'ALARM' })]);
      expect(pagesAfterFailure).toEqual([
        expect.objectContaining({
          subject: expect.stringMatching(/^ALARM: /),
          NewStateValue: 'ALARM',
          AlarmDescription: expect.stringMatching(/^atomic-publish: the StartRun function failed an invocation .*docs\/runbook\.md#lambda-errors-alarm\)\.$/),
        }),
      ]);
    });

    it('returns to OK, telling on-call, after a clean invocation in the next period; the run it started publishes', async () => {
      const startRun = startRunOf(m.wf);
      const alarm = lambdaAlarm('Errors', startRun);

      expect(cleanRun.status, `${cleanRun.error}: ${cleanRun.cause}`).toBe('SUCCEEDED');
      expect(await lambdaMetric(m, startRun, 'Errors', 'Sum', T, 2)).toEqual([
        { at: T - 30_000, value: 1 },
        { at: T - 30_000 + PERIOD, value: 0 },
      ]);
      expect(changedAfterClean.filter((t) => t.alarmName === alarm.alarmName)).toEqual([expect.objectContaining({ from: 'ALARM', to: 'OK' })]);
      expect(pagesOf(m, alarm).map((p) => p.NewStateValue)).toEqual(['ALARM', 'OK']);
    });
  });

  describe("a state machine run's steps", () => {
    it("each write Invocations, Errors 0 and Duration under their function's name, as many as they were invoked", async () => {
      const functions = m.wf.runner.workflow.functions;
      const invoked = new Map<string, number[]>();
      for (const record of cleanRun.invocations) invoked.set(record.functionName, [...(invoked.get(record.functionName) ?? []), record.durationMs!]);
      // Every step of a clean run: Plan, the chunk loads, Reconcile, Publish, EmitMetrics, Cleanup.
      for (const step of ['Plan', 'LoadChunk', 'Reconcile', 'Publish', 'EmitMetrics', 'Cleanup']) expect(invoked.has(functions[step]!), step).toBe(true);
      expect(cleanRun.invocations.every((r) => r.outcome === 'succeeded' && r.at === cleanAt)).toBe(true);

      for (const [functionName, durations] of invoked) {
        expect(await lambdaMetric(m, functionName, 'Invocations', 'Sum', cleanAt), functionName).toEqual([{ at: cleanAt - 30_000, value: durations.length }]);
        expect(await lambdaMetric(m, functionName, 'Errors', 'Sum', cleanAt), functionName).toEqual([{ at: cleanAt - 30_000, value: 0 }]);
        expect(await lambdaMetric(m, functionName, 'Duration', 'Maximum', cleanAt), functionName).toEqual([
          { at: cleanAt - 30_000, value: Math.max(...durations) },
        ]);
        expect(Math.max(...durations)).toBeGreaterThan(0);
      }
    });

    it("leave the steps' throttles alarms OK: nothing was throttled", () => {
      for (const functionName of new Set(cleanRun.invocations.map((r) => r.functionName))) {
        expect(m.cw.state(lambdaAlarm('Throttles', functionName).alarmName), functionName).toBe('OK');
      }
    });
  });
});

interface DashboardMetric {
  readonly namespace: string;
  readonly metricName: string;
  readonly dimensions: Record<string, string>;
  readonly stat: string;
}

/** Every metric the synthesized dashboard graphs, as `[namespace, name, dim, value, ..., {options}]` rows of its widgets. */
function dashboardMetrics(tpl: Template): DashboardMetric[] {
  const [dashboard] = Object.values(tpl.Resources).filter((r) => r.Type === 'AWS::CloudWatch::Dashboard');
  const body = JSON.parse(resolveToken(dashboard!.Properties!.DashboardBody, tpl.Resources as Record<string, CfnResource>)) as {
    widgets: { type: string; properties: { metrics?: unknown[][]; stat?: string } }[];
  };
  return body.widgets.flatMap((w) =>
    (w.properties.metrics ?? []).map((row) => {
      const options = (typeof row.at(-1) === 'object' ? row.at(-1) : {}) as { stat?: string };
      const names = row.filter((v): v is string => typeof v === 'string');
      const [namespace, metricName, ...dims] = names;
      const dimensions: Record<string, string> = {};
      for (let i = 0; i < dims.length; i += 2) dimensions[dims[i]!] = dims[i + 1]!;
      return { namespace: namespace!, metricName: metricName!, dimensions, stat: options.stat ?? w.properties.stat ?? 'Average' };
    }),
  );
}

describe('the dashboard', () => {
  const metered = useMetered();

  it("graphs only metrics that local runs write: each of the pipeline's graphs has data after a clean run, the monitor, and one run failing each way", async () => {
    const clean = await metered.wf.run(inputFor(8), 'dashboard-clean');
    expect(clean.status, `${clean.error}: ${clean.cause}`).toBe('SUCCEEDED');
    // The failure classes the dashboard graphs, each provoked once (all also count BatchFailed).
    metered.wf.faults.Reconcile = async (input, next) => {
      // A source row arrives after the load: the gate's count no longer matches (ReconcileFailed).
      await metered.wf.query(`INSERT INTO source.sales_order_lines VALUES (900000001, 1, $1::timestamp + interval '1 hour', 1, 1, 1, 5.00)`, [
        sampleDay(1).toISOString().slice(0, 19),
      ]);
      return next(input);
    };
    try {
      expect((await metered.wf.run(inputFor(9), 'dashboard-gate-blocks')).status).toBe('FAILED');
    } finally {
      metered.wf.reset();
      await metered.wf.query('DELETE FROM source.sales_order_lines WHERE order_id = 900000001');
    }
    // The name the live table would be renamed to is taken: the swap does not commit (PublishFailed).
    await metered.wf.query(`CREATE TABLE ${namesFor(9).previous} (blocker int)`);
    try {
      expect((await metered.wf.run(inputFor(9), 'dashboard-swap-blocked')).status).toBe('FAILED');
    } finally {
      await metered.wf.query(`DROP TABLE ${namesFor(9).previous}`);
    }
    // Another tool writes to the live table between Plan and Publish (OutOfBandChange).
    metered.wf.faults.Publish = async (input, next) => {
      await metered.wf.query(
        `INSERT INTO ${LIVE} (order_id, line_no, ordered_at, customer_id, product_id, quantity, amount, unit_price) VALUES (900000002, 1, $1::timestamp, 1, 1, 2, 10.00, 5.0000)`,
        [sampleDay(2).toISOString().slice(0, 19)],
      );
      return next(input);
    };
    try {
      expect((await metered.wf.run(inputFor(9), 'dashboard-out-of-band')).status).toBe('FAILED');
    } finally {
      metered.wf.reset();
    }
    // An execution that times out (ExecutionStopped, written by CancelOrphans).
    let releasePlan!: () => void;
    const planHeld = new Promise<void>((resolve) => (releasePlan = resolve));
    metered.wf.faults.Plan = async () => {
      await planHeld;
      throw Object.assign(new Error('not run: the execution timed out'), { name: 'ValidationError' });
    };
    try {
      const execution = await metered.wf.runner.start(inputFor(10), { name: 'dashboard-timed-out', timeoutSeconds: 1 });
      expect((await execution.result).status).toBe('TIMED_OUT');
    } finally {
      releasePlan();
      metered.wf.reset();
    }
    await metered.wf.runner.fireFreshnessMonitor(metered.cw.endpoint);

    const graphed = dashboardMetrics(template).filter((m) => m.dimensions.Pipeline === PIPELINE.name);
    expect(graphed.map((m) => m.metricName).sort()).toEqual([
      'BatchFailed',
      'ExecutionStopped',
      'LiveDataLagSeconds',
      'OutOfBandChange',
      'PublishAgeSeconds',
      'PublishFailed',
      'ReconcileFailed',
      'RowsPublished',
      'RunDurationSeconds',
    ]);
    const queries: MetricDataQuery[] = graphed.map((m, i) => ({
      Id: `m${i}`,
      Label: m.metricName,
      MetricStat: {
        Metric: { Namespace: m.namespace, MetricName: m.metricName, Dimensions: Object.entries(m.dimensions).map(([Name, Value]) => ({ Name, Value })) },
        Period: 3600,
        Stat: m.stat,
      },
    }));
    // The handlers' metrics carry the real time; the last hours hold them all.
    const { MetricDataResults } = await metered.client.send(
      new GetMetricDataCommand({ StartTime: new Date(Date.now() - 3 * 3600_000), EndTime: new Date(Date.now() + 3600_000), MetricDataQueries: queries }),
    );

    const withoutData = MetricDataResults!.filter((r) => r.Values!.length === 0).map((r) => r.Label);
    expect(withoutData).toEqual([]);
    const sumOf = (label: string) => MetricDataResults!.find((r) => r.Label === label)!.Values!.reduce((a, b) => a + b, 0);
    expect(sumOf('BatchFailed')).toBe(3);
    expect(sumOf('ExecutionStopped')).toBe(1);
  });
});

describe("past the account's concurrency limit (one, here)", () => {
  const m = useMetered({ at: T + 2 * PERIOD, concurrencyLimit: 1 });

  it("a Task's invocation is refused with Lambda.TooManyRequestsException, which the synthesized Retry retries, each attempt counted in Throttles; the throttles alarm pages", async () => {
    const tw = m.wf;
    const now = m.now;
    const plan = tw.runner.workflow.functions.Plan!;
    const monitor = tw.runner.workflow.scheduleTargets.find((t) => t.entry === stepEntry('FreshnessMonitor'))!.functionLogicalId;
    const retry = (
      (tw.runner.workflow.definition.States as Record<string, { Retry?: { ErrorEquals: string[]; MaxAttempts: number }[] }>).Plan!.Retry ?? []
    ).find((r) => r.ErrorEquals.includes('Lambda.TooManyRequestsException'))!;
    // Execution A's Plan holds the one slot until the test lets it go.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const planEntered = new Promise<void>((resolve) => (entered = resolve));
    tw.faults.Plan = async () => {
      entered();
      await held;
      throw Object.assign(new Error('the held Plan, let go'), { name: 'ValidationError' });
    };
    let holder: Promise<ExecutionResult> | undefined;
    let queuedMonitor: Promise<unknown> | undefined;
    try {
      holder = (await tw.runner.start(inputFor(8), { name: 'throttle-holder' })).result;
      await planEntered;

      const throttled = await tw.run(inputFor(8), 'throttled');

      // Every attempt at Plan refused (the first and the Retry's), then RecordFailure's too: the run fails, having run no code.
      expect(throttled.status).toBe('FAILED');
      expect(caughtError(throttled)?.Error).toBe('Lambda.TooManyRequestsException');
      expect(throttled.invocations.filter((r) => r.functionName === plan)).toEqual(
        Array.from({ length: 1 + retry.MaxAttempts }, () => ({ functionName: plan, at: now, outcome: 'throttled' })),
      );
      expect(throttled.invocations.every((r) => r.outcome === 'throttled')).toBe(true);

      // An asynchronous invocation (the monitor's schedule) is throttled too, and waits in Lambda's queue for the slot.
      queuedMonitor = tw.runner.fireFreshnessMonitor(m.cw.endpoint).catch((error: unknown) => error);
      expect(tw.runner.invocations.at(-1)).toEqual({ functionName: monitor, at: now, outcome: 'throttled' });
    } finally {
      release();
      await holder;
      tw.reset();
    }
    await queuedMonitor;
    // Once the slot was free, the queued event ran the monitor's code.
    expect(tw.runner.invocations.filter((r) => r.functionName === monitor).map((r) => r.outcome)).toEqual([
      'throttled',
      expect.stringMatching(/^(succeeded|functionError)$/),
    ]);

    expect(await lambdaMetric(m, plan, 'Throttles', 'Sum', now)).toEqual([{ at: now - 30_000, value: 1 + retry.MaxAttempts }]);
    const alarm = lambdaAlarm('Throttles', plan);
    expect(m.cw.evaluate(new Date(periodEnd(now))).filter((t) => t.alarmName === alarm.alarmName)).toEqual([expect.objectContaining({ to: 'ALARM' })]);
    expect(pagesOf(m, alarm).at(-1)).toMatchObject({
      NewStateValue: 'ALARM',
      AlarmDescription: expect.stringMatching(/^atomic-publish: the Plan function was throttled .*docs\/runbook\.md#lambda-throttles-alarm\)\.$/),
    });
  });
});
