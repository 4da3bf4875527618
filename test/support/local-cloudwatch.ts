// A local CloudWatch endpoint as the CloudWatch tests use it: test alarms
// on a metric of their own, an outbox and a clock of the endpoint's own,
// and the real CloudWatch client of it; one for a describe or for each test.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { localCloudWatchClient } from '../../local/aws-clients.ts';
import type { MetricAlarm } from '../../local/cloudwatch-alarms.ts';
import { type LocalCloudWatchApi, startLocalCloudWatchApi } from '../../local/cloudwatch-api.ts';
import { SnsOutbox } from '../../local/sns-outbox.ts';

export const TOPIC = 'arn:aws:sns:local:000000000000:OnCall';
/** The endpoint's clock to start with: 2026-12-01T08:00:00Z. */
export const T0 = Date.UTC(2026, 11, 1, 8, 0, 0);
export const MINUTE = 60_000;

/** The test alarm (on Test/Age of pipeline p, 2 of 3 minutes over 100, missing data breaching), with `overrides`. */
export const alarmOn = (overrides: Partial<MetricAlarm>): MetricAlarm => {
  const alarmName = overrides.alarmName ?? 'test-alarm';
  return {
    logicalId: 'Test',
    alarmName,
    alarmArn: `arn:aws:cloudwatch:local:000000000000:alarm:${alarmName}`,
    description: 'the test alarm: what it means, and the runbook',
    namespace: 'Test',
    metricName: 'Age',
    dimensions: { Pipeline: 'p' },
    statistic: 'Maximum',
    periodSeconds: 60,
    evaluationPeriods: 3,
    datapointsToAlarm: 2,
    threshold: 100,
    comparison: 'GreaterThanThreshold',
    treatMissingData: 'breaching',
    actionsEnabled: true,
    actions: { ALARM: [TOPIC], OK: [TOPIC], INSUFFICIENT_DATA: [] },
    ...overrides,
  };
};

/** A local CloudWatch endpoint with its alarms, its own outbox and clock, and a client of it. */
export interface LocalCloudWatch {
  readonly dir: string;
  readonly cw: LocalCloudWatchApi;
  readonly client: CloudWatchClient;
  readonly outbox: SnsOutbox;
  /** The endpoint's clock (ms since the epoch); T0 to start with. */
  now: number;
}

async function startLocal(alarms: readonly MetricAlarm[]): Promise<LocalCloudWatch> {
  const dir = mkdtempSync(join(tmpdir(), 'atomic-publish-cloudwatch-'));
  const outbox = new SnsOutbox(join(dir, 'alerts.jsonl'));
  const local = { dir, outbox, now: T0 } as LocalCloudWatch;
  Object.assign(local, { cw: await startLocalCloudWatchApi({ alarms, outbox, clock: () => new Date(local.now) }) });
  Object.assign(local, { client: localCloudWatchClient(local.cw.endpoint) });
  return local;
}

async function stopLocal(local: LocalCloudWatch | undefined): Promise<void> {
  if (!local) return;
  local.client.destroy();
  await local.cw.close();
  rmSync(local.dir, { recursive: true, force: true });
}

const fail = (message: string): never => {
  throw new Error(message);
};

/**
 * An endpoint of the calling describe's own, from its beforeAll to its
 * afterAll, or (`each`) a new one for every test; used like a `let`.
 * @param alarms @default the test alarm alone
 */
export function useLocalCloudWatch(scope: 'all' | 'each' = 'all', alarms: readonly MetricAlarm[] = [alarmOn({})]): LocalCloudWatch {
  let local: LocalCloudWatch | undefined;
  const [before, after] = scope === 'all' ? [beforeAll, afterAll] : [beforeEach, afterEach];
  before(async () => {
    local = await startLocal(alarms);
  });
  after(async () => {
    await stopLocal(local);
    local = undefined;
  });
  return new Proxy({} as LocalCloudWatch, {
    get: (_target, key) => Reflect.get(local ?? fail(`the endpoint used outside its describe (reading ${String(key)})`), key),
    set: (_target, key, value) => Reflect.set(local ?? fail(`the endpoint used outside its describe (setting ${String(key)})`), key, value),
  });
}
