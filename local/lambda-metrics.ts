/**
 * The AWS/Lambda metrics the Lambda service would write: the runner records
 * each invocation it makes and sends Invocations, Errors, Duration and
 * Throttles by FunctionName (the function's logical id) to the local
 * CloudWatch endpoint, signed as the service (LOCAL_AWS_SERVICE_ACCESS_KEY_ID).
 * How each is counted, and why: docs/decisions/lambda-metrics-locally-and-getmetricdata.md
 * https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html
 */
import { type CloudWatchClient, type MetricDatum, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';

export const LAMBDA_NAMESPACE = 'AWS/Lambda';

/** The error Lambda refuses an invocation with when no concurrency is left, as Step Functions names it. */
export const THROTTLED_ERROR_NAME = 'Lambda.TooManyRequestsException';

/** How one invocation request ended, as Lambda's metrics tell them apart. */
export type InvocationOutcome = 'succeeded' | 'functionError' | 'throttled' | 'serviceError';

export interface InvocationRecord {
  /** The function's name (its logical id locally). */
  readonly functionName: string;
  /** When it was invoked, epoch milliseconds. */
  readonly at: number;
  readonly outcome: InvocationOutcome;
  /** Milliseconds the code ran: for succeeded and functionError. */
  readonly durationMs?: number;
}

/**
 * How an invocation that threw ended: a Lambda service error (`Lambda.*`,
 * what a test's fault injects for the service) is no function error; a
 * throttle is counted apart. Anything else the code or the runtime threw.
 */
export function outcomeOfError(error: unknown): Exclude<InvocationOutcome, 'succeeded'> {
  const name = (error as { name?: unknown })?.name;
  if (name === THROTTLED_ERROR_NAME) return 'throttled';
  if (typeof name === 'string' && name.startsWith('Lambda.')) return 'serviceError';
  return 'functionError';
}

/** The AWS/Lambda metric data of the records. */
export function lambdaMetricData(records: readonly InvocationRecord[]): MetricDatum[] {
  const data: MetricDatum[] = [];
  for (const record of records) {
    const common = { Dimensions: [{ Name: 'FunctionName', Value: record.functionName }], Timestamp: new Date(record.at) };
    if (record.outcome === 'throttled') {
      data.push({ ...common, MetricName: 'Throttles', Value: 1, Unit: 'Count' });
      continue;
    }
    if (record.outcome === 'serviceError') continue;
    data.push(
      { ...common, MetricName: 'Invocations', Value: 1, Unit: 'Count' },
      { ...common, MetricName: 'Errors', Value: record.outcome === 'functionError' ? 1 : 0, Unit: 'Count' },
      { ...common, MetricName: 'Duration', Value: record.durationMs ?? 0, Unit: 'Milliseconds' },
    );
  }
  return data;
}

/** PutMetricData takes at most 1,000 metrics a request. */
const MAX_METRICS_A_REQUEST = 1000;

/** Sends the records' AWS/Lambda metrics with `client` (one signing as the service), 1,000 a request; returns how many. */
export async function putLambdaMetrics(client: CloudWatchClient, records: readonly InvocationRecord[]): Promise<number> {
  const data = lambdaMetricData(records);
  for (let i = 0; i < data.length; i += MAX_METRICS_A_REQUEST) {
    await client.send(new PutMetricDataCommand({ Namespace: LAMBDA_NAMESPACE, MetricData: data.slice(i, i + MAX_METRICS_A_REQUEST) }));
  }
  return data.length;
}
