/** Environment of the FreshnessMonitor function (lib/freshness-monitor.ts sets the warehouse target's). */
export const FreshnessMonitorEnv = {
  /** CloudWatch endpoint; set only locally (the local endpoint, local/cloudwatch-api.ts). */
  CLOUDWATCH_ENDPOINT: 'CLOUDWATCH_ENDPOINT',
} as const;
