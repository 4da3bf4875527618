// Real clients other than the JS SDK against the local CloudWatch
// endpoint: boto3 and the AWS CLI of this machine, as they are (JSON 1.0
// with x-amzn-query-mode, botocore 1.42.7 on) and with botocore's own
// CloudWatch model set to the awsQuery protocol that botocore sent before
// 1.42.7 (boto3 1.26, AWS CLI v2.9), or to Smithy RPC v2 CBOR, which the
// model also lists. Skipped only where python3 has no boto3, or there is no
// `aws` command.
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alarmOn, MINUTE, T0, useLocalCloudWatch } from '../support/local-cloudwatch.ts';

const HAS_BOTO3 = spawnSync('python3', ['-c', 'import boto3']).status === 0;
const HAS_AWS_CLI = spawnSync('aws', ['--version']).status === 0;
const SCRIPT = path.resolve(import.meta.dirname, '../support/cloudwatch-boto3.py');
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

/** A client's environment: dummy credentials, none of the user's AWS config, one attempt a call, times shown in UTC. */
const CLIENT_ENV = {
  TZ: 'UTC',
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  AWS_DEFAULT_REGION: 'us-east-1',
  AWS_CONFIG_FILE: '/dev/null',
  AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
  AWS_MAX_ATTEMPTS: '1',
  AWS_EC2_METADATA_DISABLED: 'true',
};

function run(command: string, args: readonly string[], env: Record<string, string>): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { env: { PATH: process.env.PATH ?? '', HOME: tmpdir(), ...CLIENT_ENV, ...env } }, (error, out, err) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, out, err }),
    );
  });
}

// Copies of botocore's model, each set to one protocol, that AWS_DATA_PATH points botocore at.
let models: string;
beforeAll(async () => {
  models = mkdtempSync(path.join(tmpdir(), 'atomic-publish-botocore-models-'));
  for (const protocol of ['query', 'smithy-rpc-v2-cbor']) {
    if (HAS_BOTO3) expect(await run('python3', [SCRIPT, 'model', path.join(models, protocol), protocol], {})).toMatchObject({ code: 0 });
  }
});
afterAll(() => rmSync(models, { recursive: true, force: true }));

// `shown`: how the AWS CLI v1 prints a timestamp: as the wire has it (CBOR's tag 1 as the epoch seconds it holds).
const PROTOCOLS = [
  {
    protocol: 'query',
    contentType: 'text/xml',
    env: () => ({ AWS_DATA_PATH: path.join(models, 'query') }),
    shown: (ms: number) => iso(ms),
    sent: /'Content-Type': 'application\/x-www-form-urlencoded; charset=utf-8'/,
  },
  {
    protocol: 'json',
    contentType: 'application/x-amz-json-1.0',
    env: () => ({}),
    shown: (ms: number) => ms / 1000,
    sent: /'X-Amz-Target': 'GraniteServiceVersion20100801\.GetMetricStatistics', 'Content-Type': 'application\/x-amz-json-1\.0', 'x-amzn-query-mode': 'true'/,
  },
  {
    protocol: 'smithy-rpc-v2-cbor',
    contentType: 'application/cbor',
    env: () => ({ AWS_DATA_PATH: path.join(models, 'smithy-rpc-v2-cbor') }),
    shown: (ms: number) => ms / 1000,
    sent: /'url_path': '\/service\/GraniteServiceVersion20100801\/operation\/GetMetricStatistics'.*'smithy-protocol': 'rpc-v2-cbor'/,
  },
] as const;

const ALARMS = ['age-a', 'age-b', 'age-c'].map((alarmName) => alarmOn({ alarmName }));

// Each protocol's clients against an endpoint of their own, all at once: the calls wait on the clients' own start-up most of the time.
describe.concurrent('clients of this machine', () => {
  describe.skipIf(!HAS_BOTO3).each(PROTOCOLS)('boto3 in the $protocol protocol', ({ protocol, contentType, env }) => {
    const local = useLocalCloudWatch('all', ALARMS);

    it("puts and lists metrics, pages through the alarms, reads statistics, and gets CloudWatch's error for a start after the end", async () => {
      const { code, out, err } = await run('python3', [SCRIPT, 'run', local.cw.endpoint, iso(T0)], env());
      expect({ code, err }).toEqual({ code: 0, err: '' });

      expect(JSON.parse(out)).toEqual({
        protocol,
        contentTypes: [contentType],
        metrics: ['p0', 'p1', 'p2'],
        alarmPages: [['age-a', 'age-b'], ['age-c']],
        stateUpdated: '2026-12-01T08:00:00+00:00',
        datapoints: [{ Timestamp: '2026-12-01T07:55:00+00:00', Sum: 2.5, SampleCount: 1 }],
        error: {
          class: 'InvalidParameterValueException',
          code: 'InvalidParameterValue',
          message: 'The parameter StartTime must be less than the parameter EndTime.',
          status: 400,
        },
      });
    });
  });

  const awsOn =
    (local: { cw: { endpoint: string } }, env: Record<string, string>) =>
    (...args: string[]) =>
      run('aws', ['--endpoint-url', local.cw.endpoint, '--output', 'json', 'cloudwatch', ...args], env);
  const statistics = (aws: (...args: string[]) => ReturnType<typeof run>, ...extra: string[]) =>
    aws(
      'get-metric-statistics',
      '--namespace',
      'Cli',
      '--metric-name',
      'Age',
      '--dimensions',
      'Name=Pipeline,Value=p',
      '--start-time',
      iso(T0 - 10 * MINUTE),
      '--end-time',
      iso(T0),
      '--period',
      '60',
      '--statistics',
      'Maximum',
      ...extra,
    );
  const putAge = (aws: (...args: string[]) => ReturnType<typeof run>) =>
    aws(
      'put-metric-data',
      '--namespace',
      'Cli',
      '--metric-name',
      'Age',
      '--dimensions',
      'Pipeline=p',
      '--value',
      '7',
      '--unit',
      'Seconds',
      '--timestamp',
      iso(T0 - 3 * MINUTE),
    );

  // The CLI's wire is botocore's, which boto3 above speaks in every protocol: here each protocol once, through the CLI's own parsing and printing.
  describe.skipIf(!HAS_BOTO3 || !HAS_AWS_CLI).each(PROTOCOLS)('the AWS CLI (--endpoint-url) in the $protocol protocol', ({ env, sent, shown }) => {
    const local = useLocalCloudWatch('all', ALARMS);

    it('sends that protocol, and prints the statistics of a metric it put', async () => {
      const aws = awsOn(local, env());
      expect(await putAge(aws)).toMatchObject({ code: 0 });
      const stats = await statistics(aws, '--debug');
      expect(stats.code).toBe(0);
      expect(stats.err).toMatch(sent);
      expect(JSON.parse(stats.out)).toEqual({ Label: 'Age', Datapoints: [{ Timestamp: shown(T0 - 3 * MINUTE), Maximum: 7, Unit: 'Seconds' }] });
    });
  });

  // The rest of what the CLI does over the wire, in the protocol this machine's CLI sends as installed.
  describe.skipIf(!HAS_BOTO3 || !HAS_AWS_CLI)('the AWS CLI (--endpoint-url) as installed', () => {
    const local = useLocalCloudWatch('all', ALARMS);
    const aws = (...args: string[]) => awsOn(local, {})(...args);

    it('lists a metric it put, and pages through every alarm', async () => {
      expect(await putAge(aws)).toMatchObject({ code: 0 });
      expect(JSON.parse((await aws('list-metrics', '--namespace', 'Cli')).out)).toEqual({
        Metrics: [{ Namespace: 'Cli', MetricName: 'Age', Dimensions: [{ Name: 'Pipeline', Value: 'p' }] }],
      });
      // --page-size 1: three DescribeAlarms calls, one alarm each, followed by NextToken and merged.
      const alarms = JSON.parse((await aws('describe-alarms', '--page-size', '1')).out);
      expect(alarms.MetricAlarms.map((a: { AlarmName: string }) => a.AlarmName)).toEqual(['age-a', 'age-b', 'age-c']);
    });

    it("sets an alarm's state, and exits non-zero with CloudWatch's code and message on a refusal", async () => {
      expect(await aws('set-alarm-state', '--alarm-name', 'age-b', '--state-value', 'ALARM', '--state-reason', 'testing the page')).toMatchObject({ code: 0 });
      expect(JSON.parse((await aws('describe-alarms', '--alarm-names', 'age-b', '--query', 'MetricAlarms[0].[StateValue,StateReason]')).out)).toEqual([
        'ALARM',
        'testing the page',
      ]);

      const refused = await aws(
        'get-metric-statistics',
        '--namespace',
        'Cli',
        '--metric-name',
        'Age',
        '--start-time',
        iso(T0),
        '--end-time',
        iso(T0 - MINUTE),
        '--period',
        '60',
        '--statistics',
        'Sum',
      );
      expect(refused.code).not.toBe(0);
      expect(refused.err).toContain(
        'An error occurred (InvalidParameterValue) when calling the GetMetricStatistics operation: The parameter StartTime must be less than the parameter EndTime.',
      );
      const tooMany = await aws('describe-alarms', '--max-records', '101');
      expect(tooMany.err).toMatch(/\(ValidationError\) when calling the DescribeAlarms operation: 1 validation error detected: Value '101' at 'maxRecords'/);
    });
  });
});
