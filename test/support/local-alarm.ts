// One alarm of the synthesized stack, evaluated by the local CloudWatch
// endpoint over what the real CloudWatch client writes to it, paging
// through the workflow's SNS outbox; and the warehouse the monitor reads.
import type { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import type { Warehouse } from '../../functions/commons/warehouse.ts';
import { localCloudWatchClient, localWarehouse } from '../../local/aws-clients.ts';
import { alarmsFromTemplate, type MetricAlarm } from '../../local/cloudwatch-alarms.ts';
import { type LocalCloudWatchApi, startLocalCloudWatchApi } from '../../local/cloudwatch-api.ts';
import { SnsOutbox } from '../../local/sns-outbox.ts';
import { PIPELINE, type Workflow } from './workflow.ts';

export interface LocalAlarm {
  /** The pipeline's alarm on `metricName`, as synthesized. */
  readonly alarm: MetricAlarm;
  /** Its period in milliseconds. */
  readonly period: number;
  /** The endpoint, evaluating every alarm of the stack; close it after the tests. */
  readonly cw: LocalCloudWatchApi;
  readonly client: CloudWatchClient;
  readonly outbox: SnsOutbox;
  readonly warehouse: Warehouse;
}

export async function useLocalAlarm(wf: Workflow, metricName: string): Promise<LocalAlarm> {
  const alarms = alarmsFromTemplate(wf.runner.workflow.template);
  const alarm = alarms.find((a) => a.metricName === metricName && a.dimensions.Pipeline === PIPELINE.name);
  if (alarm === undefined) throw new Error(`the synthesized stack has no ${metricName} alarm of pipeline ${PIPELINE.name}`);
  const outbox = new SnsOutbox(wf.outboxFile);
  const cw = await startLocalCloudWatchApi({ alarms, outbox });
  return {
    alarm,
    period: alarm.periodSeconds * 1000,
    cw,
    client: localCloudWatchClient(cw.endpoint),
    outbox,
    warehouse: localWarehouse(wf.wh.endpoint, wf.wh.pg.database),
  };
}
