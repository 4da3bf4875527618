// The shared handler wrapper (functions/commons/handler.ts): every log line
// of an invocation carries the run keys read from the step's input, a warm
// function does not carry them into the next invocation, and the Tracer is
// wired. The Tracer has no local X-Ray daemon: it is off here (no
// AWS_EXECUTION_ENV), and its annotations are observed through a spy, the
// only mock in this file.

import { Tracer } from '@aws-lambda-powertools/tracer';
import { RedshiftDataClient } from '@aws-sdk/client-redshift-data';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { stepHandler, TRACE_ANNOTATIONS } from '../../functions/commons/handler.ts';
import { logger, tracer } from '../../functions/commons/powertools.ts';
import { executionNameOf, runKeysOf } from '../../functions/commons/run-keys.ts';
import { warehouseFromEnv } from '../../functions/commons/warehouse.ts';
import { captureLambdaOutput } from '../../local/lambda-output.ts';

const EXECUTION = 'arn:aws:states:eu-west-1:123456789012:execution:AtomicPublish:nightly-2026-12-01';
const BATCH = {
  pipeline: 'sales_order_lines',
  batchId: 'b-0123abcd',
  from: '2026-11-01T00:00:00.000Z',
  to: '2026-11-08T00:00:00.000Z',
  specHash: 'h',
  liveTable: 'analytics.sales_order_lines',
  stagingTable: 'sales_order_lines__staging',
  columns: ['order_id'],
  basePublication: 0,
};
const CHUNK = { index: 3, start: '2026-11-04T00:00:00.000Z', end: '2026-11-05T00:00:00.000Z', generation: 1 };
/** The keys of a LoadChunk input of BATCH, CHUNK and EXECUTION. */
const LOAD_CHUNK_KEYS = {
  pipeline: 'sales_order_lines',
  batchId: 'b-0123abcd',
  batchFrom: BATCH.from,
  batchTo: BATCH.to,
  chunkIndex: 3,
  chunkStart: CHUNK.start,
  chunkEnd: CHUNK.end,
  executionId: EXECUTION,
  executionName: 'nightly-2026-12-01',
};
const CONTEXT = {
  functionName: 'LoadChunk',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:LoadChunk',
  memoryLimitInMB: '256',
  awsRequestId: 'request',
  logGroupName: '/aws/lambda/LoadChunk',
  logStreamName: 'local',
  callbackWaitsForEmptyEventLoop: false,
  getRemainingTimeInMillis: () => 60_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
};

let capture: ReturnType<typeof captureLambdaOutput>;
beforeAll(() => {
  capture = captureLambdaOutput();
});
afterAll(() => capture.release());
afterEach(() => {
  capture.sink.logs.length = 0;
  vi.restoreAllMocks();
});

const linesSaying = (message: string) => capture.sink.logs.filter((line) => line.message === message);

describe('runKeysOf: the keys a step input gives', () => {
  it('reads a LoadChunk input: pipeline, batch and its interval, the chunk and its interval, the execution', () => {
    expect(runKeysOf({ batch: BATCH, chunk: CHUNK, executionId: EXECUTION })).toEqual(LOAD_CHUNK_KEYS);
  });

  it('reads Plan input (the execution input), RecordFailure (the batch in the caught state), a group, a window and a status change', () => {
    expect(runKeysOf({ input: { pipeline: 'p', to: '2026-12-01' }, executionId: EXECUTION })).toEqual({
      pipeline: 'p',
      executionId: EXECUTION,
      executionName: 'nightly-2026-12-01',
    });
    expect(runKeysOf({ state: { plan: { batch: BATCH } }, input: { pipeline: 'sales_order_lines' } })).toMatchObject({
      pipeline: 'sales_order_lines',
      batchId: 'b-0123abcd',
    });
    expect(runKeysOf({ input: { group: 'finance' } })).toEqual({ group: 'finance' });
    expect(runKeysOf({ group: 'finance', members: [] })).toEqual({ group: 'finance' });
    expect(runKeysOf({ batch: BATCH, window: { index: 2 } })).toMatchObject({ window: 2, batchId: 'b-0123abcd' });
    expect(runKeysOf({ detail: { executionArn: EXECUTION, name: 'nightly-2026-12-01', status: 'ABORTED' } })).toEqual({
      executionId: EXECUTION,
      executionName: 'nightly-2026-12-01',
    });
  });

  it('gives no key for what is absent or malformed, and never throws', () => {
    for (const input of [null, undefined, 0, '', 'text', [], [1], { batch: 'x', chunk: { index: 'three' } }, { input: ['pipeline'] }]) {
      expect(runKeysOf(input)).toEqual({});
    }
  });

  it("names an execution by its ARN's last part (a Distributed Map child's too), and nothing that is no execution ARN", () => {
    expect(executionNameOf(EXECUTION)).toBe('nightly-2026-12-01');
    expect(executionNameOf('arn:aws:states:eu-west-1:123456789012:execution:AtomicPublish/LoadWindows:0b7c')).toBe('0b7c');
    expect(executionNameOf('local-run')).toBeUndefined();
  });
});

describe('stepHandler', () => {
  const step = stepHandler(async (_event: unknown) => {
    logger.info('step ran');
    return 'ok';
  });
  const failing = stepHandler(async (_event: unknown) => {
    logger.info('step ran');
    throw new Error('refused');
  });

  it('puts the run keys on every line the step logs, with no code in the step', async () => {
    await step({ batch: BATCH, chunk: CHUNK, executionId: EXECUTION }, CONTEXT);

    const [line] = linesSaying('step ran');
    expect(line).toMatchObject({ ...LOAD_CHUNK_KEYS, function_name: 'LoadChunk' });
  });

  it("does not carry one invocation's keys into the next (a warm function), after a success or a failure", async () => {
    await step({ batch: BATCH, chunk: CHUNK, executionId: EXECUTION }, CONTEXT);
    await step({ input: { pipeline: 'other' } }, CONTEXT);
    await expect(failing({ batch: BATCH, chunk: CHUNK, executionId: EXECUTION }, CONTEXT)).rejects.toThrow('refused');
    await step({ input: { group: 'finance' } }, CONTEXT);

    const lines = linesSaying('step ran');
    expect(lines).toHaveLength(4);
    expect(lines[1]).toMatchObject({ pipeline: 'other' });
    expect(lines[3]).toMatchObject({ group: 'finance' });
    for (const later of [lines[1], lines[3]]) {
      for (const key of ['batchId', 'batchFrom', 'chunkIndex', 'chunkStart', 'executionId', 'executionName']) expect(later).not.toHaveProperty(key);
    }
    expect(lines[3]).not.toHaveProperty('pipeline');
    // Logging after the invocation ended: none of its keys either.
    logger.info('between invocations');
    expect(linesSaying('between invocations')[0]).not.toHaveProperty('batchId');
  });

  it('annotates the trace with pipeline and batch id (the Tracer is off here: no daemon; a spy sees the calls)', async () => {
    const annotate = vi.spyOn(tracer, 'putAnnotation');

    await step({ batch: BATCH, chunk: CHUNK, executionId: EXECUTION }, CONTEXT);

    expect(TRACE_ANNOTATIONS).toEqual(['pipeline', 'group', 'batchId']);
    expect(annotate.mock.calls).toEqual([
      ['pipeline', 'sales_order_lines'],
      ['batchId', 'b-0123abcd'],
    ]);
  });

  it('runs with the Tracer off outside Lambda: no X-Ray daemon needed, the SDK client is handed back as it is', async () => {
    expect(process.env.AWS_EXECUTION_ENV).toBeUndefined();
    expect(tracer.isTracingEnabled()).toBe(false);
    const client = new RedshiftDataClient({ region: 'eu-west-1' });
    expect(tracer.captureAWSv3Client(client)).toBe(client);
  });

  it('stays off in a Lambda-like environment when POWERTOOLS_TRACE_ENABLED is "false", as the local runner sets it', () => {
    vi.stubEnv('AWS_EXECUTION_ENV', 'AWS_Lambda_nodejs22.x');
    // Unset, whatever an earlier file in this process set (LocalRunner.create sets it, as Lambda's environment would be).
    vi.stubEnv('POWERTOOLS_TRACE_ENABLED', undefined);
    try {
      expect(new Tracer({ captureHTTPsRequests: false }).isTracingEnabled()).toBe(true);
      vi.stubEnv('POWERTOOLS_TRACE_ENABLED', 'false');
      expect(new Tracer({ captureHTTPsRequests: false }).isTracingEnabled()).toBe(false);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('hands the Data API client to the Tracer (captureAWSv3Client), so on AWS each call is a subsegment', () => {
    const capture = vi.spyOn(tracer, 'captureAWSv3Client');

    warehouseFromEnv({
      ...process.env,
      WAREHOUSE_WORKGROUP: 'traced',
      WAREHOUSE_DATABASE: 'dev',
      AWS_REGION: 'eu-west-1',
      REDSHIFT_DATA_ENDPOINT: 'http://127.0.0.1:1',
    });

    expect(capture).toHaveBeenCalledTimes(1);
    expect(capture.mock.calls[0]![0]).toBeInstanceOf(RedshiftDataClient);
  });
});
