/**
 * The state machine's Lambda steps. A state's name, its handler folder
 * (`functions/<folder>/index.ts`) and its timeout live together so a reader
 * follows a step from the diagram to the code in one hop.
 */
export const LAMBDA_STEPS = {
  Plan: { folder: 'plan', timeoutMinutes: 5 },
  LoadChunk: { folder: 'load-chunk', timeoutMinutes: 15 },
  Reconcile: { folder: 'reconcile', timeoutMinutes: 15 },
  Publish: { folder: 'publish', timeoutMinutes: 5 },
  EmitMetrics: { folder: 'emit-metrics', timeoutMinutes: 1 },
  Cleanup: { folder: 'cleanup', timeoutMinutes: 5 },
  RecordFailure: { folder: 'record-failure', timeoutMinutes: 1 },
} as const satisfies Record<string, { folder: string; timeoutMinutes: number }>;

/** Name of a Task state that invokes one of the step handlers. */
export type LambdaStateName = keyof typeof LAMBDA_STEPS;

export const LAMBDA_STATE_NAMES = Object.keys(LAMBDA_STEPS) as LambdaStateName[];

/** The handler module of a step, relative to the project root (also the `atomic-publish:entry` metadata). */
export function stepEntry(state: LambdaStateName): string {
  return `functions/${LAMBDA_STEPS[state].folder}/index.ts`;
}

/** Metadata key on each function's CfnFunction naming its handler module; the local runner reads it. */
export const ENTRY_METADATA_KEY = 'atomic-publish:entry';

/** The Fail state's error: what an operator sees on a failed execution. */
export const FAILED_ERROR = 'AtomicPublishFailed';
