// The local EventBridge endpoint, through the real @aws-sdk/client-eventbridge
// client: PutEvents recorded with EventBridge's checks (a bad entry fails
// alone, a bad request whole), and the publication-event sender of
// EmitMetrics against it.
import { gzipSync } from 'node:zlib';
import { type EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PUBLICATION_EVENT_SOURCE,
  PublicationDetailType,
  type PublicationEvent,
  PublicationEventError,
} from '../../domain/publication-events/publication-event.ts';
import { publicationEventSender } from '../../functions/commons/publication-event-sender.ts';
import { LOCAL_AWS_ENV, localEventBridgeClient, localEventsEnvironment } from '../../local/aws-clients.ts';
import { type LocalEventBridgeApi, startLocalEventBridgeApi } from '../../local/eventbridge-api.ts';

let events: LocalEventBridgeApi;
let client: EventBridgeClient;

beforeAll(async () => {
  events = await startLocalEventBridgeApi({ buses: ['publications'] });
  client = localEventBridgeClient(events.endpoint);
  // The sender's client takes region and credentials from the environment, as in Lambda.
  Object.assign(process.env, LOCAL_AWS_ENV);
});
afterAll(() => events?.close());

const entry = (detail: unknown, more: Record<string, unknown> = {}) => ({
  Source: 'test',
  DetailType: 'Test Happened',
  Detail: JSON.stringify(detail),
  ...more,
});

describe('local EventBridge endpoint', () => {
  it('records an accepted event under the id PutEvents answered, on the bus named (default when none)', async () => {
    const before = events.entries.length;
    const answer = await client.send(new PutEventsCommand({ Entries: [entry({ n: 1 }), entry({ n: 2 }, { EventBusName: 'publications' })] }));

    expect(answer.FailedEntryCount).toBe(0);
    const recorded = events.entries.slice(before);
    expect(recorded.map((e) => [e.id, e.bus, e.source, e.detailType, e.detail])).toEqual([
      [answer.Entries![0]!.EventId, 'default', 'test', 'Test Happened', { n: 1 }],
      [answer.Entries![1]!.EventId, 'publications', 'test', 'Test Happened', { n: 2 }],
    ]);
  });

  it('fails a bad entry alone: detail not a JSON object, a bus that does not exist, a missing source', async () => {
    const before = events.entries.length;
    const answer = await client.send(
      new PutEventsCommand({
        Entries: [
          { Source: 'test', DetailType: 'Test Happened', Detail: '[1, 2]' },
          entry({ n: 3 }, { EventBusName: 'arn:aws:events:us-east-1:000000000000:event-bus/nowhere' }),
          { DetailType: 'Test Happened', Detail: '{}' },
          entry({ n: 4 }),
        ],
      }),
    );

    expect(answer.FailedEntryCount).toBe(3);
    expect(answer.Entries!.map((e) => e.ErrorCode ?? 'ok')).toEqual(['MalformedDetail', 'ResourceNotFoundException', 'InvalidArgument', 'ok']);
    expect(events.entries.slice(before).map((e) => e.detail)).toEqual([{ n: 4 }]);
  });

  it('refuses a request of more than 10 entries, or over 256 KB, recording none of it', async () => {
    const before = events.entries.length;
    await expect(client.send(new PutEventsCommand({ Entries: Array.from({ length: 11 }, (_, n) => entry({ n })) }))).rejects.toMatchObject({
      name: 'ValidationException',
    });
    await expect(client.send(new PutEventsCommand({ Entries: [entry({ text: 'x'.repeat(256 * 1024) })] }))).rejects.toMatchObject({
      name: 'ValidationException',
    });
    expect(events.entries.length).toBe(before);
  });

  it('reads a gzipped request body as the SDK sends one for operations that compress', async () => {
    const body = gzipSync(JSON.stringify({ Entries: [entry({ zipped: true })] }));
    const response = await fetch(`${events.endpoint}/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-amz-json-1.1', 'X-Amz-Target': 'AWSEvents.PutEvents', 'Content-Encoding': 'gzip' },
      body,
    });

    expect(response.status).toBe(200);
    expect(((await response.json()) as { FailedEntryCount: number }).FailedEntryCount).toBe(0);
    expect(events.entries.at(-1)!.detail).toEqual({ zipped: true });
  });
});

describe('publication event sender (EmitMetrics)', () => {
  const event: PublicationEvent = {
    source: PUBLICATION_EVENT_SOURCE,
    detailType: PublicationDetailType.PUBLISHED,
    detail: {
      eventId: 'sales:7',
      pipeline: 'sales',
      batchId: '0123456789abcdef',
      interval: { from: '2026-01-01T00:00:00.000Z', to: '2026-01-09T00:00:00.000Z' },
      rows: 160,
      publication: 7,
      publishedAt: '2026-01-09T01:00:00.000Z',
      liveTable: 'analytics.sales',
      publishMode: 'swap',
    },
  };

  it('puts the event on the bus the environment names, as source atomic-publish', async () => {
    const send = publicationEventSender({ ...localEventsEnvironment(events.endpoint), PUBLICATION_EVENT_BUS: 'publications' });
    await send(event);

    const last = events.entries.at(-1)!;
    expect([last.bus, last.source, last.detailType, last.detail]).toEqual(['publications', 'atomic-publish', 'Publication Published', event.detail]);
  });

  it('throws PublicationEventError (the state machine retries it) when EventBridge fails the entry', async () => {
    const before = events.entries.length;
    const send = publicationEventSender({ ...localEventsEnvironment(events.endpoint), PUBLICATION_EVENT_BUS: 'nowhere' });

    const error = await send(event).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PublicationEventError);
    expect((error as Error).message).toMatch(/sales:7.*bus nowhere: ResourceNotFoundException/);
    expect(events.entries.length).toBe(before);
  });

  it('names the missing variable when no bus is configured', () => {
    expect(() => publicationEventSender({})).toThrow(/PUBLICATION_EVENT_BUS/);
  });
});
