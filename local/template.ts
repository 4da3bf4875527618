/**
 * The state machine that `cdk synth` produces, ready to run on this machine:
 * the CDK app is synthesized in-process (no bundling: the handlers run from
 * source) and cached by a hash of the sources that decide it, the ASL is
 * taken out of the template, and every Task state is mapped to what runs
 * it locally (a handler module, or the SNS outbox).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { StateMachineDefinition } from 'aws-local-stepfunctions';
import type { ScheduleTarget, StatusChangeTarget } from '../lib/definition.ts';
import { PROJECT_ROOT, STATE_DIR } from '../lib/project.ts';

export type Template = {
  Resources: Record<string, { Type: string; Metadata?: Record<string, unknown>; Properties?: Record<string, unknown> }>;
};

export interface SynthesizedWorkflow {
  readonly template: Template;
  /** The ASL exactly as synthesized. */
  readonly definition: StateMachineDefinition;
  /** Task state name -> handler module entry (relative to the project root). */
  readonly entries: Record<string, string>;
  /** Task state name -> logical id of its function (the function's name locally: its metrics' FunctionName). */
  readonly functions: Record<string, string>;
  /** Task state name -> the function's timeout in seconds (Lambda ends the invocation there). */
  readonly timeoutsSeconds: Record<string, number>;
  /** Task state name -> kind of task without a Lambda (e.g. SNS publish). */
  readonly serviceTasks: Record<string, string>;
  /** States that run inside a Map's item processor. */
  readonly mapStates: ReadonlySet<string>;
  /** Task state name -> the ErrorEquals lists of its Retry. */
  readonly retriers: Record<string, string[][]>;
  /** Task state name -> its catchers' ErrorEquals lists (an error a Catch takes does not fail the Map it runs in). */
  readonly catchers: Record<string, string[][]>;
  /** ARN of the state machine as the template's tokens resolve locally. */
  readonly stateMachineArn: string;
  /** Functions EventBridge rules run on the state machine's execution status changes. */
  readonly statusChangeTargets: readonly (StatusChangeTarget & { readonly timeoutSeconds: number })[];
  /** Functions EventBridge Scheduler schedules invoke (StartRun, once per scheduled pipeline). */
  readonly scheduleTargets: readonly (ScheduleTarget & { readonly timeoutSeconds: number })[];
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

/** This process's template: its sources do not change under a running process's feet, so they are hashed once. */
let synthesized: Promise<Template> | undefined;

/** Synthesizes the CDK app in-process (no bundling) and caches the template, on disk and for this process; each caller gets a copy of its own. */
export async function synthesizeTemplate(): Promise<Template> {
  synthesized ??= synthesizeOrRead();
  synthesized.catch(() => (synthesized = undefined));
  return structuredClone(await synthesized);
}

/**
 * The pipelines and groups this process declares, which decide the stack's
 * alarms and schedules as much as the sources do: a test file may replace
 * the sample pipeline in its own module graph (test/support/*-pipeline.ts).
 */
async function registryFingerprint(): Promise<string> {
  const [{ groups, pipelines }, { canonicalJson }] = await Promise.all([import('../pipelines/index.ts'), import('../domain/spec.ts')]);
  return createHash('sha256').update(canonicalJson({ pipelines, groups })).digest('hex').slice(0, 16);
}

async function synthesizeOrRead(): Promise<Template> {
  const sources = sourceFingerprint();
  const cacheFile = join(STATE_DIR, 'cache', `template-${sources}-${await registryFingerprint()}.json`);
  if (existsSync(cacheFile)) return JSON.parse(readFileSync(cacheFile, 'utf8')) as Template;
  const { synthesizeStackTemplate } = await import('../lib/app.ts');
  const template = synthesizeStackTemplate({ bundling: false }) as Template;
  mkdirSync(dirname(cacheFile), { recursive: true });
  // Written whole, then renamed: a concurrent reader never sees half a file.
  const partial = `${cacheFile}.${process.pid}.tmp`;
  writeFileSync(partial, JSON.stringify(template));
  renameSync(partial, cacheFile);
  // Templates of sources that no longer exist are never read again, nor the
  // markers of the definitions validated from them (local/runner.ts validateOnce);
  // those of other registries of the same sources are kept for their files.
  const names = readdirSync(dirname(cacheFile));
  const old = names.filter((name) => /^template-[0-9a-f]+(-[0-9a-f]+)?\.json$/.test(name) && !name.startsWith(`template-${sources}-`));
  const markers = old.length === 0 ? [] : names.filter((name) => /^asl-valid-[0-9a-f]+$/.test(name));
  for (const name of [...old, ...markers]) rmSync(join(dirname(cacheFile), name), { force: true });
  return template;
}

type AslStates = Record<string, Record<string, unknown>>;

/** Visits every state, those inside Map item processors too. */
function visitStates(states: AslStates, visit: (name: string, state: Record<string, unknown>, inMap: boolean) => void, inMap = false): void {
  for (const [name, state] of Object.entries(states)) {
    visit(name, state, inMap);
    const inner = (state.ItemProcessor ?? state.Iterator) as { States: AslStates } | undefined;
    if (inner) visitStates(inner.States, visit, true);
  }
}

/** The state machine definition and, for every Task state, what runs it locally. */
export async function loadWorkflow(template?: Template): Promise<SynthesizedWorkflow> {
  const tpl = template ?? (await synthesizeTemplate());
  const { stateMachineDefinition, statusChangeTargets, scheduleTargets, LOCAL_ACCOUNT, LOCAL_PARTITION, LOCAL_REGION } = await import('../lib/definition.ts');
  const { EXECUTION_STATUS_CHANGE } = await import('../domain/cancel-orphans/cancel-orphans.ts');
  const { ENTRY_METADATA_KEY } = await import('../lib/workflow-steps.ts');
  const parsed = stateMachineDefinition(tpl);
  const definition = parsed.definition as unknown as StateMachineDefinition;
  const entries: Record<string, string> = {};
  const timeoutsSeconds: Record<string, number> = {};
  for (const [state, logicalId] of Object.entries(parsed.taskFunctions)) {
    const entry = parsed.taskEntries[state];
    if (entry === undefined) throw new Error(`function ${logicalId} of state ${state} has no ${ENTRY_METADATA_KEY} metadata`);
    entries[state] = entry;
    // Lambda's own default when the template sets none.
    timeoutsSeconds[state] = Number(tpl.Resources[logicalId]?.Properties?.Timeout ?? 3);
  }
  const serviceTasks: Record<string, string> = {};
  const mapStates = new Set<string>();
  const retriers: Record<string, string[][]> = {};
  const catchers: Record<string, string[][]> = {};
  visitStates(definition.States as unknown as AslStates, (name, state, inMap) => {
    if (inMap) mapStates.add(name);
    if (Array.isArray(state.Retry)) retriers[name] = (state.Retry as { ErrorEquals: string[] }[]).map((r) => r.ErrorEquals);
    if (Array.isArray(state.Catch)) catchers[name] = (state.Catch as { ErrorEquals: string[] }[]).map((c) => c.ErrorEquals);
    if (state.Type === 'Task' && !(name in entries)) {
      const resource = String(state.Resource);
      if (!resource.includes(':states:::sns:publish')) throw new Error(`state ${name} uses ${resource}, which has no local equivalent`);
      serviceTasks[name] = 'sns:publish';
    }
  });
  const stateMachineArn = `arn:${LOCAL_PARTITION}:states:${LOCAL_REGION}:${LOCAL_ACCOUNT}:stateMachine:${parsed.stateMachineLogicalId}`;
  const targets = statusChangeTargets(tpl, EXECUTION_STATUS_CHANGE).map((t) => ({
    ...t,
    timeoutSeconds: Number(tpl.Resources[t.functionLogicalId]?.Properties?.Timeout ?? 3),
  }));
  const schedules = scheduleTargets(tpl).map((t) => ({ ...t, timeoutSeconds: Number(tpl.Resources[t.functionLogicalId]?.Properties?.Timeout ?? 3) }));
  return {
    template: tpl,
    definition,
    entries,
    functions: { ...parsed.taskFunctions },
    timeoutsSeconds,
    serviceTasks,
    mapStates,
    retriers,
    catchers,
    stateMachineArn,
    statusChangeTargets: targets,
    scheduleTargets: schedules,
  };
}

/**
 * The definition as the local run executes it. Retry waits are scaled by
 * `timeScale` (IntervalSeconds and MaxDelaySeconds; BackoffRate, MaxAttempts
 * and JitterStrategy stay), so a local run takes the same backoff and
 * jitter path as AWS, only faster; so are Wait states' Seconds. A Lambda Task without TimeoutSeconds
 * gets its function's timeout: on AWS the function's timeout bounds it
 * (aws-local-stepfunctions would apply 60 s).
 */
export function localDefinition(workflow: SynthesizedWorkflow, timeScale: number): StateMachineDefinition {
  if (!(timeScale > 0 && timeScale <= 1)) throw new Error(`timeScale must be in (0, 1], got ${timeScale}`);
  const copy = JSON.parse(JSON.stringify(workflow.definition)) as StateMachineDefinition;
  visitStates(copy.States as unknown as AslStates, (name, state) => {
    if (Array.isArray(state.Retry)) {
      for (const retrier of state.Retry as Record<string, unknown>[]) {
        retrier.IntervalSeconds = Number(retrier.IntervalSeconds ?? 1) * timeScale;
        if (retrier.MaxDelaySeconds !== undefined) retrier.MaxDelaySeconds = Number(retrier.MaxDelaySeconds) * timeScale;
      }
    }
    // A Wait pauses for its declared time, scaled as the retry waits are.
    if (state.Type === 'Wait' && state.Seconds !== undefined) state.Seconds = Number(state.Seconds) * timeScale;
    const timeout = workflow.timeoutsSeconds[name];
    if (state.Type === 'Task' && timeout !== undefined && state.TimeoutSeconds === undefined && state.TimeoutSecondsPath === undefined) {
      state.TimeoutSeconds = timeout;
    }
  });
  return copy;
}
