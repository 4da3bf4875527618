// An HTTP server speaking the AWS JSON protocols (1.0 and 1.1) on loopback,
// for the local endpoints the real SDK clients talk to: `POST /` with
// `X-Amz-Target: <prefix>.<Operation>` and a JSON body; errors as
// `{"__type", "message", ...}` with `x-amzn-ErrorType`. Requests are not
// authenticated.
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
  const send = (res: http.ServerResponse, status: number, body: Record<string, unknown>, errorType?: string) => {
    const payload = serialize(body);
    res.writeHead(status, {
      'Content-Type': options.contentType,
      'Content-Length': Buffer.byteLength(payload),
      'x-amzn-RequestId': randomUUID(),
      ...(errorType ? { 'x-amzn-ErrorType': errorType } : {}),
    });
    res.end(payload);
  };
  const server = http.createServer((req, res) => {
    handle(options, req)
      .then((output) => send(res, 200, output))
      .catch((error: unknown) => {
        const { status, shape, message, members } = options.errorOf(error);
        send(res, status, { __type: shape, message, ...members }, shape);
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

async function handle(options: AwsJsonServerOptions, req: http.IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const target = String(req.headers['x-amz-target'] ?? '');
  const operation = target.startsWith(options.targetPrefix) ? options.operations[target.slice(options.targetPrefix.length)] : undefined;
  if (req.method !== 'POST' || !operation) throw new AwsJsonRequestError('UnknownOperationException', `Unknown operation ${JSON.stringify(target)}`);
  let input: unknown;
  try {
    // The SDK gzips a large request of an operation with the requestCompression trait (CloudWatch's PutMetricData).
    const raw = Buffer.concat(chunks);
    const body = (req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
    input = body.length > 0 ? JSON.parse(body) : {};
  } catch {
    throw new AwsJsonRequestError('SerializationException', 'Request body is not valid JSON.');
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new AwsJsonRequestError('SerializationException', 'Request body must be a JSON object.');
  }
  options.onRequest?.(target.slice(options.targetPrefix.length), input as Record<string, unknown>);
  // `AWS4-HMAC-SHA256 Credential=<access key id>/<date>/<region>/<service>/aws4_request, ...`
  const accessKeyId = /Credential=([^/,\s]+)\//.exec(String(req.headers.authorization ?? ''))?.[1];
  return operation(input as Record<string, unknown>, accessKeyId === undefined ? {} : { accessKeyId });
}
