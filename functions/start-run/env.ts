/** Environment of the StartRun function (lib/pipeline-schedules.ts sets it). */
export const StartRunEnv = {
  /** The state machine the scheduled runs start. */
  STATE_MACHINE_ARN: 'STATE_MACHINE_ARN',
} as const;
