/**
 * Which per-pipeline alarm a failed run belongs to, besides BatchFailed
 * (every failure): RecordFailure counts the class as a metric of its own,
 * so each alarm reads one metric (lib/publish-monitoring.ts). Pure.
 */
import { MetricName } from '../names.ts';

export type FailureClassMetric = typeof MetricName.ReconcileFailed | typeof MetricName.PublishFailed | typeof MetricName.OutOfBandChange;

/** The error names the classes hang on (domain/errors.ts sets them). */
const CHECK_FAILED = 'CheckFailedError';
const OUT_OF_BAND = 'OutOfBandChangeError';
const PUBLISH_CONFLICT = 'PublishConflictError';

export interface FailureClassFacts {
  /** The error's name as the Catch recorded it. */
  readonly errorName: string;
  /** Reconcile's result is in the state: the batch passed the gate. */
  readonly reconciled: boolean;
  /** Publish's result is in the state: the swap committed (a later step failed). */
  readonly published: boolean;
}

/**
 * One class per cause: CheckFailedError (Reconcile, or a group's member) is
 * ReconcileFailed; OutOfBandChangeError is OutOfBandChange only; any other error
 * after Reconcile's result and before Publish's, or a publish conflict, is
 * PublishFailed; anything else (bad input, a load, a step after the publish) has
 * none. Why: docs/decisions/alarms-per-pipeline-and-their-runbook.md
 */
export function failureClass(facts: FailureClassFacts): FailureClassMetric | undefined {
  if (facts.errorName === CHECK_FAILED) return MetricName.ReconcileFailed;
  if (facts.errorName === OUT_OF_BAND) return MetricName.OutOfBandChange;
  if (facts.published) return undefined;
  if (facts.errorName === PUBLISH_CONFLICT || facts.reconciled) return MetricName.PublishFailed;
  return undefined;
}
