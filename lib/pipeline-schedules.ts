import { Duration, TimeZone } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { ContextAttribute, Schedule, ScheduleExpression, ScheduleTargetInput, TimeWindow } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { Pipeline } from '../domain/spec.ts';
import { StartRunEnv } from '../functions/start-run/env.ts';
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
    // The Scheduler invokes it asynchronously: Lambda retries a failed start
    // twice, within the same hour a late scheduled start may still happen.
    startRun.configureAsyncInvoke({ retryAttempts: 2, maxEventAge: props.maxEventAge ?? Duration.hours(1) });
    this.startRun = startRun;

    for (const pipeline of scheduled) {
      schedules[pipeline.name] = new Schedule(this, pipeline.name, {
        description: `atomic-publish: run pipeline ${pipeline.name}`,
        schedule: ScheduleExpression.expression(pipeline.schedule!.expression, TimeZone.of(pipeline.schedule!.timezone)),
        target: new LambdaInvoke(startRun, {
          input: ScheduleTargetInput.fromObject({ pipeline: pipeline.name, scheduledTime: ContextAttribute.scheduledTime }),
          retryAttempts: props.retryAttempts ?? 10,
          maxEventAge: props.maxEventAge ?? Duration.hours(1),
        }),
        // Runs start on the minute the pipeline owner wrote down.
        timeWindow: TimeWindow.off(),
      });
    }
  }
}
