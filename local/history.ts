/**
 * An execution's history as Step Functions would write it, counted from the
 * events aws-local-stepfunctions emits (fewer: it has no events for a Lambda
 * invocation's scheduling, start and end, nor a Map's start and end).
 * Step Functions fails an execution whose history reaches 25,000 events
 * ("Maximum execution history size", https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html);
 * the local runner fails it the same way (HISTORY_LIMIT_ERROR).
 * Event types: https://docs.aws.amazon.com/step-functions/latest/apireference/API_HistoryEvent.html
 */
import type { ExecutionEvent } from './runner.ts';

export const MAX_HISTORY_EVENTS = 25_000;

/** The error the local runner fails an execution with when its history passes MAX_HISTORY_EVENTS (the runner's own name: Step Functions documents the limit, not the error). */
export const HISTORY_LIMIT_ERROR = 'Local.HistoryLimitExceeded';

/**
 * History events one local event stands for:
 * - a Task entered: TaskStateEntered, then its attempt's LambdaFunctionScheduled, LambdaFunctionStarted and LambdaFunctionSucceeded or Failed;
 * - a retry: another attempt's three;
 * - a Map entered: MapStateEntered and MapStateStarted; exited: MapStateSucceeded and MapStateExited;
 * - a Map iteration started or ended, any other state entered or exited, the execution started or ended: one.
 * A StateFailed or StateCaught adds none (the attempt's failure is counted; a Catch writes no event of its own).
 */
export function historyEvents(event: ExecutionEvent): number {
  const type = event.state?.type;
  switch (event.type) {
    case 'StateEntered':
      return type === 'Task' ? 4 : type === 'Map' ? 2 : 1;
    case 'StateExited':
      return type === 'Map' ? 2 : 1;
    case 'StateRetried':
      return 3;
    case 'StateFailed':
    case 'StateCaught':
      return 0;
    default:
      return 1;
  }
}

/** Counts an execution's history as its events arrive. */
export class HistoryCounter {
  #count = 0;

  /** Adds an event; true once the history is over the limit. */
  add(event: ExecutionEvent): boolean {
    this.#count += historyEvents(event);
    return this.#count > MAX_HISTORY_EVENTS;
  }

  get count(): number {
    return this.#count;
  }
}
