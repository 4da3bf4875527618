import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, Metric, Stats, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { Pipeline } from '../domain/spec.ts';
import { DimensionName, MetricName, METRICS_NAMESPACE, SERVICE_NAME } from '../domain/names.ts';

export interface PublishMonitoringProps {
  readonly stateMachine: IStateMachine;
  /** Every alarm notifies this topic. */
  readonly topic: ITopic;
  /** One freshness alarm per pipeline. */
  readonly pipelines: readonly Pipeline[];
}

/**
 * Alarms that page: failed and timed-out executions (a timeout skips the
 * Notify path), and per pipeline a freshness alarm that fires when no
 * publish happened within its SLA, including when no run happened at all.
 */
export class PublishMonitoring extends Construct {
  /** Keyed by label: `ExecutionsFailed`, `ExecutionsTimedOut`, `Freshness:<pipeline>`. */
  public readonly alarms: Record<string, Alarm>;

  constructor(scope: Construct, id: string, props: PublishMonitoringProps) {
    super(scope, id);
    const action = new SnsAction(props.topic);
    const alarms: Record<string, Alarm> = {};

    alarms.ExecutionsFailed = new Alarm(this, 'ExecutionsFailed', {
      // A failure after Publish (EmitMetrics, Cleanup) leaves the new table published: the alert says which.
      alarmDescription:
        'atomic-publish: an execution failed. See the failure alert for the error and whether the live table was published, ' +
        'and atomic_publish.batch_attempts for the attempt.',
      metric: props.stateMachine.metricFailed({ period: Duration.minutes(5), statistic: Stats.SUM }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    alarms.ExecutionsTimedOut = new Alarm(this, 'ExecutionsTimedOut', {
      alarmDescription:
        'atomic-publish: an execution hit the state machine timeout, so no failure alert was sent. ' +
        'Check atomic_publish.batch_attempts and the execution history for how far it got (the live table may already be published).',
      metric: props.stateMachine.metricTimedOut({ period: Duration.minutes(5), statistic: Stats.SUM }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });

    for (const pipeline of props.pipelines) {
      alarms[`Freshness:${pipeline.name}`] = new Alarm(this, `Freshness-${pipeline.name}`, {
        alarmDescription:
          `atomic-publish: pipeline ${pipeline.name} published nothing in the last ${pipeline.freshness.slaMinutes} minutes ` +
          `(freshness SLA); ${pipeline.target.schema}.${pipeline.target.table} is getting stale.`,
        metric: new Metric({
          namespace: METRICS_NAMESPACE,
          metricName: MetricName.Published,
          dimensionsMap: { [DimensionName.Service]: SERVICE_NAME, [DimensionName.Pipeline]: pipeline.name },
          statistic: Stats.SAMPLE_COUNT,
          period: Duration.minutes(pipeline.freshness.slaMinutes),
        }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
        // No datapoint means no publish: that is exactly what must page.
        treatMissingData: TreatMissingData.BREACHING,
      });
    }

    for (const alarm of Object.values(alarms)) alarm.addAlarmAction(action);
    this.alarms = alarms;
  }
}
