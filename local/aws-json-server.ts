// An HTTP server speaking the AWS JSON protocols (1.0 and 1.1) on loopback,
// for the local endpoints the real SDK clients talk to: `POST /` with
// `X-Amz-Target: <prefix>.<Operation>` and a JSON body; errors as
// `{"__type", "message", ...}` with `x-amzn-ErrorType`. Requests are not
// authenticated. A service that also speaks other protocols on the same
// endpoint (CloudWatch's awsQuery and Smithy RPC v2 CBOR) passes them in
// `protocols`: a request one claims is framed by it, and the operations
// run unchanged.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** Who sent a request: the access key id of its SigV4 Authorization header (the signature is not checked). */
export interface AwsJsonCaller {
  readonly accessKeyId?: string;
}

export type AwsJsonOperation = (input: Record<string, unknown>, caller: AwsJsonCaller) => Promise<Record<string, unknown>>;

/** An error the client sees as the shape `__type` (the SDK throws the exception class of that name). */
export interface AwsJsonError {
  readonly status: number;
  readonly shape: string;
  readonly message: string;
  /** Members of the error shape besides `message`. */
  readonly members?: Record<string, string>;
  /** Response headers besides the protocol's (`x-amzn-query-error` of an awsQueryCompatible service). */
  readonly headers?: Record<string, string>;
}

/** A request the server refuses before any operation runs. */
export class AwsJsonRequestError extends Error {
  constructor(
    readonly shape: 'UnknownOperationException' | 'SerializationException',
    message: string,
  ) {
    super(message);
  }
}

/** An error an operation throws for the client to see as its service's exception shape `shape` (HTTP 400). */
export class AwsServiceError extends Error {
  constructor(
    readonly shape: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The errorOf of a service whose operations throw AwsServiceError: those and
 * the server's own refusals as 400 with their shape; anything else as a
 * 500 of the service's internal-error shape (`InternalFailure`, ...).
 */
export function serviceErrorOf(internalShape: string): (error: unknown) => AwsJsonError {
  return (error) =>
    error instanceof AwsServiceError || error instanceof AwsJsonRequestError
      ? { status: 400, shape: error.shape, message: error.message }
      : { status: 500, shape: internalShape, message: (error as Error)?.message ?? String(error) };
}

/** A request of another protocol, as the operation and the input the JSON protocol would have given. */
export interface AwsWireRequest {
  readonly operation: string;
  readonly input: Record<string, unknown>;
}

/** A response in another protocol. */
export interface AwsWireResponse {
  readonly status: number;
  readonly contentType: string;
  readonly body: string | Uint8Array;
  readonly headers?: Record<string, string>;
}

/** A protocol the endpoint speaks besides AWS JSON, on the same operations. */
export interface AwsWireProtocol {
  /** Whether a request is of this protocol (its method, path or Content-Type). */
  claims(req: http.IncomingMessage): boolean;
  /** The operation and its input, from the request and its (decompressed) body; throws an AwsJsonRequestError if neither can be read. */
  decode(req: http.IncomingMessage, body: Buffer): AwsWireRequest;
  /** The response to an operation that returned `output`. */
  output(operation: string, output: Record<string, unknown>, requestId: string): AwsWireResponse;
  /** The response to an error (as errorOf has it). */
  error(error: AwsJsonError, requestId: string): AwsWireResponse;
}

export interface AwsJsonServerOptions {
  /** `application/x-amz-json-1.0` or `-1.1`. */
  readonly contentType: string;
  /** `RedshiftData.`, `AWSStepFunctions.` */
  readonly targetPrefix: string;
  readonly operations: Readonly<Record<string, AwsJsonOperation>>;
  /** What the client sees of an error an operation threw (an AwsJsonRequestError too). */
  readonly errorOf: (error: unknown) => AwsJsonError;
  /** Called with every well-formed request before its operation runs (a test counts requests). */
  readonly onRequest?: (operation: string, input: Record<string, unknown>) => void;
  /** Other protocols served on the same endpoint; a request none claims is AWS JSON. @default none */
  readonly protocols?: readonly AwsWireProtocol[];
  /** Serializes a response body. @default JSON.stringify */
  readonly serialize?: (body: Record<string, unknown>) => string;
  /** @default '127.0.0.1' */
  readonly host?: string;
  /** @default 0 - a random free port */
  readonly port?: number;
}

export interface AwsJsonServer {
  /** e.g. http://127.0.0.1:41234 */
  readonly endpoint: string;
  /** Stops accepting requests and drops open connections. */
  close(): Promise<void>;
}

export async function startAwsJsonServer(options: AwsJsonServerOptions): Promise<AwsJsonServer> {
  const serialize = options.serialize ?? ((body) => JSON.stringify(body));
  const send = (
    res: http.ServerResponse,
    status: number,
    body: Record<string, unknown>,
    requestId: string,
    errorType?: string,
    headers?: Record<string, string>,
  ) => {
    const payload = serialize(body);
    res.writeHead(status, {
      'Content-Type': options.contentType,
      'Content-Length': Buffer.byteLength(payload),
      'x-amzn-RequestId': requestId,
      ...(errorType ? { 'x-amzn-ErrorType': errorType } : {}),
      ...headers,
    });
    res.end(payload);
  };
  const sendWire = (res: http.ServerResponse, response: AwsWireResponse, requestId: string) => {
    res.writeHead(response.status, {
      'Content-Type': response.contentType,
      'Content-Length': Buffer.byteLength(response.body),
      'x-amzn-RequestId': requestId,
      ...response.headers,
    });
    res.end(response.body);
  };
  const server = http.createServer((req, res) => {
    const requestId = randomUUID();
    const protocol = options.protocols?.find((p) => p.claims(req));
    handle(options, req, protocol)
      .then(({ operation, output }) => (protocol ? sendWire(res, protocol.output(operation, output, requestId), requestId) : send(res, 200, output, requestId)))
      .catch((error: unknown) => {
        const refused = options.errorOf(error);
        if (protocol) return sendWire(res, protocol.error(refused, requestId), requestId);
        const { status, shape, message, members, headers } = refused;
        send(res, status, { __type: shape, message, ...members }, requestId, shape, headers);
      });
  });
  server.keepAliveTimeout = 5_000;
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(
  options: AwsJsonServerOptions,
  req: http.IncomingMessage,
  protocol: AwsWireProtocol | undefined,
): Promise<{ operation: string; output: Record<string, unknown> }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const { operation, input } = protocol ? protocol.decode(req, decompressed(req, Buffer.concat(chunks))) : jsonRequest(options, req, chunks);
  const run = options.operations[operation];
  // A protocol names any operation of its service's model; the endpoint may serve fewer.
  if (!run) throw new AwsJsonRequestError('UnknownOperationException', `The operation ${operation} is not served by this endpoint`);
  options.onRequest?.(operation, input);
  // `AWS4-HMAC-SHA256 Credential=<access key id>/<date>/<region>/<service>/aws4_request, ...`
  const accessKeyId = /Credential=([^/,\s]+)\//.exec(String(req.headers.authorization ?? ''))?.[1];
  return { operation, output: await run(input, accessKeyId === undefined ? {} : { accessKeyId }) };
}

// The SDKs gzip a large request of an operation with the requestCompression trait (CloudWatch's PutMetricData).
function decompressed(req: http.IncomingMessage, raw: Buffer): Buffer {
  return req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
}

function jsonRequest(options: AwsJsonServerOptions, req: http.IncomingMessage, chunks: Buffer[]): AwsWireRequest {
  const target = String(req.headers['x-amz-target'] ?? '');
  const operation = target.startsWith(options.targetPrefix) ? target.slice(options.targetPrefix.length) : undefined;
  if (req.method !== 'POST' || operation === undefined || !Object.hasOwn(options.operations, operation)) {
    throw new AwsJsonRequestError('UnknownOperationException', `Unknown operation ${JSON.stringify(target)}`);
  }
  let input: unknown;
  try {
    const body = decompressed(req, Buffer.concat(chunks)).toString('utf8');
    input = body.length > 0 ? JSON.parse(body) : {};
  } catch {
    throw new AwsJsonRequestError('SerializationException', 'Request body is not valid JSON.');
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new AwsJsonRequestError('SerializationException', 'Request body must be a JSON object.');
  }
  return { operation, input: input as Record<string, unknown> };
}
