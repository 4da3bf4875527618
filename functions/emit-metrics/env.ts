/** Environment of the EmitMetrics function, besides the warehouse target's (lib/publish-workflow.ts sets it). */
export const PublicationEventEnv = {
  /** Name or ARN of the EventBridge bus the publication events go to. */
  EVENT_BUS: 'PUBLICATION_EVENT_BUS',
  /** EventBridge endpoint; set only locally (the local endpoint, local/eventbridge-api.ts). */
  EVENTBRIDGE_ENDPOINT: 'EVENTBRIDGE_ENDPOINT',
} as const;
