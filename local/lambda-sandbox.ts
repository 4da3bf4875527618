/**
 * What the Lambda service does around a handler, on one machine: the module
 * named by the function's `atomic-publish:entry` metadata is imported (the
 * same module esbuild bundles for AWS), each call crosses a JSON boundary
 * with a context whose remaining time is the function's timeout. The
 * payload limit Step Functions puts on a state's input and output is
 * checked here too (the runner applies it to every task).
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { InvokeStore, InvokeStoreBase } from '@aws/lambda-invoke-store';
import { STATE_PAYLOAD_MAX_BYTES } from '../domain/aws-limits.ts';
import { PROJECT_ROOT } from '../lib/project.ts';

export type Handler = (event: unknown, context: unknown) => Promise<unknown>;

/**
 * `States.DataLimitExceeded`: terminal, as on AWS: no Retry and no Catch
 * (not even States.ALL) takes it (aws-local-stepfunctions reads
 * isRetryable and isCatchable).
 */
export class DataLimitExceededError extends Error {
  override name = 'States.DataLimitExceeded';
  readonly isRetryable = false;
  readonly isCatchable = false;
}

/** Bytes of a value as the JSON text Step Functions measures. */
export function payloadBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value ?? null), 'utf8');
}

/** Throws DataLimitExceededError when `value` is larger than a state may carry. */
export function checkPayload(value: unknown, what: string): void {
  const bytes = payloadBytes(value);
  if (bytes > STATE_PAYLOAD_MAX_BYTES) {
    throw new DataLimitExceededError(`${what} is ${bytes} bytes, more than the ${STATE_PAYLOAD_MAX_BYTES} bytes a state may carry`);
  }
}

/** Imports the handler of every entry (state name -> module path relative to the project root). */
export async function loadHandlers(entries: Record<string, string>): Promise<Map<string, Handler>> {
  const handlers = new Map<string, Handler>();
  for (const [state, entry] of Object.entries(entries)) {
    const module = (await import(pathToFileURL(join(PROJECT_ROOT, entry)).href)) as { handler?: Handler };
    if (typeof module.handler !== 'function') throw new Error(`${entry} exports no handler`);
    handlers.set(state, module.handler);
  }
  return handlers;
}

function lambdaContext(functionName: string, deadlineMs: number) {
  return {
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => Math.max(0, deadlineMs - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/**
 * Each invocation runs in its own scope of the Lambda runtime's InvokeStore,
 * so concurrent invocations in this one process (a Map's chunk loads) keep
 * apart the Powertools state that AWS_LAMBDA_MAX_CONCURRENCY puts in the
 * store: docs/decisions/logs-and-traces.md ("Concurrent invocations locally").
 */
export const INVOCATION_SCOPE_ENV = { AWS_LAMBDA_MAX_CONCURRENCY: '64' } as const;

/** The runtime's InvokeStore, backed by AsyncLocalStorage (created before any handler logs). */
export function invokeStore(): Promise<InvokeStoreBase & { run<T>(context: Record<symbol, unknown>, fn: () => T): T }> {
  return InvokeStore.getInstanceAsync(true) as never;
}

/**
 * One invocation: the event and the result cross as JSON (no shared
 * objects), errors keep their `name` (what ErrorEquals matches), and the
 * handler runs in an invocation scope of its own (INVOCATION_SCOPE_ENV).
 */
export async function invoke(handler: Handler, functionName: string, input: unknown, timeoutSeconds: number): Promise<unknown> {
  const event = JSON.parse(JSON.stringify(input ?? null)) as unknown;
  const context = lambdaContext(functionName, Date.now() + timeoutSeconds * 1000);
  const store = await invokeStore();
  const result = await store.run({ [InvokeStoreBase.PROTECTED_KEYS.REQUEST_ID]: context.awsRequestId }, () => handler(event, context));
  return result === undefined ? null : (JSON.parse(JSON.stringify(result)) as unknown);
}

/**
 * A function's error as Step Functions receives it from Lambda: the error
 * name, and a Cause that is the JSON Lambda's Node.js runtime writes
 * (`{"errorType", "errorMessage", "trace"}`), so a Catch's `$.error` and
 * everything built from it have the size and shape they have on AWS.
 */
export class LambdaFunctionError extends Error {
  constructor(error: unknown) {
    const { name = 'Error', message = String(error), stack = '' } = (error ?? {}) as { name?: string; message?: string; stack?: string };
    super(JSON.stringify({ errorType: name, errorMessage: message, trace: stack.split('\n').filter((line) => line !== '') }));
    this.name = name;
  }
}

/** Whether an error comes from Step Functions itself (States.*), not from a function. */
export function isStatesError(error: unknown): boolean {
  const name = (error as { name?: unknown })?.name;
  return typeof name === 'string' && name.startsWith('States.');
}
