// The per-pipeline failure alarms on real parts: the state machine fails for real
// (a blocked batch, a timed-out execution), the handlers' EMF lines go to the
// local CloudWatch as CloudWatch Logs would extract them, which evaluates the
// synthesized alarms at instants from the metrics' timestamps and pages through
// the local SNS outbox. Why: docs/decisions/alarms-per-pipeline-and-their-runbook.md
import { type CloudWatchClient, DescribeAlarmsCommand } from '@aws-sdk/client-cloudwatch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WarehouseError } from '../../domain/errors.ts';
import { localCloudWatchClient } from '../../local/aws-clients.ts';
import { alarmsFromTemplate, type MetricAlarm } from '../../local/cloudwatch-alarms.ts';
import { type LocalCloudWatchApi, startLocalCloudWatchApi } from '../../local/cloudwatch-api.ts';
import { putEmfRecords } from '../../local/emf-metrics.ts';
import type { MetricRecord } from '../../local/lambda-output.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { SnsOutbox } from '../../local/sns-outbox.ts';
import { caughtError, inputFor, PIPELINE, useFork, useWorkflowFixture, type Workflow } from '../support/workflow.ts';

const DAY = 5;

const fixture = useWorkflowFixture('wf_failure_alarms', async (wf) => {
  await wf.sample({ rowsPerDay: 5, sourceDays: DAY + 1, liveDays: 3 });
  // A source row arrives after the load: the gate's count no longer matches.
  wf.faults.Reconcile = async (input, next) => {
    await wf.query(`INSERT INTO source.sales_order_lines VALUES (900000001, 1, $1::timestamp + interval '1 hour', 1, 1, 1, 5.00)`, [
      sampleDay(1).toISOString().slice(0, 19),
    ]);
    return next(input);
  };
  let failed: Awaited<ReturnType<Workflow['run']>>;
  try {
    failed = await wf.run(inputFor(DAY), 'gate-blocks');
  } finally {
    wf.reset();
    await wf.query('DELETE FROM source.sales_order_lines WHERE order_id = 900000001');
  }
  return { failed, alarms: alarmsFromTemplate(wf.runner.workflow.template) };
});

interface LocalAlarms {
  cw: LocalCloudWatchApi;
  client: CloudWatchClient;
  outbox: SnsOutbox;
}

/** For the calling describe: a CloudWatch endpoint of its own evaluating the stack's alarms, paging through the fork's outbox. */
function useAlarms(wf: Workflow): LocalAlarms {
  const local = {} as LocalAlarms;
  beforeAll(async () => {
    local.outbox = new SnsOutbox(wf.outboxFile);
    local.cw = await startLocalCloudWatchApi({ alarms: fixture.arranged.alarms, outbox: local.outbox });
    local.client = localCloudWatchClient(local.cw.endpoint);
  });
  afterAll(() => local.cw?.close());
  return local;
}

const alarmOn = (metricName: string) => fixture.arranged.alarms.find((a) => a.metricName === metricName && a.dimensions.Pipeline === PIPELINE.name)!;
/** The end of the alarm's period that holds `timestamp`: the first instant its evaluation sees that period. */
const periodEnd = (alarm: MetricAlarm, timestamp: number) => (Math.floor(timestamp / (alarm.periodSeconds * 1000)) + 1) * alarm.periodSeconds * 1000;
const pagesOf = (outbox: SnsOutbox, alarm: MetricAlarm) =>
  outbox.alerts.filter((a) => a.executionId === alarm.alarmArn).map((a) => JSON.parse(a.message) as { NewStateValue: string; AlarmDescription: string });
const recordWith = (metrics: readonly MetricRecord[], name: string) => metrics.filter((m) => name in m.values);

describe('a batch the gate blocks', () => {
  const wf = useFork(fixture);
  const local = useAlarms(wf);
  let failed: Awaited<ReturnType<Workflow['run']>>;
  beforeAll(() => {
    ({ failed } = fixture.arranged);
  });

  it('has RecordFailure write ReconcileFailed beside BatchFailed, with the service and Pipeline dimensions, and no other class', () => {
    expect(caughtError(failed)?.Error).toBe('CheckFailedError');
    const records = recordWith(failed.metrics, 'BatchFailed');
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      namespace: 'AtomicPublish',
      dimensions: { service: 'atomic-publish', Pipeline: PIPELINE.name },
      values: { BatchFailed: 1, ReconcileFailed: 1 },
    });
    expect(Object.keys(records[0]!.values).sort()).toEqual(['BatchFailed', 'ReconcileFailed']);
  });

  it("turns the pipeline's reconciliation-failed alarm to ALARM, paging with its runbook, while publish-failed and out-of-band stay quiet; then OK after a quiet period", async () => {
    const alarm = alarmOn('ReconcileFailed');
    expect(alarm).toMatchObject({
      namespace: 'AtomicPublish',
      dimensions: { service: 'atomic-publish', Pipeline: PIPELINE.name },
      statistic: 'Sum',
      threshold: 1,
    });
    expect(await putEmfRecords(local.client, failed.metrics)).toBeGreaterThanOrEqual(2);
    const at = periodEnd(alarm, recordWith(failed.metrics, 'ReconcileFailed')[0]!.timestamp);

    const changed = local.cw.evaluate(new Date(at));

    const of = (a: MetricAlarm) => changed.find((t) => t.alarmName === a.alarmName);
    expect(of(alarm)).toMatchObject({ from: 'INSUFFICIENT_DATA', to: 'ALARM' });
    expect(pagesOf(local.outbox, alarm)).toEqual([
      expect.objectContaining({
        NewStateValue: 'ALARM',
        AlarmDescription: expect.stringMatching(
          new RegExp(`^atomic-publish: pipeline ${PIPELINE.name}: reconciliation failed: .*docs\\/runbook\\.md#reconciliation-failed-alarm\\)\\.$`),
        ),
      }),
    ]);
    // No datapoint of theirs, missing data not breaching: OK, never ALARM.
    for (const other of [alarmOn('PublishFailed'), alarmOn('OutOfBandChange')]) expect(local.cw.state(other.alarmName)).toBe('OK');

    expect(local.cw.evaluate(new Date(at + alarm.periodSeconds * 1000)).filter((t) => t.alarmName === alarm.alarmName)).toEqual([
      expect.objectContaining({ from: 'ALARM', to: 'OK' }),
    ]);
    expect(pagesOf(local.outbox, alarm).map((p) => p.NewStateValue)).toEqual(['ALARM', 'OK']);
  });
});

describe('the re-run that publishes', () => {
  const wf = useFork(fixture);

  it("has EmitMetrics' RunDurationSeconds reach the pipeline's slow-run alarm by its dimensions: under the expected run, OK", async () => {
    const rerun = await wf.run(inputFor(DAY), 'gate-blocks-rerun');
    expect(rerun.status, `${rerun.error}: ${rerun.cause}`).toBe('SUCCEEDED');
    const [record] = recordWith(rerun.metrics, 'RunDurationSeconds');
    expect(record).toMatchObject({ dimensions: { service: 'atomic-publish', Pipeline: PIPELINE.name } });
    const alarm = alarmOn('RunDurationSeconds');
    expect(alarm).toMatchObject({ statistic: 'Maximum', threshold: (PIPELINE.freshness.slaMinutes / 2) * 60, comparison: 'GreaterThanThreshold' });
    // An endpoint of its own, started after the run: the alarm starts INSUFFICIENT_DATA, so OK is the datapoint's doing.
    const own = await startLocalCloudWatchApi({ alarms: [alarm], outbox: new SnsOutbox(wf.outboxFile) });
    try {
      const ownClient = localCloudWatchClient(own.endpoint);
      await putEmfRecords(ownClient, rerun.metrics);

      own.evaluate(new Date(periodEnd(alarm, record!.timestamp)));

      // A datapoint under the threshold, not missing data, is what made it OK: the reason quotes it.
      const [described] = (await ownClient.send(new DescribeAlarmsCommand({ AlarmNames: [alarm.alarmName] }))).MetricAlarms!;
      expect(described).toMatchObject({ StateValue: 'OK', StateReason: expect.stringContaining(`[${record!.values.RunDurationSeconds}]`) });
    } finally {
      await own.close();
    }
  });
});

describe('an execution that timed out before Plan recorded a batch', () => {
  const wf = useFork(fixture);
  const local = useAlarms(wf);

  it("has CancelOrphans write ExecutionStopped for the pipeline its input names, and the pipeline's execution-stopped alarm pages", async () => {
    let releasePlan!: () => void;
    const planHeld = new Promise<void>((resolve) => (releasePlan = resolve));
    wf.faults.Plan = async () => {
      await planHeld;
      throw new WarehouseError('not run: the execution timed out');
    };
    let timedOut: Awaited<ReturnType<Workflow['run']>>;
    try {
      const execution = await wf.runner.start(inputFor(DAY), { name: 'timed-out', timeoutSeconds: 1 });
      timedOut = await execution.result;
    } finally {
      releasePlan();
      wf.reset();
    }

    expect(timedOut.status).toBe('TIMED_OUT');
    const records = recordWith(timedOut.metrics, 'ExecutionStopped');
    expect(records).toEqual([
      expect.objectContaining({
        namespace: 'AtomicPublish',
        dimensions: { service: 'atomic-publish', Pipeline: PIPELINE.name },
        values: { ExecutionStopped: 1 },
      }),
    ]);
    await putEmfRecords(local.client, records);
    const alarm = alarmOn('ExecutionStopped');

    const changed = local.cw.evaluate(new Date(periodEnd(alarm, records[0]!.timestamp)));

    expect(changed.find((t) => t.alarmName === alarm.alarmName)).toMatchObject({ to: 'ALARM' });
    expect(pagesOf(local.outbox, alarm).at(-1)).toMatchObject({
      NewStateValue: 'ALARM',
      AlarmDescription: expect.stringContaining('an execution was aborted or timed out'),
    });
  });
});
