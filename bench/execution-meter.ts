/**
 * What one execution costs in the units AWS bills, from the local runner's events
 * (a distributed Map's child executions included): state transitions (states
 * entered plus retries), also of the load Map's inner states; Lambda requests and
 * each attempt's duration (StateEntered, or StateRetried after its wait, to its
 * StateFailed or StateExited) rounded up to the ms; the largest state payload in
 * JSON bytes; when Publish ran; each top-level state's time. https://aws.amazon.com/step-functions/pricing/
 */

import type { Architecture } from '../cli/prices.ts';
import type { ExecutionEvent } from '../local/runner.ts';

type AslStates = Record<string, Record<string, unknown>>;

/** Every state name inside `state`'s item processors (Map in Map included). */
function nestedStateNames(state: Record<string, unknown>): string[] {
  const inner = (state.ItemProcessor ?? state.Iterator) as { States?: AslStates } | undefined;
  if (!inner?.States) return [];
  return Object.entries(inner.States).flatMap(([name, s]) => [name, ...nestedStateNames(s)]);
}

/** The top-level Map state of the load phase: the one whose item processor runs `taskState` (LoadChunk), at any depth. */
export function loadPhaseMap(definition: { States: unknown }, taskState = 'LoadChunk'): string {
  for (const [name, state] of Object.entries(definition.States as AslStates)) {
    if (nestedStateNames(state).includes(taskState)) return name;
  }
  throw new Error(`no Map state of the definition runs ${taskState}`);
}

/** The states of the load phase: those nested inside loadPhaseMap, at any depth. */
export function loadPhaseStates(definition: { States: unknown }, taskState = 'LoadChunk'): ReadonlySet<string> {
  const map = (definition.States as AslStates)[loadPhaseMap(definition, taskState)]!;
  return new Set(nestedStateNames(map));
}

export interface ExecutionFigures {
  readonly transitions: number;
  readonly loadTransitions: number;
  readonly lambdaRequests: number;
  /** Sum of the Lambda invocations' durations, ms. */
  readonly lambdaMs: number;
  /** GB-seconds of those invocations at each function's memory, by the functions' architecture. */
  readonly lambdaGbSeconds: Readonly<Record<Architecture, number>>;
  readonly largestPayloadBytes: number;
  /** Chunks whose LoadChunk succeeded (loaded, or found loaded); one still running ends it with a caught LoadStillRunningError instead. */
  readonly chunksLoaded: number;
  readonly publishWindow?: { readonly start: number; readonly end: number };
  /** Top-level state name -> ms from entered to exited (summed when entered again). */
  readonly stepMs: Readonly<Record<string, number>>;
}

export interface MeterOptions {
  /** Lambda Task state name -> its function's memory and architecture (prices.ts lambdaFunctions). */
  readonly lambdaFunctions: Readonly<Record<string, { memoryMb: number; architecture: Architecture }>>;
  readonly loadStates: ReadonlySet<string>;
  /** The definition's top-level states. */
  readonly topLevelStates: ReadonlySet<string>;
}

const bytes = (value: unknown) => (value === undefined ? 0 : Buffer.byteLength(JSON.stringify(value)));

/** Collects one execution at a time: `reset()`, then feed it the runner's onEvent, then `figures()`. */
export class ExecutionMeter {
  private transitions = 0;
  private loadTransitions = 0;
  private lambdaRequests = 0;
  private lambdaMs = 0;
  private lambdaGbSeconds: Record<Architecture, number> = { arm64: 0, x86_64: 0 };
  private largestPayloadBytes = 0;
  private chunksLoaded = 0;
  private publishWindow: { start: number; end: number } | undefined;
  private stepMs: Record<string, number> = {};
  private readonly stepEntered = new Map<string, number>();
  /** Entered-at timestamps of running Lambda Tasks, by execution, Map iteration and state. */
  private readonly running = new Map<string, number[]>();

  constructor(private readonly options: MeterOptions) {}

  reset(): void {
    this.transitions = 0;
    this.loadTransitions = 0;
    this.lambdaRequests = 0;
    this.lambdaMs = 0;
    this.lambdaGbSeconds = { arm64: 0, x86_64: 0 };
    this.largestPayloadBytes = 0;
    this.chunksLoaded = 0;
    this.publishWindow = undefined;
    this.running.clear();
    this.stepMs = {};
    this.stepEntered.clear();
  }

  readonly onEvent = (event: ExecutionEvent, executionId: string): void => {
    const state = event.state;
    if (!state) return;
    const fn = this.options.lambdaFunctions[state.name];
    const memoryMb = fn?.memoryMb;
    const key = `${executionId}|${event.index ?? ''}|${state.name}`;
    switch (event.type) {
      case 'StateEntered':
      case 'StateRetried':
        this.transitions += 1;
        if (this.options.loadStates.has(state.name)) this.loadTransitions += 1;
        if (memoryMb !== undefined) this.lambdaRequests += 1;
        break;
    }
    // An attempt of a Lambda Task starts when it is entered or retried (after the retry's wait) and ends when it fails or exits.
    if ((event.type === 'StateEntered' || event.type === 'StateRetried') && memoryMb !== undefined) {
      this.running.set(key, [...(this.running.get(key) ?? []), event.timestamp]);
    }
    const topLevel = event.index === undefined && this.options.topLevelStates.has(state.name);
    if (event.type === 'StateEntered' && topLevel) this.stepEntered.set(state.name, event.timestamp);
    if (event.type === 'StateExited' && topLevel && this.stepEntered.has(state.name)) {
      this.stepMs[state.name] = (this.stepMs[state.name] ?? 0) + event.timestamp - this.stepEntered.get(state.name)!;
    }
    if (event.type === 'StateEntered') {
      this.largestPayloadBytes = Math.max(this.largestPayloadBytes, bytes(state.input));
      if (state.name === 'Publish') this.publishWindow = { start: event.timestamp, end: Infinity };
    }
    if (event.type === 'StateExited' || event.type === 'StateFailed') {
      if (event.type === 'StateExited') this.largestPayloadBytes = Math.max(this.largestPayloadBytes, bytes(state.output));
      if (memoryMb !== undefined) {
        const entered = this.running.get(key)?.shift();
        if (entered !== undefined) {
          const ms = Math.max(1, Math.ceil(event.timestamp - entered));
          this.lambdaMs += ms;
          this.lambdaGbSeconds[fn!.architecture] += (memoryMb / 1024) * (ms / 1000);
        }
      }
      if (state.name === 'Publish' && this.publishWindow) this.publishWindow.end = event.timestamp;
      if (event.type === 'StateExited' && state.name === 'LoadChunk') {
        this.chunksLoaded += 1;
      }
    }
  };

  figures(): ExecutionFigures {
    return {
      transitions: this.transitions,
      loadTransitions: this.loadTransitions,
      lambdaRequests: this.lambdaRequests,
      lambdaMs: this.lambdaMs,
      lambdaGbSeconds: { ...this.lambdaGbSeconds },
      largestPayloadBytes: this.largestPayloadBytes,
      chunksLoaded: this.chunksLoaded,
      ...(this.publishWindow ? { publishWindow: { ...this.publishWindow } } : {}),
      stepMs: { ...this.stepMs },
    };
  }
}
