import { ArnFormat, CfnOutput, Duration, Stack, type StackProps, Token } from 'aws-cdk-lib';
import type { Alarm, Dashboard } from 'aws-cdk-lib/aws-cloudwatch';
import type { Rule } from 'aws-cdk-lib/aws-events';
import { PolicyStatement, type Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { LogGroup } from 'aws-cdk-lib/aws-logs';
import type { Schedule } from 'aws-cdk-lib/aws-scheduler';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { SubscriptionProtocol, Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription, UrlSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import type { PublishWaits } from '../domain/publish/waits.ts';
import type { Pipeline } from '../domain/spec.ts';
import { databaseUserFor, defaultHandlerRoleName, monitorRoleNameFor, validateHandlerRoleName, validateWarehouseTarget } from '../domain/warehouse-target.ts';
import { PublishDashboard } from './dashboard.ts';
import { FreshnessMonitor, freshnessMonitorRateMinutes, liveWatchRateMinutes } from './freshness-monitor.ts';
import { PipelineSchedules } from './pipeline-schedules.ts';
import { PublishMonitoring } from './publish-monitoring.ts';
import { type CircuitBreakerProps, neighbourProps, type PauseProbeProps, PublishWorkflow } from './publish-workflow.ts';
import type { StepHandler } from './step-handler.ts';
import type { WarehouseTarget } from './warehouse-target.ts';
import type { StepName } from './workflow-steps.ts';

export interface AtomicPublishStackProps extends StackProps {
  /** The Redshift cluster or serverless workgroup the pipelines publish into. */
  readonly warehouse: WarehouseTarget;
  /** Validated pipeline specs (see pipelines/index.ts): alarms and schedules per pipeline. */
  readonly pipelines: readonly Pipeline[];
  /**
   * Name of the IAM role every step handler runs as: fixed, since on Serverless
   * without a secret it names the database user (`IAMR:<role name>`) that owns the
   * tables. Lower case (validateHandlerRoleName); unique in the account.
   * Why: docs/decisions/deployment.md
   * @default - `<stack name in lower case>-handlers`, e.g. `atomicpublish-handlers`
   */
  readonly handlerRoleName?: string;
  /**
   * Address subscribed to the on-call topic.
   * @default - no subscription: subscribe a pager or chat endpoint to the topic yourself
   */
  readonly alarmEmail?: string;
  /**
   * More subscribers of the on-call topic: every alarm's ALARM and OK, and every failure alert.
   * @default - none beyond alarmEmail
   */
  readonly subscriptions?: OnCallSubscriptions;
  /** Publish's waits for its locks and for older snapshots (domain/publish/waits.ts). @default 5 s and 60 s */
  readonly publishWaits?: Partial<PublishWaits>;
  /**
   * Longest an execution may run before Step Functions stops it.
   * @default Duration.hours(12)
   */
  readonly executionTimeout?: Duration;
  /**
   * LoadChunk pauses while the warehouse's queues are full (see PauseProbeProps).
   * @default - no pause probe
   */
  readonly pauseProbe?: PauseProbeProps;
  /**
   * The warehouse's circuit breaker (see CircuitBreakerProps); `false` turns it off.
   * @default - opens after 5 consecutive transient failures, probes after 15 minutes
   */
  readonly circuitBreaker?: CircuitBreakerProps | false;
  /**
   * How often the freshness monitor measures every pipeline (whole minutes,
   * 1 to 60); also the period of the freshness alarms.
   * @default Duration.minutes(5)
   */
  readonly freshnessMonitorRate?: Duration;
  /**
   * How often the live watch compares each watched live table with its
   * latest publication (whole minutes, 1 to 1440); also the period of the
   * live drift alarms.
   * @default Duration.minutes(60)
   */
  readonly liveWatchRate?: Duration;
}

/** Who the on-call topic notifies besides alarmEmail. */
export interface OnCallSubscriptions {
  /** Email addresses (each confirms the subscription from a mail SNS sends). @default - none */
  readonly emails?: readonly string[];
  /** HTTPS endpoints, such as an incident tool's events integration URL (it confirms the subscription itself). @default - none */
  readonly httpsUrls?: readonly string[];
}

/**
 * atomic-publish on AWS: the state machine and its step handlers, the on-call
 * topic, alarms, and a schedule per scheduled pipeline. Environment-agnostic:
 * no lookups, so it synthesizes offline.
 */
export class AtomicPublishStack extends Stack {
  public readonly stateMachine: StateMachine;
  /** The on-call topic: failure alerts from the workflow and every alarm. */
  public readonly topic: Topic;
  /** The step handlers keyed by the Task state that invokes them (and CancelOrphans, run by stoppedExecutionRule). */
  public readonly functions: Record<StepName, StepHandler>;
  /** The EventBridge rule that runs CancelOrphans when an execution is aborted or times out. */
  public readonly stoppedExecutionRule: Rule;
  /** The one execution role of all step handlers (one database user for every step). */
  public readonly handlerRole: Role;
  /** The name of handlerRole, fixed at synth time (see AtomicPublishStackProps.handlerRoleName). */
  public readonly handlerRoleName: string;
  /** Keyed by label (see PublishMonitoring.alarms): the state machine's, each pipeline's, each function's, and `MissedScheduledStarts` (when a pipeline has a schedule). */
  public readonly alarms: Record<string, Alarm>;
  /** The state machine's execution log. */
  public readonly logGroup: LogGroup;
  /** EventBridge Scheduler schedules keyed by pipeline name (pipelines with a `schedule`). */
  public readonly schedules: Record<string, Schedule>;
  /** Starts each scheduled run under a name of its scheduled time; absent when no pipeline has a schedule. */
  public readonly startRun?: StepHandler;
  /** The on-call dashboard: alarm states, then per pipeline publish age against the SLA, rows, durations, failures. */
  public readonly dashboard: Dashboard;
  /** Measures every pipeline's freshness on a schedule and writes it to CloudWatch. */
  public readonly freshnessMonitor: FreshnessMonitor;

  constructor(scope: Construct, id: string, props: AtomicPublishStackProps) {
    validateProps(props);
    super(scope, id, props);

    const { secretArn, ...target } = props.warehouse;
    const warehouse: WarehouseTarget = secretArn ? { ...target, secret: Secret.fromSecretCompleteArn(this, 'WarehouseSecret', secretArn) } : target;
    this.handlerRoleName = props.handlerRoleName ?? defaultHandlerRoleName(this.stackName);
    validateHandlerRoleName(this.handlerRoleName);

    this.topic = new Topic(this, 'OnCallTopic', { displayName: 'atomic-publish on-call', enforceSSL: true });
    // A topic policy replaces SNS's default one, so CloudWatch alarms need an explicit allow.
    this.topic.addToResourcePolicy(
      new PolicyStatement({
        sid: 'AllowCloudWatchAlarmsOfThisAccount',
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [this.topic.topicArn],
        conditions: {
          StringEquals: { 'aws:SourceAccount': this.account },
          ArnLike: {
            'aws:SourceArn': this.formatArn({ service: 'cloudwatch', resource: 'alarm', resourceName: '*', arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
          },
        },
      }),
    );
    for (const email of [...(props.alarmEmail ? [props.alarmEmail] : []), ...(props.subscriptions?.emails ?? [])]) {
      this.topic.addSubscription(new EmailSubscription(email));
    }
    // An incident tool's events integration (PagerDuty's CloudWatch integration URL, for one) takes the alarm's SNS JSON as it comes.
    for (const url of props.subscriptions?.httpsUrls ?? []) this.topic.addSubscription(new UrlSubscription(url, { protocol: SubscriptionProtocol.HTTPS }));

    const workflow = new PublishWorkflow(this, 'Workflow', {
      warehouse,
      topic: this.topic,
      handlerRoleName: this.handlerRoleName,
      ...(props.executionTimeout ? { executionTimeout: props.executionTimeout } : {}),
      ...(props.publishWaits ? { publishWaits: props.publishWaits } : {}),
      ...(props.pauseProbe ? { pauseProbe: props.pauseProbe } : {}),
      ...(props.circuitBreaker !== undefined ? { circuitBreaker: props.circuitBreaker } : {}),
    });
    this.stateMachine = workflow.stateMachine;
    this.functions = { ...workflow.functions, CancelOrphans: workflow.cancelOrphans };
    this.stoppedExecutionRule = workflow.stoppedExecutionRule;
    this.handlerRole = workflow.role;
    this.logGroup = workflow.logGroup;

    this.freshnessMonitor = new FreshnessMonitor(this, 'FreshnessMonitor', {
      warehouse,
      roleName: monitorRoleNameFor(this.handlerRoleName),
      publicationEventBus: workflow.publicationEventBus,
      ...(props.freshnessMonitorRate ? { rate: props.freshnessMonitorRate } : {}),
      ...(props.liveWatchRate ? { liveWatchRate: props.liveWatchRate } : {}),
    });
    const schedules = new PipelineSchedules(this, 'Schedules', { stateMachine: this.stateMachine, pipelines: props.pipelines, topic: this.topic });
    this.schedules = schedules.schedules;
    this.startRun = schedules.startRun;
    const alarms = new PublishMonitoring(this, 'Monitoring', {
      stateMachine: this.stateMachine,
      topic: this.topic,
      pipelines: props.pipelines,
      freshnessPeriod: Duration.minutes(this.freshnessMonitor.rateMinutes),
      liveWatchPeriod: Duration.minutes(this.freshnessMonitor.liveWatchRateMinutes),
      stepHandlers: workflow.functions,
      standaloneFunctions: {
        CancelOrphans: workflow.cancelOrphans,
        FreshnessMonitor: this.freshnessMonitor.function,
        ...(this.startRun ? { StartRun: this.startRun } : {}),
      },
    }).alarms;
    this.alarms = { ...alarms, ...(schedules.deadLetterAlarm ? { MissedScheduledStarts: schedules.deadLetterAlarm } : {}) };
    this.dashboard = new PublishDashboard(this, 'Dashboard', {
      pipelines: props.pipelines,
      alarms: this.alarms,
      freshnessPeriod: Duration.minutes(this.freshnessMonitor.rateMinutes),
    }).dashboard;

    new CfnOutput(this, 'StateMachineArn', { value: this.stateMachine.stateMachineArn, description: 'Start executions here' });
    new CfnOutput(this, 'OnCallTopicArn', { value: this.topic.topicArn, description: 'Subscribe the on-call pager here' });
    const user = databaseUserFor(props.warehouse, this.handlerRoleName, { isUnresolved: (value) => Token.isUnresolved(value) });
    new CfnOutput(this, 'DatabaseUser', {
      value: user.kind === 'secret' ? `the username in ${user.secretArn}` : user.name,
      description: 'The database user the step handlers act as: grant to it and make it the owner of the live tables',
    });
    const monitorUser = databaseUserFor(props.warehouse, monitorRoleNameFor(this.handlerRoleName), { isUnresolved: (value) => Token.isUnresolved(value) });
    new CfnOutput(this, 'MonitorDatabaseUser', {
      value: monitorUser.kind === 'secret' ? `the username in ${monitorUser.secretArn}` : monitorUser.name,
      description:
        'The database user the freshness monitor reads as: grant it SELECT on the live tables, atomic_publish.publications and atomic_publish.pipeline_leases, and UPDATE (event_sent_at) on atomic_publish.publications',
    });
  }
}

function validateProps(props: AtomicPublishStackProps): void {
  if (props === undefined || props === null) throw new Error('AtomicPublishStack: props are required (warehouse, pipelines)');
  try {
    validateWarehouseTarget(props.warehouse, 'warehouse', { isUnresolved: (value) => Token.isUnresolved(value) });
    validateSecretKmsKey(props.warehouse);
    if (props.handlerRoleName !== undefined) validateHandlerRoleName(props.handlerRoleName);
    neighbourProps(props.pauseProbe, props.circuitBreaker);
    freshnessMonitorRateMinutes(props.freshnessMonitorRate);
    liveWatchRateMinutes(props.liveWatchRate);
    validateSubscriptions(props.alarmEmail, props.subscriptions);
  } catch (error) {
    throw new Error(`AtomicPublishStack: ${(error as Error).message}`);
  }
  if (!Array.isArray(props.pipelines)) throw new Error('AtomicPublishStack: pipelines must be a list (see pipelines/index.ts)');
  const seen = new Set<string>();
  for (const pipeline of props.pipelines) {
    if (seen.has(pipeline.name)) throw new Error(`AtomicPublishStack: pipelines: name ${pipeline.name} is used twice`);
    seen.add(pipeline.name);
  }
  if (props.executionTimeout && !props.executionTimeout.isUnresolved() && props.executionTimeout.toSeconds() < 60) {
    throw new Error('AtomicPublishStack: executionTimeout must be at least one minute');
  }
}

const EMAIL = /^[^\s@,]+@[^\s@,]+$/;

/** An address SNS would take, an https:// URL: a wrong one is caught at synth, not by a page that never arrives. */
function validateSubscriptions(alarmEmail: string | undefined, subscriptions: OnCallSubscriptions | undefined): void {
  for (const email of [...(alarmEmail ? [alarmEmail] : []), ...(subscriptions?.emails ?? [])]) {
    if (!Token.isUnresolved(email) && !EMAIL.test(email)) throw new Error(`alarm email ${JSON.stringify(email)} is not an email address`);
  }
  for (const url of subscriptions?.httpsUrls ?? []) {
    if (Token.isUnresolved(url)) throw new Error('subscriptions.httpsUrls must be known at synth (SNS needs the protocol and the URL)');
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      parsed = undefined;
    }
    if (parsed?.protocol !== 'https:')
      throw new Error(`subscriptions.httpsUrls: ${JSON.stringify(url.replace(/\/\/[^/]*@/, '//...@'))} is not an https:// URL`);
  }
}

const KMS_KEY_ARN = /^arn:[\w-]+:kms:[\w-]+:\d{12}:key\/[\w-]+$/;

/** The key must be a key ARN (IAM does not match a key by its alias ARN) and only goes with a secret. */
function validateSecretKmsKey(target: WarehouseTarget): void {
  const arn = target.secretKmsKeyArn;
  if (arn === undefined) return;
  if (!target.secret && !target.secretArn) {
    throw new Error('warehouse.secretKmsKeyArn only applies with a secret (secretArn or warehouse.secret): without one nothing is decrypted');
  }
  if (!Token.isUnresolved(arn) && !KMS_KEY_ARN.test(arn)) {
    throw new Error(
      `warehouse.secretKmsKeyArn must look like arn:aws:kms:<region>:<account>:key/<key id> (a key ARN, not an alias), got ${JSON.stringify(arn)}`,
    );
  }
}
