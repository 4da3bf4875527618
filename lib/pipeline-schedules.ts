import { Duration, TimeZone, Validations } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, Stats, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { ContextAttribute, Schedule, ScheduleExpression, ScheduleTargetInput, TimeWindow } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { Pipeline } from '../domain/spec.ts';
import { StartRunEnv } from '../functions/start-run/env.ts';
import { runbookLine } from './publish-monitoring.ts';
import { StepHandler } from './step-handler.ts';

export interface PipelineSchedulesProps {
  readonly stateMachine: IStateMachine;
  /** Pipelines with a `schedule` get one; the others run only when started by hand. */
  readonly pipelines: readonly Pipeline[];
  /**
   * Attempts EventBridge Scheduler makes when invoking StartRun fails (throttling, outage).
   * @default 10
   */
  readonly retryAttempts?: number;
  /**
   * How late a scheduled start may still happen; a start later than this is dropped
   * (the freshness alarm then pages).
   * @default Duration.hours(1)
   */
  readonly maxEventAge?: Duration;
  /** Retention of StartRun's log group. @default RetentionDays.THREE_MONTHS */
  readonly logRetention?: RetentionDays;
  /**
   * The on-call topic the dead-letter alarm pages.
   * @default - the alarm has no action
   */
  readonly topic?: ITopic;
}

/**
 * EventBridge Scheduler schedules (cron in the pipeline's time zone, unlike
 * EventBridge rules), each invoking StartRun with `{"pipeline", "scheduledTime"}`.
 * StartRun starts the state machine under a name of the pipeline and the
 * scheduled time (functions/start-run): the Scheduler's own Step Functions
 * target cannot name executions, and the one per-run value it offers, the
 * scheduled time, holds colons, which execution names may not.
 */
export class PipelineSchedules extends Construct {
  /** Keyed by pipeline name. */
  public readonly schedules: Record<string, Schedule>;
  /** The function the schedules invoke; absent when no pipeline has a schedule. */
  public readonly startRun?: StepHandler;
  /**
   * Scheduled starts that never happened: what the Scheduler could not
   * deliver to StartRun after its retries, and the invocations StartRun
   * failed after Lambda's. Absent when no pipeline has a schedule.
   */
  public readonly deadLetterQueue?: Queue;
  /** Pages when deadLetterQueue holds a message. */
  public readonly deadLetterAlarm?: Alarm;

  constructor(scope: Construct, id: string, props: PipelineSchedulesProps) {
    super(scope, id);
    const schedules: Record<string, Schedule> = {};
    this.schedules = schedules;
    const scheduled = props.pipelines.filter((pipeline) => pipeline.schedule);
    if (scheduled.length === 0) return;

    // Its own role: it starts executions of this state machine and does nothing else (no warehouse access).
    const role = new Role(this, 'StartRunRole', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: 'atomic-publish StartRun: starts scheduled runs of the state machine',
    });
    const startRun = new StepHandler(this, 'StartRunFunction', {
      state: 'StartRun',
      role,
      environment: { [StartRunEnv.STATE_MACHINE_ARN]: props.stateMachine.stateMachineArn },
      ...(props.logRetention ? { logRetention: props.logRetention } : {}),
    });
    props.stateMachine.grantStartExecution(role);
    // One queue for every start that was due and did not happen: the
    // Scheduler's dead-letter events (it could not invoke StartRun after its
    // retry policy) and Lambda's on-failure records (StartRun was invoked and
    // failed after Lambda's retries, e.g. StartExecution refused). Kept 14
    // days, SQS's longest, for the on-call to read.
    // https://docs.aws.amazon.com/scheduler/latest/UserGuide/configuring-schedule-dlq.html
    // https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html
    const deadLetterQueue = new Queue(this, 'MissedStarts', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(deadLetterQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        "This queue is itself the dead-letter queue of the pipelines' schedules and of StartRun's asynchronous invocations; nothing consumes it automatically, the on-call reads it (its alarm pages).",
    });
    this.deadLetterQueue = deadLetterQueue;
    // The Scheduler invokes it asynchronously: Lambda retries a failed start
    // twice, within the same hour a late scheduled start may still happen;
    // then sends the failure record to the queue with the function's role,
    // which needs sqs:SendMessage there and nothing more (CDK's
    // SqsDestination would also grant GetQueueAttributes and GetQueueUrl).
    role.addToPrincipalPolicy(new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [deadLetterQueue.queueArn] }));
    startRun.configureAsyncInvoke({
      retryAttempts: 2,
      maxEventAge: props.maxEventAge ?? Duration.hours(1),
      onFailure: { bind: () => ({ destination: deadLetterQueue.queueArn }) },
    });
    this.startRun = startRun;
    // A message is a run that was due and was not started: the pipeline goes
    // stale (its freshness alarm pages later); this pages at once, naming why.
    const alarm = new Alarm(this, 'MissedStartsAlarm', {
      alarmDescription:
        'atomic-publish: a scheduled run was not started: EventBridge Scheduler could not invoke StartRun after its retries, or StartRun failed ' +
        "(StartExecution refused or throttled) after Lambda's retries; the message in the dead-letter queue names the pipeline and the error. " +
        runbookLine('Missed scheduled start alarm'),
      metric: deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: Stats.MAXIMUM }),
      threshold: 0,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    if (props.topic) {
      alarm.addAlarmAction(new SnsAction(props.topic));
      alarm.addOkAction(new SnsAction(props.topic));
    }
    this.deadLetterAlarm = alarm;

    for (const pipeline of scheduled) {
      schedules[pipeline.name] = new Schedule(this, pipeline.name, {
        description: `atomic-publish: run pipeline ${pipeline.name}`,
        schedule: ScheduleExpression.expression(pipeline.schedule!.expression, TimeZone.of(pipeline.schedule!.timezone)),
        target: new LambdaInvoke(startRun, {
          input: ScheduleTargetInput.fromObject({ pipeline: pipeline.name, scheduledTime: ContextAttribute.scheduledTime }),
          retryAttempts: props.retryAttempts ?? 10,
          maxEventAge: props.maxEventAge ?? Duration.hours(1),
          deadLetterQueue,
        }),
        // Runs start on the minute the pipeline owner wrote down.
        timeWindow: TimeWindow.off(),
      });
    }
  }
}
