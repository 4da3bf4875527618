// The local CloudWatch endpoint's lists, through the real
// @aws-sdk/client-cloudwatch client: ListMetrics with its filters, paging
// and RecentlyActive; DescribeAlarms paged by MaxRecords and NextToken,
// filtered by names, prefix, state, action prefix and alarm type; and
// DescribeAlarmsForMetric. Refusals carry the query code the client reads
// from x-amzn-query-error (`Code`).
import {
  type CloudWatchClient,
  DescribeAlarmsCommand,
  type DescribeAlarmsCommandInput,
  DescribeAlarmsForMetricCommand,
  ListMetricsCommand,
  type ListMetricsCommandInput,
  type ListMetricsCommandOutput,
  PutMetricDataCommand,
} from '@aws-sdk/client-cloudwatch';
import { beforeAll, describe, expect, it } from 'vitest';
import { alarmOn, MINUTE, T0, TOPIC, useLocalCloudWatch } from '../support/local-cloudwatch.ts';

const put = (client: CloudWatchClient, metrics: { name: string; dims: Record<string, string> }[], namespace = 'Test') =>
  client.send(
    new PutMetricDataCommand({
      Namespace: namespace,
      MetricData: metrics.map(({ name, dims }) => ({
        MetricName: name,
        Dimensions: Object.entries(dims).map(([Name, Value]) => ({ Name, Value })),
        Timestamp: new Date(T0 - MINUTE),
        Value: 1,
      })),
    }),
  );

/** Every page of a listing, following NextToken; and how many pages it took. */
async function allPages<T, P extends { NextToken?: string }>(
  send: (token?: string) => Promise<P>,
  itemsOf: (page: P) => T[] | undefined,
): Promise<{ items: T[]; pages: number }> {
  const items: T[] = [];
  let pages = 0;
  let token: string | undefined;
  do {
    const page = await send(token);
    pages++;
    items.push(...(itemsOf(page) ?? []));
    token = page.NextToken;
  } while (token);
  return { items, pages };
}

describe('ListMetrics', () => {
  const local = useLocalCloudWatch('each');
  const list = (input: ListMetricsCommandInput = {}) => local.client.send(new ListMetricsCommand(input));
  const names = (out: ListMetricsCommandOutput) =>
    out.Metrics!.map((m) => `${m.Namespace}/${m.MetricName} ${m.Dimensions!.map((d) => `${d.Name}=${d.Value}`).join(',')}`).sort();

  it('lists each metric written once, filtered by namespace, name and dimensions (a name alone matches any value)', async () => {
    await put(local.client, [
      { name: 'Age', dims: { Pipeline: 'p' } },
      { name: 'Age', dims: { Pipeline: 'q' } },
      { name: 'Age', dims: { Pipeline: 'p' } },
      { name: 'Rows', dims: { Pipeline: 'p', Table: 't' } },
      { name: 'Rows', dims: {} },
    ]);
    await put(local.client, [{ name: 'Age', dims: { Pipeline: 'p' } }], 'Other');

    expect(names(await list())).toEqual(['Other/Age Pipeline=p', 'Test/Age Pipeline=p', 'Test/Age Pipeline=q', 'Test/Rows ', 'Test/Rows Pipeline=p,Table=t']);
    expect(names(await list({ Namespace: 'Test', MetricName: 'Age' }))).toEqual(['Test/Age Pipeline=p', 'Test/Age Pipeline=q']);
    expect(names(await list({ Dimensions: [{ Name: 'Pipeline', Value: 'p' }] }))).toEqual([
      'Other/Age Pipeline=p',
      'Test/Age Pipeline=p',
      'Test/Rows Pipeline=p,Table=t',
    ]);
    expect(names(await list({ Namespace: 'Test', Dimensions: [{ Name: 'Table' }] }))).toEqual(['Test/Rows Pipeline=p,Table=t']);
    expect((await list({ Namespace: 'Nobody' })).Metrics).toEqual([]);
  });

  it('pages 500 metrics at a time, every metric on exactly one page', async () => {
    await put(
      local.client,
      Array.from({ length: 1000 }, (_, i) => ({ name: 'Many', dims: { Pipeline: `p${i}` } })),
    );
    await put(
      local.client,
      Array.from({ length: 200 }, (_, i) => ({ name: 'Many', dims: { Pipeline: `q${i}` } })),
    );

    const { items, pages } = await allPages(
      (NextToken) => list({ MetricName: 'Many', ...(NextToken ? { NextToken } : {}) }),
      (p) => p.Metrics,
    );

    expect(pages).toBe(3);
    expect(new Set(items.map((m) => m.Dimensions![0]!.Value)).size).toBe(1200);
    await expect(list({ NextToken: 'not-a-token' })).rejects.toMatchObject({ Code: 'InvalidParameterValue' });
  });

  it('with RecentlyActive PT3H, lists only the metrics written in the last three hours', async () => {
    await put(local.client, [{ name: 'Old', dims: {} }]);
    local.now = T0 + 3 * 60 * MINUTE + 1000;
    await put(local.client, [{ name: 'New', dims: {} }]);

    expect(names(await list({ RecentlyActive: 'PT3H' }))).toEqual(['Test/New ']);
    expect(names(await list())).toEqual(['Test/New ', 'Test/Old ']);
    await expect(list({ RecentlyActive: 'PT1H' as never })).rejects.toMatchObject({ Code: 'ValidationError', message: expect.stringContaining('[PT3H]') });
  });
});

describe('DescribeAlarms', () => {
  const PAGER = 'arn:aws:sns:local:000000000000:Pager';
  // Five alarms; beforeAll turns two of them to ALARM, the rest to OK.
  const alarms = ['pipeline-a-fresh', 'pipeline-a-failed', 'pipeline-b-fresh', 'pipeline-b-failed', 'zz-other'].map((alarmName) =>
    alarmOn({
      alarmName,
      dimensions: { Pipeline: alarmName },
      ...(alarmName.endsWith('failed') ? { actions: { ALARM: [PAGER], OK: [], INSUFFICIENT_DATA: [] } } : {}),
    }),
  );
  const local = useLocalCloudWatch('all', alarms);
  beforeAll(async () => {
    for (const alarm of alarms) {
      for (const minute of [1, 2, 3]) {
        const value = alarm.alarmName.includes('-a-') ? 500 : 1;
        await local.client.send(
          new PutMetricDataCommand({
            Namespace: 'Test',
            MetricData: [
              { MetricName: 'Age', Dimensions: [{ Name: 'Pipeline', Value: alarm.alarmName }], Timestamp: new Date(T0 - minute * MINUTE), Value: value },
            ],
          }),
        );
      }
    }
    local.cw.evaluate(new Date(T0));
  });
  const describeAlarms = (input: DescribeAlarmsCommandInput = {}) => local.client.send(new DescribeAlarmsCommand(input));
  const namesOf = async (input: DescribeAlarmsCommandInput) => (await describeAlarms(input)).MetricAlarms!.map((a) => a.AlarmName);

  it('pages MaxRecords alarms at a time in name order, each once, until no NextToken', async () => {
    const first = await describeAlarms({ MaxRecords: 2 });
    expect(first.MetricAlarms!.map((a) => a.AlarmName)).toEqual(['pipeline-a-failed', 'pipeline-a-fresh']);
    const { items, pages } = await allPages(
      (NextToken) => describeAlarms({ MaxRecords: 2, ...(NextToken ? { NextToken } : {}) }),
      (p) => p.MetricAlarms,
    );
    expect(pages).toBe(3);
    expect(items.map((a) => a.AlarmName)).toEqual(['pipeline-a-failed', 'pipeline-a-fresh', 'pipeline-b-failed', 'pipeline-b-fresh', 'zz-other']);
    expect((await describeAlarms()).NextToken).toBeUndefined();
  });

  it('filters by names, name prefix, state and action prefix, together with paging', async () => {
    expect(await namesOf({ AlarmNames: ['zz-other', 'pipeline-b-fresh', 'nobody'] })).toEqual(['pipeline-b-fresh', 'zz-other']);
    expect(await namesOf({ AlarmNamePrefix: 'pipeline-b' })).toEqual(['pipeline-b-failed', 'pipeline-b-fresh']);
    expect(await namesOf({ StateValue: 'ALARM' })).toEqual(['pipeline-a-failed', 'pipeline-a-fresh']);
    expect(await namesOf({ ActionPrefix: PAGER })).toEqual(['pipeline-a-failed', 'pipeline-b-failed']);
    expect(await namesOf({ ActionPrefix: TOPIC, StateValue: 'OK' })).toEqual(['pipeline-b-fresh', 'zz-other']);
    const page = await describeAlarms({ AlarmNamePrefix: 'pipeline-', StateValue: 'OK', MaxRecords: 1 });
    expect(page.MetricAlarms!.map((a) => a.AlarmName)).toEqual(['pipeline-b-failed']);
    expect(await namesOf({ AlarmNamePrefix: 'pipeline-', StateValue: 'OK', MaxRecords: 1, NextToken: page.NextToken! })).toEqual(['pipeline-b-fresh']);
  });

  it('answers the alarm types asked for: metric alarms by default, composite alarms (none here) only when asked', async () => {
    const byDefault = await describeAlarms({ AlarmNames: ['zz-other'] });
    expect(byDefault.MetricAlarms).toHaveLength(1);
    expect(byDefault.CompositeAlarms).toBeUndefined();
    const composite = await describeAlarms({ AlarmTypes: ['CompositeAlarm'] });
    expect([composite.MetricAlarms, composite.CompositeAlarms]).toEqual([undefined, []]);
    const both = await describeAlarms({ AlarmTypes: ['MetricAlarm', 'CompositeAlarm'], AlarmNames: ['zz-other'] });
    expect([both.MetricAlarms!.length, both.CompositeAlarms]).toEqual([1, []]);
    expect(await describeAlarms({ ParentsOfAlarmName: 'zz-other' })).toMatchObject({ MetricAlarms: [] });
  });

  it.each<[string, DescribeAlarmsCommandInput, string, RegExp]>([
    [
      'MaxRecords above 100',
      { MaxRecords: 101 },
      'ValidationError',
      /Value '101' at 'maxRecords' failed to satisfy constraint: Member must have value less than or equal to 100/,
    ],
    ['MaxRecords 0', { MaxRecords: 0 }, 'ValidationError', /Member must have value greater than or equal to 1/],
    [
      'names with a prefix',
      { AlarmNames: ['a'], AlarmNamePrefix: 'a' },
      'InvalidParameterCombination',
      /AlarmNames and AlarmNamePrefix are mutually exclusive/,
    ],
    ['a state not in the set', { StateValue: 'BROKEN' as never }, 'ValidationError', /Member must satisfy enum value set: \[OK, ALARM, INSUFFICIENT_DATA\]/],
    ['an alarm type not in the set', { AlarmTypes: ['Anomaly' as never] }, 'ValidationError', /\[CompositeAlarm, MetricAlarm\]/],
    ['a token it did not give', { NextToken: 'bm90IGEgdG9rZW4' }, 'InvalidNextToken', /NextToken is not valid/],
    [
      'parents with a state',
      { ParentsOfAlarmName: 'a', StateValue: 'OK' },
      'ValidationError',
      /only AlarmTypes, MaxRecords and NextToken may be given, not StateValue/,
    ],
  ])('refuses %s', async (_what, input, code, message) => {
    await expect(describeAlarms(input)).rejects.toMatchObject({ Code: code, message: expect.stringMatching(message), $metadata: { httpStatusCode: 400 } });
  });

  it('describes the alarms of a metric: its namespace, name and exact dimensions, and statistic and period when given', async () => {
    const forMetric = (input: Record<string, unknown>) =>
      local.client
        .send(new DescribeAlarmsForMetricCommand({ Namespace: 'Test', MetricName: 'Age', ...input } as never))
        .then((out) => out.MetricAlarms!.map((a) => a.AlarmName));
    expect(await forMetric({ Dimensions: [{ Name: 'Pipeline', Value: 'zz-other' }] })).toEqual(['zz-other']);
    expect(await forMetric({ Dimensions: [{ Name: 'Pipeline', Value: 'zz-other' }], Statistic: 'Sum' })).toEqual([]);
    expect(await forMetric({ Dimensions: [{ Name: 'Pipeline', Value: 'zz-other' }], Period: 60, Statistic: 'Maximum' })).toEqual(['zz-other']);
    expect(await forMetric({})).toHaveLength(5);
    expect(await forMetric({ Dimensions: [] })).toEqual([]);
  });
});
