/** Environment of the Plan function (lib/publish-workflow.ts sets it). */
export const PlanEnv = {
  /**
   * How long, from the execution's start, a run waits for a lease held by
   * another running execution of a different batch before it fails with
   * PipelineBusyError and pages (docs/decisions/leases-of-ended-executions.md).
   */
  LEASE_WAIT_SECONDS: 'LEASE_WAIT_SECONDS',
} as const;

/** LEASE_WAIT_SECONDS when unset: half an hour, then the page. */
export const DEFAULT_LEASE_WAIT_SECONDS = 30 * 60;
