// CloudWatch's Smithy RPC v2 CBOR protocol: `POST
// /service/GraniteServiceVersion20100801/operation/<Operation>` with
// `smithy-protocol: rpc-v2-cbor`, timestamps as tag 1 (epoch seconds),
// errors as `__type` and `message` with x-amzn-query-error as in JSON.
// Types from the service model (local/cloudwatch-model.ts), the codec the
// JS SDKs ship (@smithy/core/cbor). Why: docs/decisions/cloudwatch-protocols-from-the-sdk-model.md
// https://smithy.io/2.0/additional-specs/protocols/smithy-rpc-v2.html
import type http from 'node:http';
import { cbor, tag } from '@smithy/core/cbor';
import type { NormalizedSchema } from '@smithy/core/schema';
import { type AwsJsonError, AwsJsonRequestError, type AwsWireProtocol, type AwsWireResponse } from './aws-json-server.ts';
import { CLOUDWATCH_NAMESPACE, CLOUDWATCH_SERVICE_TARGET, inputSchema, operationSchema, outputSchema } from './cloudwatch-model.ts';

const PATH = /^(?:\/[^?]*)?\/service\/([^/?]+)\/operation\/([^/?]+)(?:\?.*)?$/;
const CONTENT_TYPE = 'application/cbor';
const PROTOCOL_HEADER = { 'smithy-protocol': 'rpc-v2-cbor' } as const;

/** `value` with each timestamp the schema has in it replaced by `convert` of it. */
function withTimestamps(schema: NormalizedSchema, value: unknown, convert: (timestamp: unknown) => unknown): unknown {
  if (value === undefined || value === null) return value;
  if (schema.isTimestampSchema()) return convert(value);
  if (schema.isListSchema()) return (value as unknown[]).map((item) => withTimestamps(schema.getValueSchema(), item, convert));
  if (schema.isMapSchema()) {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, item]) => [k, withTimestamps(schema.getValueSchema(), item, convert)]));
  }
  if (schema.isStructSchema()) {
    const struct = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [name, member] of schema.structIterator()) if (struct[name] !== undefined) out[name] = withTimestamps(member, struct[name], convert);
    return out;
  }
  return value;
}

// A timestamp arrives as tag 1 of epoch seconds (a bare number is taken too); the operations take epoch seconds.
const epochSeconds = (timestamp: unknown) =>
  typeof timestamp === 'object' && timestamp !== null && 'value' in timestamp ? Number((timestamp as { value: unknown }).value) : Number(timestamp);

const cborResponse = (status: number, body: unknown, headers: Record<string, string> = {}): AwsWireResponse => ({
  status,
  contentType: CONTENT_TYPE,
  body: cbor.serialize(body),
  headers: { ...PROTOCOL_HEADER, ...headers },
});

/** The Smithy RPC v2 CBOR protocol of CloudWatch, for local/aws-json-server.ts. */
export const cloudWatchCborProtocol: AwsWireProtocol = {
  claims: (req: http.IncomingMessage) => req.method === 'POST' && PATH.test(req.url ?? ''),
  decode: (req, body) => {
    const [, service, operation] = PATH.exec(req.url ?? '')!;
    if (service !== CLOUDWATCH_SERVICE_TARGET || operation === undefined || operationSchema(operation) === undefined) {
      throw new AwsJsonRequestError('UnknownOperationException', `Unknown operation ${service}.${operation}`);
    }
    let input: unknown;
    try {
      input = body.length > 0 ? cbor.deserialize(body) : {};
    } catch {
      throw new AwsJsonRequestError('SerializationException', 'Request body is not valid CBOR.');
    }
    if (typeof input !== 'object' || input === null || Array.isArray(input))
      throw new AwsJsonRequestError('SerializationException', 'Request body must be a CBOR map.');
    return { operation, input: withTimestamps(inputSchema(operation), input, epochSeconds) as Record<string, unknown> };
  },
  output: (operation, output) =>
    cborResponse(
      200,
      withTimestamps(outputSchema(operation), output, (seconds) => tag({ tag: 1, value: seconds as number })),
    ),
  error: (error: AwsJsonError) => cborResponse(error.status, { __type: `${CLOUDWATCH_NAMESPACE}#${error.shape}`, message: error.message }, error.headers),
};
