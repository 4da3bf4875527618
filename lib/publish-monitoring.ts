import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, Metric, Stats, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { MetricName } from '../domain/names.ts';
import type { Pipeline } from '../domain/spec.ts';
import { pipelineMetric } from './metrics.ts';

/** The runbook, from the repository root: each alarm's description names its section there. */
export const RUNBOOK_FILE = 'docs/runbook.md';

/**
 * The runbook's sections (RUNBOOK_FILE, "Alarms"), by the alarm they are for:
 * each alarm's description names its section by title and anchor.
 */
export const RUNBOOK = {
  Freshness: 'Freshness alarm',
  DataLag: 'Data lag alarm',
  ReconcileFailed: 'Reconciliation failed alarm',
  PublishFailed: 'Publish failed alarm',
  OutOfBand: 'Out-of-band change alarm',
  ExecutionStopped: 'Execution stopped alarm',
  SlowRun: 'Slow run alarm',
  ExecutionsFailed: 'Executions failed alarm',
  LambdaErrors: 'Lambda errors alarm',
  LambdaThrottles: 'Lambda throttles alarm',
} as const;

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
export function runbookAnchor(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/ /g, '-');
}

/** The description's last sentence: where on-call reads what to do. */
export function runbookLine(title: string): string {
  return `Runbook: ${RUNBOOK_FILE}, "${title}" (${RUNBOOK_FILE}#${runbookAnchor(title)}).`;
}

/** The default expected run: half the SLA, so a run that failed at its end can still be re-run within the SLA. */
export function expectedRunMinutes(pipeline: Pipeline): number {
  return pipeline.freshness.expectedRunMinutes ?? Math.max(1, Math.floor(pipeline.freshness.slaMinutes / 2));
}

/** Period of the alarms on events (a failed run, a slow run): one failure in it pages. */
const EVENT_PERIOD = Duration.minutes(5);

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
  /**
   * How often the live watch writes LiveDrift (lib/freshness-monitor.ts):
   * the live drift alarms' period.
   * @default Duration.minutes(60)
   */
  readonly liveWatchPeriod?: Duration;
  /**
   * Step handlers by name: their throttles page. Their errors do not: a
   * step's error is how a run fails (the Catch pages through RecordFailure,
   * and the failure's class through the pipeline's alarms), and a transient
   * one that a retry absorbed is no failure at all.
   * @default - no Lambda alarms for them
   */
  readonly stepHandlers?: Readonly<Record<string, IFunction>>;
  /**
   * Functions no state machine Catch watches (StartRun, CancelOrphans, the
   * freshness monitor), by name: their errors and throttles page.
   * @default - no Lambda alarms for them
   */
  readonly standaloneFunctions?: Readonly<Record<string, IFunction>>;
}

/** Periods a freshness alarm looks at, and how many of them must breach (missing counts as breaching). */
export const FRESHNESS_EVALUATION = { evaluationPeriods: 3, datapointsToAlarm: 2 } as const;

/**
 * The alarms that page, each on one metric, ALARM and OK both notified, each
 * description naming the pipeline, its meaning and its runbook section: failed and
 * timed-out executions; per pipeline freshness, data lag (on request), reconcile,
 * publish, out-of-band change, live drift, stopped and slow runs; per function
 * throttles and the uncaught functions' errors. Each names every dimension its
 * metric is written with. Why: docs/decisions/alarms-per-pipeline-and-their-runbook.md
 */
export class PublishMonitoring extends Construct {
  /**
   * Keyed by label: `ExecutionsFailed`, `ExecutionsTimedOut`; per pipeline `Freshness:<pipeline>`,
   * `DataLag:<pipeline>` (with freshness.maxDataLagMinutes), `ReconcileFailed:<pipeline>`, `PublishFailed:<pipeline>`,
   * `OutOfBand:<pipeline>`, `ExecutionStopped:<pipeline>`, `SlowRun:<pipeline>`, `LiveDrift:<pipeline>` (outOfBand.watch); per function `Errors:<name>`
   * (standalone functions only) and `Throttles:<name>`.
   */
  public readonly alarms: Record<string, Alarm>;

  constructor(scope: Construct, id: string, props: PublishMonitoringProps) {
    super(scope, id);
    const action = new SnsAction(props.topic);
    const alarms: Record<string, Alarm> = {};

    alarms.ExecutionsFailed = new Alarm(this, 'ExecutionsFailed', {
      // A failure after Publish (EmitMetrics, Cleanup) leaves the new table published: the alert says which.
      alarmDescription:
        'atomic-publish: an execution failed. See the failure alert for the error and whether the live table was published, ' +
        'and atomic_publish.batch_attempts for the attempt. ' +
        runbookLine(RUNBOOK.ExecutionsFailed),
      metric: props.stateMachine.metricFailed({ period: Duration.minutes(5), statistic: Stats.SUM }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    alarms.ExecutionsTimedOut = new Alarm(this, 'ExecutionsTimedOut', {
      alarmDescription:
        'atomic-publish: an execution hit the state machine timeout, so no failure alert was sent. ' +
        'Check atomic_publish.batch_attempts and the execution history for how far it got (the live table may already be published). ' +
        runbookLine(RUNBOOK.ExecutionStopped),
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
          runbookLine(RUNBOOK.Freshness),
        metric: pipelineMetric(pipeline.name, MetricName.PublishAgeSeconds, { statistic: Stats.MAXIMUM, period }),
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
          runbookLine(RUNBOOK.DataLag),
        metric: pipelineMetric(pipeline.name, MetricName.LiveDataLagSeconds, { statistic: Stats.MAXIMUM, period }),
        threshold: maxLag * 60,
        ...FRESHNESS_EVALUATION,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        // A monitor that stopped pages through the freshness alarm already; an empty table has no lag to judge.
        treatMissingData: TreatMissingData.MISSING,
      });
      lag.addOkAction(action);
      alarms[`DataLag:${pipeline.name}`] = lag;
    }

    for (const pipeline of props.pipelines) Object.assign(alarms, this.runAlarms(pipeline));
    const watchPeriod = props.liveWatchPeriod ?? Duration.minutes(60);
    for (const pipeline of props.pipelines.filter((p) => p.outOfBand.watch)) alarms[`LiveDrift:${pipeline.name}`] = this.liveDriftAlarm(pipeline, watchPeriod);
    for (const [name, fn] of Object.entries(props.standaloneFunctions ?? {})) {
      alarms[`Errors:${name}`] = this.lambdaAlarm(name, 'Errors', fn.metricErrors({ period: EVENT_PERIOD, statistic: Stats.SUM }));
    }
    for (const [name, fn] of Object.entries({ ...props.stepHandlers, ...props.standaloneFunctions })) {
      alarms[`Throttles:${name}`] = this.lambdaAlarm(name, 'Throttles', fn.metricThrottles({ period: EVENT_PERIOD, statistic: Stats.SUM }));
    }
    for (const [label, alarm] of Object.entries(alarms)) {
      if (label.startsWith('Freshness:') || label.startsWith('DataLag:')) continue;
      // The freshness alarms add theirs above; every other alarm tells on-call when it clears too. OK
      // actions run on a transition into OK from any state, INSUFFICIENT_DATA included (so once per
      // alarm after a first deploy): https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html
      alarm.addOkAction(action);
    }

    for (const alarm of Object.values(alarms)) alarm.addAlarmAction(action);
    this.alarms = alarms;
  }

  /** The pipeline's alarms on its runs: one failed, stopped or slow run pages. */
  private runAlarms(pipeline: Pipeline): Record<string, Alarm> {
    const live = `${pipeline.target.schema}.${pipeline.target.table}`;
    const count = (metricName: MetricName) => pipelineMetric(pipeline.name, metricName, { statistic: Stats.SUM, period: EVENT_PERIOD });
    const expected = expectedRunMinutes(pipeline);
    const said = pipeline.freshness.expectedRunMinutes === undefined ? `half its ${pipeline.freshness.slaMinutes}-minute SLA` : 'freshness.expectedRunMinutes';
    const alarms: Record<string, Alarm> = {
      [`ReconcileFailed:${pipeline.name}`]: this.eventAlarm(
        `ReconcileFailed-${pipeline.name}`,
        count(MetricName.ReconcileFailed),
        `atomic-publish: pipeline ${pipeline.name}: reconciliation failed: the gate blocked a batch (CheckFailedError), so nothing was published and ${live} is untouched; ` +
          `the failure alert and atomic_publish.check_results say which check and where. ${runbookLine(RUNBOOK.ReconcileFailed)}`,
      ),
      [`PublishFailed:${pipeline.name}`]: this.eventAlarm(
        `PublishFailed-${pipeline.name}`,
        count(MetricName.PublishFailed),
        `atomic-publish: pipeline ${pipeline.name}: publish failed: a batch passed the gate but its publish into ${live} did not commit ` +
          `(the failure alert says why and what readers see). ${runbookLine(RUNBOOK.PublishFailed)}`,
      ),
      [`OutOfBand:${pipeline.name}`]: this.eventAlarm(
        `OutOfBand-${pipeline.name}`,
        count(MetricName.OutOfBandChange),
        `atomic-publish: pipeline ${pipeline.name}: out-of-band change (drift): ${live} no longer matched the fingerprint Plan took of it, ` +
          `so someone else wrote to it; Publish refused and readers see the table with that change in it. ${runbookLine(RUNBOOK.OutOfBand)}`,
      ),
      [`ExecutionStopped:${pipeline.name}`]: this.eventAlarm(
        `ExecutionStopped-${pipeline.name}`,
        count(MetricName.ExecutionStopped),
        `atomic-publish: pipeline ${pipeline.name}: an execution was aborted or timed out; no failure alert was sent. CancelOrphans cancelled its statements ` +
          `and marked its batch FAILED; ${live} may or may not have been published. ${runbookLine(RUNBOOK.ExecutionStopped)}`,
      ),
      [`SlowRun:${pipeline.name}`]: this.eventAlarm(
        `SlowRun-${pipeline.name}`,
        pipelineMetric(pipeline.name, MetricName.RunDurationSeconds, { statistic: Stats.MAXIMUM, period: EVENT_PERIOD }),
        `atomic-publish: pipeline ${pipeline.name}: a run took longer than ${expected} minutes (${said}) from its start to its publish; ` +
          `it published, but a failure at that pace could not be re-run within the SLA. ${runbookLine(RUNBOOK.SlowRun)}`,
        { threshold: expected * 60, comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD },
      ),
    };
    return alarms;
  }

  /**
   * The live watch's alarm reports a state, not an event: Maximum over one watch
   * period, and a period without a reading keeps the state (`ignore`), neither
   * clearing an unrepaired drift nor paging on a skipped watch. Why it is not the
   * OutOfBand alarm: docs/decisions/live-watch.md
   * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-missing-data.html
   */
  private liveDriftAlarm(pipeline: Pipeline, period: Duration): Alarm {
    const live = `${pipeline.target.schema}.${pipeline.target.table}`;
    return new Alarm(this, `LiveDrift-${pipeline.name}`, {
      alarmDescription:
        `atomic-publish: pipeline ${pipeline.name}: out-of-band change (drift) between runs: ${live} no longer matches the fingerprint recorded at its latest publication, ` +
        `so someone else wrote to it since; readers see the table with that change in it. The next swap will refuse to publish over it. ${runbookLine(RUNBOOK.OutOfBand)}`,
      metric: pipelineMetric(pipeline.name, MetricName.LiveDrift, { statistic: Stats.MAXIMUM, period }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.IGNORE,
    });
  }

  /** One event in the period pages; a period without one is fine (the alarm returns to OK). */
  private eventAlarm(id: string, metric: Metric, alarmDescription: string, compare?: { threshold: number; comparisonOperator: ComparisonOperator }): Alarm {
    return new Alarm(this, id, {
      alarmDescription,
      metric,
      threshold: compare?.threshold ?? 1,
      comparisonOperator: compare?.comparisonOperator ?? ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
  }

  private lambdaAlarm(name: string, what: 'Errors' | 'Throttles', metric: ReturnType<IFunction['metricErrors']>): Alarm {
    const description =
      what === 'Errors'
        ? `atomic-publish: the ${name} function failed an invocation (no state machine Catch pages for it): see its log group. ${runbookLine(RUNBOOK.LambdaErrors)}`
        : `atomic-publish: the ${name} function was throttled (the account's or its concurrency limit), for every pipeline. ${runbookLine(RUNBOOK.LambdaThrottles)}`;
    return new Alarm(this, `${what}-${name}`, {
      alarmDescription: description,
      metric,
      threshold: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
  }
}
