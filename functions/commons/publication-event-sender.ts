import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { type Environment, optionalEnv, requireEnv } from '../../domain/env.ts';
import { type PublicationEvent, PublicationEventError } from '../../domain/publication-events/publication-event.ts';
import { PublicationEventEnv } from '../emit-metrics/env.ts';
import { tracer } from './powertools.ts';

export type SendPublicationEvent = (event: PublicationEvent) => Promise<void>;

let cached: { endpoint: string | undefined; client: EventBridgeClient } | undefined;

function eventBridge(endpoint: string | undefined): EventBridgeClient {
  if (cached === undefined || cached.endpoint !== endpoint)
    cached = { endpoint, client: tracer.captureAWSv3Client(new EventBridgeClient({ ...(endpoint ? { endpoint } : {}), maxAttempts: 5 })) };
  return cached.client;
}

/**
 * Sends one publication event with PutEvents to the bus the environment
 * names. A request PutEvents accepts can still fail per entry (it answers
 * 200 with FailedEntryCount and the entry's ErrorCode): that is an error too.
 * https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevents.html
 */
export function publicationEventSender(env: Environment = process.env): SendPublicationEvent {
  const bus = requireEnv(PublicationEventEnv.EVENT_BUS, env);
  const client = eventBridge(optionalEnv(PublicationEventEnv.EVENTBRIDGE_ENDPOINT, env));
  return async (event) => {
    const answer = await client.send(
      new PutEventsCommand({
        Entries: [{ EventBusName: bus, Source: event.source, DetailType: event.detailType, Detail: JSON.stringify(event.detail) }],
      }),
    );
    const entry = answer.Entries?.[0];
    if ((answer.FailedEntryCount ?? 0) > 0 || entry?.EventId === undefined) {
      throw new PublicationEventError(
        `EventBridge did not accept the event ${event.detail.eventId} (${event.detailType}) on bus ${bus}: ${entry?.ErrorCode ?? 'no event id'}: ${entry?.ErrorMessage ?? ''}`.trim(),
      );
    }
  };
}
