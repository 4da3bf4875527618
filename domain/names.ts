/**
 * Names the infrastructure and the handlers must agree on. The functions get
 * the namespace and service as POWERTOOLS_METRICS_NAMESPACE /
 * POWERTOOLS_SERVICE_NAME; the handlers emit the metrics by these names and
 * the alarms read them by the same ones.
 */

/** CloudWatch namespace of the handlers' metrics (Powertools, Embedded Metric Format). */
export const METRICS_NAMESPACE = 'AtomicPublish';

/** Powertools service name: the value of the `service` dimension of every metric. */
export const SERVICE_NAME = 'atomic-publish';

/**
 * Metric names, defined once. Who writes each, with which dimensions, and what
 * its value is: docs/reference/metrics.md (test/docs/metrics.test.ts holds it to
 * these names). An alarm reads a metric by every dimension its writer gives it
 * (lib/metrics.ts): CloudWatch matches a metric only on all of them.
 */
export const MetricName = {
  Published: 'Published',
  RowsPublished: 'RowsPublished',
  RunDurationSeconds: 'RunDurationSeconds',
  DataLagSeconds: 'DataLagSeconds',
  BatchFailed: 'BatchFailed',
  /** Now minus when the live data was published (the newest publication not rolled back, a rollback not counted): the freshness alarm's metric. */
  PublishAgeSeconds: 'PublishAgeSeconds',
  /** Now minus the newest event time in the live table. */
  LiveDataLagSeconds: 'LiveDataLagSeconds',
  /** RecordFailure, beside BatchFailed, by the failure's class (domain/record-failure/failure-class.ts): the gate blocked the batch (CheckFailedError). */
  ReconcileFailed: 'ReconcileFailed',
  /** RecordFailure: the batch passed the gate and Publish failed (the swap did not commit), out-of-band refusals aside. */
  PublishFailed: 'PublishFailed',
  /** RecordFailure: Publish refused because the live table changed since Plan fingerprinted it (OutOfBandChangeError): the drift alarm's metric. */
  OutOfBandChange: 'OutOfBandChange',
  /** CancelOrphans: an execution of the pipeline was aborted or timed out (no Catch ran, so RecordFailure did not count it). */
  ExecutionStopped: 'ExecutionStopped',
  /**
   * The freshness monitor's live watch (PutMetricData, dimension Pipeline only), on its own schedule:
   * 1 when the live table no longer matches what its latest publication recorded, 0 when it does (the live drift alarm's metric).
   */
  LiveDrift: 'LiveDrift',
} as const;
export type MetricName = (typeof MetricName)[keyof typeof MetricName];

/** Dimensions of every metric: the service (Powertools adds it under this name) and the pipeline. */
export const DimensionName = {
  Service: 'service',
  Pipeline: 'Pipeline',
} as const;
