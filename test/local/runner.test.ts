// The local runner's fidelity to Step Functions and Lambda where the
// workflow tests rely on it: retry waits keep their declared shape (scaled),
// a Lambda Task is bounded by its function's timeout, the 256 KB payload
// limit applies to execution input and task payloads, and the SNS outbox
// refuses what SNS refuses.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { STATE_PAYLOAD_MAX_BYTES as PAYLOAD_LIMIT_BYTES, SNS_MESSAGE_MAX_BYTES } from '../../domain/aws-limits.ts';
import { MAX_ERROR_MESSAGE_BYTES, WarehouseError } from '../../domain/errors.ts';
import { stepHandler } from '../../functions/commons/handler.ts';
import { lambdaMetricData } from '../../local/lambda-metrics.ts';
import { checkPayload, DataLimitExceededError, invoke } from '../../local/lambda-sandbox.ts';
import { type LocalRunner, StartExecutionError } from '../../local/runner.ts';
import { SnsInvalidParameterError, SnsOutbox } from '../../local/sns-outbox.ts';
import { loadWorkflow, localDefinition, type SynthesizedWorkflow } from '../../local/template.ts';
import { unreachableRunner } from '../support/unreachable.ts';
import { until } from '../support/until.ts';

type Retrier = {
  ErrorEquals: string[];
  IntervalSeconds?: number;
  MaxDelaySeconds?: number;
  BackoffRate?: number;
  MaxAttempts?: number;
  JitterStrategy?: string;
};
type States = Record<string, { Type: string; Retry?: Retrier[]; TimeoutSeconds?: number; ItemProcessor?: { States: States } }>;

let workflow: SynthesizedWorkflow;
beforeAll(async () => {
  workflow = await loadWorkflow();
});

describe('the definition a local run executes', () => {
  it('scales every retry interval and maximum delay, nested Map states included, keeping backoff, attempts and jitter', () => {
    const original = workflow.definition.States as unknown as States;
    const local = localDefinition(workflow, 0.01).States as unknown as States;
    const loadChunk = (states: States) => states.LoadChunks!.ItemProcessor!.States.LoadChunk!;
    const pairs: [States[string], States[string]][] = [
      [original.Plan!, local.Plan!],
      [loadChunk(original), loadChunk(local)],
    ];
    for (const [declared, scaled] of pairs) {
      expect(scaled.Retry).toHaveLength(declared.Retry!.length);
      declared.Retry!.forEach((retrier, i) => {
        expect(scaled.Retry![i]).toEqual({
          ...retrier,
          IntervalSeconds: (retrier.IntervalSeconds ?? 1) * 0.01,
          ...(retrier.MaxDelaySeconds === undefined ? {} : { MaxDelaySeconds: retrier.MaxDelaySeconds * 0.01 }),
        });
      });
    }
    expect(original.Plan!.Retry![0]).toMatchObject({ IntervalSeconds: 2, MaxDelaySeconds: 120, BackoffRate: 2, JitterStrategy: 'FULL' });
  });

  it("bounds each Lambda Task by its function's timeout, as Lambda does on AWS, and leaves the synthesized definition untouched", () => {
    const local = localDefinition(workflow, 0.5).States as unknown as States;
    expect(local.Plan!.TimeoutSeconds).toBe(15 * 60);
    expect(local.RecordFailure!.TimeoutSeconds).toBe(2 * 60);
    expect(local.Notify!.TimeoutSeconds).toBeUndefined();
    expect((workflow.definition.States as unknown as States).Plan!.TimeoutSeconds).toBeUndefined();
  });

  it('refuses a time scale outside (0, 1]', () => {
    for (const scale of [0, -1, 2, Number.NaN]) expect(() => localDefinition(workflow, scale)).toThrow(/timeScale must be in \(0, 1\]/);
  });
});

describe('the payload limit of 256 KB', () => {
  it('passes a payload of exactly the limit and refuses one byte more with the terminal States.DataLimitExceeded', () => {
    const envelope = JSON.stringify({ v: '' }).length;
    expect(() => checkPayload({ v: 'x'.repeat(PAYLOAD_LIMIT_BYTES - envelope) }, 'a state')).not.toThrow();
    const over = () => checkPayload({ v: 'x'.repeat(PAYLOAD_LIMIT_BYTES - envelope + 1) }, 'a state');
    expect(over).toThrow(DataLimitExceededError);
    expect(over).toThrow(/a state is 262145 bytes, more than the 262144 bytes a state may carry/);
    try {
      over();
    } catch (error) {
      expect(error).toMatchObject({ name: 'States.DataLimitExceeded', isRetryable: false, isCatchable: false });
    }
  });

  it('counts UTF-8 bytes, not characters', () => {
    expect(() => checkPayload('é'.repeat(PAYLOAD_LIMIT_BYTES / 2), 'a state')).toThrow(DataLimitExceededError);
  });
});

describe('a Lambda invocation', () => {
  it('hands the handler a copy of the event and returns a copy of its result, with a context counting down from the timeout', async () => {
    const event = { nested: { n: 1 } };
    let remaining = -1;
    const output = await invoke(
      async (received, context) => {
        (received as typeof event).nested.n = 2;
        remaining = (context as { getRemainingTimeInMillis(): number }).getRemainingTimeInMillis();
        return { at: new Date(0), missing: undefined };
      },
      'Plan',
      event,
      900,
    );
    expect(event.nested.n).toBe(1);
    expect(output).toEqual({ at: '1970-01-01T00:00:00.000Z' });
    expect(remaining).toBeGreaterThan(0);
    expect(remaining).toBeLessThanOrEqual(900_000);
  });

  it("keeps a thrown error's name, which is what a Retry or Catch matches", async () => {
    const failing = async () => {
      throw Object.assign(new Error('busy'), { name: 'TransientWarehouseError' });
    };
    await expect(invoke(failing, 'LoadChunk', {}, 900)).rejects.toMatchObject({ name: 'TransientWarehouseError', message: 'busy' });
  });
});

describe('the local SNS outbox', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'atomic-publish-outbox-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps and appends an alert SNS would accept', () => {
    const outbox = new SnsOutbox(join(dir, 'alerts.jsonl'));
    outbox.publish(
      { TopicArn: 'arn:aws:sns:local:000000000000:OnCall', Subject: 'atomic-publish: orders failed (WarehouseError)', Message: 'details' },
      'exec-1',
    );
    expect(outbox.alerts).toMatchObject([{ subject: 'atomic-publish: orders failed (WarehouseError)', message: 'details', executionId: 'exec-1' }]);
    expect(JSON.parse(readFileSync(join(dir, 'alerts.jsonl'), 'utf8'))).toMatchObject({ message: 'details' });
  });

  it('refuses what SNS refuses: a message over 256 KB, an empty one, a subject of 100 characters or with a line break', () => {
    const outbox = new SnsOutbox(join(dir, 'refused.jsonl'));
    const refused = [
      { Message: 'x'.repeat(SNS_MESSAGE_MAX_BYTES + 1) },
      { Message: '' },
      { Message: 'm', Subject: 's'.repeat(100) },
      { Message: 'm', Subject: 'two\nlines' },
    ];
    for (const parameters of refused) expect(() => outbox.publish(parameters, 'exec')).toThrow(SnsInvalidParameterError);
    expect(outbox.alerts).toEqual([]);
    expect(existsSync(join(dir, 'refused.jsonl'))).toBe(false);
    expect(() => outbox.publish({ Message: 'x'.repeat(SNS_MESSAGE_MAX_BYTES), Subject: 's'.repeat(99) }, 'exec')).not.toThrow();
  });
});

describe('an execution on the local runner', () => {
  let runner: LocalRunner;
  let close: () => void;
  /** What Plan does in the test at hand (the real handler when unset). */
  let plan: ((input: unknown) => Promise<unknown>) | undefined;
  beforeAll(async () => {
    ({ runner, close } = await unreachableRunner({
      taskOverrides: { Plan: (input, next) => (plan ? plan(input) : next(input)) },
    }));
  });
  afterAll(() => close?.());
  beforeEach(() => {
    plan = undefined;
  });

  it('is refused at start when its input is over 256 KB, as StartExecution refuses it', async () => {
    const huge = { pipeline: 'sales_order_lines', note: 'x'.repeat(PAYLOAD_LIMIT_BYTES) };
    await expect(runner.run(huge)).rejects.toThrow(StartExecutionError);
    await expect(runner.run(huge)).rejects.toThrow(/the execution input is \d+ bytes, more than the 262144 bytes/);
  });

  it('fails with States.DataLimitExceeded, which no Catch takes, when a task returns more than 256 KB', async () => {
    plan = async () => ({ chunks: 'x'.repeat(PAYLOAD_LIMIT_BYTES) });
    const result = await runner.run({ pipeline: 'sales_order_lines' });
    expect(result.status).toBe('FAILED');
    expect(result.error).toBe('States.DataLimitExceeded');
    expect(result.events.filter((e) => e.type === 'StateEntered').map((e) => e.state!.name)).toEqual(['Input', 'Plan']);
    expect(result.alerts).toEqual([]);
  });

  it("hands a function's error to the Catch as Lambda does: its name, and a Cause of errorType, errorMessage and trace", async () => {
    plan = async () => {
      throw new WarehouseError('plan:source-shape failed: ERROR: column "quantity" does not exist');
    };
    const result = await runner.run({ pipeline: 'sales_order_lines' });
    const caught = (
      result.events.find((e) => e.type === 'StateEntered' && e.state?.name === 'RecordFailure')!.state!.input as { error: { Error: string; Cause: string } }
    ).error;
    expect(caught.Error).toBe('WarehouseError');
    const cause = JSON.parse(caught.Cause) as { errorType: string; errorMessage: string; trace: string[] };
    expect(cause).toMatchObject({ errorType: 'WarehouseError', errorMessage: 'plan:source-shape failed: ERROR: column "quantity" does not exist' });
    expect(cause.trace[0]).toBe('WarehouseError: plan:source-shape failed: ERROR: column "quantity" does not exist');
    expect(result.alerts).toHaveLength(1);
  });

  // A database error can quote a long statement; JSON-escaping a quote or a control character makes it longer still.
  it.each([
    ['a multi-byte character', '€'],
    ['a double quote', '"'],
    ['a control character', '\u0001'],
  ])("pages with a bounded alert when a step's error is a megabyte of %s, because the step bounds it as it leaves", async (_what, char) => {
    const longError = stepHandler(async () => {
      throw new WarehouseError(`load-chunk:insert failed: ERROR: ${char.repeat(1_000_000)}`);
    });
    plan = (input) => invoke(longError as never, 'Plan', input, 900);
    const result = await runner.run({ pipeline: 'sales_order_lines' });
    expect(result.events.filter((e) => e.type === 'StateEntered').map((e) => e.state!.name)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
    const caught = (result.events.find((e) => e.type === 'StateEntered' && e.state?.name === 'RecordFailure')!.state!.input as { error: { Cause: string } })
      .error;
    expect(Buffer.byteLength(caught.Cause)).toBeLessThan(MAX_ERROR_MESSAGE_BYTES + 4_096);
    const message = (JSON.parse(caught.Cause) as { errorMessage: string }).errorMessage;
    expect(message.startsWith(`load-chunk:insert failed: ERROR: ${char.repeat(10)}`)).toBe(true);
    expect(message).toMatch(/\.\.\. \(\d+ bytes in all\)$/);
    expect(result.alerts).toHaveLength(1);
    expect(Buffer.byteLength(result.alerts[0]!.message)).toBeLessThan(MAX_ERROR_MESSAGE_BYTES + 4_096);
  });

  it('ends without an alert, as on AWS, when an unbounded error would carry the state over 256 KB', async () => {
    plan = async () => {
      throw new WarehouseError('x'.repeat(PAYLOAD_LIMIT_BYTES));
    };
    const result = await runner.run({ pipeline: 'sales_order_lines' });
    expect(result.error).toBe('States.DataLimitExceeded');
    expect(result.alerts).toEqual([]);
  });
});

describe("AWS/Lambda's view of the invocations", () => {
  // A runner for each test: a test reads every invocation record of its runner.
  let runner: LocalRunner;
  let close: () => void;
  let plan: (input: unknown) => Promise<unknown>;
  beforeEach(async () => {
    ({ runner, close } = await unreachableRunner({ taskOverrides: { Plan: (input) => plan(input) }, functionTimeoutsSeconds: { Plan: 1 } }));
  });
  afterEach(() => close?.());
  const planRecords = () => runner.invocations.filter((r) => r.functionName === runner.workflow.functions.Plan);

  it('counts a function error as an invocation and an error, a Lambda service error as neither', async () => {
    plan = async () => {
      throw new WarehouseError('plan failed');
    };
    const failed = await runner.run({ pipeline: 'sales_order_lines' });
    plan = async () => {
      throw Object.assign(new Error('Lambda is down'), { name: 'Lambda.ServiceException' });
    };
    await runner.run({ pipeline: 'sales_order_lines' });

    const [functionError, ...serviceErrors] = planRecords();
    expect(failed.invocations[0]).toEqual(functionError);
    expect(functionError).toMatchObject({ outcome: 'functionError', durationMs: expect.any(Number) });
    // The first attempt and the Retry's three.
    expect(serviceErrors.map((r) => r.outcome)).toEqual(['serviceError', 'serviceError', 'serviceError', 'serviceError']);
    expect(lambdaMetricData(planRecords()).map((d) => [d.MetricName, d.Value])).toEqual([
      ['Invocations', 1],
      ['Errors', 1],
      ['Duration', functionError!.durationMs],
    ]);
  });

  it("counts an invocation that ran past the function's timeout as an error of the timeout's length, as Lambda ends it there", async () => {
    const before = planRecords().length;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    plan = async () => {
      await held;
      return {};
    };
    const result = await runner.run({ pipeline: 'sales_order_lines' });
    // Step Functions gave up on the Task at the function's timeout; the code went on until released.
    expect(result.events.some((e) => e.Error === 'States.Timeout')).toBe(true);

    release();
    await until(() => planRecords().length > before, 'the held Plan to end');

    expect(planRecords().slice(before)).toEqual([expect.objectContaining({ outcome: 'functionError', durationMs: 1000 })]);
  });
});
