import { ArnFormat, CfnResource, Duration, Fn, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { EventBus, type IEventBus, Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Policy, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import {
  Choice,
  Condition,
  DefinitionBody,
  DistributedMap,
  Fail,
  type IChainable,
  JitterType,
  JsonPath,
  LogLevel,
  Map as MapState,
  Pass,
  Result,
  StateMachine,
  StateMachineType,
  Succeed,
  TaskInput,
  Wait,
  WaitTime,
} from 'aws-cdk-lib/aws-stepfunctions';
import { LambdaInvoke, SnsPublish } from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { EXECUTION_EVENT_SOURCE, EXECUTION_STATUS_CHANGE, STOPPED_STATUSES } from '../domain/cancel-orphans/cancel-orphans.ts';
import { LAMBDA_SERVICE_ERROR_NAMES, LoadStillRunningError, TRANSIENT_ERROR_NAMES } from '../domain/errors.ts';
import { DEFAULT_BREAKER, DEFAULT_PAUSE_PROBE_INTERVAL_MS, neighbourEnvironment } from '../domain/neighbour/neighbour.ts';
import { PUBLICATION_EVENT_SOURCE, PublicationEventError } from '../domain/publication-events/publication-event.ts';
import { type PublishWaits, publishWaitsEnvironment } from '../domain/publish/waits.ts';
import { warehouseEnvironment } from '../domain/warehouse-target.ts';
import { PublicationEventEnv } from '../functions/emit-metrics/env.ts';
import { DEFAULT_LEASE_WAIT_SECONDS, PlanEnv } from '../functions/plan/env.ts';
import { StepHandler } from './step-handler.ts';
import { grantWarehouseAccess, type WarehouseTarget } from './warehouse-target.ts';
import { CHUNK_LOAD_STATES, FAILED_ERROR, LAMBDA_STATE_NAMES, type LambdaStateName } from './workflow-steps.ts';

/**
 * The pause before LoadChunk looks at a load that outlasted its invocation
 * again. Short: the invocation itself waited up to its time-out.
 */
export const LOAD_RECHECK_SECONDS = 5;

/**
 * The pause before Plan asks again for a lease another running execution
 * holds (a run of another batch waits for it, up to `leaseWait`).
 */
export const LEASE_RECHECK_SECONDS = 60;

/** The error LoadChunk ends with while its load still runs (caught: the iteration waits and comes back). */
const LOAD_STILL_RUNNING_ERROR = new LoadStillRunningError('').name;

export interface PublishWorkflowProps {
  /** Where the handlers send SQL; `secret` resolved (no `secretArn`). */
  readonly warehouse: WarehouseTarget;
  /** On-call topic the Notify state publishes failures to. */
  readonly topic: ITopic;
  /**
   * Name of the step handlers' shared IAM role. Fixed, so that the database
   * user the Data API maps the role to (`IAMR:<name>` on Serverless) survives
   * a replacement of the role; validated by validateHandlerRoleName.
   */
  readonly handlerRoleName: string;
  /**
   * Longest an execution may run before Step Functions stops it.
   * @default Duration.hours(12)
   */
  readonly executionTimeout?: Duration;
  /**
   * How long a run of a batch waits, from its start, for the pipeline's
   * lease held by another running execution of another batch, before it
   * fails with PipelineBusyError and pages (docs/decisions/leases-of-ended-executions.md).
   * @default Duration.minutes(30)
   */
  readonly leaseWait?: Duration;
  /**
   * Retention of the execution log and the functions' logs.
   * @default RetentionDays.THREE_MONTHS
   */
  readonly logRetention?: RetentionDays;
  /**
   * Publish's waits: for its locks (per swap attempt) and for older
   * snapshots to end (domain/publish/waits.ts).
   * @default DEFAULT_PUBLISH_WAITS (5 s and 60 s)
   */
  readonly publishWaits?: Partial<PublishWaits>;
  /**
   * LoadChunk pauses while the warehouse's queues hold this many queries (domain/neighbour/neighbour.ts).
   * @default - no pause probe
   */
  readonly pauseProbe?: PauseProbeProps;
  /**
   * The warehouse's circuit breaker (domain/neighbour/neighbour.ts); `false` turns it off.
   * @default - opens after 5 consecutive transient failures, probes after 15 minutes (DEFAULT_BREAKER)
   */
  readonly circuitBreaker?: CircuitBreakerProps | false;
  /**
   * The bus EmitMetrics puts each publication's event on (`Publication
   * Published` / `Publication Rolled Back`, source `atomic-publish`).
   * @default - the account's default event bus
   */
  readonly publicationEventBus?: IEventBus;
}

/** The pause probe LoadChunk runs before each load. */
export interface PauseProbeProps {
  /** Pause while at least this many queries wait in the warehouse's queues (SYS_QUERY_HISTORY status 'queued'): a positive whole number. */
  readonly whenQueued: number;
  /** Between two looks while paused. @default Duration.seconds(10) */
  readonly interval?: Duration;
}

/** The warehouse's circuit breaker. */
export interface CircuitBreakerProps {
  /** Consecutive transient failures across executions that open it: a positive whole number. @default 5 */
  readonly failures?: number;
  /** How long it stays open before one execution runs as the half-open probe (whole seconds). @default Duration.minutes(15) */
  readonly coolDown?: Duration;
}

/** The handlers' environment for the pause probe and the breaker; a bad value throws, naming the prop. */
export function neighbourProps(pause: PauseProbeProps | undefined, breaker: CircuitBreakerProps | false | undefined): Record<string, string> {
  // Durations become numbers here; neighbourEnvironment checks every value, naming the prop.
  return neighbourEnvironment(
    pause === undefined
      ? undefined
      : {
          whenQueued: pause.whenQueued,
          intervalMs: pause.interval === undefined ? DEFAULT_PAUSE_PROBE_INTERVAL_MS : pause.interval.toMilliseconds({ integral: false }),
        },
    breaker === false
      ? undefined
      : {
          failures: breaker?.failures ?? DEFAULT_BREAKER.failures,
          coolDownSeconds: breaker?.coolDown === undefined ? DEFAULT_BREAKER.coolDownSeconds : breaker.coolDown.toSeconds({ integral: false }),
        },
  );
}

/**
 * Publication events: PutEvents on that one bus, and only as source
 * atomic-publish (the events:source condition key of PutEvents). The
 * handlers' role and the freshness monitor's (redelivering) hold it.
 * https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-conditions.html
 */
export function putPublicationEvents(bus: IEventBus): PolicyStatement {
  return new PolicyStatement({
    sid: 'PutPublicationEvents',
    actions: ['events:PutEvents'],
    resources: [bus.eventBusArn],
    conditions: { StringEquals: { 'events:source': PUBLICATION_EVENT_SOURCE } },
  });
}

/**
 * EventBridge refused a publication event (throttled, an internal failure):
 * EmitMetrics is run again and sends the same event, with the same id
 * (at least once; consumers dedupe on `detail.eventId`). Waits of 1, 2, 4,
 * 8, 16 s, jittered.
 */
function retryPublicationEvent(emitMetrics: LambdaInvoke): void {
  emitMetrics.addRetry({
    errors: [new PublicationEventError('').name],
    interval: Duration.seconds(1),
    maxAttempts: 5,
    backoffRate: 2,
    jitterStrategy: JitterType.FULL,
  });
}

/** Subject of the page sent when RecordFailure itself failed (plain ASCII, under SNS's 100 characters). */
export const FALLBACK_ALERT_SUBJECT = 'atomic-publish: a run failed (details unavailable)';

/**
 * The one Standard state machine that runs every pipeline:
 * Plan -> LoadChunks (Map) -> Reconcile -> CheckOnly -> Publish -> EmitMetrics -> Cleanup,
 * any failure -> RecordFailure (failing: DescribeFailure) -> Notify -> Failed; the check, busy, superseded,
 * rollback, window and group paths branch from it (docs/how-it-works.md#the-state-machine).
 * State names, paths and payloads are a contract with the handlers and the local runner.
 */
export class PublishWorkflow extends Construct {
  public readonly stateMachine: StateMachine;
  /** The step handlers keyed by the Task state that invokes them. */
  public readonly functions: Record<LambdaStateName, StepHandler>;
  /**
   * The one execution role of every step handler. On Redshift Serverless (and
   * a cluster without a secret) the Data API maps an IAM role to its own
   * database user (`IAMR:<role>`), so one role keeps the tables Plan creates
   * writable, renamable (ownership) and droppable by the later steps.
   */
  public readonly role: Role;
  /** The execution log (level ALL, with execution data). */
  public readonly logGroup: LogGroup;
  /** Cancels the warehouse statements of an execution that was aborted or timed out (no Catch runs then). */
  public readonly cancelOrphans: StepHandler;
  /** Sends this state machine's ABORTED and TIMED_OUT status changes to `cancelOrphans`. */
  public readonly stoppedExecutionRule: Rule;
  /** Where the publication events go. */
  public readonly publicationEventBus: IEventBus;

  constructor(scope: Construct, id: string, props: PublishWorkflowProps) {
    super(scope, id);
    const logRetention = props.logRetention ?? RetentionDays.THREE_MONTHS;
    const environment = { ...warehouseEnvironment(props.warehouse), ...neighbourProps(props.pauseProbe, props.circuitBreaker) };

    // Logging: each StepHandler grants its own log group to this role (no
    // managed policy, whose logs permissions cover every log group).
    this.role = new Role(this, 'HandlerRole', {
      roleName: props.handlerRoleName,
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: 'atomic-publish step handlers: one role, so every step is the same database user',
    });
    grantWarehouseAccess(this.role, props.warehouse);
    this.publicationEventBus = props.publicationEventBus ?? EventBus.fromEventBusName(this, 'DefaultEventBus', 'default');
    this.role.addToPrincipalPolicy(putPublicationEvents(this.publicationEventBus));
    const eventEnvironment = { [PublicationEventEnv.EVENT_BUS]: this.publicationEventBus.eventBusName };
    const functions = {} as Record<LambdaStateName, StepHandler>;
    for (const state of LAMBDA_STATE_NAMES) {
      const own =
        state === 'Publish' || state === 'Rollback' || state === 'PublishGroup'
          ? { ...environment, ...publishWaitsEnvironment(props.publishWaits) }
          : state === 'EmitMetrics'
            ? { ...environment, ...eventEnvironment }
            : state === 'Plan'
              ? { ...environment, [PlanEnv.LEASE_WAIT_SECONDS]: String((props.leaseWait ?? Duration.seconds(DEFAULT_LEASE_WAIT_SECONDS)).toSeconds()) }
              : environment;
      functions[state] = new StepHandler(this, `${state}Function`, { state, environment: own, logRetention, role: this.role });
    }
    this.functions = functions;
    this.cancelOrphans = new StepHandler(this, 'CancelOrphansFunction', { state: 'CancelOrphans', environment, logRetention, role: this.role });

    // `step`: the handler a state invokes when the state is not named after it (a group member's LoadChunk, Reconcile...).
    const task = (state: string, options: { payload?: TaskInput; resultPath?: string; outputPath?: string }, step = state as LambdaStateName) => {
      const invoke = new LambdaInvoke(this, state, {
        lambdaFunction: functions[step],
        // Resource = function ARN and the handler gets the raw state input (the local runner relies on it).
        payloadResponseOnly: true,
        // Our retriers below are the only ones, so attempts are counted once.
        retryOnServiceExceptions: false,
        ...options,
      });
      // Waits of 2, 4, ..., 64, 120, 120 s: at most about 6 minutes in all (full
      // jitter: half that on average), enough for a Serverless workgroup to
      // resume or a short maintenance window.
      invoke.addRetry({
        errors: [...TRANSIENT_ERROR_NAMES],
        interval: Duration.seconds(2),
        maxAttempts: 8,
        backoffRate: 2,
        maxDelay: Duration.seconds(120),
        jitterStrategy: JitterType.FULL,
      });
      invoke.addRetry({
        errors: [...LAMBDA_SERVICE_ERROR_NAMES],
        interval: Duration.seconds(1),
        maxAttempts: 3,
        backoffRate: 2,
        jitterStrategy: JitterType.FULL,
      });
      return invoke;
    };
    // Every step gets the execution's id: its log lines carry it (functions/commons/run-keys.ts);
    // Publish and Cleanup also release the pipeline's lease with it, as they may end the execution.
    const batchAndExecution = TaskInput.fromObject({ batch: JsonPath.objectAt('$.plan.batch'), executionId: JsonPath.stringAt('$$.Execution.Id') });

    // Failure path: mark the batch failed, page, end the execution as failed.
    const recordFailure = task('RecordFailure', {
      payload: TaskInput.fromObject({
        state: JsonPath.entirePayload,
        input: JsonPath.objectAt('$$.Execution.Input'),
        executionId: JsonPath.stringAt('$$.Execution.Id'),
        executionStartedAt: JsonPath.stringAt('$$.Execution.StartTime'),
      }),
      resultPath: '$.failure',
    });
    const notify = new SnsPublish(this, 'Notify', {
      topic: props.topic,
      subject: JsonPath.stringAt('$.failure.subject'),
      message: TaskInput.fromJsonPathAt('$.failure.message'),
      resultPath: JsonPath.DISCARD,
    });
    // A page lost to an SNS hiccup would leave only the generic ExecutionsFailed alarm.
    notify.addRetry({
      errors: ['States.ALL'],
      interval: Duration.seconds(2),
      maxAttempts: 3,
      backoffRate: 2,
      jitterStrategy: JitterType.FULL,
    });
    const failed = new Fail(this, 'Failed', {
      error: FAILED_ERROR,
      cause: 'See the on-call alert and the manifest (atomic_publish.batches) for details',
    });
    recordFailure.next(notify).next(failed);
    // If RecordFailure itself fails (times out, cannot reach the warehouse),
    // page anyway with what the execution still knows.
    const describeFailure = new Pass(this, 'DescribeFailure', {
      parameters: {
        subject: FALLBACK_ALERT_SUBJECT,
        message: JsonPath.format(
          'atomic-publish: a run failed, and recording the failure in the manifest failed too ({}). Error: {} Execution: {}. ' +
            'See atomic_publish.batches, atomic_publish.batch_attempts and the execution history; ' +
            'the live table may already be published if the run failed after Publish. ' +
            'Next: read the batch status there; unless it is PUBLISHED, start an execution with the same input once the manifest can be written: it resumes the batch.',
          JsonPath.stringAt('$.recordFailureError.Error'),
          JsonPath.jsonToString(JsonPath.objectAt('$.error')),
          JsonPath.stringAt('$$.Execution.Id'),
        ),
      },
      resultPath: '$.failure',
    });
    recordFailure.addCatch(describeFailure, { errors: ['States.ALL'], resultPath: '$.recordFailureError' });
    describeFailure.next(notify);
    const catchAll = { errors: ['States.ALL'], resultPath: '$.error' };

    // The state starts as an empty object whatever the input is (a string,
    // an array, null, 0, ""), so every later result and the Catch's $.error
    // have an object to land in. The input itself is read from the context
    // object by the two steps that need it and never rides in the state:
    // a large one would push later payloads over Step Functions' 256 KB,
    // and States.DataLimitExceeded is terminal (no Catch takes it).
    const executionTimeout = props.executionTimeout ?? Duration.hours(12);
    const input = new Pass(this, 'Input', { result: Result.fromObject({}) });
    const plan = task('Plan', {
      payload: TaskInput.fromObject({
        input: JsonPath.objectAt('$$.Execution.Input'),
        startedAt: JsonPath.stringAt('$$.Execution.StartTime'),
        executionId: JsonPath.stringAt('$$.Execution.Id'),
        // The pipeline's lease lasts until this timeout would end the execution.
        leaseSeconds: executionTimeout.toSeconds(),
      }),
      resultPath: '$.plan',
    });
    plan.addCatch(recordFailure, catchAll);

    const loadChunk = this.chunkLoad(task, '');
    const loadChunks = new MapState(this, 'LoadChunks', {
      itemsPath: '$.plan.chunks',
      maxConcurrencyPath: '$.plan.maxConcurrency',
      itemSelector: {
        batch: JsonPath.objectAt('$.plan.batch'),
        chunk: JsonPath.objectAt('$$.Map.Item.Value'),
        executionId: JsonPath.stringAt('$$.Execution.Id'),
      },
      resultPath: JsonPath.DISCARD,
    });
    loadChunks.itemProcessor(loadChunk);
    loadChunks.addCatch(recordFailure, catchAll);
    const loadWindows = this.windowedLoad(task);
    loadWindows.addCatch(recordFailure, catchAll);

    const reconcile = task('Reconcile', { payload: batchAndExecution, resultPath: '$.reconcile' });
    const publish = task('Publish', { payload: batchAndExecution, resultPath: '$.publish' });
    const emitMetrics = task('EmitMetrics', {
      payload: TaskInput.fromObject({
        batch: JsonPath.objectAt('$.plan.batch'),
        publish: JsonPath.objectAt('$.publish'),
        executionStartedAt: JsonPath.stringAt('$$.Execution.StartTime'),
        executionId: JsonPath.stringAt('$$.Execution.Id'),
      }),
      resultPath: '$.metrics',
    });
    retryPublicationEvent(emitMetrics);
    const cleanup = task('Cleanup', { payload: batchAndExecution, resultPath: '$.cleanup' });
    // A rollback swaps a retained version back in instead of loading, then
    // emits the metrics of a publish and cleans up as a publish does.
    const rollback = task('Rollback', {
      payload: TaskInput.fromObject({
        batch: JsonPath.objectAt('$.plan.batch'),
        rollback: JsonPath.objectAt('$.plan.rollback'),
        executionId: JsonPath.stringAt('$$.Execution.Id'),
      }),
      resultPath: '$.publish',
    });
    // A check (input `"check": true`, Plan's `plan.batch.check`) ends after Reconcile, its verdict in
    // `$.reconcile` (a failed gate is the answer, not a failure): CheckCleanup drops its staging,
    // records the verdict and releases the lease; nothing publishes. CheckOnly tests the flag with
    // IsPresent, so a plan without it (every other batch) takes the Default, Publish
    // ("Choice workflow state", https://docs.aws.amazon.com/step-functions/latest/dg/state-choice.html).
    const checkCleanup = task('CheckCleanup', { payload: batchAndExecution, resultPath: '$.cleanup' }, 'Cleanup');
    for (const step of [reconcile, publish, rollback, emitMetrics, cleanup, checkCleanup]) step.addCatch(recordFailure, catchAll);
    rollback.next(emitMetrics);

    emitMetrics.next(cleanup).next(new Succeed(this, 'Published'));
    // Newest data wins: a batch older than what is live ends here, recorded SUPERSEDED, without a page.
    const newerDataLive = new Choice(this, 'NewerDataLive')
      .when(Condition.booleanEquals('$.publish.superseded', true), new Succeed(this, 'Superseded', { comment: 'the pipeline already publishes newer data' }))
      .otherwise(emitMetrics);
    const checkOnly = new Choice(this, 'CheckOnly')
      .when(
        Condition.isPresent('$.plan.batch.check'),
        checkCleanup.next(new Succeed(this, 'Checked', { comment: 'a check: the gate ran; nothing was published' })),
      )
      .otherwise(publish.next(newerDataLive));
    loadChunks.next(reconcile).next(checkOnly);
    loadWindows.next(reconcile);
    const groupMembers = this.publishGroupPath(task, recordFailure, catchAll);

    // One run per pipeline. Another running execution holding the lease for
    // the same batch ends this one at once (as it ends a rollback), having
    // written nothing, without a page; one of another batch makes this one
    // wait and ask again (Plan fails with PipelineBusyError, paging, once
    // the wait is spent). The
    // Pass keeps only who holds the lease, so a failure after it has no
    // batch of this run to record. docs/decisions/leases-of-ended-executions.md
    const leaseHeld = new Pass(this, 'LeaseHeld', {
      parameters: { 'lease.$': '$.plan.skipped' },
      comment: 'another execution of another batch holds the lease',
    });
    leaseHeld.next(new Wait(this, 'LeaseWait', { time: WaitTime.duration(Duration.seconds(LEASE_RECHECK_SECONDS)) })).next(plan);
    const alreadyPublished = new Choice(this, 'AlreadyPublished')
      .when(Condition.booleanEquals('$.plan.alreadyPublished', true), new Succeed(this, 'NothingToPublish'))
      .when(
        Condition.and(
          Condition.booleanEquals('$.plan.busy', true),
          Condition.isPresent('$.plan.skipped.wait'),
          Condition.booleanEquals('$.plan.skipped.wait', true),
        ),
        leaseHeld,
      )
      .when(
        Condition.booleanEquals('$.plan.busy', true),
        new Succeed(this, 'PipelineBusy', { comment: 'another execution runs this very batch, or a rollback found the pipeline busy' }),
      )
      .when(Condition.isPresent('$.plan.rollback'), rollback)
      .when(Condition.isPresent('$.plan.group'), groupMembers)
      .when(Condition.isPresent('$.plan.windows'), loadWindows)
      .otherwise(loadChunks);

    // The /aws/vendedlogs/ prefix keeps the CloudWatch Logs resource policy small.
    // The group is retained when the stack is deleted, so its name ends with the
    // stack's own id (a UUID per stack creation): a deploy after `cdk destroy`
    // creates a new group instead of colliding with the retained one.
    const stack = Stack.of(this);
    const stackUuid = Fn.select(2, Fn.split('/', stack.stackId));
    this.logGroup = new LogGroup(this, 'ExecutionLogs', {
      logGroupName: `/aws/vendedlogs/states/${stack.stackName}-${id}-${stackUuid}`,
      retention: logRetention,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.stateMachine = new StateMachine(this, 'StateMachine', {
      comment: 'atomic-publish: plan, load staging in chunks, reconcile, publish by swap, emit metrics, clean up',
      stateMachineType: StateMachineType.STANDARD,
      definitionBody: DefinitionBody.fromChainable(input.next(plan).next(alreadyPublished)),
      timeout: executionTimeout,
      tracingEnabled: true,
      logs: { destination: this.logGroup, level: LogLevel.ALL, includeExecutionData: true },
    });
    // An aborted or timed-out execution runs no Catch: its statements are
    // cancelled from the status-change event Step Functions sends to the
    // default bus. Lambda invokes the target asynchronously; EventBridge
    // retries a failed delivery.
    // https://docs.aws.amazon.com/step-functions/latest/dg/eventbridge-integration.html
    this.stoppedExecutionRule = new Rule(this, 'StoppedExecutionRule', {
      description: 'atomic-publish: cancel the warehouse statements of an aborted or timed-out execution',
      eventPattern: {
        source: [EXECUTION_EVENT_SOURCE],
        detailType: [EXECUTION_STATUS_CHANGE],
        detail: { status: [...STOPPED_STATUSES], stateMachineArn: [this.stateMachine.stateMachineArn] },
      },
      targets: [new LambdaFunction(this.cancelOrphans, { retryAttempts: 4, maxEventAge: Duration.hours(6) })],
    });
    Validations.of(this.stateMachine.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        "CDK's grants for X-Ray tracing (xray:PutTraceSegments, PutTelemetryRecords, GetSamplingRules, GetSamplingTargets) and for " +
        'execution logging (logs:CreateLogDelivery and the other log-delivery actions) name Resource "*": those actions take no ' +
        'resource-level permissions; Step Functions documents Resource "*" for them ' +
        '("Logging using CloudWatch Logs", https://docs.aws.amazon.com/step-functions/latest/dg/cw-logs.html).',
    });
    // Plan asks whether the execution holding a lease still runs: DescribeExecution on this
    // state machine's executions. A Policy of its own, not the role's default one, which the
    // functions depend on and the state machine depends on the functions.
    const executions = `${Fn.select(6, Fn.split(':', this.stateMachine.stateMachineArn))}:*`;
    const leaseHolders = new Policy(this, 'LeaseHolderLookup', {
      roles: [this.role],
      statements: [
        new PolicyStatement({
          actions: ['states:DescribeExecution'],
          resources: [stack.formatArn({ service: 'states', resource: 'execution', resourceName: executions, arnFormat: ArnFormat.COLON_RESOURCE_NAME })],
        }),
      ],
    });
    {
      const logicalId = stack.resolve(stack.getLogicalId(this.stateMachine.node.defaultChild as CfnResource)) as string;
      const name = JSON.stringify({ 'Fn::Select': [6, { 'Fn::Split': [':', { Ref: logicalId }] }] });
      Validations.of(leaseHolders).acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:${name}:*]`,
        reason:
          "Plan reads the status of the execution holding a pipeline lease (DescribeExecution), whose name is the run's: the resource is " +
          'this state machine\'s executions, no other state machine\'s ("Actions, resources, and condition keys for AWS Step Functions", ' +
          'https://docs.aws.amazon.com/service-authorization/latest/reference/list_awsstepfunctions.html).',
      });
    }
    // LoadWindows' grants (CDK's DistributedMapPolicy): DescribeExecution and
    // StopExecution on this state machine's own executions and on the child
    // executions of its Map Runs, whose names Step Functions chooses.
    const policy = this.stateMachine.node.tryFindChild('DistributedMapPolicy');
    if (policy !== undefined) {
      const logicalId = stack.resolve(stack.getLogicalId(this.stateMachine.node.defaultChild as CfnResource)) as string;
      const name = JSON.stringify({ 'Fn::Select': [6, { 'Fn::Split': [':', { Ref: logicalId }] }] });
      for (const executions of [`${name}:*`, `${name}/LoadWindows:*`]) {
        Validations.of(policy).acknowledge({
          id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:${executions}]`,
          reason:
            'A Distributed Map needs states:DescribeExecution and states:StopExecution on the executions it starts, whose names Step Functions ' +
            "chooses: the resource is this state machine's executions and its Map Run's child executions, no other state machine's " +
            '("IAM policies for using Distributed Map states", https://docs.aws.amazon.com/step-functions/latest/dg/iam-policies-eg-dist-map.html).',
        });
      }
    }
  }
  /**
   * One chunk's load, as a Map iteration runs it: LoadChunk, whose output is the
   * chunk's index. A load that outlasts the invocation ends it with
   * LoadStillRunningError, caught: a short Wait, then LoadChunk again, which
   * re-attaches by statement name; so a load of any length is waited for, never
   * resubmitted, bounded only by the execution's time-out. Why, and its cost in
   * transitions and events: docs/decisions/deployment.md ("Loads longer than a Lambda invocation")
   */
  private chunkLoad(
    task: (state: string, options: { payload?: TaskInput; resultPath?: string; outputPath?: string }, step?: LambdaStateName) => LambdaInvoke,
    prefix: '' | 'Member' | 'Window',
  ): IChainable {
    const names = CHUNK_LOAD_STATES;
    const loadChunk = task(`${prefix}${names.load}`, { resultPath: JsonPath.DISCARD, outputPath: '$.chunk.index' }, 'LoadChunk');
    const again = new Wait(this, `${prefix}${names.wait}`, { time: WaitTime.duration(Duration.seconds(LOAD_RECHECK_SECONDS)) });
    loadChunk.addCatch(again, { errors: [LOAD_STILL_RUNNING_ERROR], resultPath: '$.stillRunning' });
    again.next(loadChunk);
    return loadChunk;
  }

  /**
   * A batch of more chunks than one window holds (Plan's `plan.windows`): a
   * Distributed Map runs each window as a child execution, one at a time:
   * PlanWindow records the window's chunks and returns those still to load, an
   * inline Map loads them as LoadChunks does, and the child's output is `{}`. The
   * first child to fail fails the Map (States.ExceedToleratedFailureThreshold),
   * and the Catch pages. Why: docs/decisions/batches-and-identity.md
   */
  private windowedLoad(
    task: (state: string, options: { payload?: TaskInput; resultPath?: string; outputPath?: string }, step?: LambdaStateName) => LambdaInvoke,
  ): DistributedMap {
    const loadWindows = new DistributedMap(this, 'LoadWindows', {
      itemsPath: '$.plan.windows',
      maxConcurrency: 1,
      itemSelector: {
        batch: JsonPath.objectAt('$.plan.batch'),
        window: JsonPath.objectAt('$$.Map.Item.Value'),
        maxConcurrency: JsonPath.numberAt('$.plan.maxConcurrency'),
        // The parent's: a window's child execution logs under the execution that was started.
        executionId: JsonPath.stringAt('$$.Execution.Id'),
      },
      mapExecutionType: StateMachineType.STANDARD,
      label: 'LoadWindows',
      resultPath: JsonPath.DISCARD,
    });
    const planWindow = task(
      'PlanWindow',
      {
        payload: TaskInput.fromObject({
          batch: JsonPath.objectAt('$.batch'),
          window: JsonPath.objectAt('$.window'),
          executionId: JsonPath.stringAt('$.executionId'),
        }),
        resultPath: '$.planned',
      },
      'Plan',
    );
    const windowChunks = new MapState(this, 'WindowLoadChunks', {
      itemsPath: '$.planned.chunks',
      maxConcurrencyPath: '$.maxConcurrency',
      itemSelector: { batch: JsonPath.objectAt('$.batch'), chunk: JsonPath.objectAt('$$.Map.Item.Value'), executionId: JsonPath.stringAt('$.executionId') },
      resultPath: JsonPath.DISCARD,
    });
    windowChunks.itemProcessor(this.chunkLoad(task, 'Window'));
    loadWindows.itemProcessor(planWindow.next(windowChunks).next(new Pass(this, 'WindowLoaded', { result: Result.fromObject({}) })));
    return loadWindows;
  }

  /**
   * A publish group (input `{"group": ...}`, Plan's `plan.members`): each member
   * loaded and reconciled in turn (GroupMembers), then ONE PublishGroup swapping
   * every member in one transaction, then each member's metrics and cleanup.
   * State names are unique in a state machine, so the members' steps are states of
   * their own invoking the same handlers. Why: docs/decisions/publish-groups.md
   */
  private publishGroupPath(
    task: (state: string, options: { payload?: TaskInput; resultPath?: string; outputPath?: string }, step?: LambdaStateName) => LambdaInvoke,
    recordFailure: LambdaInvoke,
    catchAll: { errors: string[]; resultPath: string },
  ): MapState {
    const memberBatch = TaskInput.fromObject({ batch: JsonPath.objectAt('$.plan.batch'), executionId: JsonPath.stringAt('$$.Execution.Id') });
    const loadChunk = this.chunkLoad(task, 'Member');
    const loadChunks = new MapState(this, 'MemberLoadChunks', {
      itemsPath: '$.plan.chunks',
      maxConcurrencyPath: '$.plan.maxConcurrency',
      itemSelector: {
        batch: JsonPath.objectAt('$.plan.batch'),
        chunk: JsonPath.objectAt('$$.Map.Item.Value'),
        executionId: JsonPath.stringAt('$$.Execution.Id'),
      },
      resultPath: JsonPath.DISCARD,
    });
    loadChunks.itemProcessor(loadChunk);
    const reconcile = task('MemberReconcile', { payload: memberBatch, resultPath: JsonPath.DISCARD }, 'Reconcile');
    // An iteration's state is `{"plan": <the member's plan>}`, as a pipeline run's is.
    const groupMembers = new MapState(this, 'GroupMembers', {
      itemsPath: '$.plan.members',
      maxConcurrency: 1,
      itemSelector: { plan: JsonPath.objectAt('$$.Map.Item.Value') },
      resultPath: JsonPath.DISCARD,
    });
    groupMembers.itemProcessor(loadChunks.next(reconcile));
    groupMembers.addCatch(recordFailure, catchAll);

    const publishGroup = task('PublishGroup', {
      payload: TaskInput.fromObject({
        group: JsonPath.stringAt('$.plan.group.name'),
        members: JsonPath.objectAt('$.plan.members'),
        executionId: JsonPath.stringAt('$$.Execution.Id'),
      }),
      resultPath: '$.publish',
    });
    publishGroup.addCatch(recordFailure, catchAll);
    const emitMetrics = task(
      'MemberEmitMetrics',
      {
        payload: TaskInput.fromObject({
          batch: JsonPath.objectAt('$.batch'),
          publish: JsonPath.objectAt('$.publish'),
          executionStartedAt: JsonPath.stringAt('$.executionStartedAt'),
          executionId: JsonPath.stringAt('$.executionId'),
        }),
        resultPath: JsonPath.DISCARD,
      },
      'EmitMetrics',
    );
    retryPublicationEvent(emitMetrics);
    // Each member's Cleanup releases the execution's leases (all of the
    // group's): the group is published by then.
    const cleanup = task(
      'MemberCleanup',
      { payload: TaskInput.fromObject({ batch: JsonPath.objectAt('$.batch'), executionId: JsonPath.stringAt('$.executionId') }), resultPath: JsonPath.DISCARD },
      'Cleanup',
    );
    const groupCleanup = new MapState(this, 'GroupCleanup', {
      itemsPath: '$.publish.members',
      maxConcurrency: 1,
      itemSelector: {
        batch: JsonPath.objectAt('$$.Map.Item.Value.batch'),
        publish: JsonPath.objectAt('$$.Map.Item.Value.publish'),
        executionStartedAt: JsonPath.stringAt('$$.Execution.StartTime'),
        executionId: JsonPath.stringAt('$$.Execution.Id'),
      },
      resultPath: JsonPath.DISCARD,
    });
    groupCleanup.itemProcessor(emitMetrics.next(cleanup));
    groupCleanup.addCatch(recordFailure, catchAll);
    groupMembers.next(publishGroup).next(groupCleanup).next(new Succeed(this, 'GroupPublished'));
    return groupMembers;
  }
}
