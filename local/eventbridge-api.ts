// A local EventBridge endpoint that records what PutEvents accepts
// (`entries`, in order), so a local run's publication events can be read
// back; the real client works against it with only `endpoint` changed.
// PutEvents keeps EventBridge's checks (1 to 10 entries, 256 KB a request,
// Source, DetailType and a JSON-object Detail, a bus that exists): a bad entry
// fails alone (FailedEntryCount), a bad request whole; `refuse` makes a good
// entry fail too (throttling). Wire: AWS JSON 1.1, target prefix `AWSEvents.`.
// https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html
import { randomUUID } from 'node:crypto';
import { type AwsJsonOperation, AwsServiceError, serviceErrorOf, startAwsJsonServer } from './aws-json-server.ts';

const CONTENT_TYPE = 'application/x-amz-json-1.1';
const TARGET_PREFIX = 'AWSEvents.';

/** PutEvents' limits: entries a request, and the request's size (each entry's Source, DetailType, Detail, Resources, Time). */
export const PUT_EVENTS_LIMITS = { entries: 10, requestBytes: 256 * 1024 } as const;

/** An event EventBridge accepted, as a rule on its bus would see it. */
export interface RecordedEvent {
  readonly id: string;
  readonly bus: string;
  readonly source: string;
  readonly detailType: string;
  readonly detail: Record<string, unknown>;
  readonly resources: readonly string[];
  readonly time: string;
}

export interface LocalEventBridgeApi {
  /** e.g. http://127.0.0.1:41234 */
  readonly endpoint: string;
  /** Every accepted event, oldest first. */
  readonly entries: readonly RecordedEvent[];
  close(): Promise<void>;
}

/** An entry failure EventBridge may answer for a well-formed entry (`ThrottlingException`, `InternalFailure`). */
export interface EntryFailure {
  readonly errorCode: string;
  readonly errorMessage: string;
}

export interface LocalEventBridgeOptions {
  /** Buses besides `default` that exist (by name). @default none */
  readonly buses?: readonly string[];
  /** Fails a well-formed entry as EventBridge may (a test's injected throttling). @default - none fails */
  readonly refuse?: (entry: { readonly source: string; readonly detailType: string; readonly detail: Record<string, unknown> }) => EntryFailure | undefined;
  readonly host?: string;
  readonly port?: number;
}

/** A bus name, or the name at the end of an event bus ARN. */
function busName(value: unknown): string {
  if (value === undefined || value === '') return 'default';
  const text = String(value);
  return text.startsWith('arn:') ? text.slice(text.lastIndexOf('/') + 1) : text;
}

/** The bytes EventBridge counts for an entry (its "Calculating PutEvents event entry size"). */
function entrySize(entry: Record<string, unknown>): number {
  let size = entry.Time === undefined ? 0 : 14;
  for (const field of ['Source', 'DetailType', 'Detail'] as const)
    if (typeof entry[field] === 'string') size += Buffer.byteLength(entry[field] as string, 'utf8');
  for (const resource of Array.isArray(entry.Resources) ? entry.Resources : []) size += Buffer.byteLength(String(resource), 'utf8');
  return size;
}

export async function startLocalEventBridgeApi(options: LocalEventBridgeOptions = {}): Promise<LocalEventBridgeApi> {
  const buses = new Set(['default', ...(options.buses ?? [])]);
  const entries: RecordedEvent[] = [];

  const accept = (entry: Record<string, unknown>): { EventId: string } | { ErrorCode: string; ErrorMessage: string } => {
    const failed = (ErrorCode: string, ErrorMessage: string) => ({ ErrorCode, ErrorMessage });
    for (const field of ['Source', 'DetailType', 'Detail'] as const) {
      if (typeof entry[field] !== 'string' || entry[field] === '')
        return failed('InvalidArgument', `Parameter ${field} is not valid. Reason: ${field} is a required argument.`);
    }
    let detail: unknown;
    try {
      detail = JSON.parse(entry.Detail as string);
    } catch {
      return failed('MalformedDetail', 'Detail is malformed.');
    }
    if (typeof detail !== 'object' || detail === null || Array.isArray(detail)) return failed('MalformedDetail', 'Detail is malformed.');
    const bus = busName(entry.EventBusName);
    if (!buses.has(bus)) return failed('ResourceNotFoundException', `Event bus ${bus} does not exist.`);
    const refused = options.refuse?.({ source: entry.Source as string, detailType: entry.DetailType as string, detail: detail as Record<string, unknown> });
    if (refused) return failed(refused.errorCode, refused.errorMessage);
    const id = randomUUID();
    entries.push({
      id,
      bus,
      source: entry.Source as string,
      detailType: entry.DetailType as string,
      detail: detail as Record<string, unknown>,
      resources: Array.isArray(entry.Resources) ? entry.Resources.map(String) : [],
      time: typeof entry.Time === 'number' ? new Date(entry.Time * 1000).toISOString() : new Date().toISOString(),
    });
    return { EventId: id };
  };

  const operations: Record<string, AwsJsonOperation> = {
    PutEvents: async ({ Entries }) => {
      if (!Array.isArray(Entries) || Entries.length < 1 || Entries.length > PUT_EVENTS_LIMITS.entries) {
        throw new AwsServiceError(
          'ValidationException',
          `1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length between 1 and ${PUT_EVENTS_LIMITS.entries}`,
        );
      }
      const bytes = (Entries as Record<string, unknown>[]).reduce((sum, entry) => sum + entrySize(entry), 0);
      if (bytes > PUT_EVENTS_LIMITS.requestBytes) {
        throw new AwsServiceError(
          'ValidationException',
          `Total size of the entries in the request is over the limit (${bytes} bytes, at most ${PUT_EVENTS_LIMITS.requestBytes}).`,
        );
      }
      const results = (Entries as Record<string, unknown>[]).map((entry) => accept(entry));
      return { FailedEntryCount: results.filter((r) => 'ErrorCode' in r).length, Entries: results };
    },
  };

  const server = await startAwsJsonServer({
    contentType: CONTENT_TYPE,
    targetPrefix: TARGET_PREFIX,
    operations,
    errorOf: serviceErrorOf('InternalException'),
    ...(options.host ? { host: options.host } : {}),
    ...(options.port ? { port: options.port } : {}),
  });
  return { endpoint: server.endpoint, entries, close: () => server.close() };
}
