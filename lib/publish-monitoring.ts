import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, Metric, Stats, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { Pipeline } from '../domain/spec.ts';
import { DimensionName, MetricName, METRICS_NAMESPACE } from '../domain/names.ts';

export interface PublishMonitoringProps {
  readonly stateMachine: IStateMachine;
  /** Every alarm notifies this topic. */
  readonly topic: ITopic;
  /** One freshness alarm per pipeline. */
  readonly pipelines: readonly Pipeline[];
  /**
   * How often the freshness monitor writes PublishAgeSeconds (lib/freshness-monitor.ts):
   * the freshness alarms' period.
   * @default Duration.minutes(5)
   */
  readonly freshnessPeriod?: Duration;
}

/** Periods a freshness alarm looks at, and how many of them must breach (missing counts as breaching). */
export const FRESHNESS_EVALUATION = { evaluationPeriods: 3, datapointsToAlarm: 2 } as const;

/**
 * Alarms that page: failed and timed-out executions (a timeout skips the
 * Notify path), and per pipeline a freshness alarm on the age of its live
 * data's publication as the freshness monitor measures it: it fires when
 * that age passes the SLA, and when the monitor stops reporting the
 * pipeline (missing data breaching), and tells on-call again when it clears.
 */
export class PublishMonitoring extends Construct {
  /** Keyed by label: `ExecutionsFailed`, `ExecutionsTimedOut`, `Freshness:<pipeline>`, `DataLag:<pipeline>` (with freshness.maxDataLagMinutes). */
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

    // Alarm evaluation: of the last `evaluationPeriods` periods, `datapointsToAlarm`
    // breaching ones turn the alarm to ALARM; with TreatMissingData breaching a
    // period without a datapoint counts as breaching. So one late or lost run of
    // the monitor does not page, two do; and a pipeline past its SLA pages within
    // two periods. A new alarm starts INSUFFICIENT_DATA, and the actions of the
    // state it enters run on every change, OK included.
    // https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-evaluation.html
    // https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-missing-data.html
    const period = props.freshnessPeriod ?? Duration.minutes(5);
    for (const pipeline of props.pipelines) {
      const sla = pipeline.freshness.slaMinutes;
      const alarm = new Alarm(this, `Freshness-${pipeline.name}`, {
        alarmDescription:
          `atomic-publish: pipeline ${pipeline.name} is stale: the data readers see in ${pipeline.target.schema}.${pipeline.target.table} ` +
          `was published more than ${sla} minutes ago (its freshness SLA), or the freshness monitor stopped measuring it. ` +
          'Runbook: README.md, Operate, "Freshness alarm".',
        metric: new Metric({
          namespace: METRICS_NAMESPACE,
          metricName: MetricName.PublishAgeSeconds,
          dimensionsMap: { [DimensionName.Pipeline]: pipeline.name },
          statistic: Stats.MAXIMUM,
          period,
        }),
        threshold: sla * 60,
        ...FRESHNESS_EVALUATION,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        // No datapoint means the monitor did not measure the pipeline: that must page too.
        treatMissingData: TreatMissingData.BREACHING,
      });
      // The page clears itself: on-call hears when the pipeline is fresh again.
      alarm.addOkAction(action);
      alarms[`Freshness:${pipeline.name}`] = alarm;

      const maxLag = pipeline.freshness.maxDataLagMinutes;
      if (maxLag === undefined) continue;
      const lag = new Alarm(this, `DataLag-${pipeline.name}`, {
        alarmDescription:
          `atomic-publish: pipeline ${pipeline.name} publishes old data: the newest ${pipeline.timeColumn} in ${pipeline.target.schema}.${pipeline.target.table} ` +
          `is more than ${maxLag} minutes old (freshness.maxDataLagMinutes); the source may have stopped delivering. ` +
          'Runbook: README.md, Operate, "Data lag alarm".',
        metric: new Metric({
          namespace: METRICS_NAMESPACE,
          metricName: MetricName.LiveDataLagSeconds,
          dimensionsMap: { [DimensionName.Pipeline]: pipeline.name },
          statistic: Stats.MAXIMUM,
          period,
        }),
        threshold: maxLag * 60,
        ...FRESHNESS_EVALUATION,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        // A monitor that stopped pages through the freshness alarm already; an empty table has no lag to judge.
        treatMissingData: TreatMissingData.MISSING,
      });
      lag.addOkAction(action);
      alarms[`DataLag:${pipeline.name}`] = lag;
    }

    for (const alarm of Object.values(alarms)) alarm.addAlarmAction(action);
    this.alarms = alarms;
  }
}
