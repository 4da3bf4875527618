// The local CloudWatch on the wire, in every protocol its clients send: awsQuery
// (XML, `<member>` lists, `<ErrorResponse>`), JSON 1.0 with x-amzn-query-mode
// (epoch seconds, `__type`, x-amzn-query-error) and Smithy RPC v2 CBOR, written
// as botocore sends them, then the JS SDK's clients reading the same.
// Why: docs/decisions/cloudwatch-protocols-from-the-sdk-model.md
import { gzipSync } from 'node:zlib';
import {
  CloudWatchClient,
  DescribeAlarmsCommand,
  GetMetricStatisticsCommand,
  ListMetricsCommand,
  paginateDescribeAlarms,
  type MetricAlarm as SdkAlarm,
} from '@aws-sdk/client-cloudwatch';
import { AwsQueryProtocol, AwsSmithyRpcV2CborProtocol } from '@aws-sdk/core/protocols';
import { parseXML } from '@aws-sdk/xml-builder';
import { cbor, tag } from '@smithy/core/cbor';
import { beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_AWS_ENV } from '../../local/aws-clients.ts';
import { alarmOn, MINUTE, T0, TOPIC, useLocalCloudWatch } from '../support/local-cloudwatch.ts';

// What a SigV4 Authorization header of the default local credentials says (the endpoint reads only the key id).
const AUTHORIZATION = 'AWS4-HMAC-SHA256 Credential=local/20261201/us-east-1/monitoring/aws4_request, SignedHeaders=host;x-amz-date, Signature=0';
const XMLNS = 'http://monitoring.amazonaws.com/doc/2010-08-01/';
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
const form = (ms: number) => encodeURIComponent(iso(ms));

/** A query-protocol request as botocore sends it: `POST /`, form-encoded, with Action and Version first. */
async function query(endpoint: string, body: string, headers: Record<string, string> = {}, payload: string | Buffer = body) {
  const res = await fetch(`${endpoint}/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8', Authorization: AUTHORIZATION, ...headers },
    body: payload,
  });
  const text = await res.text();
  return { status: res.status, contentType: res.headers.get('content-type'), requestId: res.headers.get('x-amzn-requestid'), text, xml: parseXML(text) };
}

/** A JSON 1.0 request as botocore sends it from 1.42.7 on (and the JS SDK 3.11xx). */
async function json(endpoint: string, operation: string, input: Record<string, unknown>) {
  const res = await fetch(`${endpoint}/`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-amz-json-1.0',
      'X-Amz-Target': `GraniteServiceVersion20100801.${operation}`,
      'x-amzn-query-mode': 'true',
      Authorization: AUTHORIZATION,
    },
    body: JSON.stringify(input),
  });
  return {
    status: res.status,
    queryError: res.headers.get('x-amzn-query-error'),
    errorType: res.headers.get('x-amzn-errortype'),
    body: (await res.json()) as Record<string, unknown>,
  };
}

/** An XML list's `<member>`s: one member parses as an object, none as an empty string. */
const members = (list: unknown): Record<string, unknown>[] =>
  list === undefined || list === '' ? [] : Array.isArray(list) ? list : [list as Record<string, unknown>];

const PUT_FORM = [
  'Action=PutMetricData&Version=2010-08-01&Namespace=Test',
  'MetricData.member.1.MetricName=Age&MetricData.member.1.Dimensions.member.1.Name=Pipeline&MetricData.member.1.Dimensions.member.1.Value=p',
  `MetricData.member.1.Timestamp=${form(T0 - 5 * MINUTE)}&MetricData.member.1.Value=150&MetricData.member.1.Unit=Seconds`,
  'MetricData.member.2.MetricName=Age&MetricData.member.2.Dimensions.member.1.Name=Pipeline&MetricData.member.2.Dimensions.member.1.Value=p',
  `MetricData.member.2.Timestamp=${form(T0 - 5 * MINUTE + 1000)}&MetricData.member.2.Values.member.1=10&MetricData.member.2.Values.member.2=20&MetricData.member.2.Counts.member.1=1&MetricData.member.2.Counts.member.2=3&MetricData.member.2.Unit=Seconds`,
].join('&');

describe('the query protocol, as boto3 1.26 and AWS CLI v2.9 send it', () => {
  const alarms = ['age-a', 'age-b', 'age-c'].map((alarmName) => alarmOn({ alarmName }));
  const local = useLocalCloudWatch('all', alarms);
  let put: Awaited<ReturnType<typeof query>>;
  beforeAll(async () => {
    put = await query(local.cw.endpoint, PUT_FORM);
  });

  it('answers PutMetricData with its response element and request id, and keeps the flattened metrics', async () => {
    expect(put.status).toBe(200);
    expect(put.contentType).toBe('text/xml');
    expect(put.text).toContain(
      `<PutMetricDataResponse xmlns="${XMLNS}"><ResponseMetadata><RequestId>${put.requestId}</RequestId></ResponseMetadata></PutMetricDataResponse>`,
    );

    const body = `Action=GetMetricStatistics&Version=2010-08-01&Namespace=Test&MetricName=Age&Dimensions.member.1.Name=Pipeline&Dimensions.member.1.Value=p&StartTime=${form(T0 - 10 * MINUTE)}&EndTime=${form(T0)}&Period=60&Statistics.member.1=Sum&Statistics.member.2=Maximum&Statistics.member.3=SampleCount`;
    const { status, xml } = await query(local.cw.endpoint, body);

    expect(status).toBe(200);
    const result = xml.GetMetricStatisticsResponse.GetMetricStatisticsResult;
    expect(result.Label).toBe('Age');
    expect(members(result.Datapoints.member)).toEqual([{ Timestamp: '2026-12-01T07:55:00Z', Sum: '220', Maximum: '150', SampleCount: '5', Unit: 'Seconds' }]);
  });

  it('lists metrics as members, each with its dimensions as members', async () => {
    const { xml } = await query(local.cw.endpoint, 'Action=ListMetrics&Version=2010-08-01&Namespace=Test');
    const result = xml.ListMetricsResponse.ListMetricsResult;
    expect(members(result.Metrics.member)).toEqual([{ Namespace: 'Test', MetricName: 'Age', Dimensions: { member: { Name: 'Pipeline', Value: 'p' } } }]);
    expect(result.NextToken).toBeUndefined();
  });

  it("pages DescribeAlarms by MaxRecords, AlarmTypes and NextToken as form members, the alarm's lists and timestamps as the model has them", async () => {
    const first = (await query(local.cw.endpoint, 'Action=DescribeAlarms&Version=2010-08-01&AlarmTypes.member.1=MetricAlarm&MaxRecords=2')).xml
      .DescribeAlarmsResponse.DescribeAlarmsResult;
    expect(members(first.MetricAlarms.member).map((a) => a.AlarmName)).toEqual(['age-a', 'age-b']);
    expect(members(first.MetricAlarms.member)[0]).toMatchObject({
      StateValue: 'INSUFFICIENT_DATA',
      StateUpdatedTimestamp: '2026-12-01T08:00:00Z',
      AlarmActions: { member: TOPIC },
      InsufficientDataActions: '',
      Dimensions: { member: { Name: 'Pipeline', Value: 'p' } },
      Threshold: '100',
      ActionsEnabled: 'true',
      EvaluationPeriods: '3',
    });
    expect(first.CompositeAlarms).toBeUndefined();

    const rest = await query(
      local.cw.endpoint,
      `Action=DescribeAlarms&Version=2010-08-01&AlarmTypes.member.1=MetricAlarm&MaxRecords=2&NextToken=${encodeURIComponent(first.NextToken)}`,
    );
    const second = rest.xml.DescribeAlarmsResponse.DescribeAlarmsResult;
    expect([members(second.MetricAlarms.member).map((a) => a.AlarmName), second.NextToken]).toEqual([['age-c'], undefined]);

    const named = (
      await query(
        local.cw.endpoint,
        'Action=DescribeAlarms&Version=2010-08-01&AlarmNames.member.1=age-c&AlarmNames.member.2=age-a&AlarmTypes.member.1=CompositeAlarm&AlarmTypes.member.2=MetricAlarm',
      )
    ).xml;
    expect(members(named.DescribeAlarmsResponse.DescribeAlarmsResult.MetricAlarms.member).map((a) => a.AlarmName)).toEqual(['age-a', 'age-c']);
    expect(named.DescribeAlarmsResponse.DescribeAlarmsResult.CompositeAlarms).toBe('');
  });

  it('takes a PutMetricData body gzipped, as botocore sends one of 10 KB or more', async () => {
    const many = Array.from(
      { length: 300 },
      (_, i) => `MetricData.member.${i + 1}.MetricName=Zipped&MetricData.member.${i + 1}.Value=${i}&MetricData.member.${i + 1}.Timestamp=${form(T0 - MINUTE)}`,
    ).join('&');
    const body = `Action=PutMetricData&Version=2010-08-01&Namespace=Zip&${many}`;
    expect(Buffer.byteLength(body)).toBeGreaterThan(10_240);

    expect((await query(local.cw.endpoint, body, { 'Content-Encoding': 'gzip' }, gzipSync(body))).status).toBe(200);

    const stats = await query(
      local.cw.endpoint,
      `Action=GetMetricStatistics&Version=2010-08-01&Namespace=Zip&MetricName=Zipped&StartTime=${form(T0 - 2 * MINUTE)}&EndTime=${form(T0)}&Period=60&Statistics.member.1=SampleCount`,
    );
    expect(members(stats.xml.GetMetricStatisticsResponse.GetMetricStatisticsResult.Datapoints.member).map((d) => d.SampleCount)).toEqual(['300']);
  });

  it.each<[string, string, number, string, RegExp]>([
    [
      'a start after the end',
      `Action=GetMetricStatistics&Version=2010-08-01&Namespace=Test&MetricName=Age&StartTime=${form(T0)}&EndTime=${form(T0 - MINUTE)}&Period=60&Statistics.member.1=Sum`,
      400,
      'InvalidParameterValue',
      /^The parameter StartTime must be less than the parameter EndTime\.$/,
    ],
    [
      'a missing namespace',
      `Action=GetMetricStatistics&Version=2010-08-01&MetricName=Age&StartTime=${form(T0 - MINUTE)}&EndTime=${form(T0)}&Period=60&Statistics.member.1=Sum`,
      400,
      'MissingParameter',
      /^The parameter Namespace is required\.$/,
    ],
    [
      'MaxRecords out of range',
      'Action=DescribeAlarms&Version=2010-08-01&MaxRecords=101',
      400,
      'ValidationError',
      /at 'maxRecords' failed to satisfy constraint/,
    ],
    [
      'MaxRecords that is not a number',
      'Action=DescribeAlarms&Version=2010-08-01&MaxRecords=many',
      400,
      'InvalidParameterValue',
      /^The value many for parameter MaxRecords is not a number\.$/,
    ],
    [
      'an alarm that does not exist',
      'Action=SetAlarmState&Version=2010-08-01&AlarmName=nobody&StateValue=OK&StateReason=r',
      404,
      'ResourceNotFound',
      /^Alarm nobody does not exist\.$/,
    ],
    ['an action CloudWatch does not have', 'Action=Nope&Version=2010-08-01', 400, 'InvalidAction', /^Could not find operation Nope for version 2010-08-01$/],
    [
      "an action of CloudWatch's not served locally",
      'Action=PutDashboard&Version=2010-08-01',
      400,
      'InvalidAction',
      /^The operation PutDashboard is not served by this endpoint$/,
    ],
    ['another version', 'Action=DescribeAlarms&Version=2009-01-01', 400, 'InvalidAction', /for version 2009-01-01$/],
  ])('refuses %s as an ErrorResponse with the query code', async (_what, body, status, code, message) => {
    const res = await query(local.cw.endpoint, body);
    expect(res.status).toBe(status);
    expect(res.text).toMatch(
      new RegExp(`^<\\?xml version="1.0" encoding="UTF-8"\\?>\\n<ErrorResponse xmlns="${XMLNS}"><Error><Type>Sender</Type><Code>${code}</Code>`),
    );
    expect(res.xml.ErrorResponse.Error).toEqual({ Type: 'Sender', Code: code, Message: expect.stringMatching(message) });
    expect(res.xml.ErrorResponse.RequestId).toBe(res.requestId);
  });
});

describe('JSON 1.0 with x-amzn-query-mode, as botocore sends it from 1.42.7 on', () => {
  const local = useLocalCloudWatch('all', [alarmOn({})]);
  beforeAll(async () => {
    await query(local.cw.endpoint, PUT_FORM);
  });

  it('answers with timestamps as epoch seconds and lists as arrays', async () => {
    const stats = await json(local.cw.endpoint, 'GetMetricStatistics', {
      Namespace: 'Test',
      MetricName: 'Age',
      Dimensions: [{ Name: 'Pipeline', Value: 'p' }],
      StartTime: (T0 - 10 * MINUTE) / 1000,
      EndTime: T0 / 1000,
      Period: 60,
      Statistics: ['Sum'],
    });
    expect(stats).toMatchObject({ status: 200, body: { Label: 'Age', Datapoints: [{ Timestamp: (T0 - 5 * MINUTE) / 1000, Sum: 220, Unit: 'Seconds' }] } });
    const alarms = await json(local.cw.endpoint, 'DescribeAlarms', { AlarmTypes: ['MetricAlarm'], MaxRecords: 1 });
    expect(alarms.body.MetricAlarms).toEqual([
      expect.objectContaining({ AlarmName: 'test-alarm', StateUpdatedTimestamp: T0 / 1000, AlarmActions: [TOPIC], InsufficientDataActions: [] }),
    ]);
  });

  it.each<[string, string, Record<string, unknown>, number, string, string]>([
    [
      'a start after the end',
      'GetMetricStatistics',
      { Namespace: 'Test', MetricName: 'Age', StartTime: T0 / 1000, EndTime: T0 / 1000 - 60, Period: 60, Statistics: ['Sum'] },
      400,
      'InvalidParameterValueException',
      'InvalidParameterValue;Sender',
    ],
    ['MaxRecords out of range', 'DescribeAlarms', { MaxRecords: 0 }, 400, 'ValidationException', 'ValidationError;Sender'],
    [
      'an alarm that does not exist',
      'SetAlarmState',
      { AlarmName: 'nobody', StateValue: 'OK', StateReason: 'r' },
      404,
      'ResourceNotFound',
      'ResourceNotFound;Sender',
    ],
    ['a token it did not give', 'DescribeAlarms', { NextToken: 'x' }, 400, 'InvalidNextToken', 'InvalidNextToken;Sender'],
  ])('refuses %s with its shape in __type and its query code in x-amzn-query-error', async (_what, operation, input, status, shape, queryError) => {
    const res = await json(local.cw.endpoint, operation, input);
    expect(res).toMatchObject({ status, errorType: shape, queryError, body: { __type: shape, message: expect.any(String) } });
  });
});

describe('Smithy RPC v2 CBOR, as botocore sends it when set to it', () => {
  const local = useLocalCloudWatch('all', [alarmOn({})]);
  beforeAll(async () => {
    await query(local.cw.endpoint, PUT_FORM);
  });
  async function rpc(operation: string, input: Record<string, unknown>) {
    const res = await fetch(`${local.cw.endpoint}/service/GraniteServiceVersion20100801/operation/${operation}`, {
      method: 'POST',
      headers: {
        'smithy-protocol': 'rpc-v2-cbor',
        'Content-Type': 'application/cbor',
        Accept: 'application/cbor',
        'x-amzn-query-mode': 'true',
        Authorization: AUTHORIZATION,
      },
      body: cbor.serialize(input),
    });
    const headers = {
      protocol: res.headers.get('smithy-protocol'),
      contentType: res.headers.get('content-type'),
      queryError: res.headers.get('x-amzn-query-error'),
    };
    return { status: res.status, headers, body: cbor.deserialize(new Uint8Array(await res.arrayBuffer())) as Record<string, any> };
  }
  const seconds = (ms: number) => tag({ tag: 1, value: ms / 1000 });

  it('reads timestamps as tag 1 and answers with them', async () => {
    const stats = await rpc('GetMetricStatistics', {
      Namespace: 'Test',
      MetricName: 'Age',
      Dimensions: [{ Name: 'Pipeline', Value: 'p' }],
      StartTime: seconds(T0 - 10 * MINUTE),
      EndTime: seconds(T0),
      Period: 60,
      Statistics: ['Sum'],
    });
    expect(stats).toMatchObject({
      status: 200,
      headers: { protocol: 'rpc-v2-cbor', contentType: 'application/cbor', queryError: null },
      body: { Label: 'Age', Datapoints: [{ Sum: 220, Unit: 'Seconds' }] },
    });
    expect(stats.body.Datapoints[0].Timestamp).toMatchObject({ tag: 1, value: (T0 - 5 * MINUTE) / 1000 });
    const alarms = await rpc('DescribeAlarms', { MaxRecords: 1 });
    expect(alarms.body.MetricAlarms[0]).toMatchObject({ AlarmName: 'test-alarm', AlarmActions: [TOPIC], StateUpdatedTimestamp: { tag: 1, value: T0 / 1000 } });
  });

  it("refuses with the shape's absolute id in __type, and the query code in x-amzn-query-error", async () => {
    const refused = await rpc('GetMetricStatistics', {
      Namespace: 'Test',
      MetricName: 'Age',
      StartTime: seconds(T0),
      EndTime: seconds(T0 - MINUTE),
      Period: 60,
      Statistics: ['Sum'],
    });
    expect(refused).toMatchObject({
      status: 400,
      headers: { protocol: 'rpc-v2-cbor', queryError: 'InvalidParameterValue;Sender' },
      body: { __type: 'com.amazonaws.cloudwatch#InvalidParameterValueException', message: 'The parameter StartTime must be less than the parameter EndTime.' },
    });
    expect((await rpc('PutDashboard', {})).headers.queryError).toBe('InvalidAction;Sender');
  });

  it("serves the JS SDK's CBOR client: statistics with dates, alarms, a refusal's code", async () => {
    const sdk = new CloudWatchClient({
      endpoint: local.cw.endpoint,
      region: LOCAL_AWS_ENV.AWS_REGION,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      protocol: AwsSmithyRpcV2CborProtocol,
    });
    const stats = await sdk.send(
      new GetMetricStatisticsCommand({
        Namespace: 'Test',
        MetricName: 'Age',
        Dimensions: [{ Name: 'Pipeline', Value: 'p' }],
        StartTime: new Date(T0 - 10 * MINUTE),
        EndTime: new Date(T0),
        Period: 60,
        Statistics: ['Maximum'],
      }),
    );
    expect(stats.Datapoints).toEqual([{ Timestamp: new Date(T0 - 5 * MINUTE), Maximum: 150, Unit: 'Seconds' }]);
    expect((await sdk.send(new DescribeAlarmsCommand({}))).MetricAlarms!.map((a) => [a.AlarmName, a.StateUpdatedTimestamp])).toEqual([
      ['test-alarm', new Date(T0)],
    ]);
    await expect(sdk.send(new DescribeAlarmsCommand({ MaxRecords: 500 }))).rejects.toMatchObject({
      Code: 'ValidationError',
      $metadata: { httpStatusCode: 400 },
    });
  });
});

describe("the JS SDK's own query-protocol client", () => {
  const alarms = ['age-a', 'age-b', 'age-c'].map((alarmName) => alarmOn({ alarmName }));
  const local = useLocalCloudWatch('all', alarms);
  const client = () =>
    new CloudWatchClient({
      endpoint: local.cw.endpoint,
      region: LOCAL_AWS_ENV.AWS_REGION,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      protocol: AwsQueryProtocol,
    });
  beforeAll(async () => {
    await query(local.cw.endpoint, PUT_FORM);
  });

  it('reads metrics, statistics with dates, and every page of alarms from the XML', async () => {
    const sdk = client();
    expect((await sdk.send(new ListMetricsCommand({ Namespace: 'Test' }))).Metrics).toEqual([
      { Namespace: 'Test', MetricName: 'Age', Dimensions: [{ Name: 'Pipeline', Value: 'p' }] },
    ]);
    const stats = await sdk.send(
      new GetMetricStatisticsCommand({
        Namespace: 'Test',
        MetricName: 'Age',
        Dimensions: [{ Name: 'Pipeline', Value: 'p' }],
        StartTime: new Date(T0 - 10 * MINUTE),
        EndTime: new Date(T0),
        Period: 60,
        Statistics: ['Average', 'Minimum'],
      }),
    );
    expect(stats.Datapoints).toEqual([{ Timestamp: new Date(T0 - 5 * MINUTE), Average: 44, Minimum: 10, Unit: 'Seconds' }]);

    const seen: SdkAlarm[] = [];
    for await (const page of paginateDescribeAlarms({ client: sdk, pageSize: 2 }, { AlarmTypes: ['MetricAlarm'] })) seen.push(...(page.MetricAlarms ?? []));
    expect(seen.map((a) => [a.AlarmName, a.Threshold, a.StateUpdatedTimestamp])).toEqual(alarms.map((a) => [a.alarmName, 100, new Date(T0)]));
  });

  it('reads a refusal as the modeled exception, its query code and status', async () => {
    const refused = client().send(new DescribeAlarmsCommand({ AlarmNames: ['age-a'], AlarmNamePrefix: 'age' }));
    await expect(refused).rejects.toMatchObject({
      name: 'InvalidParameterCombinationException',
      Code: 'InvalidParameterCombination',
      $metadata: { httpStatusCode: 400 },
    });
  });
});
