// The history the local runner writes for an execution (local/history.ts),
// as Step Functions writes it: the events of each Task attempt between the
// state's Entered and Exited, a Map's start, iterations and end, a Map Run
// for a distributed Map, what a failure, a retry and a Catch leave, and
// previousEventId along each line of execution. Step Functions fails an
// execution whose history reaches 25,000 events; the runner fails it the
// same way. A Distributed Map's children each have a history of their own,
// which is how a long batch stays inside.
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { type CfnFunction, Code, type IFunction, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import {
  Choice,
  Condition,
  DefinitionBody,
  DistributedMap,
  Fail,
  type IChainable,
  ItemBatcher,
  JsonPath,
  Map as MapState,
  Pass,
  StateMachine,
  Succeed,
  Timeout,
} from 'aws-cdk-lib/aws-stepfunctions';
import { LambdaInvoke } from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { afterEach, describe, expect, it } from 'vitest';
import { ENTRY_METADATA_KEY } from '../../lib/workflow-steps.ts';
import { HISTORY_LIMIT_ERROR, MAX_HISTORY_EVENTS, servedEvent } from '../../local/history.ts';
import { LocalRunner } from '../../local/runner.ts';
import type { Template as CfnTemplate } from '../../local/template.ts';
import { resetHistoryWork } from '../support/history-work.ts';

type Served = Record<string, unknown> & { id: number; previousEventId: number; type: string };

/** A state machine the `build` function chains in a stack of its own, with `work` (test/support/history-work.ts) to invoke. */
function machine(build: (stack: Stack, work: IFunction) => IChainable): CfnTemplate {
  const stack = new Stack(new App(), 'HistoryTest');
  const work = new LambdaFunction(stack, 'Work', {
    runtime: Runtime.NODEJS_22_X,
    handler: 'index.handler',
    code: Code.fromInline('exports.handler = async () => ({})'),
  });
  (work.node.defaultChild as CfnFunction).addMetadata(ENTRY_METADATA_KEY, 'test/support/history-work.ts');
  new StateMachine(stack, 'Machine', { definitionBody: DefinitionBody.fromChainable(build(stack, work)) });
  return Template.fromStack(stack).toJSON() as CfnTemplate;
}

/** Runs the machine once and returns its history as GetExecutionHistory serves it, and the runner's count of it. */
async function historyOf(template: CfnTemplate, input: unknown): Promise<{ events: Served[]; status: string; counted: number }> {
  runner = await LocalRunner.create({ env: {}, template });
  const running = await runner.start(input);
  const result = await running.result;
  const events = runner
    .describe(running.executionId)!
    .history.events()
    .map((e) => servedEvent(e, true) as Served);
  return { events, status: result.status, counted: result.historyEvents };
}

const types = (events: readonly Served[]) => events.map((e) => e.type);
const details = (event: Served | undefined) => Object.entries(event ?? {}).find(([key]) => key.endsWith('EventDetails'))?.[1] as Record<string, unknown>;
const byId = (events: readonly Served[], id: number) => events[id - 1]!;

/** Ids 1..n in order, each previousEventId an earlier event (0 for none). */
function expectNumbered(events: readonly Served[]): void {
  expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
  for (const e of events) expect(e.previousEventId).toBeLessThan(e.id);
}

/** Every state entered by name is exited as often (no state may stay open in a SUCCEEDED execution). */
function expectBalanced(events: readonly Served[]): void {
  const count = (suffix: string) => {
    const counts = new Map<string, number>();
    for (const e of events.filter((e) => e.type.endsWith(suffix))) {
      const key = `${e.type.slice(0, -suffix.length)}:${String(details(e).name)}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return Object.fromEntries(counts);
  };
  expect(count('StateExited')).toEqual(count('StateEntered'));
}

const ITEMS = Array.from({ length: 7000 }, (_, i) => i);

let runner: LocalRunner | undefined;
afterEach(() => {
  runner?.close();
  runner = undefined;
  resetHistoryWork();
});

describe('a Task in the history', () => {
  it('writes a Lambda function Task as LambdaFunctionScheduled, Started and Succeeded between its Entered and Exited', async () => {
    const template = machine((stack, work) =>
      new Pass(stack, 'Start')
        .next(
          new LambdaInvoke(stack, 'Call', {
            lambdaFunction: work,
            payloadResponseOnly: true,
            resultPath: '$.called',
            taskTimeout: Timeout.duration(Duration.seconds(30)),
          }),
        )
        .next(new Succeed(stack, 'Done')),
    );
    const { events, status, counted } = await historyOf(template, { n: 7 });

    expect(status).toBe('SUCCEEDED');
    expect(types(events)).toEqual([
      'ExecutionStarted',
      'PassStateEntered',
      'PassStateExited',
      'TaskStateEntered',
      'LambdaFunctionScheduled',
      'LambdaFunctionStarted',
      'LambdaFunctionSucceeded',
      'TaskStateExited',
      'SucceedStateEntered',
      'SucceedStateExited',
      'ExecutionSucceeded',
    ]);
    // Step Functions points the first state, like the execution's start, to event 0.
    expect(events.map((e) => e.previousEventId)).toEqual([0, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(details(events[4])).toEqual({
      resource: expect.stringMatching(/^arn:aws:lambda:local:000000000000:function:Work/),
      input: '{"n":7}',
      inputDetails: { truncated: false },
      timeoutInSeconds: 30,
    });
    expect(details(events[6])).toEqual({ output: '{"done":7}', outputDetails: { truncated: false } });
    expect(JSON.parse(details(events[7]).output as string)).toEqual({ n: 7, called: { done: 7 } });
    expect(details(events[0])).toMatchObject({ input: '{"n":7}', roleArn: expect.stringMatching(/^arn:aws:iam::000000000000:role\//) });
    expect(counted).toBe(events.length);
  });

  it('writes the optimized Lambda integration as TaskScheduled, TaskStarted and TaskSucceeded of lambda invoke', async () => {
    const template = machine((stack, work) => new LambdaInvoke(stack, 'Invoke', { lambdaFunction: work, resultPath: '$.invoked' }));
    const { events } = await historyOf(template, { n: 3 });

    expect(types(events)).toEqual([
      'ExecutionStarted',
      'TaskStateEntered',
      'TaskScheduled',
      'TaskStarted',
      'TaskSucceeded',
      'TaskStateExited',
      'ExecutionSucceeded',
    ]);
    const scheduled = details(events[2]);
    expect(scheduled).toMatchObject({ resourceType: 'lambda', resource: 'invoke', region: 'local' });
    expect(JSON.parse(scheduled.parameters as string)).toEqual({ FunctionName: expect.stringMatching(/:function:Work/), Payload: { n: 3 } });
    expect(details(events[3])).toEqual({ resourceType: 'lambda', resource: 'invoke' });
    expect(details(events[4])).toMatchObject({ resourceType: 'lambda', resource: 'invoke', outputDetails: { truncated: false } });
    expect(JSON.parse(details(events[4]).output as string)).toEqual({ StatusCode: 200, ExecutedVersion: '$LATEST', Payload: { done: 3 } });
  });

  it('writes every attempt of a retried Task, and exits a Task whose error a Catch takes without a success', async () => {
    const template = machine((stack, work) => {
      const call = new LambdaInvoke(stack, 'Call', { lambdaFunction: work, payloadResponseOnly: true });
      call.addRetry({ errors: ['WorkFlaked'], maxAttempts: 1, interval: Duration.seconds(1) });
      call.addCatch(new Pass(stack, 'Caught'), { resultPath: '$.error' });
      return call;
    });
    const { events, status } = await historyOf(template, { key: 'retried', failTimes: 2 });

    expect(status).toBe('SUCCEEDED');
    expect(types(events)).toEqual([
      'ExecutionStarted',
      'TaskStateEntered',
      'LambdaFunctionScheduled',
      'LambdaFunctionStarted',
      'LambdaFunctionFailed',
      'LambdaFunctionScheduled',
      'LambdaFunctionStarted',
      'LambdaFunctionFailed',
      'TaskStateExited',
      'PassStateEntered',
      'PassStateExited',
      'ExecutionSucceeded',
    ]);
    expect(details(events[4])).toMatchObject({ error: 'WorkFlaked', cause: expect.stringContaining('attempt 1 failed') });
    expect(details(events[7])).toMatchObject({ error: 'WorkFlaked', cause: expect.stringContaining('attempt 2 failed') });
    expect(JSON.parse(details(events[8]).output as string)).toMatchObject({ error: { Error: 'WorkFlaked' } });
    expectNumbered(events);
    expectBalanced(events);
  });

  it('fails the execution right after an uncaught failure, and never exits a Fail state', async () => {
    const uncaught = await historyOf(
      machine((stack, work) => new LambdaInvoke(stack, 'Call', { lambdaFunction: work, payloadResponseOnly: true })),
      { fail: true },
    );
    expect(uncaught.status).toBe('FAILED');
    expect(types(uncaught.events)).toEqual([
      'ExecutionStarted',
      'TaskStateEntered',
      'LambdaFunctionScheduled',
      'LambdaFunctionStarted',
      'LambdaFunctionFailed',
      'ExecutionFailed',
    ]);
    expect(details(uncaught.events.at(-1))).toMatchObject({ error: 'WorkFailed' });
    expect(uncaught.events.at(-1)!.previousEventId).toBe(5);
    runner!.close();

    const failState = await historyOf(
      machine((stack) => new Pass(stack, 'Start').next(new Fail(stack, 'Stop', { error: 'Told', cause: 'told to stop' }))),
      {},
    );
    expect(types(failState.events)).toEqual(['ExecutionStarted', 'PassStateEntered', 'PassStateExited', 'FailStateEntered', 'ExecutionFailed']);
    expect(details(failState.events.at(-1))).toEqual({ error: 'Told', cause: 'told to stop' });
  });
});

describe('a Map in the history', () => {
  it('writes its item count, each iteration in a line of its own, and its success before its exit', async () => {
    const template = machine((stack, work) => {
      const map = new MapState(stack, 'Items', { itemsPath: '$.items', resultPath: JsonPath.DISCARD });
      map.itemProcessor(new LambdaInvoke(stack, 'Item', { lambdaFunction: work, payloadResponseOnly: true }));
      return map;
    });
    const { events, status } = await historyOf(template, { items: [{ n: 1 }, { n: 2 }, { n: 3 }] });

    expect(status).toBe('SUCCEEDED');
    expectNumbered(events);
    expectBalanced(events);
    const [entered, started] = [events[1]!, events[2]!];
    expect([entered.type, started.type, details(started)]).toEqual(['MapStateEntered', 'MapStateStarted', { length: 3 }]);
    // Each iteration is a line of its own: started, the Task's five events, succeeded.
    const iterations = events.filter((e) => e.type === 'MapIterationStarted');
    expect(iterations.map((e) => details(e).index).sort()).toEqual([0, 1, 2]);
    for (const start of iterations) {
      const line = [start];
      for (
        let next = events.find((e) => e.previousEventId === start.id && e.type !== 'MapIterationStarted');
        next;
        next = events.find((e) => e.previousEventId === line.at(-1)!.id && !e.type.startsWith('MapIterationStarted'))
      ) {
        line.push(next);
        if (next.type === 'MapIterationSucceeded') break;
      }
      expect(types(line)).toEqual([
        'MapIterationStarted',
        'TaskStateEntered',
        'LambdaFunctionScheduled',
        'LambdaFunctionStarted',
        'LambdaFunctionSucceeded',
        'TaskStateExited',
        'MapIterationSucceeded',
      ]);
      expect(details(line.at(-1))).toEqual(details(start));
    }
    // MapStateSucceeded and MapStateExited both follow the iteration that ended last.
    const [succeeded, exited, done] = events.slice(-3);
    const lastEnded = events.filter((e) => e.type === 'MapIterationSucceeded').at(-1)!;
    expect([succeeded!.type, succeeded!.previousEventId]).toEqual(['MapStateSucceeded', lastEnded.id]);
    expect([exited!.type, exited!.previousEventId]).toEqual(['MapStateExited', lastEnded.id]);
    expect([done!.type, done!.previousEventId]).toEqual(['ExecutionSucceeded', exited!.id]);
  });

  it('fails with its failed iteration, starts no further one, and is exited when a Catch takes the failure', async () => {
    const template = machine((stack, work) => {
      const map = new MapState(stack, 'Items', { itemsPath: '$.items', resultPath: JsonPath.DISCARD, maxConcurrency: 1 });
      map.itemProcessor(new LambdaInvoke(stack, 'Item', { lambdaFunction: work, payloadResponseOnly: true }));
      map.addCatch(new Pass(stack, 'Caught'), { resultPath: '$.error' });
      return map;
    });
    const { events, status } = await historyOf(template, { items: [{ n: 1 }, { n: 2, fail: true }, { n: 3 }] });

    expect(status).toBe('SUCCEEDED');
    expectNumbered(events);
    expect(events.filter((e) => e.type === 'MapIterationStarted').map((e) => details(e).index)).toEqual([0, 1]);
    const failedCall = events.find((e) => e.type === 'LambdaFunctionFailed')!;
    const iterationFailed = events.find((e) => e.type === 'MapIterationFailed')!;
    const mapFailed = events.find((e) => e.type === 'MapStateFailed')!;
    const exited = events.find((e) => e.type === 'MapStateExited')!;
    expect(iterationFailed.previousEventId).toBe(failedCall.id);
    expect(mapFailed.previousEventId).toBe(failedCall.id);
    expect(exited.previousEventId).toBe(mapFailed.id);
    expect(JSON.parse(details(exited).output as string)).toMatchObject({ error: { Error: 'WorkFailed' } });
    expect(types(events.slice(-3))).toEqual(['PassStateEntered', 'PassStateExited', 'ExecutionSucceeded']);
    expect(events.some((e) => e.type === 'MapStateSucceeded')).toBe(false);
  });

  it('starts again with MapStateStarted when a Retry takes its failure, and fails once no Retry is left', async () => {
    const template = machine((stack) => {
      const map = new MapState(stack, 'Items', { itemsPath: '$.items', resultPath: JsonPath.DISCARD });
      map.itemProcessor(
        new Choice(stack, 'Bad?')
          .when(Condition.booleanEquals('$.fail', true), new Fail(stack, 'ItemFailed', { error: 'ItemFailed' }))
          .otherwise(new Pass(stack, 'Item')),
      );
      map.addRetry({ errors: ['ItemFailed'], maxAttempts: 1, interval: Duration.seconds(1) });
      return map;
    });
    const { events, status } = await historyOf(template, { items: [{ fail: true }] });

    expect(status).toBe('FAILED');
    const attempt = ['MapStateStarted', 'MapIterationStarted', 'ChoiceStateEntered', 'ChoiceStateExited', 'FailStateEntered', 'MapIterationFailed'];
    expect(types(events)).toEqual(['ExecutionStarted', 'MapStateEntered', ...attempt, ...attempt, 'MapStateFailed', 'ExecutionFailed']);
    const failStates = events.filter((e) => e.type === 'FailStateEntered');
    // The second start, and the failure, follow the failed iteration's last event.
    expect(events[8]!.previousEventId).toBe(failStates[0]!.id);
    expect(events.at(-2)!.previousEventId).toBe(failStates[1]!.id);
    expect(details(events.at(-1))).toMatchObject({ error: 'ItemFailed' });
  });
});

describe('a distributed Map in the history', () => {
  const distributed = () =>
    machine((stack) => {
      const map = new DistributedMap(stack, 'Windows', { itemsPath: JsonPath.stringAt('$.items'), resultPath: JsonPath.DISCARD });
      map.itemProcessor(
        new Choice(stack, 'Bad?')
          .when(Condition.booleanEquals('$.fail', true), new Fail(stack, 'WindowFailed', { error: 'WindowFailed' }))
          .otherwise(new Pass(stack, 'Window')),
      );
      return map;
    });

  it('writes a Map Run: its ARN, then its success, the Map succeeding and exiting after it', async () => {
    const { events, status } = await historyOf(distributed(), { items: [{ fail: false }, { fail: false }, { fail: false }] });

    expect(status).toBe('SUCCEEDED');
    expect(types(events)).toEqual([
      'ExecutionStarted',
      'MapStateEntered',
      'MapStateStarted',
      'MapRunStarted',
      'MapRunSucceeded',
      'MapStateSucceeded',
      'MapStateExited',
      'ExecutionSucceeded',
    ]);
    expect(details(events[2])).toEqual({ length: 3 });
    expect(details(events[3])).toEqual({ mapRunArn: expect.stringMatching(/^arn:aws:states:local:000000000000:mapRun:Machine[^/]*\/Windows:[0-9a-f-]{36}$/) });
    expect(events.map((e) => e.previousEventId)).toEqual([0, 0, 2, 3, 4, 5, 5, 7]);
  });

  it("writes a failed Map Run's error, then the Map's failure", async () => {
    const { events, status } = await historyOf(distributed(), { items: [{ fail: false }, { fail: true }] });

    expect(status).toBe('FAILED');
    expect(types(events)).toEqual([
      'ExecutionStarted',
      'MapStateEntered',
      'MapStateStarted',
      'MapRunStarted',
      'MapRunFailed',
      'MapStateFailed',
      'ExecutionFailed',
    ]);
    expect(details(events[4])).toMatchObject({ error: 'States.ExceedToleratedFailureThreshold' });
    expect(byId(events, 6).previousEventId).toBe(5);
  });
});

/** An inline Map of a Pass per item, or the same in a Distributed Map whose children take `perChild` items each. */
function templateWith(perChild?: number): CfnTemplate {
  return machine((stack) => {
    const inline = new MapState(stack, 'Items', { itemsPath: JsonPath.stringAt(perChild === undefined ? '$.items' : '$.Items'), resultPath: JsonPath.DISCARD });
    inline.itemProcessor(new Pass(stack, 'Item'));
    return perChild === undefined
      ? inline
      : new DistributedMap(stack, 'Windows', {
          itemsPath: JsonPath.stringAt('$.items'),
          itemBatcher: new ItemBatcher({ maxItemsPerBatch: perChild }),
          resultPath: JsonPath.DISCARD,
        }).itemProcessor(inline);
  });
}

describe('the history limit', () => {
  it(`fails an execution whose history passes ${MAX_HISTORY_EVENTS} events`, async () => {
    runner = await LocalRunner.create({ env: {}, template: templateWith() });
    const running = await runner.start({ items: ITEMS });
    const result = await running.result;

    expect(result.status).toBe('FAILED');
    expect(result.error).toBe(HISTORY_LIMIT_ERROR);
    expect(result.historyEvents).toBeGreaterThan(MAX_HISTORY_EVENTS);
    const last = runner.describe(running.executionId)!.history.events().at(-1)!;
    expect([last.type, last.details?.error]).toEqual(['ExecutionFailed', HISTORY_LIMIT_ERROR]);
  });

  it('runs the same items as child executions of a Distributed Map, each history well inside the limit', async () => {
    runner = await LocalRunner.create({ env: {}, template: templateWith(1000) });
    const result = await runner.run({ items: ITEMS });

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(result.childExecutions).toHaveLength(7);
    // Four events per item (iteration started and succeeded, Pass entered and exited) plus a few per execution.
    for (const child of result.childExecutions) expect(child.historyEvents).toBeGreaterThan(4000);
    for (const child of result.childExecutions) expect(child.historyEvents).toBeLessThan(4100);
    expect(result.historyEvents).toBeLessThan(20);
  });
});
