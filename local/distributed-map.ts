/**
 * Map states in Distributed mode, run as Step Functions runs them: each item
 * (or ItemBatcher batch) a child execution with a history of its own, at most
 * MaxConcurrency at once; past the tolerated failures (by default none) the
 * Map fails with `States.ExceedToleratedFailureThreshold`, stopping the
 * children still running. The runner swaps each such Map for a Task state of
 * the same input and output processing, handled by `runDistributedMap`.
 * ItemReader and ResultWriter (S3) are refused.
 * https://docs.aws.amazon.com/step-functions/latest/dg/state-map-distributed.html
 */
import { randomUUID } from 'node:crypto';
import type { StateMachineDefinition } from 'aws-local-stepfunctions';
import type { MapRunInfo } from './history.ts';
import { referencePath } from './reference-path.ts';

type AslState = Record<string, unknown>;
type AslStates = Record<string, AslState>;

/** The Resource of the Task that stands in for a distributed Map (no AWS service has it). */
const LOCAL_RESOURCE = 'arn:aws:states:::local:distributed-map';

/**
 * The stand-in Task's time-out: as long as Node's timers go (2^31 - 1 ms,
 * some 24 days; ASL's default of 99,999,999 s would overflow them into 1 ms),
 * longer than any execution of this state machine may run.
 */
const MAP_TIMEOUT_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

/** A distributed Map state as the definition declares it. */
export interface DistributedMapState {
  readonly name: string;
  readonly state: AslState;
}

/** One child workflow execution of a Map Run. */
export interface ChildExecution {
  readonly name: string;
  readonly mapState: string;
  readonly status: 'SUCCEEDED' | 'FAILED' | 'ABORTED';
  /** Events of its own history (aws-local-stepfunctions' event log). */
  readonly events: number;
  /** Its history's length as Step Functions would count it (local/history.ts). */
  readonly historyEvents: number;
  readonly error?: string;
}

/** Whether a Map state runs in Distributed mode. */
function isDistributedMap(state: AslState): boolean {
  const processor = state.ItemProcessor as { ProcessorConfig?: { Mode?: string } } | undefined;
  return state.Type === 'Map' && processor?.ProcessorConfig?.Mode === 'DISTRIBUTED';
}

/**
 * The definition with every top-level distributed Map replaced by a Task
 * that `runDistributedMap` serves, and the Map states it replaced.
 */
export function withDistributedMapsAsTasks(definition: StateMachineDefinition): { definition: StateMachineDefinition; maps: DistributedMapState[] } {
  const copy = JSON.parse(JSON.stringify(definition)) as { States: AslStates };
  const maps: DistributedMapState[] = [];
  for (const [name, state] of Object.entries(copy.States)) {
    if (!isDistributedMap(state)) continue;
    for (const unsupported of ['ItemReader', 'ResultWriter', 'Parameters']) {
      if (state[unsupported] !== undefined) throw new Error(`distributed Map ${name}: ${unsupported} has no local equivalent`);
    }
    maps.push({ name, state });
    // A Map state has no time-out of its own (only the execution's);
    // aws-local-stepfunctions gives a Task without TimeoutSeconds 60 s.
    const task: AslState = { Type: 'Task', Resource: LOCAL_RESOURCE, TimeoutSeconds: MAP_TIMEOUT_SECONDS };
    for (const field of ['Comment', 'InputPath', 'ResultSelector', 'ResultPath', 'OutputPath', 'Retry', 'Catch', 'Next', 'End']) {
      if (state[field] !== undefined) task[field] = state[field];
    }
    copy.States[name] = task;
  }
  return { definition: copy as unknown as StateMachineDefinition, maps };
}

export interface DistributedMapRun {
  /** The replaced Map state. */
  readonly map: DistributedMapState;
  /** The Map's effective input (after InputPath). */
  readonly input: unknown;
  /** The parent execution's ARN and name (child names derive from them). */
  readonly parent: { readonly id: string; readonly name: string };
  /** Runs one child execution of the ItemProcessor with `input`; resolves with its output, rejects with its error. */
  readonly runChild: (
    processor: StateMachineDefinition,
    input: unknown,
    context: { id: string; name: string },
  ) => { result: Promise<unknown>; abort: () => void; events: () => number; historyEvents: () => number };
  /** Called once the Map Run has selected its items, before its first child starts (the parent's history records it). */
  readonly onMapRun?: (run: MapRunInfo) => void;
  /** Called as each child ends. */
  readonly onChild?: (child: ChildExecution) => void;
}

/** The error a Map Run fails with when more children failed than it tolerates. */
export class ExceedToleratedFailureThresholdError extends Error {
  override name = 'States.ExceedToleratedFailureThreshold';
}

/** Runs a distributed Map: its items as child executions; resolves with their outputs in item order. */
export async function runDistributedMap(run: DistributedMapRun): Promise<unknown[]> {
  const { state, name } = run.map;
  const items = await selectItems(state, run.input, run.parent);
  const batches = batch(state, items, run.input, await batchInput(state, run.input));
  const processor = state.ItemProcessor as { StartAt: string; States: AslStates };
  const childDefinition = { StartAt: processor.StartAt, States: processor.States } as unknown as StateMachineDefinition;
  const limit = concurrency(state, run.input, batches.length);
  const tolerated = toleratedFailures(state, batches.length);
  const runId = randomUUID();
  const label = `${run.parent.name}/${name}-${runId.slice(0, 8)}`;
  run.onMapRun?.({ mapRunArn: mapRunArn(run.parent.id, name, runId), itemCount: items.length });

  const results: unknown[] = new Array(batches.length);
  const running = new Map<number, { abort: () => void }>();
  let next = 0;
  let failures = 0;
  let failed: Error | undefined;
  // The parent execution was stopped: its children were stopped with it, and no other starts.
  let stopped: Error | undefined;
  await new Promise<void>((resolve) => {
    const launch = () => {
      while (!failed && !stopped && running.size < limit && next < batches.length) {
        const index = next++;
        const childName = `${label}:${index}`;
        const child = run.runChild(childDefinition, batches[index], { id: `${run.parent.id}/${name}:${index}`, name: childName });
        running.set(index, child);
        child.result
          .then(
            (output) => {
              results[index] = output;
              run.onChild?.({ name: childName, mapState: name, status: 'SUCCEEDED', events: child.events(), historyEvents: child.historyEvents() });
            },
            (error: Error) => {
              // Stopped: by this Map Run after another child failed, or with the parent execution.
              if (error?.name === 'ExecutionAbortedError') stopped ??= error;
              const aborted = failed !== undefined || stopped !== undefined;
              run.onChild?.({
                name: childName,
                mapState: name,
                status: aborted ? 'ABORTED' : 'FAILED',
                events: child.events(),
                historyEvents: child.historyEvents(),
                error: error?.name,
              });
              if (aborted) return;
              failures += 1;
              if (failures > tolerated) {
                failed = new ExceedToleratedFailureThresholdError(
                  `The specified tolerated failure threshold was exceeded: ${failures} of ${batches.length} child executions failed (the last: ${error?.name}: ${String(error?.message).slice(0, 500)})`,
                );
                for (const [other, execution] of running) if (other !== index) execution.abort();
              }
            },
          )
          .finally(() => {
            running.delete(index);
            if (running.size === 0 && (failed || stopped || next >= batches.length)) resolve();
            else launch();
          });
      }
      if (running.size === 0 && (failed || stopped || next >= batches.length)) resolve();
    };
    launch();
  });
  if (failed) throw failed;
  if (stopped) throw stopped;
  return results;
}

/**
 * A Map Run's ARN as Step Functions forms it: the parent execution's
 * state machine, the Map's label (its name: the project sets no Label)
 * and the run's id, `arn:...:mapRun:<state machine>/<label>:<id>`.
 * https://docs.aws.amazon.com/step-functions/latest/dg/concepts-examine-map-run.html
 */
function mapRunArn(parentExecutionArn: string, mapName: string, runId: string): string {
  const [prefix, stateMachine] = parentExecutionArn.split(':execution:') as [string, string];
  return `${prefix}:mapRun:${stateMachine.slice(0, stateMachine.indexOf(':'))}/${mapName}:${runId}`;
}

/**
 * ItemsPath and ItemSelector, evaluated by aws-local-stepfunctions: an inline
 * Map of Pass states over the input, with the parent execution's context
 * object (an ItemSelector may read `$$.Execution.Id`).
 */
async function selectItems(state: AslState, input: unknown, parent: { readonly id: string; readonly name: string }): Promise<unknown[]> {
  const { StateMachine } = await import('aws-local-stepfunctions');
  const select: AslState = {
    Type: 'Map',
    ItemProcessor: { StartAt: 'Item', States: { Item: { Type: 'Pass', End: true } } },
    End: true,
  };
  if (state.ItemsPath !== undefined) select.ItemsPath = state.ItemsPath;
  if (state.ItemSelector !== undefined) select.ItemSelector = state.ItemSelector;
  const machine = new StateMachine({ StartAt: 'Select', States: { Select: select } } as unknown as StateMachineDefinition, {
    validationOptions: { noValidate: true },
  });
  return (await machine.run(input as never, { context: { Execution: { Id: parent.id, Name: parent.name } } as never }).result) as unknown[];
}

/** ItemBatcher.BatchInput, its `.$` paths evaluated against the Map's input (by the library, as a Pass state's Parameters). */
async function batchInput(state: AslState, input: unknown): Promise<Record<string, unknown>> {
  const template = (state.ItemBatcher as { BatchInput?: Record<string, unknown> } | undefined)?.BatchInput;
  if (template === undefined) return {};
  const { StateMachine } = await import('aws-local-stepfunctions');
  const machine = new StateMachine(
    { StartAt: 'BatchInput', States: { BatchInput: { Type: 'Pass', Parameters: template, End: true } } } as unknown as StateMachineDefinition,
    {
      validationOptions: { noValidate: true },
    },
  );
  return (await machine.run(input as never).result) as Record<string, unknown>;
}

/** ItemBatcher: `{"Items": [...], ...BatchInput}` per child, at most MaxItemsPerBatch items each; without it, one item per child. */
function batch(state: AslState, items: unknown[], input: unknown, fixed: Record<string, unknown>): unknown[] {
  const batcher = state.ItemBatcher as { MaxItemsPerBatch?: number; MaxItemsPerBatchPath?: string; MaxInputBytesPerBatch?: number } | undefined;
  if (!batcher) return items;
  if (batcher.MaxInputBytesPerBatch !== undefined) throw new Error('ItemBatcher.MaxInputBytesPerBatch has no local equivalent');
  const size = batcher.MaxItemsPerBatch ?? (batcher.MaxItemsPerBatchPath ? Number(referencePath(input, batcher.MaxItemsPerBatchPath)) : items.length);
  if (!(Number.isInteger(size) && size > 0)) throw new Error(`ItemBatcher: MaxItemsPerBatch must be a positive integer, got ${size}`);
  const batches: unknown[] = [];
  for (let i = 0; i < items.length; i += size) batches.push({ ...fixed, Items: items.slice(i, i + size) });
  return batches;
}

/** MaxConcurrency (or MaxConcurrencyPath); 0 or absent: all at once, as Step Functions' default of 10,000 is, locally. */
function concurrency(state: AslState, input: unknown, children: number): number {
  const declared = state.MaxConcurrencyPath !== undefined ? Number(referencePath(input, String(state.MaxConcurrencyPath))) : Number(state.MaxConcurrency ?? 0);
  if (!(Number.isInteger(declared) && declared >= 0)) throw new Error(`MaxConcurrency must be a non-negative integer, got ${declared}`);
  return declared === 0 ? Math.max(1, Math.min(children, 10_000)) : declared;
}

/** How many failed children the Map Run tolerates: ToleratedFailureCount, or the percentage of its children; 0 by default. */
function toleratedFailures(state: AslState, children: number): number {
  const count = state.ToleratedFailureCount === undefined ? undefined : Number(state.ToleratedFailureCount);
  const percentage = state.ToleratedFailurePercentage === undefined ? undefined : Number(state.ToleratedFailurePercentage);
  const byPercentage = percentage === undefined ? undefined : Math.floor((percentage / 100) * children);
  // With both, the Map Run fails as soon as either is exceeded.
  return Math.min(
    count ?? Number.POSITIVE_INFINITY,
    byPercentage ?? Number.POSITIVE_INFINITY,
    count === undefined && byPercentage === undefined ? 0 : Number.POSITIVE_INFINITY,
  );
}
