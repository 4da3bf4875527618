/**
 * The state machine's Lambda steps. A state's name, its handler folder
 * (`functions/<folder>/index.ts`) and its timeout live together so a reader
 * follows a step from the diagram to the code in one hop.
 */
export const LAMBDA_STEPS = {
  // The warehouse steps wait on Data API statements; the handlers bound each
  // wait by the time the invocation has left, so the Lambda maximum is a
  // ceiling, not an expected duration.
  Plan: { folder: 'plan', timeoutMinutes: 15 },
  LoadChunk: { folder: 'load-chunk', timeoutMinutes: 15 },
  Reconcile: { folder: 'reconcile', timeoutMinutes: 15 },
  Publish: { folder: 'publish', timeoutMinutes: 15 },
  // A rollback's swap: Publish's, with a retained version instead of staging.
  Rollback: { folder: 'rollback', timeoutMinutes: 15 },
  // A publish group's swap: every member's in one transaction (functions/publish-group).
  PublishGroup: { folder: 'publish-group', timeoutMinutes: 15 },
  EmitMetrics: { folder: 'emit-metrics', timeoutMinutes: 15 },
  Cleanup: { folder: 'cleanup', timeoutMinutes: 15 },
  // Short: the page must not wait long on a manifest write (DescribeFailure
  // pages without it if this step fails or times out).
  RecordFailure: { folder: 'record-failure', timeoutMinutes: 2 },
} as const satisfies Record<string, { folder: string; timeoutMinutes: number }>;

/** Name of a Task state that invokes one of the step handlers. */
export type LambdaStateName = keyof typeof LAMBDA_STEPS;

export const LAMBDA_STATE_NAMES = Object.keys(LAMBDA_STEPS) as LambdaStateName[];

/**
 * Handlers outside the state machine, run by an EventBridge rule:
 * CancelOrphans on an execution that was aborted or timed out (no Catch
 * runs then).
 */
export const EVENT_STEPS = {
  CancelOrphans: { folder: 'cancel-orphans', timeoutMinutes: 5 },
} as const satisfies Record<string, { folder: string; timeoutMinutes: number }>;

export type EventStepName = keyof typeof EVENT_STEPS;

/** Every step handler: the Task states' and the event-driven ones. */
export type StepName = LambdaStateName | EventStepName;

export const STEP_NAMES = [...LAMBDA_STATE_NAMES, ...(Object.keys(EVENT_STEPS) as EventStepName[])] as const;

/**
 * Handlers that act on Step Functions, not on the warehouse: StartRun, run
 * by a pipeline's schedule, starts the state machine under a name of the
 * scheduled time (functions/start-run). It runs under a role of its own,
 * which may start executions and nothing else.
 */
export const STARTER_STEPS = {
  StartRun: { folder: 'start-run', timeoutMinutes: 1 },
} as const satisfies Record<string, { folder: string; timeoutMinutes: number }>;

export type StarterStepName = keyof typeof STARTER_STEPS;

/**
 * The freshness monitor, run every few minutes by a schedule of its own
 * (lib/freshness-monitor.ts): reads the warehouse, writes CloudWatch metrics,
 * under a role of its own.
 */
export const MONITOR_STEPS = {
  // Its live watch (a second schedule) scans every watched live table once: Lambda's longest timeout.
  FreshnessMonitor: { folder: 'freshness-monitor', timeoutMinutes: 15 },
} as const satisfies Record<string, { folder: string; timeoutMinutes: number }>;

export type MonitorStepName = keyof typeof MONITOR_STEPS;

/** Every function of the stack: the step handlers, the starter and the monitor. */
export type FunctionStepName = StepName | StarterStepName | MonitorStepName;

/** Folder and timeout of any step handler. */
export function stepSettings(step: FunctionStepName): { readonly folder: string; readonly timeoutMinutes: number } {
  if (step in STARTER_STEPS) return STARTER_STEPS[step as StarterStepName];
  if (step in MONITOR_STEPS) return MONITOR_STEPS[step as MonitorStepName];
  return step in EVENT_STEPS ? EVENT_STEPS[step as EventStepName] : LAMBDA_STEPS[step as LambdaStateName];
}

/** The handler module of a step, relative to the project root (also the `atomic-publish:entry` metadata). */
export function stepEntry(step: FunctionStepName): string {
  return `functions/${stepSettings(step).folder}/index.ts`;
}

/** Metadata key on each function's CfnFunction naming its handler module; the local runner reads it. */
export const ENTRY_METADATA_KEY = 'atomic-publish:entry';

/** The Fail state's error: what an operator sees on a failed execution. */
export const FAILED_ERROR = 'AtomicPublishFailed';

/**
 * The states of one chunk's load inside the LoadChunks Map (a group
 * member's carry the prefix `Member`, a window's `Window`): LoadChunk, and the loop that waits
 * for a load longer than an invocation (lib/publish-workflow.ts chunkLoad).
 */
export const CHUNK_LOAD_STATES = { load: 'LoadChunk', wait: 'WaitForLoad' } as const;

/** Whether a state is one of a chunk load's (a pipeline run's, a group member's or a window's). */
export function isChunkLoadState(name: string): boolean {
  return (Object.values(CHUNK_LOAD_STATES) as string[]).includes(name.replace(/^(Member|Window)/, ''));
}
