/**
 * Runs the state machine `cdk synth` produces, on this machine: the
 * definition from the synthesized template (local/template.ts), executed by
 * aws-local-stepfunctions; each Lambda Task runs its handler in a local
 * sandbox (local/lambda-sandbox.ts), the SNS Task publishes to a local
 * outbox (local/sns-outbox.ts), and handlers reach the local Data API
 * through the real SDK client. What runs as on AWS: docs/decisions/local-engine.md
 */
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import type { StateMachineDefinition } from 'aws-local-stepfunctions';
import { EXECUTION_EVENT_SOURCE, EXECUTION_STATUS_CHANGE } from '../domain/cancel-orphans/cancel-orphans.ts';
import { isLiveWatchEvent } from '../domain/live-watch/live-watch.ts';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../domain/names.ts';
import { executionNameProblem } from '../domain/run-name.ts';
import { WarehouseEnv } from '../domain/warehouse-target.ts';
import { StepFunctionsEnv } from '../functions/commons/step-functions.ts';
import { FreshnessMonitorEnv } from '../functions/freshness-monitor/env.ts';
import { StartRunEnv } from '../functions/start-run/env.ts';
import { LOCAL_ACCOUNT, LOCAL_REGION } from '../lib/definition.ts';
import { STATE_DIR } from '../lib/project.ts';
import { stepEntry } from '../lib/workflow-steps.ts';
import { LOCAL_AWS_ENV, localCloudWatchClient, localEventsEnvironment, silenceSdkNodeNotice } from './aws-clients.ts';
import { type ChildExecution, type DistributedMapState, runDistributedMap, withDistributedMapsAsTasks } from './distributed-map.ts';
import { putEmfRecords } from './emf-metrics.ts';
import { type LocalEventBridgeApi, type RecordedEvent, startLocalEventBridgeApi } from './eventbridge-api.ts';
import { ExecutionAlreadyExistsError, InvalidNameError, StartExecutionError } from './execution-errors.ts';
import { ExecutionHistory, HISTORY_LIMIT_ERROR, historyLimitCause } from './history.ts';
import { type InvocationRecord, outcomeOfError, putLambdaMetrics, THROTTLED_ERROR_NAME } from './lambda-metrics.ts';
import { captureLambdaOutput, type MetricRecord } from './lambda-output.ts';
import { checkPayload, type Handler, INVOCATION_SCOPE_ENV, invoke, invokeStore, isStatesError, LambdaFunctionError, loadHandlers } from './lambda-sandbox.ts';
import { type Alert, SnsOutbox } from './sns-outbox.ts';
import { stateMachineRoleArn } from './state-machine.ts';
import { type LocalStepFunctionsApi, startLocalStepFunctionsApi } from './step-functions-api.ts';
import { loadWorkflow, localDefinition, type SynthesizedWorkflow, type Template } from './template.ts';

// aws-local-stepfunctions calls Promise.withResolvers, which Node 20 lacks.
if (typeof (Promise as unknown as { withResolvers?: unknown }).withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value<T>() {
      let resolve!: (value: T | PromiseLike<T>) => void;
      let reject!: (reason?: unknown) => void;
      const promise = new Promise<T>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      return { promise, resolve, reject };
    },
  });
}

/** An execution history event, as aws-local-stepfunctions reports it. */
export interface ExecutionEvent {
  readonly type: string;
  readonly timestamp: number;
  readonly state?: { name: string; type: string; input: unknown; output?: unknown };
  readonly index?: number;
  readonly Error?: string;
  readonly Cause?: unknown;
  readonly retry?: { retrier: Record<string, unknown>; attempt: number };
}

/** What a function run on the execution's status change (an EventBridge rule's target) returned or threw. */
export interface StatusChangeDelivery {
  readonly functionLogicalId: string;
  readonly output?: unknown;
  readonly error?: string;
}

export interface ExecutionResult {
  readonly executionId: string;
  readonly status: 'SUCCEEDED' | 'FAILED' | 'ABORTED' | 'TIMED_OUT';
  readonly output?: Record<string, unknown>;
  readonly error?: string;
  readonly cause?: string;
  readonly events: readonly ExecutionEvent[];
  readonly alerts: readonly Alert[];
  readonly metrics: readonly MetricRecord[];
  /** The Lambda invocations recorded while it ran (its steps', its status-change targets'), as AWS/Lambda counts them. */
  readonly invocations: readonly InvocationRecord[];
  readonly startedAt: string;
  readonly stoppedAt: string;
  /** The rules' targets that ran on an ABORTED or TIMED_OUT status change, as EventBridge would run them. */
  readonly statusChange: readonly StatusChangeDelivery[];
  /** Child workflow executions of its distributed Map states, each with a history of its own (local/distributed-map.ts). */
  readonly childExecutions: readonly ChildExecution[];
  /** Its history's length as Step Functions would count it (local/history.ts); past MAX_HISTORY_EVENTS the execution fails. */
  readonly historyEvents: number;
}

/** A started execution: abort it (StopExecution), or wait for its result. */
export interface RunningExecution {
  readonly executionId: string;
  /**
   * Stops the execution, as StopExecution does: it ends ABORTED, with
   * `error` and `cause` in its ExecutionAborted event, whatever its states
   * were about to do; no state starts after the stop (running Lambda
   * invocations go on, as on AWS). A second stop changes nothing.
   */
  abort(details?: StopDetails): void;
  readonly result: Promise<ExecutionResult>;
}

/** StopExecution's optional error and cause. */
export interface StopDetails {
  readonly error?: string;
  readonly cause?: string;
}

export interface StartOptions {
  /** The execution's name. @default - a random UUID */
  readonly name?: string;
  /** The execution's time-out, in place of the definition's TimeoutSeconds. @default - the synthesized one */
  readonly timeoutSeconds?: number;
}

export { ExecutionAlreadyExistsError, InvalidNameError, StartExecutionError } from './execution-errors.ts';

/** What DescribeExecution reports of an execution this runner started. */
export interface ExecutionRecord {
  readonly executionArn: string;
  readonly name: string;
  /** The input as JSON text. */
  readonly input: string;
  readonly startedAt: string;
  /** RUNNING until it ends. */
  readonly status: 'RUNNING' | ExecutionResult['status'];
  readonly result?: ExecutionResult;
  readonly running: RunningExecution;
  /** Its events so far (all of them once it has ended), oldest first. */
  events(): readonly ExecutionEvent[];
  /** Its history as Step Functions writes it (GetExecutionHistory's events), so far. */
  readonly history: ExecutionHistory;
}

/**
 * How much faster than declared the local run retries: a Retry's
 * IntervalSeconds and MaxDelaySeconds are multiplied by this, so a 2 s
 * interval waits 20 ms, backing off and jittered exactly as declared.
 */
export const DEFAULT_TIME_SCALE = 0.01;

export interface LocalRunnerOptions {
  /** Environment the handlers read: warehouse target, Data API endpoint, Powertools settings. */
  readonly env: Record<string, string>;
  /** Retry waits as a fraction of the declared ones (backoff and jitter keep their shape). @default DEFAULT_TIME_SCALE */
  readonly timeScale?: number;
  /** Called for every execution event (progress display). */
  readonly onEvent?: (event: ExecutionEvent, executionId: string) => void;
  /** Replace a Task's handler (a fault injected by a test); keyed by state name. */
  readonly taskOverrides?: Record<string, (input: unknown, next: (input: unknown) => Promise<unknown>) => Promise<unknown>>;
  /** Where alerts are appended as JSON lines. @default .atomic-publish/outbox/alerts.jsonl */
  readonly outboxFile?: string;
  /** The template whose state machine runs. @default - the app's, synthesized (local/template.ts) */
  readonly template?: Template;
  /**
   * Functions' time-outs in seconds, in place of the synthesized ones, keyed
   * by Task state (a test's shortened step: the handler's context and the
   * Task's TimeoutSeconds both follow). @default - the synthesized ones
   */
  readonly functionTimeoutsSeconds?: Readonly<Record<string, number>>;
  /**
   * A local CloudWatch endpoint (local/cloudwatch-api.ts) that receives what
   * CloudWatch would on AWS: the Lambda service's AWS/Lambda metrics of
   * every invocation (local/lambda-metrics.ts) and the handlers' Embedded
   * Metric Format metrics (local/emf-metrics.ts), sent when an execution
   * ends and after each invocation outside one. @default - none: both are
   * only kept (`invocations`, `metrics`)
   */
  readonly cloudWatchEndpoint?: string;
  /** The Lambda service's clock: when an invocation happened, for its metrics. @default the real one */
  readonly clock?: () => Date;
  /**
   * The account's concurrency limit for this runner's functions. One more
   * invocation is throttled: a Task's is refused with Lambda.TooManyRequestsException,
   * a schedule's or rule's waits for a slot, as Lambda's queue retries it
   * (docs/decisions/lambda-metrics-locally-and-getmetricdata.md).
   * @default ACCOUNT_CONCURRENCY_LIMIT
   */
  readonly concurrencyLimit?: number;
}

/**
 * Lambda's default concurrency quota of an account in a region.
 * https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html
 */
export const ACCOUNT_CONCURRENCY_LIMIT = 1000;

/** How an invocation reaches Lambda: a Task's synchronous call, or an event queued for the function (Scheduler, EventBridge). */
type InvocationType = 'RequestResponse' | 'Event';

/** Lambda's refusal of a synchronous invocation beyond the concurrency limit, as Step Functions names it. */
class ThrottledError extends Error {
  override name = THROTTLED_ERROR_NAME;
}

export class LocalRunner {
  private readonly capture = captureLambdaOutput();
  private readonly outbox: SnsOutbox;
  /** Every execution this runner started, by name: Step Functions keeps names for 90 days, longer than a local runner lives. */
  private readonly executions = new Map<string, ExecutionRecord>();
  /** Every invocation of a function so far, oldest first; and how many of them, and of the EMF records, were sent to CloudWatch. */
  private readonly invocationRecords: InvocationRecord[] = [];
  private readonly sent = { invocations: 0, metrics: 0 };
  private readonly cloudWatch: CloudWatchClient | undefined;
  /** The Step Functions endpoint serving this runner that its handlers call (create()), when the caller named none. */
  private ownStepFunctions: LocalStepFunctionsApi | undefined;
  /** Invocations running now, and the queued asynchronous ones waiting for a slot (each is handed one as another ends). */
  private readonly concurrency = { running: 0, queued: [] as (() => void)[] };

  private constructor(
    readonly workflow: SynthesizedWorkflow,
    /**
     * What runs: the synthesized definition with its retry waits scaled
     * (validated as synthesized, in create()), and its distributed Maps as
     * local Tasks (`distributedMaps`).
     */
    private readonly definition: StateMachineDefinition,
    private readonly distributedMaps: readonly DistributedMapState[],
    private readonly handlers: Map<string, Handler>,
    /** Status-change targets' handlers, keyed by function logical id. */
    private readonly eventHandlers: Map<string, Handler>,
    private readonly options: LocalRunnerOptions,
    /** Where the handlers' publication events go (EmitMetrics'), unless `options.env` names another endpoint. */
    private readonly eventBridge: LocalEventBridgeApi,
  ) {
    this.outbox = new SnsOutbox(options.outboxFile ?? join(STATE_DIR, 'outbox', 'alerts.jsonl'));
    this.cloudWatch = options.cloudWatchEndpoint === undefined ? undefined : localCloudWatchClient(options.cloudWatchEndpoint, { asAwsService: true });
  }

  static async create(options: LocalRunnerOptions): Promise<LocalRunner> {
    silenceSdkNodeNotice();
    // The store first: with INVOCATION_SCOPE_ENV set, Powertools needs it.
    await invokeStore();
    const eventBridge = await startLocalEventBridgeApi();
    Object.assign(process.env, {
      ...LOCAL_AWS_ENV,
      POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
      POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      // No X-Ray daemon here: the Tracer records nothing (functions/commons/powertools.ts).
      POWERTOOLS_TRACE_ENABLED: 'false',
      ...INVOCATION_SCOPE_ENV,
      CODE_VERSION: process.env.CODE_VERSION ?? 'local',
      ...localEventsEnvironment(eventBridge.endpoint),
      ...options.env,
    });
    let runner: LocalRunner;
    try {
      runner = await LocalRunner.created(options, eventBridge);
    } catch (error) {
      await eventBridge.close();
      throw error;
    }
    // The handlers' Step Functions (Plan asks it of a lease's holder): this runner's own endpoint, unless the caller names one.
    if (options.env[StepFunctionsEnv.STEP_FUNCTIONS_ENDPOINT] === undefined) {
      runner.ownStepFunctions = await startLocalStepFunctionsApi(runner);
      process.env[StepFunctionsEnv.STEP_FUNCTIONS_ENDPOINT] = runner.ownStepFunctions.endpoint;
    }
    return runner;
  }

  private static async created(options: LocalRunnerOptions, eventBridge: LocalEventBridgeApi): Promise<LocalRunner> {
    const loaded = await loadWorkflow(options.template);
    for (const state of Object.keys(options.functionTimeoutsSeconds ?? {})) {
      if (!(state in loaded.timeoutsSeconds)) throw new Error(`functionTimeoutsSeconds: ${state} is not a Lambda Task state of the workflow`);
    }
    const workflow: SynthesizedWorkflow = { ...loaded, timeoutsSeconds: { ...loaded.timeoutsSeconds, ...options.functionTimeoutsSeconds } };
    // The synthesized definition is validated as it is; the run uses the copy
    // with scaled retry waits, which the validator's integer rule for
    // IntervalSeconds would refuse.
    const { StateMachine } = await import('aws-local-stepfunctions');
    validateOnce(workflow.definition, (definition) => new StateMachine(definition, { validationOptions: { checkArn: false } }));
    const { definition, maps } = withDistributedMapsAsTasks(localDefinition(workflow, options.timeScale ?? DEFAULT_TIME_SCALE));
    const eventEntries = Object.fromEntries([...workflow.statusChangeTargets, ...workflow.scheduleTargets].map((t) => [t.functionLogicalId, t.entry]));
    return new LocalRunner(workflow, definition, maps, await loadHandlers(workflow.entries), await loadHandlers(eventEntries), options, eventBridge);
  }

  /** Every alert the outbox received, oldest first. */
  get alerts(): readonly Alert[] {
    return this.outbox.alerts;
  }

  /** The events the handlers put on the local EventBridge endpoint (publication events), oldest first. */
  /** The EventBridge endpoint the handlers put their publication events on (local/eventbridge-api.ts). */
  get eventBridgeEndpoint(): string {
    return this.eventBridge.endpoint;
  }

  get events(): readonly RecordedEvent[] {
    return this.eventBridge.entries;
  }

  get metrics(): readonly MetricRecord[] {
    return this.capture.sink.metrics;
  }

  get logs(): readonly Record<string, unknown>[] {
    return this.capture.sink.logs;
  }

  /** Every invocation of a function this runner made (AWS/Lambda's view of it), oldest first. */
  get invocations(): readonly InvocationRecord[] {
    return this.invocationRecords;
  }

  /**
   * What the Lambda service does around one invocation of `functionName`:
   * throttles it beyond the concurrency limit (`concurrencyLimit`), records
   * how it ended and how long the code ran (an invocation that ran past
   * the function's timeout is a function error of the timeout's length, as
   * Lambda ends it there), and passes its result or error on.
   * https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html
   */
  private async invokeFunction(
    functionName: string,
    timeoutSeconds: number,
    call: () => Promise<unknown>,
    type: InvocationType = 'RequestResponse',
  ): Promise<unknown> {
    const limit = this.options.concurrencyLimit ?? ACCOUNT_CONCURRENCY_LIMIT;
    if (this.concurrency.running >= limit) {
      this.invocationRecords.push({ functionName, at: (this.options.clock?.() ?? new Date()).getTime(), outcome: 'throttled' });
      if (type === 'RequestResponse') throw new ThrottledError(`Rate Exceeded: ${functionName} is past the concurrency limit of ${limit}`);
      // Handed the slot of an invocation that ends (`running` stays as it is).
      await new Promise<void>((resolve) => this.concurrency.queued.push(resolve));
    } else {
      this.concurrency.running += 1;
    }
    try {
      return await this.invokeRecorded(functionName, timeoutSeconds, call);
    } finally {
      const next = this.concurrency.queued.shift();
      if (next) next();
      else this.concurrency.running -= 1;
    }
  }

  private async invokeRecorded(functionName: string, timeoutSeconds: number, call: () => Promise<unknown>): Promise<unknown> {
    const at = (this.options.clock?.() ?? new Date()).getTime();
    const began = performance.now();
    const ran = () => Math.min(performance.now() - began, timeoutSeconds * 1000);
    const timedOut = () => performance.now() - began > timeoutSeconds * 1000;
    try {
      const output = await call();
      this.invocationRecords.push({ functionName, at, outcome: timedOut() ? 'functionError' : 'succeeded', durationMs: ran() });
      return output;
    } catch (error) {
      const outcome = outcomeOfError(error);
      this.invocationRecords.push({ functionName, at, outcome, ...(outcome === 'functionError' ? { durationMs: ran() } : {}) });
      throw error;
    }
  }

  /** Sends what CloudWatch has not yet received (AWS/Lambda metrics, then EMF metrics) to `cloudWatchEndpoint`, if any. */
  private async sendMetrics(): Promise<void> {
    if (!this.cloudWatch) return;
    const invocations = this.invocationRecords.slice(this.sent.invocations);
    const metrics = this.capture.sink.metrics.slice(this.sent.metrics);
    this.sent.invocations += invocations.length;
    this.sent.metrics += metrics.length;
    await putLambdaMetrics(this.cloudWatch, invocations);
    await putEmfRecords(this.cloudWatch, metrics);
  }

  /** `call` as an invocation outside an execution: recorded, and its metrics sent whether it threw or not. */
  private async invokeOutside(functionName: string, timeoutSeconds: number, call: () => Promise<unknown>): Promise<unknown> {
    try {
      return await this.invokeFunction(functionName, timeoutSeconds, call, 'Event');
    } finally {
      await this.sendMetrics();
    }
  }

  /** Starts an execution and waits for it to end. Throws StartExecutionError when Step Functions would refuse the input. */
  async run(input: unknown, options: StartOptions = {}): Promise<ExecutionResult> {
    return (await this.start(input, options)).result;
  }

  /** The ARN an execution of this state machine named `name` has. */
  executionArn(name: string): string {
    return `${this.workflow.stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`;
  }

  /**
   * The execution of this ARN, as DescribeExecution reports it; undefined
   * when this runner started none (an execution of a runner that is gone,
   * with its process, is unknown, as Step Functions knows no execution it
   * never started).
   */
  describe(executionArn: string): ExecutionRecord | undefined {
    return [...this.executions.values()].find((e) => e.executionArn === executionArn);
  }

  /** Every execution this runner started, in the order they started. */
  list(): readonly ExecutionRecord[] {
    return [...this.executions.values()];
  }

  /**
   * Starts an execution, with StartExecution's rules for names: a name
   * seen before is refused (ExecutionAlreadyExistsError) unless its
   * execution still runs with the same input, which is then returned.
   * Throws StartExecutionError when Step Functions would refuse the input,
   * InvalidNameError for a name it would refuse.
   */
  async start(input: unknown, options: StartOptions = {}): Promise<RunningExecution> {
    try {
      checkPayload(input, 'the execution input');
    } catch (error) {
      throw new StartExecutionError((error as Error).message);
    }
    const name = options.name ?? randomUUID();
    const nameProblem = executionNameProblem(name);
    if (nameProblem) throw new InvalidNameError(`Invalid Name: '${name}' (the name ${nameProblem})`);
    const inputText = JSON.stringify(input ?? {});
    const executionId = this.executionArn(name);
    const earlier = this.executions.get(name);
    if (earlier) {
      if (earlier.status === 'RUNNING' && earlier.input === inputText) return earlier.running;
      throw new ExecutionAlreadyExistsError(`Execution Already Exists: '${earlier.executionArn}'`);
    }
    const { StateMachine, ExecutionError, ExecutionAbortedError, ExecutionTimeoutError } = await import('aws-local-stepfunctions');
    const alertsBefore = this.outbox.alerts.length;
    const metricsBefore = this.capture.sink.metrics.length;
    const invocationsBefore = this.invocationRecords.length;
    const taskResourceLocalHandlers: Record<string, (input: unknown) => Promise<unknown>> = {};
    // Step Functions' history of the execution (local/history.ts); each child execution has one of its own.
    const roleArn = stateMachineRoleArn(this.workflow);
    const history = new ExecutionHistory(this.workflow.definition, { roleArn });
    // Step Functions starts no further Map iterations once one has failed;
    // aws-local-stepfunctions keeps starting the queued ones, so stop them
    // here. An error no Retry of the state matches fails the Map at once;
    // one that exhausted its retries shows up as a MapIterationFailed event.
    let mapFailed = false;
    // A distributed Map's own states run in child executions; its runner stops them (local/distributed-map.ts).
    const childStates = new Set(this.distributedMaps.flatMap((m) => Object.keys((m.state.ItemProcessor as { States: object }).States)));
    for (const [state, handler] of this.handlers) {
      const inMap = this.workflow.mapStates.has(state) && !childStates.has(state);
      // Errors a Retry or a Catch of the state takes: they do not fail the Map.
      const retried = new Set([...(this.workflow.retriers[state] ?? []), ...(this.workflow.catchers[state] ?? [])].flat());
      const timeoutSeconds = this.workflow.timeoutsSeconds[state]!;
      const call = (input: unknown) => invoke(handler, state, input, timeoutSeconds);
      const override = this.options.taskOverrides?.[state];
      const functionName = this.workflow.functions[state]!;
      taskResourceLocalHandlers[state] = async (input) => {
        if (inMap && mapFailed) {
          history.refused(state, input);
          throw Object.assign(new Error('Map failed: no new iterations start'), { name: 'States.Cancelled' });
        }
        try {
          checkPayload(input, `the input of ${state}`);
          // An override stands in for the function's code (a fault it throws is the function's, or Lambda's when named Lambda.*).
          const output = await this.invokeFunction(functionName, timeoutSeconds, () => (override ? override(input, call) : call(input)));
          checkPayload(output, `the output of ${state}`);
          return output;
        } catch (error) {
          const name = (error as Error)?.name;
          if (inMap && !retried.has(name) && !retried.has('States.ALL')) mapFailed = true;
          throw isStatesError(error) ? error : new LambdaFunctionError(error);
        }
      };
    }
    for (const state of Object.keys(this.workflow.serviceTasks)) {
      taskResourceLocalHandlers[state] = async (input) => this.outbox.publish(input as Record<string, unknown>, executionId);
    }
    const childExecutions: ChildExecution[] = [];
    // Stopping an execution stops its Map Runs' children too; its result
    // waits until every child it started has been reported.
    const runningChildren = new Set<{ abort: () => void }>();
    const children = { started: 0, reported: 0, allReported: undefined as (() => void) | undefined };
    for (const map of this.distributedMaps) {
      taskResourceLocalHandlers[map.name] = async (input) => {
        const output = await runDistributedMap({
          map,
          input,
          parent: { id: executionId, name },
          runChild: (processor, childInput, context) => {
            const childHistory = new ExecutionHistory(processor as { States: unknown }, { roleArn });
            const child = new StateMachine(processor, { validationOptions: { noValidate: true } }).run(childInput as never, {
              overrides: { taskResourceLocalHandlers: childHistory.recording(taskResourceLocalHandlers) as never },
              context: { Execution: { Id: context.id, Name: context.name } } as never,
            });
            let events = 0;
            let overLimit = false;
            const counted = (async () => {
              for await (const event of child.eventLogs) {
                events += 1;
                if (childHistory.add(event as ExecutionEvent) && !overLimit) {
                  overLimit = true;
                  child.abort();
                }
                this.options.onEvent?.(event as ExecutionEvent, context.id);
              }
            })();
            const result = child.result.then(
              async (output) => {
                await counted;
                if (overLimit) throw historyLimitError(childHistory.length);
                return output;
              },
              async (error: Error & { cause?: Error }) => {
                await counted;
                if (overLimit) throw historyLimitError(childHistory.length);
                // The child's failure as Step Functions names it: the error of the state that failed it.
                throw error.cause instanceof Error ? error.cause : error;
              },
            );
            children.started += 1;
            const handle = { abort: () => child.abort() };
            runningChildren.add(handle);
            void result.then(
              () => runningChildren.delete(handle),
              () => runningChildren.delete(handle),
            );
            return { result, abort: handle.abort, events: () => events, historyEvents: () => childHistory.length };
          },
          onMapRun: (run) => history.mapRunStarted(map.name, run),
          onChild: (child) => {
            childExecutions.push(child);
            children.reported += 1;
            if (children.reported === children.started) children.allReported?.();
          },
        });
        checkPayload(output, `the output of ${map.name}`);
        return output;
      };
    }

    const definition = options.timeoutSeconds === undefined ? this.definition : { ...this.definition, TimeoutSeconds: options.timeoutSeconds };
    const machine = new StateMachine(definition, { validationOptions: { noValidate: true } });
    const startedAt = new Date().toISOString();
    const execution = machine.run(input as never, {
      overrides: { taskResourceLocalHandlers: history.recording(taskResourceLocalHandlers) as never },
      context: { Execution: { Id: executionId, Name: name } } as never,
    });
    const events: ExecutionEvent[] = [];
    let overLimit = false;
    // A stop is final once made: the events before it are the history, then ExecutionAborted.
    let stop: (StopDetails & { events: number; timestamp: number }) | undefined;
    const collecting = (async () => {
      for await (const logged of execution.eventLogs) {
        const event = logged as ExecutionEvent;
        if (stop) continue;
        if (event.type === 'MapIterationFailed') mapFailed = true;
        events.push(event);
        if (history.add(event) && !overLimit) {
          overLimit = true;
          execution.abort();
        }
        this.options.onEvent?.(event, executionId);
      }
    })();
    const finish = async (): Promise<ExecutionResult> => {
      let result: Omit<ExecutionResult, 'events' | 'alerts' | 'metrics' | 'invocations' | 'stoppedAt' | 'statusChange' | 'childExecutions' | 'historyEvents'>;
      try {
        const output = (await execution.result) as Record<string, unknown>;
        result = { executionId, status: 'SUCCEEDED', output, startedAt };
      } catch (error) {
        if (error instanceof ExecutionAbortedError) {
          result = { executionId, status: 'ABORTED', startedAt };
        } else if (error instanceof ExecutionTimeoutError) {
          result = { executionId, status: 'TIMED_OUT', error: 'States.Timeout', startedAt };
        } else if (error instanceof ExecutionError) {
          const failed = (error as Error & { cause?: { name?: string; message?: string } }).cause;
          result = {
            executionId,
            status: 'FAILED',
            error: failed?.name ?? (error as Error).name,
            cause: failed?.message ?? (error as Error).message,
            startedAt,
          };
        } else {
          throw error;
        }
      }
      await collecting;
      if (stop) {
        // The engine may have ended the execution its own way after the stop: the stop decides.
        result = {
          executionId,
          status: 'ABORTED',
          ...(stop.error === undefined ? {} : { error: stop.error }),
          ...(stop.cause === undefined ? {} : { cause: stop.cause }),
          startedAt,
        };
        events.splice(stop.events);
        const aborted: ExecutionEvent = {
          type: 'ExecutionAborted',
          timestamp: stop.timestamp,
          ...(stop.error === undefined ? {} : { Error: stop.error }),
          ...(stop.cause === undefined ? {} : { Cause: stop.cause }),
        };
        events.push(aborted);
        history.add(aborted);
        this.options.onEvent?.(aborted, executionId);
      }
      if (result.status === 'ABORTED' || result.status === 'TIMED_OUT') {
        for (const child of runningChildren) child.abort();
        if (children.reported < children.started) await new Promise<void>((resolve) => (children.allReported = resolve));
      }
      // The event log can lag the execution: one that ended before its events
      // were counted past the limit still fails, as it would have on AWS.
      if (overLimit) {
        const limit = historyLimitError(history.length);
        result = { executionId, status: 'FAILED', error: limit.name, cause: limit.message, startedAt };
      }
      const stoppedAt = new Date().toISOString();
      const statusChange = await this.deliverStatusChange({ executionId, name, status: result.status, input, startedAt, stoppedAt });
      await this.sendMetrics();
      return {
        ...result,
        events,
        alerts: this.outbox.alerts.slice(alertsBefore),
        metrics: this.capture.sink.metrics.slice(metricsBefore),
        invocations: this.invocationRecords.slice(invocationsBefore),
        stoppedAt,
        statusChange,
        childExecutions: [...childExecutions],
        historyEvents: history.length,
      };
    };
    const abort = (details: StopDetails = {}) => {
      if (stop) return;
      stop = { ...details, events: events.length, timestamp: Date.now() };
      execution.abort();
      for (const child of runningChildren) child.abort();
    };
    const running: RunningExecution = { executionId, abort, result: finish() };
    const record = (value: ExecutionRecord) => this.executions.set(name, value);
    record({ executionArn: executionId, name, input: inputText, startedAt, status: 'RUNNING', running, events: () => events, history });
    void running.result.then(
      (result) => record({ ...this.executions.get(name)!, status: result.status, result }),
      // The caller sees the error; the name stays taken.
      () => record({ ...this.executions.get(name)!, status: 'FAILED' }),
    );
    return running;
  }

  /**
   * What EventBridge does with the execution's "Step Functions Execution
   * Status Change" event: runs every rule target whose `detail` pattern
   * matches it, and waits for them (EventBridge invokes them
   * asynchronously; waiting lets a test see what they did).
   */
  private async deliverStatusChange(execution: {
    executionId: string;
    name: string;
    status: string;
    input: unknown;
    startedAt: string;
    stoppedAt: string;
  }): Promise<StatusChangeDelivery[]> {
    const detail: Record<string, unknown> = {
      executionArn: execution.executionId,
      stateMachineArn: this.workflow.stateMachineArn,
      name: execution.name,
      status: execution.status,
      startDate: Date.parse(execution.startedAt),
      stopDate: Date.parse(execution.stoppedAt),
      input: JSON.stringify(execution.input ?? null),
    };
    const event = {
      version: '0',
      id: randomUUID(),
      'detail-type': EXECUTION_STATUS_CHANGE,
      source: EXECUTION_EVENT_SOURCE,
      account: LOCAL_ACCOUNT,
      time: execution.stoppedAt,
      region: LOCAL_REGION,
      resources: [execution.executionId],
      detail,
    };
    const deliveries: StatusChangeDelivery[] = [];
    for (const target of this.workflow.statusChangeTargets) {
      const matches = Object.entries(target.detailPattern).every(([key, values]) => values.includes(String(detail[key])));
      if (!matches) continue;
      const handler = this.eventHandlers.get(target.functionLogicalId)!;
      try {
        const output = await this.invokeFunction(
          target.functionLogicalId,
          target.timeoutSeconds,
          () => invoke(handler, target.functionLogicalId, event, target.timeoutSeconds),
          'Event',
        );
        deliveries.push({ functionLogicalId: target.functionLogicalId, output });
      } catch (error) {
        deliveries.push({ functionLogicalId: target.functionLogicalId, error: `${(error as Error).name}: ${(error as Error).message}` });
      }
    }
    return deliveries;
  }

  /**
   * What EventBridge Scheduler does when `pipeline`'s schedule is due at
   * `scheduledTime`: invokes the schedule's target with its synthesized Input
   * (context attributes replaced) and environment; StartRun then starts the
   * execution through the real client at `stepFunctionsEndpoint`
   * (local/step-functions-api.ts). Returns what the function returned; throws what it threw.
   */
  async fireSchedule(pipeline: string, scheduledTime: Date, stepFunctionsEndpoint: string, attempt = 1): Promise<unknown> {
    const schedule = this.workflow.scheduleTargets.find((t) => (JSON.parse(t.input) as { pipeline?: unknown }).pipeline === pipeline);
    if (!schedule) throw new Error(`pipeline ${pipeline} has no schedule in the synthesized template`);
    const attributes: Record<string, string> = {
      'scheduled-time': scheduledTime.toISOString().replace(/\.\d+Z$/, 'Z'),
      'schedule-arn': `arn:aws:scheduler:${LOCAL_REGION}:${LOCAL_ACCOUNT}:schedule/default/${schedule.scheduleLogicalId}`,
      'execution-id': randomUUID().replace(/-/g, '').slice(0, 16),
      'attempt-number': String(attempt),
    };
    const input = schedule.input.replace(/<aws\.scheduler\.([a-z-]+)>/g, (whole, name: string) => attributes[name] ?? whole);
    // The handlers share this process's environment: the function's own variables it lacks, and the local endpoint.
    Object.assign(process.env, variablesLacking(schedule.environment), {
      [StartRunEnv.STATE_MACHINE_ARN]: schedule.environment[StartRunEnv.STATE_MACHINE_ARN],
      [StepFunctionsEnv.STEP_FUNCTIONS_ENDPOINT]: stepFunctionsEndpoint,
    });
    const handler = this.eventHandlers.get(schedule.functionLogicalId)!;
    return this.invokeOutside(schedule.functionLogicalId, schedule.timeoutSeconds, () =>
      invoke(handler, schedule.functionLogicalId, JSON.parse(input), schedule.timeoutSeconds),
    );
  }

  /**
   * What the freshness monitor's schedule (`liveWatch`: the live watch's) does when due: invokes its target
   * function (functions/freshness-monitor) in its synthesized environment,
   * writing to the CloudWatch endpoint `cloudWatchEndpoint` (a local one,
   * local/cloudwatch-api.ts). It measures at the real time, as deployed.
   * Returns what the function returned; throws what it threw.
   */
  async fireFreshnessMonitor(cloudWatchEndpoint: string, options: { readonly liveWatch?: boolean } = {}): Promise<unknown> {
    const schedule = this.freshnessMonitorSchedule(options);
    Object.assign(process.env, variablesLacking(schedule.environment), { [FreshnessMonitorEnv.CLOUDWATCH_ENDPOINT]: cloudWatchEndpoint });
    const handler = this.eventHandlers.get(schedule.functionLogicalId)!;
    return this.invokeOutside(schedule.functionLogicalId, schedule.timeoutSeconds, () =>
      invoke(handler, schedule.functionLogicalId, JSON.parse(schedule.input), schedule.timeoutSeconds),
    );
  }

  /** How often the freshness monitor's schedule (`liveWatch`: the live watch's) fires: its `rate(...)` expression, in ms. */
  freshnessMonitorPeriodMs(options: { readonly liveWatch?: boolean } = {}): number {
    const { expression } = this.freshnessMonitorSchedule(options);
    const rate = /^rate\((\d+) minutes?\)$/.exec(expression);
    if (!rate) throw new Error(`the freshness monitor's schedule is ${expression}, not rate(N minutes)`);
    return Number(rate[1]) * 60_000;
  }

  private freshnessMonitorSchedule(options: { readonly liveWatch?: boolean }) {
    // Two schedules invoke the monitor: the freshness one, and the live watch's with its own input.
    const schedule = this.workflow.scheduleTargets.find(
      (t) => t.entry === stepEntry('FreshnessMonitor') && isLiveWatchEvent(JSON.parse(t.input)) === (options.liveWatch ?? false),
    );
    if (!schedule) throw new Error(`the synthesized template has no ${options.liveWatch ? 'live watch' : 'freshness monitor'} schedule`);
    return schedule;
  }

  close(): void {
    this.capture.release();
    void this.eventBridge.close();
    void this.ownStepFunctions?.close();
  }
}

/** The variables naming the warehouse's target: one kind's set, never mixed (domain/warehouse-target.ts). */
const TARGET_VARIABLES: readonly string[] = [WarehouseEnv.WORKGROUP, WarehouseEnv.CLUSTER_ID, WarehouseEnv.SECRET_ARN, WarehouseEnv.DB_USER];

/**
 * A function's synthesized variables this process lacks. The handlers share
 * the process's environment, whose warehouse target (the local endpoint's,
 * of the kind the caller chose) stands for the template's whole set.
 */
function variablesLacking(environment: Record<string, string>): Record<string, string> {
  const targetNamed = TARGET_VARIABLES.some((key) => process.env[key] !== undefined);
  return Object.fromEntries(Object.entries(environment).filter(([key]) => process.env[key] === undefined && !(targetNamed && TARGET_VARIABLES.includes(key))));
}

/** The definitions already validated in this process, by their hash: a definition valid once stays valid. */
const validated = new Set<string>();

/**
 * Runs `validate` (which throws on an invalid definition) once per distinct
 * definition, remembered in this process and, by a marker file beside the
 * cached templates (local/template.ts), in the next: the validator compiles
 * its JSON schemas on every call, about half a second.
 */
function validateOnce(definition: unknown, validate: (definition: never) => unknown): void {
  const hash = createHash('sha256').update(JSON.stringify(definition)).digest('hex').slice(0, 32);
  const marker = join(STATE_DIR, 'cache', `asl-valid-${hash}`);
  if (validated.has(hash) || existsSync(marker)) return;
  validate(definition as never);
  validated.add(hash);
  mkdirSync(join(STATE_DIR, 'cache'), { recursive: true });
  writeFileSync(marker, '');
}

/** The failure of an execution whose history passed MAX_HISTORY_EVENTS. */
function historyLimitError(count: number): Error {
  return Object.assign(new Error(historyLimitCause(count)), { name: HISTORY_LIMIT_ERROR });
}
