// The local CloudWatch endpoint, through the real @aws-sdk/client-cloudwatch
// client: PutMetricData with CloudWatch's limits, statistics per aligned
// period, and metric alarms evaluated at the instant a test gives, as
// CloudWatch evaluates them (M of N periods, the missing-data treatments,
// actions on every change of state). Each describe, or each test that
// writes what another would read, has an endpoint of its own.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DescribeAlarmsCommand,
  GetMetricDataCommand,
  GetMetricStatisticsCommand,
  PutMetricDataCommand,
  SetAlarmStateCommand,
} from '@aws-sdk/client-cloudwatch';
import { App } from 'aws-cdk-lib';
import { Template as CdkTemplate } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline } from '../../domain/define-pipeline.ts';
import { AtomicPublishStack } from '../../lib/atomic-publish-stack.ts';
import { localCloudWatchClient } from '../../local/aws-clients.ts';
import { alarmsFromTemplate, evaluateAlarm, type MetricAlarm } from '../../local/cloudwatch-alarms.ts';
import { startLocalCloudWatchApi } from '../../local/cloudwatch-api.ts';
import { SnsOutbox } from '../../local/sns-outbox.ts';
import { synthesizeTemplate, type Template } from '../../local/template.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { alarmOn, type LocalCloudWatch, MINUTE, T0, TOPIC, useLocalCloudWatch } from '../support/local-cloudwatch.ts';

const put = ({ client }: LocalCloudWatch, value: number, at: number, extra: Record<string, unknown> = {}) =>
  client.send(
    new PutMetricDataCommand({
      Namespace: 'Test',
      MetricData: [{ MetricName: 'Age', Dimensions: [{ Name: 'Pipeline', Value: 'p' }], Timestamp: new Date(at), Value: value, Unit: 'Seconds', ...extra }],
    }),
  );
const stats = ({ client }: LocalCloudWatch, start: number, end: number, period = 60) =>
  client.send(
    new GetMetricStatisticsCommand({
      Namespace: 'Test',
      MetricName: 'Age',
      Dimensions: [{ Name: 'Pipeline', Value: 'p' }],
      StartTime: new Date(start),
      EndTime: new Date(end),
      Period: period,
      Statistics: ['SampleCount', 'Sum', 'Average', 'Minimum', 'Maximum'],
    }),
  );

describe('PutMetricData', () => {
  // Each test on an endpoint of its own: one reads that nothing at all was stored.
  const local = useLocalCloudWatch('each');

  it('refuses what CloudWatch refuses, storing nothing of a refused request', async () => {
    const { client } = local;
    const reserved = client.send(new PutMetricDataCommand({ Namespace: 'AWS/Lambda', MetricData: [{ MetricName: 'Age', Value: 1 }] }));
    await expect(reserved).rejects.toMatchObject({ name: 'InvalidParameterValueException', message: expect.stringMatching(/AWS\/ .*reserved/) });
    const tooOld = client.send(
      new PutMetricDataCommand({
        Namespace: 'Test',
        MetricData: [
          { MetricName: 'Age', Dimensions: [{ Name: 'Pipeline', Value: 'p' }], Timestamp: new Date(T0 - 30 * MINUTE), Value: 7 },
          { MetricName: 'Age', Dimensions: [{ Name: 'Pipeline', Value: 'p' }], Timestamp: new Date(T0 - 15 * 24 * 60 * MINUTE), Value: 7 },
        ],
      }),
    );
    await expect(tooOld).rejects.toThrow(/two weeks before and two hours after now/);
    const tooMany = client.send(
      new PutMetricDataCommand({ Namespace: 'Test', MetricData: Array.from({ length: 1001 }, () => ({ MetricName: 'Other', Value: 1 })) }),
    );
    await expect(tooMany).rejects.toThrow(/greater than 1000/);

    expect((await stats(local, T0 - 60 * MINUTE, T0)).Datapoints).toEqual([]);
  });

  it('takes a request of 1,000 metrics, which the SDK sends gzipped', async () => {
    const { client } = local;
    const metrics = Array.from({ length: 1000 }, (_, i) => ({
      MetricName: 'Many',
      Dimensions: [{ Name: 'Pipeline', Value: `p${i}` }],
      Timestamp: new Date(T0 - 5 * MINUTE),
      Value: i,
    }));
    await client.send(new PutMetricDataCommand({ Namespace: 'Test', MetricData: metrics }));
    const last = await client.send(
      new GetMetricStatisticsCommand({
        Namespace: 'Test',
        MetricName: 'Many',
        Dimensions: [{ Name: 'Pipeline', Value: 'p999' }],
        StartTime: new Date(T0 - 6 * MINUTE),
        EndTime: new Date(T0),
        Period: 60,
        Statistics: ['Maximum'],
      }),
    );
    expect(last.Datapoints!.map((d) => d.Maximum)).toEqual([999]);
  });

  it('keeps values, value lists with counts and statistic sets, and reduces them per aligned period', async () => {
    const { client } = local;
    await put(local, 10, T0 - 50 * MINUTE + 1000);
    await put(local, 30, T0 - 50 * MINUTE + 2000);
    await client.send(
      new PutMetricDataCommand({
        Namespace: 'Test',
        MetricData: [
          { MetricName: 'Age', Dimensions: [{ Name: 'Pipeline', Value: 'p' }], Timestamp: new Date(T0 - 49 * MINUTE), Values: [1, 5], Counts: [2, 1] },
          { MetricName: 'Age', Dimensions: [{ Name: 'Pipeline', Value: 'other' }], Timestamp: new Date(T0 - 49 * MINUTE), Value: 1000 },
        ],
      }),
    );

    const { Datapoints } = await stats(local, T0 - 51 * MINUTE, T0 - 48 * MINUTE);

    expect(Datapoints).toEqual([
      { Timestamp: new Date(T0 - 50 * MINUTE), SampleCount: 2, Sum: 40, Average: 20, Minimum: 10, Maximum: 30, Unit: 'Seconds' },
      { Timestamp: new Date(T0 - 49 * MINUTE), SampleCount: 3, Sum: 7, Average: 7 / 3, Minimum: 1, Maximum: 5, Unit: 'Seconds' },
    ]);
  });
});

describe('GetMetricStatistics', () => {
  // The tests only read what the beforeAll wrote.
  const local = useLocalCloudWatch();
  beforeAll(async () => {
    await put(local, 10, T0 - 30 * MINUTE);
    await put(local, 20, T0 - 30 * MINUTE + 1000, { Unit: 'Milliseconds' });
  });
  const ask = (overrides: Record<string, unknown>) =>
    local.client.send(
      new GetMetricStatisticsCommand({
        Namespace: 'Test',
        MetricName: 'Age',
        Dimensions: [{ Name: 'Pipeline', Value: 'p' }],
        StartTime: new Date(T0 - 60 * MINUTE),
        EndTime: new Date(T0),
        Period: 60,
        Statistics: ['Sum'],
        ...overrides,
      } as never),
    );

  it('reduces only the datapoints of the Unit asked for, and names that unit', async () => {
    expect((await ask({ Unit: 'Milliseconds' })).Datapoints).toEqual([{ Timestamp: new Date(T0 - 30 * MINUTE), Sum: 20, Unit: 'Milliseconds' }]);
    expect((await ask({})).Datapoints!.map((d) => [d.Sum, d.Unit])).toEqual([[30, undefined]]);
  });

  it.each<[string, Record<string, unknown>, string, RegExp]>([
    [
      'a start after the end',
      { StartTime: new Date(T0), EndTime: new Date(T0 - MINUTE) },
      'InvalidParameterValue',
      /^The parameter StartTime must be less than the parameter EndTime\.$/,
    ],
    [
      'a statistic not in the set',
      { Statistics: ['Sum', 'Median'] },
      'InvalidParameterValue',
      /^The parameter Statistics\.member\.2 must be a value in the set \[SampleCount, Average, Sum, Minimum, Maximum\]\.$/,
    ],
    [
      'a percentile out of range',
      { Statistics: undefined, ExtendedStatistics: ['p101'] },
      'InvalidParameterValue',
      /ExtendedStatistics\.member\.1 must be a percentile from p0\.0 to p100/,
    ],
    [
      'a percentile, which it does not keep',
      { Statistics: undefined, ExtendedStatistics: ['p99.9'] },
      'InvalidParameterValue',
      /ExtendedStatistics \(p99\.9\) are not served locally/,
    ],
    [
      'both statistics and percentiles',
      { ExtendedStatistics: ['p99'] },
      'InvalidParameterCombination',
      /Statistics and ExtendedStatistics are mutually exclusive/,
    ],
    ['neither statistics nor percentiles', { Statistics: undefined }, 'InvalidParameterCombination', /either Statistics or ExtendedStatistics/],
    ['a period neither high-resolution nor of whole minutes', { Period: 45 }, 'InvalidParameterValue', /Period must be 1, 5, 10, 30 or a multiple of 60/],
    [
      'more than 1,440 datapoints',
      { StartTime: new Date(T0 - 1441 * MINUTE) },
      'InvalidParameterCombination',
      /^You have requested up to 1441 datapoints, which exceeds the limit of 1440\./,
    ],
    ['no namespace', { Namespace: undefined }, 'MissingParameter', /^The parameter Namespace is required\.$/],
  ])('refuses %s with %s, as CloudWatch does', async (_what, overrides, code, message) => {
    await expect(ask(overrides)).rejects.toMatchObject({ Code: code, message: expect.stringMatching(message), $metadata: { httpStatusCode: 400 } });
  });

  it('takes exactly 1,440 datapoints, and a high-resolution period', async () => {
    expect((await ask({ StartTime: new Date(T0 - 1440 * MINUTE) })).Datapoints).toHaveLength(1);
    expect((await ask({ StartTime: new Date(T0 - 31 * MINUTE), EndTime: new Date(T0 - 29 * MINUTE), Period: 10 })).Datapoints!.map((d) => d.Sum)).toEqual([30]);
  });
});

describe('the AWS/ namespaces', () => {
  const local = useLocalCloudWatch();

  it("take the local AWS services' metrics, signed with their key, and nobody else's", async () => {
    const { cw, client } = local;
    const asLambda = localCloudWatchClient(cw.endpoint, { asAwsService: true });
    const errors = { MetricName: 'Errors', Dimensions: [{ Name: 'FunctionName', Value: 'StartRunFunction' }], Timestamp: new Date(T0 - 20 * MINUTE), Value: 1 };

    await asLambda.send(new PutMetricDataCommand({ Namespace: 'AWS/Lambda', MetricData: [errors] }));
    await expect(client.send(new PutMetricDataCommand({ Namespace: 'AWS/Lambda', MetricData: [errors] }))).rejects.toMatchObject({
      name: 'InvalidParameterValueException',
    });

    const { Datapoints } = await client.send(
      new GetMetricStatisticsCommand({
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Dimensions: errors.Dimensions,
        StartTime: new Date(T0 - 30 * MINUTE),
        EndTime: new Date(T0),
        Period: 300,
        Statistics: ['Sum'],
      }),
    );
    expect(Datapoints!.map((d) => d.Sum)).toEqual([1]);
  });
});

describe('GetMetricData', () => {
  // The tests only read what the beforeAll wrote.
  const local = useLocalCloudWatch();
  const dims = [{ Name: 'Pipeline', Value: 'q' }];
  const query = (id: string, stat: string, period: number, extra: Record<string, unknown> = {}) => ({
    Id: id,
    MetricStat: { Metric: { Namespace: 'Test', MetricName: 'Rows', Dimensions: dims }, Period: period, Stat: stat },
    ...extra,
  });
  beforeAll(async () => {
    // Three one-minute periods: 08:40 (2 and 4), 08:41 (nothing), 08:42 (10), and 08:46 (1, in Count).
    const at = (minute: number, second: number) => new Date(T0 - 20 * MINUTE + minute * MINUTE + second * 1000);
    await local.client.send(
      new PutMetricDataCommand({
        Namespace: 'Test',
        MetricData: [
          { MetricName: 'Rows', Dimensions: dims, Timestamp: at(0, 5), Value: 2, Unit: 'None' },
          { MetricName: 'Rows', Dimensions: dims, Timestamp: at(0, 50), Value: 4, Unit: 'None' },
          { MetricName: 'Rows', Dimensions: dims, Timestamp: at(2, 0), Value: 10, Unit: 'None' },
          { MetricName: 'Rows', Dimensions: dims, Timestamp: at(6, 0), Value: 1, Unit: 'Count' },
        ],
      }),
    );
  });

  it("reduces each query's metric per period by its Stat, newest first unless ScanBy says otherwise, and leaves out the queries not returned", async () => {
    const { client } = local;
    const { MetricDataResults, Messages } = await client.send(
      new GetMetricDataCommand({
        StartTime: new Date(T0 - 20 * MINUTE + 20_000),
        EndTime: new Date(T0 - 10 * MINUTE),
        MetricDataQueries: [
          query('sum', 'Sum', 60, { Label: 'rows a minute' }),
          query('avg', 'Average', 60),
          query('count', 'SampleCount', 60, { ReturnData: false }),
          query('most', 'Maximum', 600),
          query('least', 'Minimum', 60, {
            MetricStat: { Metric: { Namespace: 'Test', MetricName: 'Rows', Dimensions: dims }, Period: 60, Stat: 'Minimum', Unit: 'Count' },
          }),
        ],
      }),
    );

    const minute = (m: number) => new Date(T0 - 20 * MINUTE + m * MINUTE);
    expect(Messages).toEqual([]);
    expect(MetricDataResults).toEqual([
      // The StartTime, 20 s into 08:40, is rounded down to the minute: 08:40 is in.
      { Id: 'sum', Label: 'rows a minute', Timestamps: [minute(6), minute(2), minute(0)], Values: [1, 10, 6], StatusCode: 'Complete', Messages: [] },
      { Id: 'avg', Label: 'Rows', Timestamps: [minute(6), minute(2), minute(0)], Values: [1, 10, 3], StatusCode: 'Complete', Messages: [] },
      // One period of ten minutes, 08:40 to 08:50, across the minutes above.
      { Id: 'most', Label: 'Rows', Timestamps: [minute(0)], Values: [10], StatusCode: 'Complete', Messages: [] },
      // Unit: only the datapoints written in that unit.
      { Id: 'least', Label: 'Rows', Timestamps: [minute(6)], Values: [1], StatusCode: 'Complete', Messages: [] },
    ]);

    const ascending = await client.send(
      new GetMetricDataCommand({ StartTime: minute(0), EndTime: minute(10), ScanBy: 'TimestampAscending', MetricDataQueries: [query('sum', 'Sum', 60)] }),
    );
    expect(ascending.MetricDataResults![0]!.Timestamps).toEqual([minute(0), minute(2), minute(6)]);
  });

  it('answers a query without data with empty lists, Complete', async () => {
    const { client } = local;
    const { MetricDataResults } = await client.send(
      new GetMetricDataCommand({
        StartTime: new Date(T0 - 20 * MINUTE),
        EndTime: new Date(T0 - 10 * MINUTE),
        MetricDataQueries: [
          {
            Id: 'none',
            MetricStat: { Metric: { Namespace: 'Test', MetricName: 'Rows', Dimensions: [{ Name: 'Pipeline', Value: 'nobody' }] }, Period: 60, Stat: 'Sum' },
          },
        ],
      }),
    );
    expect(MetricDataResults).toEqual([{ Id: 'none', Label: 'Rows', Timestamps: [], Values: [], StatusCode: 'Complete', Messages: [] }]);
  });

  it('refuses metric math and statistics it does not serve, naming what it does', async () => {
    const { client } = local;
    const send = (queries: Record<string, unknown>[]) =>
      client.send(
        new GetMetricDataCommand({ StartTime: new Date(T0 - 20 * MINUTE), EndTime: new Date(T0 - 10 * MINUTE), MetricDataQueries: queries as never }),
      );
    await expect(send([query('a', 'Sum', 60), { Id: 'rate', Expression: 'a / 60' }])).rejects.toMatchObject({
      name: 'ValidationException',
      message: expect.stringMatching(/Expression .* is not supported locally; use MetricStat with one of SampleCount, Average, Sum, Minimum, Maximum/),
    });
    await expect(send([query('p', 'p99', 60)])).rejects.toThrow(/Stat "p99" is not served locally/);
    await expect(send([query('a', 'Sum', 60), query('a', 'Sum', 300)])).rejects.toThrow(/used by more than one query/);
    await expect(send([query('Upper', 'Sum', 60)])).rejects.toThrow(/must start with a lower-case letter/);
  });
});

describe('an alarm, evaluated at the instant given', () => {
  // Each test on an endpoint of its own, its alarm starting INSUFFICIENT_DATA.
  const local = useLocalCloudWatch('each');

  it('starts INSUFFICIENT_DATA; with missing data breaching, two missing periods of three alarm, and the page carries the description', async () => {
    const { cw, outbox, dir } = local;
    expect(cw.state('test-alarm')).toBe('INSUFFICIENT_DATA');
    local.now = T0 + 10 * MINUTE;
    await put(local, 50, T0 + 7 * MINUTE + 5000);

    const changed = cw.evaluate(new Date(T0 + 10 * MINUTE));

    expect(changed).toEqual([
      expect.objectContaining({
        from: 'INSUFFICIENT_DATA',
        to: 'ALARM',
        reason: expect.stringMatching(/^2 of the last 3 datapoints \[missing, missing, 50\]/),
      }),
    ]);
    const page = outbox.alerts.at(-1)!;
    expect(page).toMatchObject({ topicArn: TOPIC, subject: 'ALARM: "test-alarm" in local' });
    expect(JSON.parse(page.message)).toMatchObject({
      AlarmDescription: 'the test alarm: what it means, and the runbook',
      NewStateValue: 'ALARM',
      OldStateValue: 'INSUFFICIENT_DATA',
    });
    expect(readFileSync(join(dir, 'alerts.jsonl'), 'utf8').trim().split('\n')).toHaveLength(outbox.alerts.length);
  });

  it('turns OK when fewer than M of the N periods breach, notifies once, and stays quiet while the state holds', async () => {
    const { cw, client, outbox } = local;
    // Brought to ALARM first, as the INSUFFICIENT_DATA test brings it: two of three periods missing, treated as breaching.
    local.now = T0 + 10 * MINUTE;
    await put(local, 50, T0 + 7 * MINUTE + 5000);
    expect(cw.evaluate(new Date(T0 + 10 * MINUTE)).map((t) => t.to)).toEqual(['ALARM']);

    await put(local, 50, T0 + 8 * MINUTE);
    await put(local, 500, T0 + 9 * MINUTE);
    const before = outbox.alerts.length;

    expect(cw.evaluate(new Date(T0 + 10 * MINUTE)).map((t) => t.to)).toEqual(['OK']);
    expect(cw.evaluate(new Date(T0 + 10 * MINUTE + 30_000))).toEqual([]);

    expect(outbox.alerts.slice(before).map((a) => a.subject)).toEqual(['OK: "test-alarm" in local']);
    const { MetricAlarms } = await client.send(new DescribeAlarmsCommand({ StateValue: 'OK' }));
    expect(MetricAlarms!.map((a) => [a.AlarmName, a.StateValue, a.Threshold, a.TreatMissingData])).toEqual([['test-alarm', 'OK', 100, 'breaching']]);
    expect((await client.send(new DescribeAlarmsCommand({ StateValue: 'ALARM' }))).MetricAlarms).toEqual([]);
  });
});

describe('an alarm of five-minute periods, evaluated every minute as CloudWatch does', () => {
  const failed = alarmOn({
    alarmName: 'failed',
    metricName: 'Failed',
    statistic: 'Sum',
    periodSeconds: 300,
    evaluationPeriods: 1,
    datapointsToAlarm: 1,
    threshold: 1,
    comparison: 'GreaterThanOrEqualToThreshold',
    treatMissingData: 'notBreaching',
  });
  const local = useLocalCloudWatch('each', [failed]);

  it('alarms a minute after the failure, not at the end of an aligned five minutes, and turns OK once the failure leaves the last five minutes', async () => {
    const { cw, client } = local;
    await client.send(
      new PutMetricDataCommand({
        Namespace: 'Test',
        MetricData: [{ MetricName: 'Failed', Dimensions: [{ Name: 'Pipeline', Value: 'p' }], Timestamp: new Date(T0 + MINUTE + 5000), Value: 1 }],
      }),
    );

    // At 08:01:30 the minute of the failure has not ended yet.
    expect(cw.evaluate(new Date(T0 + MINUTE + 30_000)).map((t) => t.to)).toEqual(['OK']);
    // 08:02: the last five minutes, 07:57 to 08:02, hold it (an aligned period, 07:55 to 08:00, would not).
    expect(cw.evaluate(new Date(T0 + 2 * MINUTE)).map((t) => t.to)).toEqual(['ALARM']);
    expect(cw.evaluate(new Date(T0 + 6 * MINUTE + 59_000))).toEqual([]);
    expect(cw.evaluate(new Date(T0 + 7 * MINUTE)).map((t) => [t.from, t.to])).toEqual([['ALARM', 'OK']]);
  });
});

describe('SetAlarmState', () => {
  const local = useLocalCloudWatch('each');

  it("sets the state with its reason until the next evaluation, running the new state's actions as a change of state does", async () => {
    const { cw, client, outbox } = local;
    local.now = T0 + 5 * MINUTE;
    await client.send(
      new SetAlarmStateCommand({ AlarmName: 'test-alarm', StateValue: 'ALARM', StateReason: 'testing the page', StateReasonData: '{"by":"on-call"}' }),
    );

    const [described] = (await client.send(new DescribeAlarmsCommand({ AlarmNames: ['test-alarm'] }))).MetricAlarms!;
    expect(described).toMatchObject({
      StateValue: 'ALARM',
      StateReason: 'testing the page',
      StateReasonData: '{"by":"on-call"}',
      StateTransitionedTimestamp: new Date(T0 + 5 * MINUTE),
    });
    expect(outbox.alerts.map((a) => JSON.parse(a.message))).toEqual([
      expect.objectContaining({ NewStateValue: 'ALARM', OldStateValue: 'INSUFFICIENT_DATA', NewStateReason: 'testing the page' }),
    ]);

    // Three periods within the threshold: the next evaluation turns it back.
    for (const minute of [2, 3, 4]) await put(local, 1, T0 + minute * MINUTE);
    expect(cw.evaluate(new Date(T0 + 5 * MINUTE)).map((t) => [t.from, t.to])).toEqual([['ALARM', 'OK']]);
  });

  it('refuses an alarm that does not exist (404), a state not in the set, and reason data that is not JSON', async () => {
    const { client } = local;
    const set = (input: Record<string, unknown>) =>
      client.send(new SetAlarmStateCommand({ AlarmName: 'test-alarm', StateValue: 'OK', StateReason: 'r', ...input } as never));
    await expect(set({ AlarmName: 'nobody' })).rejects.toMatchObject({
      name: 'ResourceNotFound',
      Code: 'ResourceNotFound',
      $metadata: { httpStatusCode: 404 },
    });
    await expect(set({ StateValue: 'BROKEN' })).rejects.toMatchObject({
      Code: 'ValidationError',
      message: expect.stringContaining("Value 'BROKEN' at 'stateValue' failed to satisfy constraint"),
    });
    await expect(set({ StateReasonData: '{not json' })).rejects.toMatchObject({ name: 'InvalidFormatFault', Code: 'InvalidFormat' });
    expect(local.cw.state('test-alarm')).toBe('INSUFFICIENT_DATA');
  });
});

describe('missing data, as each treatment has it', () => {
  const alarm = (treatMissingData: MetricAlarm['treatMissingData']) => alarmOn({ treatMissingData });
  it.each<[MetricAlarm['treatMissingData'], 'OK' | 'ALARM' | 'INSUFFICIENT_DATA']>([
    ['breaching', 'ALARM'],
    ['notBreaching', 'OK'],
    ['missing', 'INSUFFICIENT_DATA'],
    ['ignore', 'OK'],
  ])('no datapoint at all, treated as %s, from OK: %s', (treatment, expected) => {
    expect(evaluateAlarm(alarm(treatment), [undefined, undefined, undefined], 'OK').state).toBe(expected);
  });

  it('counts missing periods with the breaching ones only when treated as breaching', () => {
    expect(evaluateAlarm(alarm('breaching'), [500, undefined, 1], 'OK').state).toBe('ALARM');
    expect(evaluateAlarm(alarm('notBreaching'), [500, undefined, 1], 'OK').state).toBe('OK');
    expect(evaluateAlarm(alarm('notBreaching'), [500, 101, undefined], 'OK').state).toBe('ALARM');
    expect(evaluateAlarm(alarmOn({ comparison: 'LessThanThreshold', threshold: 1, datapointsToAlarm: 1, evaluationPeriods: 1 }), [0], 'OK').state).toBe(
      'ALARM',
    );
  });
});

describe("the stack's alarms, read from the synthesized template", () => {
  let template: Template;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'atomic-publish-cloudwatch-stack-'));
    template = await synthesizeTemplate();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('are every metric alarm of the template, their topic resolved as the local engine names it', () => {
    const alarms = alarmsFromTemplate(template);
    const topicId = Object.entries(template.Resources).find(([, r]) => r.Type === 'AWS::SNS::Topic')![0];
    // ApproximateNumberOfMessagesVisible: the missed scheduled starts (lib/pipeline-schedules.ts).
    expect([...new Set(alarms.map((a) => a.metricName))].sort()).toEqual([
      'ApproximateNumberOfMessagesVisible',
      'Errors',
      'ExecutionStopped',
      'ExecutionsFailed',
      'ExecutionsTimedOut',
      'LiveDrift',
      'OutOfBandChange',
      'PublishAgeSeconds',
      'PublishFailed',
      'ReconcileFailed',
      'RunDurationSeconds',
      'Throttles',
    ]);
    for (const a of alarms) expect(a.actions.ALARM).toEqual([`arn:aws:sns:local:000000000000:${topicId}`]);
    expect(alarms.find((a) => a.metricName === 'ExecutionsFailed')).toMatchObject({
      statistic: 'Sum',
      periodSeconds: 300,
      evaluationPeriods: 1,
      datapointsToAlarm: 1,
      treatMissingData: 'notBreaching',
    });
  });

  it('evaluate a data-lag alarm as synthesized: pages past maxDataLagMinutes, and without data says only that it has none', async () => {
    const stack = new AtomicPublishStack(new App({ context: { 'aws:cdk:bundling-stacks': [] }, outdir: join(dir, 'cdk.out') }), 'Lag', {
      warehouse: { database: 'dev', workgroupName: 'wg' },
      pipelines: [definePipeline({ ...salesOrderLines, freshness: { slaMinutes: 1440, maxDataLagMinutes: 60 } })],
    });
    const lag = alarmsFromTemplate(CdkTemplate.fromStack(stack).toJSON() as Template, 'Lag').find((a) => a.metricName === 'LiveDataLagSeconds')!;
    const pagesOf = new SnsOutbox(join(dir, 'lag-alerts.jsonl'));
    const local = await startLocalCloudWatchApi({ alarms: [lag], outbox: pagesOf, clock: () => new Date(T0) });
    try {
      const lagClient = localCloudWatchClient(local.endpoint);
      const lagAt = (seconds: number, at: number) =>
        lagClient.send(
          new PutMetricDataCommand({
            Namespace: 'AtomicPublish',
            MetricData: [
              { MetricName: 'LiveDataLagSeconds', Dimensions: [{ Name: 'Pipeline', Value: 'sales_order_lines' }], Timestamp: new Date(at), Value: seconds },
            ],
          }),
        );

      // No datapoint (an empty table, or a monitor that stopped: the freshness alarm pages for that): no page.
      expect(local.evaluate(new Date(T0 - 60 * MINUTE))).toEqual([]);
      expect(local.state(lag.alarmName)).toBe('INSUFFICIENT_DATA');
      expect(pagesOf.alerts).toEqual([]);
      await lagAt(3000, T0 - 14 * MINUTE);
      await lagAt(3700, T0 - 9 * MINUTE);
      await lagAt(4000, T0 - 4 * MINUTE);

      expect(local.evaluate(new Date(T0)).map((t) => [t.from, t.to])).toEqual([['INSUFFICIENT_DATA', 'ALARM']]);
      expect(JSON.parse(pagesOf.alerts.at(-1)!.message)).toMatchObject({
        NewStateValue: 'ALARM',
        AlarmDescription: expect.stringContaining('pipeline sales_order_lines publishes old data'),
      });
    } finally {
      await local.close();
    }
  });

  it('refuses an alarm it cannot evaluate rather than evaluate it wrongly', () => {
    const id = Object.entries(template.Resources).find(([, r]) => r.Type === 'AWS::CloudWatch::Alarm')![0];
    const withMath = JSON.parse(JSON.stringify(template)) as Template;
    withMath.Resources[id]!.Properties = { ...withMath.Resources[id]!.Properties, MetricName: undefined, Metrics: [{ Id: 'm1', Expression: 'a+b' }] };
    expect(() => alarmsFromTemplate(withMath)).toThrow(/only alarms on one metric are evaluated locally/);
    const percentile = JSON.parse(JSON.stringify(template)) as Template;
    percentile.Resources[id]!.Properties = { ...percentile.Resources[id]!.Properties, Statistic: undefined, ExtendedStatistic: 'p99' };
    expect(() => alarmsFromTemplate(percentile)).toThrow(/statistic undefined is not evaluated locally/);
  });
});
