/** Environment of the StartRun function (lib/pipeline-schedules.ts sets it). */
export const StartRunEnv = {
  /** The state machine the scheduled runs start. */
  STATE_MACHINE_ARN: 'STATE_MACHINE_ARN',
  /** Step Functions endpoint; set only locally (the local endpoint, local/step-functions-api.ts). */
  STEP_FUNCTIONS_ENDPOINT: 'STEP_FUNCTIONS_ENDPOINT',
} as const;
