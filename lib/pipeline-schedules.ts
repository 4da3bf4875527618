import { Duration, TimeZone } from 'aws-cdk-lib';
import { Schedule, ScheduleExpression, ScheduleTargetInput, TimeWindow } from 'aws-cdk-lib/aws-scheduler';
import { StepFunctionsStartExecution } from 'aws-cdk-lib/aws-scheduler-targets';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { Pipeline } from '../domain/spec.ts';

export interface PipelineSchedulesProps {
  readonly stateMachine: IStateMachine;
  /** Pipelines with a `schedule` get one; the others run only when started by hand. */
  readonly pipelines: readonly Pipeline[];
  /**
   * Attempts EventBridge Scheduler makes when StartExecution fails (throttling, outage).
   * @default 10
   */
  readonly retryAttempts?: number;
  /**
   * How late a scheduled start may still happen; a start later than this is dropped
   * (the freshness alarm then pages).
   * @default Duration.hours(1)
   */
  readonly maxEventAge?: Duration;
}

/**
 * EventBridge Scheduler schedules (cron in the pipeline's time zone, unlike
 * EventBridge rules) starting the state machine with `{"pipeline": "<name>"}`.
 */
export class PipelineSchedules extends Construct {
  /** Keyed by pipeline name. */
  public readonly schedules: Record<string, Schedule>;

  constructor(scope: Construct, id: string, props: PipelineSchedulesProps) {
    super(scope, id);
    const schedules: Record<string, Schedule> = {};
    for (const pipeline of props.pipelines) {
      if (!pipeline.schedule) continue;
      schedules[pipeline.name] = new Schedule(this, pipeline.name, {
        description: `atomic-publish: run pipeline ${pipeline.name}`,
        schedule: ScheduleExpression.expression(pipeline.schedule.expression, TimeZone.of(pipeline.schedule.timezone)),
        target: new StepFunctionsStartExecution(props.stateMachine, {
          input: ScheduleTargetInput.fromObject({ pipeline: pipeline.name }),
          retryAttempts: props.retryAttempts ?? 10,
          maxEventAge: props.maxEventAge ?? Duration.hours(1),
        }),
        // Runs start on the minute the pipeline owner wrote down.
        timeWindow: TimeWindow.off(),
      });
    }
    this.schedules = schedules;
  }
}
