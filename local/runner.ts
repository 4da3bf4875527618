/**
 * Runs the state machine that `cdk synth` produces, on this machine: the
 * definition is taken from the synthesized template and executed by
 * aws-local-stepfunctions; each Lambda Task runs the handler module the
 * template says the function was bundled from, and the SNS Task delivers
 * to a local outbox. Handlers talk to the warehouse through the real SDK
 * client, pointed at the local Data API endpoint by the environment.
 */
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync, appendFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { StateMachineDefinition } from 'aws-local-stepfunctions';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../domain/names.ts';
import { captureLambdaOutput, type LambdaOutputSink, type MetricRecord } from './lambda-output.ts';

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
}

/** The deployed functions run Node 22; on a local Node 20 the SDK's support notice is noise. */
export function silenceSdkNodeNotice(): void {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
}

export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const STATE_DIR = join(PROJECT_ROOT, '.atomic-publish');

type Template = { Resources: Record<string, { Type: string; Metadata?: Record<string, unknown>; Properties?: Record<string, unknown> }> };

export interface SynthesizedWorkflow {
  readonly template: Template;
  readonly definition: StateMachineDefinition;
  /** Task state name -> handler module entry (relative to the project root). */
  readonly entries: Record<string, string>;
  /** Task state name -> kind of task without a Lambda (e.g. SNS publish). */
  readonly serviceTasks: Record<string, string>;
  /** States that run inside a Map's item processor. */
  readonly mapStates: ReadonlySet<string>;
  /** Task state name -> the ErrorEquals lists of its Retry. */
  readonly retriers: Record<string, string[][]>;
}

/** Files whose content decides the template; the cached template is reused while they are unchanged. */
function sourceFingerprint(): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts') || name.endsWith('.json')) hash.update(relative(PROJECT_ROOT, path)).update(readFileSync(path));
    }
  };
  for (const dir of ['lib', 'bin', 'pipelines', 'domain', 'functions']) if (existsSync(join(PROJECT_ROOT, dir))) walk(join(PROJECT_ROOT, dir));
  for (const file of ['package.json', 'cdk.json']) if (existsSync(join(PROJECT_ROOT, file))) hash.update(readFileSync(join(PROJECT_ROOT, file)));
  return hash.digest('hex').slice(0, 16);
}

/** Synthesizes the CDK app in-process (no bundling: the handlers run from source) and caches the template. */
export async function synthesizeTemplate(): Promise<Template> {
  const cacheFile = join(STATE_DIR, 'cache', `template-${sourceFingerprint()}.json`);
  if (existsSync(cacheFile)) return JSON.parse(readFileSync(cacheFile, 'utf8')) as Template;
  const { synthesizeStackTemplate } = await import('../lib/app.ts');
  const template = synthesizeStackTemplate({ bundling: false }) as Template;
  mkdirSync(dirname(cacheFile), { recursive: true });
  writeFileSync(cacheFile, JSON.stringify(template));
  return template;
}

/** The state machine definition and, for every Task state, what runs it locally. */
export async function loadWorkflow(template?: Template): Promise<SynthesizedWorkflow> {
  const tpl = template ?? (await synthesizeTemplate());
  const { stateMachineDefinition } = await import('../lib/definition.ts');
  const { ENTRY_METADATA_KEY } = await import('../lib/workflow-steps.ts');
  const parsed = stateMachineDefinition(tpl);
  const definition = parsed.definition as unknown as StateMachineDefinition;
  const entries: Record<string, string> = {};
  for (const [state, logicalId] of Object.entries(parsed.taskFunctions)) {
    const entry = parsed.taskEntries[state];
    if (entry === undefined) throw new Error(`function ${logicalId} of state ${state} has no ${ENTRY_METADATA_KEY} metadata`);
    entries[state] = entry;
  }
  const serviceTasks: Record<string, string> = {};
  const mapStates = new Set<string>();
  const retriers: Record<string, string[][]> = {};
  const visit = (states: Record<string, Record<string, unknown>>, inMap: boolean) => {
    for (const [name, state] of Object.entries(states)) {
      if (inMap) mapStates.add(name);
      if (Array.isArray(state.Retry)) retriers[name] = (state.Retry as { ErrorEquals: string[] }[]).map((r) => r.ErrorEquals);
      if (state.Type === 'Task' && !(name in entries)) {
        const resource = String(state.Resource);
        if (!resource.includes(':states:::sns:publish')) {
          throw new Error(`state ${name} uses ${resource}, which has no local equivalent`);
        }
        serviceTasks[name] = 'sns:publish';
      }
      const inner = (state.ItemProcessor ?? state.Iterator) as { States: Record<string, Record<string, unknown>> } | undefined;
      if (inner) visit(inner.States, true);
    }
  };
  visit(definition.States as unknown as Record<string, Record<string, unknown>>, false);
  return { template: tpl, definition, entries, serviceTasks, mapStates, retriers };
}

export interface Alert {
  readonly topicArn: string;
  readonly subject?: string;
  readonly message: string;
  readonly executionId: string;
  readonly at: string;
}

export interface ExecutionResult {
  readonly executionId: string;
  readonly status: 'SUCCEEDED' | 'FAILED';
  readonly output?: Record<string, unknown>;
  readonly error?: string;
  readonly cause?: string;
  readonly events: readonly ExecutionEvent[];
  readonly alerts: readonly Alert[];
  readonly metrics: readonly MetricRecord[];
  readonly startedAt: string;
  readonly stoppedAt: string;
}

export interface LocalRunnerOptions {
  /** Environment the handlers read: warehouse target, Data API endpoint, Powertools settings. */
  readonly env: Record<string, string>;
  /** Milliseconds a Retry waits locally instead of its real interval. @default 10 */
  readonly retryIntervalMs?: number;
  /** Called for every execution event (progress display). */
  readonly onEvent?: (event: ExecutionEvent, executionId: string) => void;
  /** Replace a Task's handler (a fault injected by a test); keyed by state name. */
  readonly taskOverrides?: Record<string, (input: unknown, next: (input: unknown) => Promise<unknown>) => Promise<unknown>>;
  /** Where alerts are appended as JSON lines. @default .atomic-publish/outbox/alerts.jsonl */
  readonly outboxFile?: string;
}

type Handler = (event: unknown, context: unknown) => Promise<unknown>;

function lambdaContext(functionName: string, deadlineMs: number) {
  return {
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => Math.max(0, deadlineMs - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** A Lambda boundary: JSON in, JSON out, errors keep their name (what ErrorEquals matches). */
async function invoke(handler: Handler, functionName: string, input: unknown): Promise<unknown> {
  const event = JSON.parse(JSON.stringify(input ?? null)) as unknown;
  const result = await handler(event, lambdaContext(functionName, Date.now() + 15 * 60_000));
  return result === undefined ? null : (JSON.parse(JSON.stringify(result)) as unknown);
}

export class LocalRunner {
  private readonly handlers = new Map<string, Handler>();
  private readonly capture: { sink: LambdaOutputSink; release: () => void };
  readonly alerts: Alert[] = [];

  private constructor(
    readonly workflow: SynthesizedWorkflow,
    private readonly options: LocalRunnerOptions,
  ) {
    this.capture = captureLambdaOutput();
  }

  static async create(options: LocalRunnerOptions): Promise<LocalRunner> {
    silenceSdkNodeNotice();
    Object.assign(process.env, {
      AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
      AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
      AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
      POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
      POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      CODE_VERSION: process.env.CODE_VERSION ?? 'local',
      ...options.env,
    });
    const workflow = await loadWorkflow();
    const runner = new LocalRunner(workflow, options);
    for (const [state, entry] of Object.entries(workflow.entries)) {
      const module = (await import(pathToFileURL(join(PROJECT_ROOT, entry)).href)) as { handler?: Handler };
      if (typeof module.handler !== 'function') throw new Error(`${entry} exports no handler`);
      runner.handlers.set(state, module.handler);
    }
    return runner;
  }

  get metrics(): readonly MetricRecord[] {
    return this.capture.sink.metrics;
  }

  get logs(): readonly Record<string, unknown>[] {
    return this.capture.sink.logs;
  }

  /** Starts an execution and waits for it to end. */
  async run(input: unknown, options: { name?: string } = {}): Promise<ExecutionResult> {
    const { StateMachine, ExecutionError } = await import('aws-local-stepfunctions');
    const name = options.name ?? randomUUID();
    const executionId = `arn:aws:states:local:000000000000:execution:AtomicPublish:${name}`;
    const alertsBefore = this.alerts.length;
    const metricsBefore = this.capture.sink.metrics.length;
    const taskResourceLocalHandlers: Record<string, (input: unknown) => Promise<unknown>> = {};
    const retryIntervalOverrides: Record<string, number> = {};
    // Step Functions starts no further Map iterations once one has failed;
    // aws-local-stepfunctions keeps starting the queued ones, so stop them
    // here. An error no Retry of the state matches fails the Map at once;
    // one that exhausted its retries shows up as a MapIterationFailed event.
    let mapFailed = false;
    for (const [state, handler] of this.handlers) {
      const inMap = this.workflow.mapStates.has(state);
      const retried = new Set((this.workflow.retriers[state] ?? []).flat());
      const call = (input: unknown) => invoke(handler, state, input);
      const override = this.options.taskOverrides?.[state];
      taskResourceLocalHandlers[state] = async (input) => {
        if (inMap && mapFailed) throw Object.assign(new Error('Map failed: no new iterations start'), { name: 'States.Cancelled' });
        try {
          return await (override ? override(input, call) : call(input));
        } catch (error) {
          const name = (error as Error)?.name;
          if (inMap && !retried.has(name) && !retried.has('States.ALL')) mapFailed = true;
          throw error;
        }
      };
      retryIntervalOverrides[state] = this.options.retryIntervalMs ?? 10;
    }
    for (const state of Object.keys(this.workflow.serviceTasks)) {
      taskResourceLocalHandlers[state] = async (input) => this.deliver(input as Record<string, string>, executionId);
    }
    retryIntervalOverrides.LoadChunks = this.options.retryIntervalMs ?? 10;

    const machine = new StateMachine(this.workflow.definition, { validationOptions: { checkArn: false } });
    const startedAt = new Date().toISOString();
    const execution = machine.run(input as never, {
      overrides: { taskResourceLocalHandlers: taskResourceLocalHandlers as never, retryIntervalOverrides },
      context: { Execution: { Id: executionId, Name: name } } as never,
    });
    const events: ExecutionEvent[] = [];
    const collecting = (async () => {
      for await (const logged of execution.eventLogs) {
        const event = logged as ExecutionEvent;
        if (event.type === 'MapIterationFailed') mapFailed = true;
        events.push(event);
        this.options.onEvent?.(event, executionId);
      }
    })();
    let result: Omit<ExecutionResult, 'events' | 'alerts' | 'metrics' | 'stoppedAt'>;
    try {
      const output = (await execution.result) as Record<string, unknown>;
      result = { executionId, status: 'SUCCEEDED', output, startedAt };
    } catch (error) {
      if (!(error instanceof ExecutionError)) throw error;
      const failed = (error as Error & { cause?: { name?: string; message?: string } }).cause;
      result = {
        executionId,
        status: 'FAILED',
        error: failed?.name ?? (error as Error).name,
        cause: failed?.message ?? (error as Error).message,
        startedAt,
      };
    }
    await collecting;
    return {
      ...result,
      events,
      alerts: this.alerts.slice(alertsBefore),
      metrics: this.capture.sink.metrics.slice(metricsBefore),
      stoppedAt: new Date().toISOString(),
    };
  }

  /** The local SNS: keeps the message and appends it to the outbox file. */
  private deliver(parameters: Record<string, string>, executionId: string): Record<string, string> {
    const alert: Alert = {
      topicArn: parameters.TopicArn ?? '',
      ...(parameters.Subject ? { subject: parameters.Subject } : {}),
      message: parameters.Message ?? '',
      executionId,
      at: new Date().toISOString(),
    };
    this.alerts.push(alert);
    const file = this.options.outboxFile ?? join(STATE_DIR, 'outbox', 'alerts.jsonl');
    mkdirSync(dirname(file), { recursive: true });
    appendFileSync(file, `${JSON.stringify(alert)}\n`);
    return { MessageId: randomUUID() };
  }

  close(): void {
    this.capture.release();
  }
}
