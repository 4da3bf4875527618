/**
 * An execution's history as Step Functions writes it, built while the
 * local run goes from three sources: the events aws-local-stepfunctions
 * reports, the Task invocations the runner makes (their input and result)
 * and the Map Runs of distributed Maps (local/distributed-map.ts). Each
 * state is entered and, unless it fails the execution or its iteration,
 * exited; previousEventId follows each line of execution. What it writes,
 * and where the matching is inexact: docs/decisions/execution-history-events.md
 * https://docs.aws.amazon.com/step-functions/latest/apireference/API_HistoryEvent.html
 */
import { LOCAL_REGION } from '../lib/definition.ts';
import { referencePath } from './reference-path.ts';
import type { ExecutionEvent } from './runner.ts';

/** "Maximum execution history size": https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html */
export const MAX_HISTORY_EVENTS = 25_000;

/** The error the local runner fails an execution with when its history passes MAX_HISTORY_EVENTS (the runner's own name: Step Functions documents the limit, not the error). */
export const HISTORY_LIMIT_ERROR = 'Local.HistoryLimitExceeded';

/** One history event; its details may hold execution data (input, output, parameters), left out on request. */
export interface HistoryEvent {
  readonly id: number;
  readonly previousEventId: number;
  /** Epoch milliseconds. */
  readonly timestamp: number;
  readonly type: string;
  /** e.g. `taskScheduledEventDetails`. */
  readonly detailsKey?: string;
  /** A value may be a function: read when the event is served (a Map Run's item count is known after its start). */
  readonly details?: Readonly<Record<string, unknown>>;
}

/** A distributed Map's run as local/distributed-map.ts reports it once its items are selected. */
export interface MapRunInfo {
  readonly mapRunArn: string;
  readonly itemCount: number;
}

export type TaskHandlers = Record<string, (input: unknown) => Promise<unknown>>;

/** Detail members that are execution data (GetExecutionHistory's includeExecutionData). */
const EXECUTION_DATA: ReadonlySet<string> = new Set(['input', 'output', 'parameters']);
const NOT_TRUNCATED = { truncated: false } as const;

type TaskResource =
  | { readonly kind: 'lambda'; readonly functionArn: string }
  | { readonly kind: 'service'; readonly resourceType: string; readonly resource: string };

interface StateInfo {
  readonly type: string;
  readonly task?: TaskResource;
  readonly timeoutSeconds?: number;
  readonly heartbeatSeconds?: number;
  readonly inputPath?: string | null;
  readonly itemsPath?: string;
  readonly distributed: boolean;
  /** The Map states it runs in, outermost first. */
  readonly maps: readonly string[];
}

type AslStates = Record<string, Record<string, unknown>>;

/** What each state of a definition writes to the history, its nested states' included. */
function stateInfos(states: AslStates, maps: readonly string[] = [], infos = new Map<string, StateInfo>()): Map<string, StateInfo> {
  for (const [name, state] of Object.entries(states)) {
    const processor = (state.ItemProcessor ?? state.Iterator) as { States: AslStates; ProcessorConfig?: { Mode?: string } } | undefined;
    infos.set(name, {
      type: String(state.Type),
      ...(state.Type === 'Task' ? { task: taskResource(String(state.Resource)) } : {}),
      ...(typeof state.TimeoutSeconds === 'number' ? { timeoutSeconds: state.TimeoutSeconds } : {}),
      ...(typeof state.HeartbeatSeconds === 'number' ? { heartbeatSeconds: state.HeartbeatSeconds } : {}),
      ...('InputPath' in state ? { inputPath: state.InputPath as string | null } : {}),
      ...(typeof state.ItemsPath === 'string' ? { itemsPath: state.ItemsPath } : {}),
      distributed: processor?.ProcessorConfig?.Mode === 'DISTRIBUTED',
      maps,
    });
    if (processor) stateInfos(processor.States, [...maps, name], infos);
    // A Parallel's branches run in the Parallel's own line.
    for (const branch of (state.Branches ?? []) as { States: AslStates }[]) stateInfos(branch.States, maps, infos);
  }
  return infos;
}

/** `arn:aws:states:::sns:publish` -> sns / publish; anything else the local engine runs is a Lambda function ARN. */
function taskResource(resource: string): TaskResource {
  const integration = /^arn:[^:]+:states:::(.+)$/.exec(resource);
  if (!integration) return { kind: 'lambda', functionArn: resource };
  const parts = integration[1]!.split(':');
  const action = parts.pop()!;
  return { kind: 'service', resourceType: parts.join(':'), resource: action };
}

/** One line of execution: the execution itself, or a Map iteration. */
interface Line {
  readonly id: string;
  last: number;
  /** A Map's or Parallel's failure, written before the line's next event unless a Retry starts it again. */
  pending?: () => void;
  /** A Task of this iteration was refused: the iteration is aborted, not failed. */
  aborted: boolean;
  /** An iteration of a Map that has failed already: Step Functions would not run it, nor write its events. */
  ghost?: boolean;
  /** The visits open in this line, oldest first. */
  readonly open: Set<Visit>;
}

/** One invocation of a Task's handler. */
interface Invocation {
  readonly parameters: unknown;
  readonly startedAt: number;
  endedAt?: number;
  output?: unknown;
  refused: boolean;
}

/** A Map's (or Parallel's) own events. */
interface Scope {
  started: number;
  /** What the next iteration follows: the Map's start, then the end of the iteration that ended last. */
  last: number;
  /** The last MapIterationSucceeded (or MapRunSucceeded): what MapStateSucceeded and MapStateExited follow. */
  lastEnd?: number;
  /** The failed iteration's last event (or MapRunFailed): what MapStateFailed follows. */
  failedAt?: number;
  /** The iterations running, by index. */
  readonly iterations: Map<number, Line>;
  failed: boolean;
}

/** One stay in a state, from entered to exited. */
interface Visit {
  readonly name: string;
  readonly info: StateInfo;
  readonly line: Line;
  attempt?: Invocation;
  failed: boolean;
  scope?: Scope;
}

export interface ExecutionHistoryOptions {
  /** The state machine's role, which ExecutionStarted names. */
  readonly roleArn?: string;
}

export class ExecutionHistory {
  readonly #events: HistoryEvent[] = [];
  readonly #infos: Map<string, StateInfo>;
  readonly #top: Line = { id: 'execution', last: 0, aborted: false, open: new Set() };
  /** Lines of the running Map iterations, by `<outermost Map>#<index>`. */
  readonly #iterations = new Map<string, Line>();
  /** Visits by their state's input object (the library hands every event of a visit the same one), and by line and state otherwise. */
  readonly #visitsByInput = new WeakMap<object, Map<string, Visit>>();
  readonly #visitsByLine = new Map<string, Visit>();
  /** Open visits of Map states, by name, oldest first. */
  readonly #openMaps = new Map<string, Visit[]>();
  /** Invocations not yet matched to an attempt, by state. */
  readonly #invocations = new Map<string, Invocation[]>();
  /** Map Runs by distributed Map state, in the order they started; and how many attempts have claimed one. */
  readonly #mapRuns = new Map<string, MapRunInfo[]>();
  readonly #mapRunsClaimed = new Map<string, number>();
  #lastTimestamp = 0;

  constructor(
    definition: { readonly States: unknown },
    private readonly options: ExecutionHistoryOptions = {},
  ) {
    this.#infos = stateInfos(definition.States as AslStates);
  }

  get length(): number {
    return this.#events.length;
  }

  /** The events so far, oldest first. */
  events(): readonly HistoryEvent[] {
    return this.#events;
  }

  /** `handlers`, each recording its invocations (what it was called with, what it returned) for this history. */
  recording(handlers: TaskHandlers): TaskHandlers {
    return Object.fromEntries(
      Object.entries(handlers).map(([state, handler]) => [
        state,
        async (input: unknown) => {
          // Recorded before the handler runs, in the same turn the library reported the attempt's start.
          const invocation: Invocation = { parameters: input, startedAt: Date.now(), refused: false };
          this.queue(state).push(invocation);
          try {
            const output = await handler(input);
            invocation.output = output;
            return output;
          } finally {
            invocation.endedAt = Date.now();
          }
        },
      ]),
    );
  }

  /** The invocation of `state` with `parameters` was refused before its function ran (a failed Map starts no further iterations). */
  refused(state: string, parameters: unknown): void {
    const invocation = [...this.queue(state)].reverse().find((i) => i.parameters === parameters);
    if (invocation) invocation.refused = true;
  }

  /** A distributed Map started its Map Run. */
  mapRunStarted(state: string, run: MapRunInfo): void {
    const runs = this.#mapRuns.get(state) ?? [];
    runs.push(run);
    this.#mapRuns.set(state, runs);
  }

  /** Adds what one library event stands for; true once the history is over MAX_HISTORY_EVENTS. */
  add(event: ExecutionEvent): boolean {
    const raw = event as ExecutionEvent & { input?: unknown; output?: unknown; parentState?: { name: string } };
    const at = event.timestamp;
    switch (event.type) {
      case 'ExecutionStarted':
        this.append('ExecutionStarted', at, 0, 'executionStartedEventDetails', {
          input: raw.input,
          inputDetails: NOT_TRUNCATED,
          ...(this.options.roleArn ? { roleArn: this.options.roleArn } : {}),
        });
        break;
      case 'ExecutionSucceeded':
      case 'ExecutionFailed':
      case 'ExecutionAborted':
      case 'ExecutionTimeout':
        this.ended(event, raw.output);
        break;
      case 'StateEntered':
        this.entered(event);
        break;
      case 'StateExited':
        this.exited(event);
        break;
      case 'StateFailed':
        this.failed(event);
        break;
      case 'StateRetried':
        this.retried(event);
        break;
      case 'StateCaught':
        this.flush(this.visitOf(event).line);
        break;
      case 'MapIterationStarted':
      case 'MapIterationSucceeded':
      case 'MapIterationFailed':
        this.iteration(event.type, raw.parentState!.name, event.index!, at);
        break;
      default:
        // Parallel branches have no events of their own in Step Functions' history.
        break;
    }
    return this.length > MAX_HISTORY_EVENTS;
  }

  /**
   * The execution's end. One whose history went over the limit failed,
   * however the local run ended: the runner stops it once it is over, and
   * the event log can lag the run (it may have ended before).
   */
  private ended(event: ExecutionEvent, output: unknown): void {
    const at = event.timestamp;
    if (this.length > MAX_HISTORY_EVENTS) {
      this.chain(this.#top, 'ExecutionFailed', at, 'executionFailedEventDetails', { error: HISTORY_LIMIT_ERROR, cause: historyLimitCause(this.length) });
      return;
    }
    if (event.type === 'ExecutionAborted') {
      // StopExecution's error and cause, when given (local/runner.ts).
      this.append('ExecutionAborted', at, 0, 'executionAbortedEventDetails', {
        ...(event.Error === undefined ? {} : { error: event.Error }),
        ...(event.Cause === undefined ? {} : { cause: text(event.Cause) }),
      });
      return;
    }
    this.flush(this.#top);
    if (event.type === 'ExecutionSucceeded') {
      this.chain(this.#top, 'ExecutionSucceeded', at, 'executionSucceededEventDetails', { output, outputDetails: NOT_TRUNCATED });
    } else if (event.type === 'ExecutionFailed') {
      this.chain(this.#top, 'ExecutionFailed', at, 'executionFailedEventDetails', { error: event.Error, cause: text(event.Cause) });
    } else {
      this.chain(this.#top, 'ExecutionTimedOut', at, 'executionTimedOutEventDetails', { error: 'States.Timeout' });
    }
  }

  private entered(event: ExecutionEvent): void {
    const name = event.state!.name;
    const info = this.info(name, event.state!.type);
    const line = this.lineOf(info, event.index);
    if (line.ghost) return;
    this.flush(line);
    const visit: Visit = { name, info, line, failed: false };
    this.remember(visit, event.state!.input);
    line.open.add(visit);
    this.chain(line, `${info.type}StateEntered`, event.timestamp, 'stateEnteredEventDetails', { name, input: event.state!.input, inputDetails: NOT_TRUNCATED });
    if (info.type === 'Task') this.attemptStarted(visit, event.state!.input, event.timestamp);
    if (info.type === 'Map' || info.type === 'Parallel') this.scopeStarted(visit, event.state!.input, event.timestamp);
  }

  private exited(event: ExecutionEvent): void {
    const visit = this.visitOf(event);
    const { line, info, name } = visit;
    const at = event.timestamp;
    if (line.ghost) return;
    this.flush(line);
    line.open.delete(visit);
    const exited = { name, output: event.state!.output, outputDetails: NOT_TRUNCATED };
    if (info.type === 'Task') {
      const invocation = visit.attempt;
      if (!visit.failed && invocation && !invocation.refused) {
        const ended = invocation.endedAt ?? at;
        if (info.task?.kind === 'service') {
          this.chain(line, 'TaskSucceeded', ended, 'taskSucceededEventDetails', {
            ...serviceOf(info),
            output: invocation.output,
            outputDetails: NOT_TRUNCATED,
          });
        } else {
          this.chain(line, 'LambdaFunctionSucceeded', ended, 'lambdaFunctionSucceededEventDetails', {
            output: invocation.output,
            outputDetails: NOT_TRUNCATED,
          });
        }
      }
      this.chain(line, 'TaskStateExited', at, 'stateExitedEventDetails', exited);
    } else if ((info.type === 'Map' || info.type === 'Parallel') && visit.scope) {
      if (visit.failed) {
        // Caught: its failure was written when the Catch took it.
        this.chain(line, `${info.type}StateExited`, at, 'stateExitedEventDetails', exited);
      } else {
        if (info.distributed) visit.scope.lastEnd = this.chain(line, 'MapRunSucceeded', at);
        const after = visit.scope.lastEnd ?? visit.scope.started;
        this.append(`${info.type}StateSucceeded`, at, after);
        line.last = this.append(`${info.type}StateExited`, at, after, 'stateExitedEventDetails', exited);
      }
      this.closeScope(visit);
    } else {
      this.chain(line, `${info.type}StateExited`, at, 'stateExitedEventDetails', exited);
    }
    this.forget(visit, event.state!.input);
  }

  private failed(event: ExecutionEvent): void {
    const visit = this.visitOf(event);
    const { line, info } = visit;
    const at = event.timestamp;
    if (line.ghost) return;
    this.flush(line);
    visit.failed = true;
    const failure = { error: event.Error, cause: text(event.Cause) };
    if (info.type === 'Task') {
      const invocation = visit.attempt;
      if (!invocation) return; // failed before its function was called (Parameters, InputPath)
      if (invocation.refused) {
        line.aborted = true;
        this.chain(line, 'TaskStateAborted', at);
        return;
      }
      const timedOut = event.Error === 'States.Timeout';
      if (info.task?.kind === 'service') {
        this.chain(line, timedOut ? 'TaskTimedOut' : 'TaskFailed', at, timedOut ? 'taskTimedOutEventDetails' : 'taskFailedEventDetails', {
          ...serviceOf(info),
          ...failure,
        });
      } else {
        this.chain(
          line,
          timedOut ? 'LambdaFunctionTimedOut' : 'LambdaFunctionFailed',
          at,
          timedOut ? 'lambdaFunctionTimedOutEventDetails' : 'lambdaFunctionFailedEventDetails',
          failure,
        );
      }
    } else if ((info.type === 'Map' || info.type === 'Parallel') && visit.scope) {
      const scope = visit.scope;
      scope.failed = true;
      if (info.distributed) scope.failedAt = this.chain(line, 'MapRunFailed', at, 'mapRunFailedEventDetails', failure);
      this.abortIterations(scope, at);
      line.pending = () => {
        line.last = this.append(`${info.type}StateFailed`, at, scope.failedAt ?? line.last);
      };
    }
  }

  private retried(event: ExecutionEvent): void {
    const visit = this.visitOf(event);
    const { line, info } = visit;
    if (line.ghost) return;
    // A retried Map or Parallel has not failed: it starts again.
    if (line.pending && visit.scope) line.pending = undefined;
    this.flush(line);
    visit.failed = false;
    if (info.type === 'Task') this.attemptStarted(visit, event.state!.input, event.timestamp);
    if (visit.scope) this.scopeStarted(visit, event.state!.input, event.timestamp, visit.scope.failedAt ?? line.last);
  }

  private iteration(type: string, mapName: string, index: number, at: number): void {
    const map = this.#openMaps.get(mapName)?.at(-1);
    const scope = map?.scope;
    // An iteration of a top-level Map has a line of its own; one of a nested Map runs in its Map's line (see above).
    const nested = (map?.info ?? this.info(mapName, 'Map')).maps.length > 0;
    const key = `${mapName}#${index}`;
    const details = { index, name: mapName };
    if (type === 'MapIterationStarted') {
      const line: Line = nested && map ? map.line : { id: key, last: 0, aborted: false, open: new Set() };
      if (!nested) this.#iterations.set(key, line);
      // The local engine goes on starting the iterations it had queued when the Map failed; Step Functions does not.
      if (!nested && (!scope || scope.failed)) {
        line.ghost = true;
        return;
      }
      scope?.iterations.set(index, line);
      line.last = this.append('MapIterationStarted', at, scope?.last ?? line.last, 'mapIterationStartedEventDetails', details);
      return;
    }
    const line = nested && map ? map.line : (this.#iterations.get(key) ?? { id: key, last: scope?.last ?? 0, aborted: false, open: new Set() });
    if (!nested) {
      this.#iterations.delete(key);
      if (line.ghost) return;
      scope?.iterations.delete(index);
    }
    this.flush(line);
    if (type === 'MapIterationSucceeded') {
      const id = this.append('MapIterationSucceeded', at, line.last, 'mapIterationSucceededEventDetails', details);
      if (scope) {
        scope.last = line.last;
        scope.lastEnd = id;
      }
      if (nested) line.last = id;
    } else if (line.aborted) {
      const id = this.append('MapIterationAborted', at, line.last, 'mapIterationAbortedEventDetails', details);
      if (nested) line.last = id;
    } else {
      // An inline Map fails with its first failed iteration (only a Map Run tolerates failures): it starts no further ones.
      if (scope) {
        scope.failedAt ??= line.last;
        scope.failed = true;
      }
      const id = this.append('MapIterationFailed', at, line.last, 'mapIterationFailedEventDetails', details);
      if (nested) line.last = id;
    }
  }

  /**
   * A Map failed: its running iterations are stopped, each state open in
   * them StateAborted (those that can be: Task, Map, Parallel, Wait), then
   * the iteration MapIterationAborted, all after the event that failed it.
   */
  private abortIterations(scope: Scope, at: number): void {
    const after = scope.failedAt ?? scope.last;
    for (const [index, line] of scope.iterations) {
      for (const visit of line.open) {
        if (['Task', 'Map', 'Parallel', 'Wait'].includes(visit.info.type)) this.append(`${visit.info.type}StateAborted`, at, after);
      }
      const mapName = this.mapOfLine(line.id);
      this.append('MapIterationAborted', at, after, 'mapIterationAbortedEventDetails', { index, name: mapName });
      line.ghost = true;
    }
    scope.iterations.clear();
  }

  /** The Map an iteration line belongs to (its key is `<Map>#<index>`). */
  private mapOfLine(lineId: string): string {
    return lineId.slice(0, lineId.lastIndexOf('#'));
  }

  /** A Task attempt begins: the invocation it made, if any, is scheduled and started. */
  private attemptStarted(visit: Visit, input: unknown, at: number): void {
    const invocation = this.take(visit.name, input);
    visit.attempt = invocation;
    if (!invocation || invocation.refused) return;
    const { info, line } = visit;
    const timeouts = {
      ...(info.timeoutSeconds !== undefined ? { timeoutInSeconds: info.timeoutSeconds } : {}),
      ...(info.heartbeatSeconds !== undefined ? { heartbeatInSeconds: info.heartbeatSeconds } : {}),
    };
    const started = Math.max(at, invocation.startedAt);
    if (info.task?.kind === 'service') {
      this.chain(line, 'TaskScheduled', started, 'taskScheduledEventDetails', {
        ...serviceOf(info),
        region: LOCAL_REGION,
        parameters: invocation.parameters,
        ...timeouts,
      });
      this.chain(line, 'TaskStarted', started, 'taskStartedEventDetails', serviceOf(info));
    } else {
      const functionArn = info.task?.kind === 'lambda' ? info.task.functionArn : '';
      this.chain(line, 'LambdaFunctionScheduled', started, 'lambdaFunctionScheduledEventDetails', {
        resource: functionArn,
        input: invocation.parameters,
        inputDetails: NOT_TRUNCATED,
        ...(info.timeoutSeconds !== undefined ? { timeoutInSeconds: info.timeoutSeconds } : {}),
      });
      this.chain(line, 'LambdaFunctionStarted', started);
    }
  }

  /** A Map (or Parallel) starts, or starts again after a retry. */
  private scopeStarted(visit: Visit, input: unknown, at: number, after = visit.line.last): void {
    const { info, line, name } = visit;
    if (!visit.scope) {
      const open = this.#openMaps.get(name) ?? [];
      open.push(visit);
      this.#openMaps.set(name, open);
    }
    if (info.type === 'Parallel') {
      const started = this.append('ParallelStateStarted', at, after);
      line.last = started;
      visit.scope = { started, last: started, iterations: new Map(), failed: false };
      return;
    }
    let length: unknown;
    if (info.distributed) {
      // The stand-in Task's invocation: matched here, so the queue does not grow.
      this.take(name, input);
      const claimed = this.#mapRunsClaimed.get(name) ?? 0;
      this.#mapRunsClaimed.set(name, claimed + 1);
      const run = () => this.#mapRuns.get(name)?.[claimed];
      length = () => run()?.itemCount ?? 0;
      const started = this.append('MapStateStarted', at, after, 'mapStateStartedEventDetails', { length });
      line.last = started;
      this.chain(line, 'MapRunStarted', at, 'mapRunStartedEventDetails', { mapRunArn: () => run()?.mapRunArn ?? '' });
      visit.scope = { started: line.last, last: line.last, iterations: new Map(), failed: false };
      return;
    }
    length = itemCount(info, input);
    const started = this.append('MapStateStarted', at, after, 'mapStateStartedEventDetails', { length });
    line.last = started;
    visit.scope = { started, last: started, iterations: new Map(), failed: false };
  }

  private closeScope(visit: Visit): void {
    const open = (this.#openMaps.get(visit.name) ?? []).filter((v) => v !== visit);
    if (open.length > 0) this.#openMaps.set(visit.name, open);
    else this.#openMaps.delete(visit.name);
  }

  /** The line a state's event belongs to: the execution's, or its outermost Map's iteration (the library tags the event with that iteration's index). */
  private lineOf(info: StateInfo, index: number | undefined): Line {
    const outermost = info.maps[0];
    if (outermost === undefined || index === undefined) return this.#top;
    const key = `${outermost}#${index}`;
    let line = this.#iterations.get(key);
    if (!line) {
      line = { id: key, last: 0, aborted: false, open: new Set() };
      this.#iterations.set(key, line);
    }
    return line;
  }

  private info(name: string, type: string): StateInfo {
    return this.#infos.get(name) ?? { type, distributed: false, maps: [] };
  }

  private remember(visit: Visit, input: unknown): void {
    if (input !== null && typeof input === 'object') {
      const byName = this.#visitsByInput.get(input) ?? new Map<string, Visit>();
      byName.set(visit.name, visit);
      this.#visitsByInput.set(input, byName);
    } else {
      this.#visitsByLine.set(`${visit.line.id}|${visit.name}`, visit);
    }
  }

  private forget(visit: Visit, input: unknown): void {
    if (input !== null && typeof input === 'object') {
      const byName = this.#visitsByInput.get(input);
      if (byName?.get(visit.name) === visit) byName.delete(visit.name);
    } else if (this.#visitsByLine.get(`${visit.line.id}|${visit.name}`) === visit) {
      this.#visitsByLine.delete(`${visit.line.id}|${visit.name}`);
    }
  }

  /** The visit an event of a state belongs to; one the history has not seen entered is taken as entered now. */
  private visitOf(event: ExecutionEvent): Visit {
    const { name, input, type } = event.state!;
    const info = this.info(name, type);
    const found =
      input !== null && typeof input === 'object'
        ? this.#visitsByInput.get(input)?.get(name)
        : this.#visitsByLine.get(`${this.lineOf(info, event.index).id}|${name}`);
    if (found) return found;
    const visit: Visit = { name, info, line: this.lineOf(info, event.index), failed: false };
    this.remember(visit, input);
    return visit;
  }

  private queue(state: string): Invocation[] {
    let queue = this.#invocations.get(state);
    if (!queue) {
      queue = [];
      this.#invocations.set(state, queue);
    }
    return queue;
  }

  /** The invocation that made this attempt: the one called with this very input, else the oldest unmatched. */
  private take(state: string, input: unknown): Invocation | undefined {
    const queue = this.queue(state);
    const same = queue.findIndex((i) => i.parameters === input);
    const at = same >= 0 ? same : 0;
    return queue.splice(at, 1)[0];
  }

  /** Writes the line's pending failure, if any. */
  private flush(line: Line): void {
    const pending = line.pending;
    line.pending = undefined;
    pending?.();
  }

  /** Appends an event after the line's last, which it becomes. */
  private chain(line: Line, type: string, at: number, detailsKey?: string, details?: Record<string, unknown>): number {
    line.last = this.append(type, at, line.last, detailsKey, details);
    return line.last;
  }

  private append(type: string, at: number, previousEventId: number, detailsKey?: string, details?: Record<string, unknown>): number {
    // Ids and timestamps rise together, whichever source an event came from.
    this.#lastTimestamp = Math.max(this.#lastTimestamp, at);
    const id = this.#events.length + 1;
    this.#events.push({ id, previousEventId, timestamp: this.#lastTimestamp, type, ...(detailsKey ? { detailsKey, details: details ?? {} } : {}) });
    return id;
  }
}

/** An event as GetExecutionHistory serves it: epoch seconds, details with execution data as JSON text (or left out). */
export function servedEvent(event: HistoryEvent, withData: boolean): Record<string, unknown> {
  const served: Record<string, unknown> = { timestamp: event.timestamp / 1000, type: event.type, id: event.id, previousEventId: event.previousEventId };
  if (event.detailsKey) {
    const details: Record<string, unknown> = {};
    for (const [key, stored] of Object.entries(event.details ?? {})) {
      if (EXECUTION_DATA.has(key) && !withData) continue;
      const value = typeof stored === 'function' ? (stored as () => unknown)() : stored;
      if (value === undefined) continue;
      details[key] = EXECUTION_DATA.has(key) ? JSON.stringify(value ?? null) : value;
    }
    served[event.detailsKey] = details;
  }
  return served;
}

export function historyLimitCause(count: number): string {
  return `the execution's history reached ${count} events, more than Step Functions' ${MAX_HISTORY_EVENTS}`;
}

function serviceOf(info: StateInfo): { resourceType: string; resource: string } {
  return info.task?.kind === 'service'
    ? { resourceType: info.task.resourceType, resource: info.task.resource }
    : { resourceType: 'lambda', resource: 'invoke' };
}

/** How many items a Map iterates: its ItemsPath (after InputPath) of its input; 0 when the path finds no array. */
function itemCount(info: StateInfo, input: unknown): number {
  try {
    const effective = info.inputPath === undefined ? input : info.inputPath === null ? {} : referencePath(input, info.inputPath);
    const items = info.itemsPath === undefined ? effective : referencePath(effective, info.itemsPath);
    return Array.isArray(items) ? items.length : 0;
  } catch {
    return 0;
  }
}

function text(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : JSON.stringify(value);
}
