// `local up` evaluates the stack's alarms on the real clock: the metric a
// failed publish writes turns the pipeline's publish-failed alarm to ALARM
// within the minute, `status` (which reads DescribeAlarms) shows it, and
// the page reaches the outbox. The test waits for those events, not for a
// length of time.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DescribeAlarmsCommand, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import { describe, expect, inject, it } from 'vitest';
import { STATE_DIR } from '../../lib/project.ts';
import { localCloudWatchClient } from '../../local/aws-clients.ts';
import { dropDatabase } from '../../local/postgres.ts';
import type { Alert } from '../../local/sns-outbox.ts';
import { atomicPublish, startLocalUp } from '../support/local-up-process.ts';
import { until } from '../support/until.ts';

const PIPELINE = 'sales_order_lines';

/** The pipeline's alarms as `atomic-publish status` shows them, run as a user runs it in another shell. */
async function alarmsInStatus(env: Readonly<Record<string, string>>): Promise<{ name: string; state: string }[]> {
  const { code, out, err } = await atomicPublish(['--json', 'status', PIPELINE], env);
  if (code !== 0) throw new Error(`status exited ${code}: ${err}`);
  return JSON.parse(out).pipelines[0].alarms;
}

describe('local up (a real process)', () => {
  it("evaluates the alarms on the real clock: a failed publish's metric turns its alarm to ALARM, status shows it, and it pages", async () => {
    const database = `cw_up_${process.pid}`;
    const up = await startLocalUp(database);
    const client = localCloudWatchClient(up.env.AWS_ENDPOINT_URL_CLOUDWATCH!);
    try {
      const [alarm] = (await client.send(new DescribeAlarmsCommand({ AlarmNamePrefix: `AtomicPublish-MonitoringPublishFailed${PIPELINE.replace(/_/g, '')}` })))
        .MetricAlarms!;
      expect(alarm).toMatchObject({ Namespace: 'AtomicPublish', MetricName: 'PublishFailed', Statistic: 'Sum', Threshold: 1 });
      // A publish that failed half a minute before the last whole minute: the next evaluation counts it.
      const failedAt = Math.floor(Date.now() / 60_000) * 60_000 - 30_000;

      await client.send(
        new PutMetricDataCommand({
          Namespace: alarm!.Namespace!,
          MetricData: [{ MetricName: alarm!.MetricName!, Dimensions: alarm!.Dimensions!, Timestamp: new Date(failedAt), Value: 1 }],
        }),
      );

      const stateOf = async (name: string) => (await client.send(new DescribeAlarmsCommand({ AlarmNames: [name] }))).MetricAlarms![0]!.StateValue;
      await until(async () => (await stateOf(alarm!.AlarmName!)) === 'ALARM', `${alarm!.AlarmName} in ALARM`);

      const shown = await alarmsInStatus(up.env);
      expect(shown).toContainEqual({ name: alarm!.AlarmName, state: 'ALARM' });
      // An alarm without data, missing data not breaching, was evaluated too: OK, no longer INSUFFICIENT_DATA.
      expect(shown.find((a) => a.name.startsWith('AtomicPublish-MonitoringReconcileFailed'))).toMatchObject({ state: 'OK' });
      const pages = readFileSync(join(STATE_DIR, 'outbox', 'alerts.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Alert)
        .filter((a) => a.executionId === alarm!.AlarmArn && Date.parse(a.at) >= failedAt)
        .map((a) => JSON.parse(a.message));
      expect(pages).toContainEqual(
        expect.objectContaining({
          AlarmName: alarm!.AlarmName,
          NewStateValue: 'ALARM',
          NewStateReason: expect.stringMatching(/^1 of the last 1 datapoints \[1\]/),
        }),
      );
    } finally {
      client.destroy();
      expect(await up.stop()).toBe(0);
      await dropDatabase(inject('pg'), database);
    }
  });
});
