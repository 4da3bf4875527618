/**
 * What the freshness monitor measures per pipeline, and how it reports a
 * pipeline it could not measure. Pure: the handler (functions/freshness-monitor)
 * reads the facts from the warehouse and writes the values to CloudWatch.
 */
import { AtomicPublishError } from '../errors.ts';
import { MetricName } from '../names.ts';
import { parseWarehouseTime } from '../time.ts';

export interface FreshnessFacts {
  /** When the live data was published (domain/freshness-monitor/sql/freshness-monitor.ts livePublishedAt); undefined when never. */
  readonly publishedAt: string | undefined;
  /** The newest time-column value in the live table; undefined when the table is empty. */
  readonly latestEventTime: string | undefined;
  readonly now: Date;
}

export interface FreshnessValue {
  readonly name: typeof MetricName.PublishAgeSeconds | typeof MetricName.LiveDataLagSeconds;
  readonly seconds: number;
}

/**
 * The pipeline's ages at `now`, in seconds. A value that has nothing to be
 * measured from (never published, an empty table) is left out rather than
 * written as a stand-in: the freshness alarm treats missing data as
 * breaching, so a pipeline that never published pages. An age is never
 * negative (a clock a little behind the warehouse's reads as 0).
 */
export function freshnessValues(facts: FreshnessFacts): FreshnessValue[] {
  const age = (time: string) => Math.max(0, (facts.now.getTime() - parseWarehouseTime(time).getTime()) / 1000);
  const values: FreshnessValue[] = [];
  if (facts.publishedAt !== undefined) values.push({ name: MetricName.PublishAgeSeconds, seconds: age(facts.publishedAt) });
  if (facts.latestEventTime !== undefined) values.push({ name: MetricName.LiveDataLagSeconds, seconds: age(facts.latestEventTime) });
  return values;
}

/**
 * PutMetricData takes at most 1,000 metrics a request.
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricData.html
 */
export const PUT_METRIC_DATA_MAX_METRICS = 1000;

/** Splits `items` into requests of at most `size`. */
export function inRequests<T>(items: readonly T[], size = PUT_METRIC_DATA_MAX_METRICS): T[][] {
  const requests: T[][] = [];
  for (let i = 0; i < items.length; i += size) requests.push(items.slice(i, i + size));
  return requests;
}

/**
 * The monitor measured some pipelines but not all: thrown after the others'
 * metrics were written, so the invocation counts as a Lambda error (its
 * Errors metric) and the missing metric turns that pipeline's freshness
 * alarm to ALARM. The message names every pipeline and why.
 */
export class FreshnessMonitorError extends AtomicPublishError {
  override name = 'FreshnessMonitorError';

  constructor(readonly failures: readonly { readonly pipeline: string; readonly error: string }[]) {
    super(`freshness not measured for ${failures.length} pipeline(s): ${failures.map((f) => `${f.pipeline} (${f.error})`).join('; ')}`);
  }
}
