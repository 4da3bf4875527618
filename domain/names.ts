/**
 * Names the infrastructure and the handlers must agree on. The functions get
 * them as POWERTOOLS_SERVICE_NAME / POWERTOOLS_METRICS_NAMESPACE, and the
 * freshness alarms read metrics by them.
 */

/** CloudWatch namespace of the handlers' metrics (Powertools, Embedded Metric Format). */
export const METRICS_NAMESPACE = 'AtomicPublish';

/** Powertools service name: the `service` dimension of every metric. */
export const SERVICE_NAME = 'atomic-publish';
