import { Duration, Validations } from 'aws-cdk-lib';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import { Effect, Policy, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Schedule, ScheduleExpression, ScheduleTargetInput, TimeWindow } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { Construct } from 'constructs';
import { LIVE_WATCH_EVENT } from '../domain/live-watch/live-watch.ts';
import { METRICS_NAMESPACE } from '../domain/names.ts';
import { warehouseEnvironment } from '../domain/warehouse-target.ts';
import { PublicationEventEnv } from '../functions/emit-metrics/env.ts';
import { putPublicationEvents } from './publish-workflow.ts';
import { StepHandler } from './step-handler.ts';
import { grantWarehouseAccess, type WarehouseTarget } from './warehouse-target.ts';

/** Every how many minutes the monitor runs when the stack is not told: also the freshness alarm's period. */
export const DEFAULT_FRESHNESS_MONITOR_RATE_MINUTES = 5;

export interface FreshnessMonitorProps {
  /** Where the pipelines publish; `secret` resolved (no `secretArn`). */
  readonly warehouse: WarehouseTarget;
  /**
   * Name of the monitor's IAM role, fixed for the reason the handlers' is
   * (on Serverless without a secret the role is the database user
   * `IAMR:<name>`, which must be granted SELECT on what the monitor reads).
   */
  readonly roleName: string;
  /**
   * How often the monitor runs: whole minutes, 1 to 60. The freshness alarms
   * use it as their period.
   * @default Duration.minutes(5)
   */
  readonly rate?: Duration;
  /** The bus the publication events go to: the monitor redelivers those never sent (functions/commons/event-delivery.ts). */
  readonly publicationEventBus: IEventBus;
  /**
   * How often the live watch runs (the same function, a second schedule):
   * whole minutes, 1 to 1440. Each run scans every watched live table
   * (outOfBand.watch). The live drift alarms use it as their period.
   * @default Duration.minutes(60)
   */
  readonly liveWatchRate?: Duration;
  /** Retention of the monitor's log group. @default RetentionDays.THREE_MONTHS */
  readonly logRetention?: RetentionDays;
}

/** The monitor's rate in whole minutes; a bad value throws, naming the prop. */
export function freshnessMonitorRateMinutes(rate: Duration | undefined): number {
  if (rate === undefined) return DEFAULT_FRESHNESS_MONITOR_RATE_MINUTES;
  const minutes = rate.toMinutes({ integral: false });
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > 60) {
    throw new Error(`freshnessMonitorRate must be a whole number of minutes from 1 to 60 (one alarm period), got ${rate.toHumanString()}`);
  }
  return minutes;
}

/** Every how many minutes the live watch runs when the stack is not told: also the live drift alarm's period. */
export const DEFAULT_LIVE_WATCH_RATE_MINUTES = 60;

/**
 * The live watch's rate in whole minutes; a bad value throws, naming the
 * prop. At most a day: the drift alarm looks at one period, and an alarm's
 * period is a multiple of 60 seconds, its evaluation range at most a day
 * below an hour's period and seven days above
 * (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html).
 */
export function liveWatchRateMinutes(rate: Duration | undefined): number {
  if (rate === undefined) return DEFAULT_LIVE_WATCH_RATE_MINUTES;
  const minutes = rate.toMinutes({ integral: false });
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > 1440) {
    throw new Error(`liveWatchRate must be a whole number of minutes from 1 to 1440 (one alarm period, at most a day), got ${rate.toHumanString()}`);
  }
  return minutes;
}

/**
 * The freshness monitor (functions/freshness-monitor), run by EventBridge
 * Scheduler every few minutes: publish age and data lag per pipeline into
 * PutMetricData, then the publication events a failed run never sent; a slower
 * second schedule runs the live watch (LIVE_WATCH_EVENT). Its own role may write
 * only the project's namespace and put only atomic-publish events on the bus.
 * Why: docs/decisions/freshness-monitor-and-its-alarm.md
 */
export class FreshnessMonitor extends Construct {
  public readonly function: StepHandler;
  public readonly role: Role;
  public readonly schedule: Schedule;
  /** The rate in whole minutes. */
  public readonly rateMinutes: number;
  /** The live watch's schedule: the same function, invoked with LIVE_WATCH_EVENT. */
  public readonly liveWatchSchedule: Schedule;
  /** The live watch's rate in whole minutes. */
  public readonly liveWatchRateMinutes: number;

  constructor(scope: Construct, id: string, props: FreshnessMonitorProps) {
    super(scope, id);
    this.rateMinutes = freshnessMonitorRateMinutes(props.rate);
    this.liveWatchRateMinutes = liveWatchRateMinutes(props.liveWatchRate);
    this.role = new Role(this, 'Role', {
      roleName: props.roleName,
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: 'atomic-publish FreshnessMonitor: reads the warehouse, writes AtomicPublish metrics, puts the publication events never sent',
    });
    grantWarehouseAccess(this.role, props.warehouse);
    // PutMetricData has no resource type; the cloudwatch:namespace condition key limits it to one namespace.
    // https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/iam-cw-condition-keys-namespace.html
    const metrics = new Policy(this, 'PutMetricDataPolicy', {
      statements: [
        new PolicyStatement({
          effect: Effect.ALLOW,
          actions: ['cloudwatch:PutMetricData'],
          resources: ['*'],
          conditions: { StringEquals: { 'cloudwatch:namespace': METRICS_NAMESPACE } },
        }),
      ],
    });
    this.role.attachInlinePolicy(metrics);
    // Redelivered publication events: as the handlers' role, on that one bus, as source atomic-publish only.
    this.role.addToPrincipalPolicy(putPublicationEvents(props.publicationEventBus));
    Validations.of(metrics).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'cloudwatch:PutMetricData has no resource type, so IAM takes only Resource "*"; the condition cloudwatch:namespace = AtomicPublish ' +
        "limits the monitor to writing the project's own metrics (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/iam-cw-condition-keys-namespace.html).",
    });

    this.function = new StepHandler(this, 'Function', {
      state: 'FreshnessMonitor',
      role: this.role,
      environment: { ...warehouseEnvironment(props.warehouse), [PublicationEventEnv.EVENT_BUS]: props.publicationEventBus.eventBusName },
      ...(props.logRetention ? { logRetention: props.logRetention } : {}),
    });
    // A missed run is not worth retrying: the next one is minutes away, and the alarm tolerates one missing period.
    this.function.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(this.rateMinutes) });

    // https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html (rate-based schedules)
    this.schedule = new Schedule(this, 'Schedule', {
      description: `atomic-publish: measure every pipeline's freshness every ${this.rateMinutes} minute(s)`,
      schedule: ScheduleExpression.rate(Duration.minutes(this.rateMinutes)),
      target: new LambdaInvoke(this.function, { retryAttempts: 0, maxEventAge: Duration.minutes(this.rateMinutes) }),
      timeWindow: TimeWindow.off(),
    });

    // The live watch: each watched pipeline's live table fingerprinted and compared with its latest
    // publication's record (functions/freshness-monitor/live-watch.ts). Slower: a fingerprint is a full scan.
    this.liveWatchSchedule = new Schedule(this, 'LiveWatchSchedule', {
      description: `atomic-publish: compare every watched live table with its latest publication every ${this.liveWatchRateMinutes} minute(s)`,
      schedule: ScheduleExpression.rate(Duration.minutes(this.liveWatchRateMinutes)),
      target: new LambdaInvoke(this.function, {
        input: ScheduleTargetInput.fromObject(LIVE_WATCH_EVENT),
        retryAttempts: 0,
        maxEventAge: Duration.minutes(this.liveWatchRateMinutes),
      }),
      timeWindow: TimeWindow.off(),
    });
  }
}
