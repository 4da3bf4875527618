/**
 * What CancelOrphans receives: the EventBridge event Step Functions sends
 * when an execution's status changes; the rule passes only ABORTED and
 * TIMED_OUT executions of this state machine.
 * https://docs.aws.amazon.com/step-functions/latest/dg/eventbridge-integration.html
 */

/** The event's `detail-type`, and the statuses the rule passes on. */
export const EXECUTION_STATUS_CHANGE = 'Step Functions Execution Status Change';
export const EXECUTION_EVENT_SOURCE = 'aws.states';
export const STOPPED_STATUSES = ['ABORTED', 'TIMED_OUT'] as const;
export type StoppedStatus = (typeof STOPPED_STATUSES)[number];

export interface ExecutionStatusChange {
  readonly source?: string;
  readonly 'detail-type'?: string;
  readonly detail: {
    readonly executionArn: string;
    readonly stateMachineArn?: string;
    readonly name?: string;
    readonly status: string;
    /** The execution's input as JSON text (Step Functions includes it in the event). */
    readonly input?: string;
  };
}

/** The error the batch and its attempt record for an execution that stopped this way. */
export function stoppedError(status: string): string {
  switch (status) {
    case 'ABORTED':
      return 'ExecutionAborted: the execution was aborted; its running statements were cancelled';
    case 'TIMED_OUT':
      return 'ExecutionTimedOut: the execution timed out; its running statements were cancelled';
    default:
      throw new Error(`an execution that ended ${status} has nothing to cancel (only ${STOPPED_STATUSES.join(' and ')} are handled)`);
  }
}

/**
 * The error the batch and its attempt record when Plan of `takenBy` finds
 * them held by an execution Step Functions says has ended (`status`), or
 * knows no more (GONE: its process died with it, as a local engine's can).
 */
export function endedError(status: string, takenBy: string): string {
  const why =
    status === 'GONE'
      ? 'ExecutionGone: Step Functions knows no such execution any more'
      : (STOPPED_STATUSES as readonly string[]).includes(status)
        ? stoppedError(status)
        : `ExecutionEnded: the execution ended ${status} without recording it (its last step could not reach the manifest)`;
  return `${why}; its lease was taken over by ${takenBy}`;
}
