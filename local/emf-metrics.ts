/**
 * CloudWatch Logs' part for the handlers' Embedded Metric Format lines: the
 * records the runner captured from their stdout (local/lambda-output.ts)
 * sent to the local CloudWatch endpoint with PutMetricData, in the
 * directive's namespace, by its dimension sets, at the record's timestamp.
 * Why: docs/decisions/alarms-per-pipeline-and-their-runbook.md ("Locally")
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
 */
import { type CloudWatchClient, type MetricDatum, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import type { MetricRecord } from './lambda-output.ts';

/** PutMetricData takes at most 1,000 metrics a request (local/cloudwatch-api.ts refuses more, as CloudWatch does). */
const MAX_METRICS_A_REQUEST = 1000;

/** Sends the records' metrics, one request per namespace and up to 1,000 metrics; returns how many were sent. */
export async function putEmfRecords(client: CloudWatchClient, records: readonly MetricRecord[]): Promise<number> {
  const byNamespace = new Map<string, MetricDatum[]>();
  for (const record of records) {
    const data = byNamespace.get(record.namespace) ?? [];
    for (const [name, value] of Object.entries(record.values)) {
      data.push({
        MetricName: name,
        Dimensions: Object.entries(record.dimensions).map(([Name, Value]) => ({ Name, Value })),
        Timestamp: new Date(record.timestamp),
        Value: value,
      });
    }
    byNamespace.set(record.namespace, data);
  }
  let sent = 0;
  for (const [namespace, data] of byNamespace) {
    for (let i = 0; i < data.length; i += MAX_METRICS_A_REQUEST) {
      const request = data.slice(i, i + MAX_METRICS_A_REQUEST);
      await client.send(new PutMetricDataCommand({ Namespace: namespace, MetricData: request }));
      sent += request.length;
    }
  }
  return sent;
}
