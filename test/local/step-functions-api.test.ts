// The local Step Functions endpoint's listing, description and history
// operations, through the real @aws-sdk/client-sfn: ListExecutions (newest
// first, statusFilter, pages), GetExecutionHistory (typed events with the
// states' input), DescribeStateMachine and ListStateMachines, and
// InvalidArn for an ARN that is not one of the operation's resource type.
import {
  DescribeExecutionCommand,
  DescribeStateMachineCommand,
  ExecutionDoesNotExist,
  GetExecutionHistoryCommand,
  type HistoryEvent,
  InvalidArn,
  InvalidToken,
  ListExecutionsCommand,
  ListStateMachinesCommand,
  type SFNClient,
  StartExecutionCommand,
  StateMachineDoesNotExist,
  StopExecutionCommand,
  ValidationException,
} from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localStepFunctionsClient } from '../../local/aws-clients.ts';
import { type LocalStepFunctionsApi, startLocalStepFunctionsApi } from '../../local/step-functions-api.ts';
import { awsJsonRequest } from '../support/aws-wire.ts';
import { inputFor, useWorkflow, type Workflow } from '../support/workflow.ts';

let wf: Workflow;
let api: LocalStepFunctionsApi;
let sfn: SFNClient;
let stateMachineArn: string;
let succeededArn: string;
let abortedArn: string;
let failedArn: string;

beforeAll(async () => {
  wf = await useWorkflow('sfn_api_list');
  await wf.sample({ rowsPerDay: 10, sourceDays: 6, liveDays: 3 });
  api = await startLocalStepFunctionsApi(wf.runner);
  sfn = localStepFunctionsClient(api.endpoint);
  stateMachineArn = wf.runner.workflow.stateMachineArn;
  const done = await sfn.send(new StartExecutionCommand({ stateMachineArn, name: 'listed-ok', input: JSON.stringify(inputFor(5)) }));
  succeededArn = done.executionArn!;
  await wf.runner.describe(succeededArn)!.running.result;
  // Fails in Plan with an error no Retry takes: RecordFailure, then Notify publishes the alert (an SNS Task).
  wf.faults.Plan = async () => {
    throw Object.assign(new Error('the plan broke'), { name: 'PlanBroke' });
  };
  const failed = await sfn.send(new StartExecutionCommand({ stateMachineArn, name: 'listed-failed', input: JSON.stringify(inputFor(5)) }));
  failedArn = failed.executionArn!;
  await wf.runner.describe(failedArn)!.running.result;
  // Held in Plan until stopped: a RUNNING execution, then an ABORTED one.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const inPlan = new Promise<void>((resolve) => (entered = resolve));
  wf.faults.Plan = async (input, next) => {
    entered();
    await held;
    return next(input);
  };
  const stopped = await sfn.send(new StartExecutionCommand({ stateMachineArn, name: 'listed-stopped', input: JSON.stringify(inputFor(5)) }));
  abortedArn = stopped.executionArn!;
  await inPlan;
  const running = await sfn.send(new ListExecutionsCommand({ stateMachineArn, statusFilter: 'RUNNING' }));
  expect(running.executions?.map((e) => e.name)).toEqual(['listed-stopped']);
  await sfn.send(new StopExecutionCommand({ executionArn: abortedArn }));
  release();
  await wf.quiesce();
  wf.reset();
});

afterAll(async () => {
  await api?.close();
  await wf?.close();
});

describe('ListExecutions', () => {
  it('lists the executions newest first, with status and dates', async () => {
    const listed = await sfn.send(new ListExecutionsCommand({ stateMachineArn }));
    expect(listed.executions?.map((e) => [e.name, e.status])).toEqual([
      ['listed-stopped', 'ABORTED'],
      ['listed-failed', 'FAILED'],
      ['listed-ok', 'SUCCEEDED'],
    ]);
    expect(listed.executions?.[2]?.startDate).toBeInstanceOf(Date);
    expect(listed.executions?.[2]?.stopDate!.getTime()).toBeGreaterThanOrEqual(listed.executions![2]!.startDate!.getTime());
    expect(listed.nextToken).toBeUndefined();
  });

  it('filters by status', async () => {
    const succeeded = await sfn.send(new ListExecutionsCommand({ stateMachineArn, statusFilter: 'SUCCEEDED' }));
    expect(succeeded.executions?.map((e) => e.executionArn)).toEqual([succeededArn]);
    const running = await sfn.send(new ListExecutionsCommand({ stateMachineArn, statusFilter: 'RUNNING' }));
    expect(running.executions).toEqual([]);
  });

  it('pages with maxResults and nextToken, and refuses a token it did not issue', async () => {
    const first = await sfn.send(new ListExecutionsCommand({ stateMachineArn, maxResults: 1 }));
    expect(first.executions?.map((e) => e.name)).toEqual(['listed-stopped']);
    const rest = await sfn.send(new ListExecutionsCommand({ stateMachineArn, maxResults: 2, nextToken: first.nextToken! }));
    expect(rest.executions?.map((e) => e.name)).toEqual(['listed-failed', 'listed-ok']);
    expect(rest.nextToken).toBeUndefined();
    await expect(sfn.send(new ListExecutionsCommand({ stateMachineArn, nextToken: 'bm9wZQ' }))).rejects.toBeInstanceOf(InvalidToken);
  });
});

/** Every event of an execution's history, page after page. */
async function historyOf(executionArn: string): Promise<HistoryEvent[]> {
  const events: HistoryEvent[] = [];
  let nextToken: string | undefined;
  do {
    const page = await sfn.send(new GetExecutionHistoryCommand({ executionArn, maxResults: 1000, ...(nextToken ? { nextToken } : {}) }));
    events.push(...(page.events ?? []));
    nextToken = page.nextToken;
  } while (nextToken);
  return events;
}

/** The events of the visit of top-level state `name`: from its Entered to its Exited. */
function visitOf(events: HistoryEvent[], name: string): HistoryEvent[] {
  const start = events.findIndex((e) => e.type?.endsWith('StateEntered') && e.stateEnteredEventDetails?.name === name);
  const end = events.findIndex((e, i) => i > start && e.type?.endsWith('StateExited') && e.stateExitedEventDetails?.name === name);
  return events.slice(start, end + 1);
}

describe('GetExecutionHistory', () => {
  it("gives the execution's events as Step Functions types them, with the states' input and output", async () => {
    const events = await historyOf(succeededArn);
    expect(events[0]?.type).toBe('ExecutionStarted');
    expect(JSON.parse(events[0]!.executionStartedEventDetails!.input!)).toEqual(inputFor(5));
    expect(events.at(-1)?.type).toBe('ExecutionSucceeded');
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    const plan = events.find((e) => e.type === 'TaskStateEntered' && e.stateEnteredEventDetails?.name === 'Plan');
    expect(JSON.parse(plan!.stateEnteredEventDetails!.input!)).toBeTypeOf('object');
    const planned = events.find((e) => e.type === 'TaskStateExited' && e.stateExitedEventDetails?.name === 'Plan');
    expect(JSON.parse(planned!.stateExitedEventDetails!.output!)).toHaveProperty('plan');
    expect(events.some((e) => e.type === 'MapIterationStarted' && e.mapIterationStartedEventDetails?.name === 'LoadChunks')).toBe(true);
    // As long as the runner counted it.
    expect(events).toHaveLength(wf.runner.describe(succeededArn)!.result!.historyEvents);
  });

  it("writes a Lambda Task's invocation between its Entered and Exited, each event following the one before", async () => {
    const events = await historyOf(succeededArn);
    const plan = visitOf(events, 'Plan');
    expect(plan.map((e) => e.type)).toEqual([
      'TaskStateEntered',
      'LambdaFunctionScheduled',
      'LambdaFunctionStarted',
      'LambdaFunctionSucceeded',
      'TaskStateExited',
    ]);
    expect(plan.slice(1).map((e) => e.previousEventId)).toEqual(plan.slice(0, -1).map((e) => e.id));
    const scheduled = plan[1]!.lambdaFunctionScheduledEventDetails!;
    expect(scheduled.resource).toMatch(/^arn:aws:lambda:local:000000000000:function:WorkflowPlanFunction/);
    // What the function was invoked with: the state's Parameters applied to its input.
    expect(JSON.parse(scheduled.input!)).toMatchObject({ input: inputFor(5), leaseSeconds: expect.any(Number) });
    const result = JSON.parse(plan[3]!.lambdaFunctionSucceededEventDetails!.output!) as Record<string, unknown>;
    expect(JSON.parse(plan[4]!.stateExitedEventDetails!.output!)).toMatchObject({ plan: result });
  });

  it('exits every state it entered, Map states included, in a succeeded execution', async () => {
    const events = await historyOf(succeededArn);
    const names = (suffix: string) =>
      events
        .filter((e) => e.type?.endsWith(suffix))
        .map((e) => `${e.type!.slice(0, -suffix.length)}:${(e.stateEnteredEventDetails ?? e.stateExitedEventDetails)!.name}`)
        .sort();
    expect(names('StateExited')).toEqual(names('StateEntered'));
    const loadChunks = visitOf(events, 'LoadChunks');
    expect(loadChunks.map((e) => e.type).filter((t) => t?.startsWith('MapState'))).toEqual([
      'MapStateEntered',
      'MapStateStarted',
      'MapStateSucceeded',
      'MapStateExited',
    ]);
    const iterations = loadChunks.filter((e) => e.type === 'MapIterationStarted').length;
    expect(loadChunks[1]!.mapStateStartedEventDetails).toEqual({ length: iterations });
    for (const e of events) expect(e.previousEventId!).toBeLessThan(e.id!);
  });

  it('writes the SNS Task that publishes the alert as TaskScheduled of sns publish, and a Fail state without an exit', async () => {
    const events = await historyOf(failedArn);
    const notify = visitOf(events, 'Notify');
    expect(notify.map((e) => e.type)).toEqual(['TaskStateEntered', 'TaskScheduled', 'TaskStarted', 'TaskSucceeded', 'TaskStateExited']);
    const scheduled = notify[1]!.taskScheduledEventDetails!;
    expect(scheduled).toMatchObject({ resourceType: 'sns', resource: 'publish', region: 'local' });
    expect(JSON.parse(scheduled.parameters!)).toMatchObject({
      TopicArn: expect.stringMatching(/^arn:aws:sns:/),
      Message: expect.stringContaining('the plan broke'),
    });
    expect(events.slice(-2).map((e) => [e.type, e.stateEnteredEventDetails?.name ?? e.executionFailedEventDetails?.error])).toEqual([
      ['FailStateEntered', 'Failed'],
      ['ExecutionFailed', expect.any(String)],
    ]);
    const plan = visitOf(events, 'Plan').map((e) => e.type);
    expect(plan.slice(0, 4)).toEqual(['TaskStateEntered', 'LambdaFunctionScheduled', 'LambdaFunctionStarted', 'LambdaFunctionFailed']);
    expect(events.find((e) => e.type === 'LambdaFunctionFailed')?.lambdaFunctionFailedEventDetails?.error).toBe('PlanBroke');
  });

  it('reverses, pages and leaves the data out on request; an aborted execution ends ExecutionAborted', async () => {
    const { events: newest = [] } = await sfn.send(
      new GetExecutionHistoryCommand({ executionArn: abortedArn, reverseOrder: true, maxResults: 1, includeExecutionData: false }),
    );
    expect(newest.map((e) => e.type)).toEqual(['ExecutionAborted']);
    const { events = [] } = await sfn.send(new GetExecutionHistoryCommand({ executionArn: abortedArn, includeExecutionData: false }));
    expect(events[0]?.executionStartedEventDetails?.input).toBeUndefined();
    expect(events[0]?.executionStartedEventDetails?.roleArn).toMatch(/^arn:aws:iam::/);
    // Stopped while Plan ran: its invocation started, and it never exited.
    expect(events.map((e) => e.type)).toContain('LambdaFunctionStarted');
    expect(events.some((e) => e.type === 'TaskStateExited' && e.stateExitedEventDetails?.name === 'Plan')).toBe(false);
  });
});

describe('DescribeStateMachine and ListStateMachines', () => {
  it('describes the state machine as the template deploys it: definition, role, logging, tracing', async () => {
    const described = await sfn.send(new DescribeStateMachineCommand({ stateMachineArn }));
    expect(described).toMatchObject({
      stateMachineArn,
      name: stateMachineArn.split(':').at(-1),
      status: 'ACTIVE',
      type: 'STANDARD',
      roleArn: expect.stringMatching(/^arn:aws:iam::000000000000:role\/WorkflowStateMachineRole/),
      loggingConfiguration: {
        level: 'ALL',
        includeExecutionData: true,
        destinations: [{ cloudWatchLogsLogGroup: { logGroupArn: expect.stringMatching(/^arn:aws:logs:local:000000000000:log-group:.+:\*$/) } }],
      },
      tracingConfiguration: { enabled: true },
    });
    expect(described.creationDate).toBeInstanceOf(Date);
    // The definition is the synthesized one, not the local copy with scaled retry waits.
    expect(JSON.parse(described.definition!)).toEqual(wf.runner.workflow.definition);
  });

  it('lists the one state machine, in pages of maxResults', async () => {
    const listed = await sfn.send(new ListStateMachinesCommand({}));
    expect(listed.stateMachines).toEqual([{ stateMachineArn, name: stateMachineArn.split(':').at(-1), type: 'STANDARD', creationDate: expect.any(Date) }]);
    expect(listed.nextToken).toBeUndefined();
    const first = await sfn.send(new ListStateMachinesCommand({ maxResults: 1 }));
    expect(first.stateMachines).toHaveLength(1);
    await expect(sfn.send(new ListStateMachinesCommand({ maxResults: 1001 }))).rejects.toBeInstanceOf(ValidationException);
    await expect(sfn.send(new ListStateMachinesCommand({ nextToken: 'bm9wZQ' }))).rejects.toBeInstanceOf(InvalidToken);
  });
});

describe('ARNs', () => {
  const unknownMachine = () => stateMachineArn.replace(/:[^:]+$/, ':NoSuchMachine');
  const unknownExecution = () => `${stateMachineArn.replace(':stateMachine:', ':execution:')}:no-such-execution`;

  it('answers an ARN that is not an ARN with InvalidArn, in every operation that takes one', async () => {
    const calls = [
      () => sfn.send(new DescribeExecutionCommand({ executionArn: 'not-an-arn' })),
      () => sfn.send(new GetExecutionHistoryCommand({ executionArn: 'not-an-arn' })),
      () => sfn.send(new StopExecutionCommand({ executionArn: 'not-an-arn' })),
      () => sfn.send(new DescribeStateMachineCommand({ stateMachineArn: 'not-an-arn' })),
      () => sfn.send(new StartExecutionCommand({ stateMachineArn: 'not-an-arn', input: '{}' })),
      () => sfn.send(new ListExecutionsCommand({ stateMachineArn: 'not-an-arn' })),
    ];
    for (const call of calls) {
      await expect(call()).rejects.toBeInstanceOf(InvalidArn);
    }
    await expect(calls[0]!()).rejects.toThrow("Invalid Arn: 'Invalid ARN prefix: not-an-arn'");
  });

  it('answers an ARN of the wrong resource type, or of another service, with InvalidArn', async () => {
    await expect(sfn.send(new DescribeExecutionCommand({ executionArn: stateMachineArn }))).rejects.toThrow(
      "Invalid Arn: 'Resource type not valid in this context: statemachine'",
    );
    await expect(sfn.send(new DescribeStateMachineCommand({ stateMachineArn: succeededArn }))).rejects.toBeInstanceOf(InvalidArn);
    await expect(sfn.send(new DescribeStateMachineCommand({ stateMachineArn: 'arn:aws:lambda:local:000000000000:function:Plan' }))).rejects.toBeInstanceOf(
      InvalidArn,
    );
    await expect(sfn.send(new DescribeExecutionCommand({ executionArn: 'arn:aws:states:local:000000000000:execution:OnlyOnePart' }))).rejects.toBeInstanceOf(
      InvalidArn,
    );
  });

  it('answers a well-formed ARN it does not know with ExecutionDoesNotExist or StateMachineDoesNotExist', async () => {
    await expect(sfn.send(new DescribeExecutionCommand({ executionArn: unknownExecution() }))).rejects.toBeInstanceOf(ExecutionDoesNotExist);
    await expect(sfn.send(new GetExecutionHistoryCommand({ executionArn: unknownExecution() }))).rejects.toBeInstanceOf(ExecutionDoesNotExist);
    await expect(sfn.send(new StopExecutionCommand({ executionArn: unknownExecution() }))).rejects.toBeInstanceOf(ExecutionDoesNotExist);
    await expect(sfn.send(new DescribeStateMachineCommand({ stateMachineArn: unknownMachine() }))).rejects.toBeInstanceOf(StateMachineDoesNotExist);
    await expect(sfn.send(new StartExecutionCommand({ stateMachineArn: unknownMachine(), input: '{}' }))).rejects.toBeInstanceOf(StateMachineDoesNotExist);
  });
});

describe('on the wire, as the AWS CLI sends them', () => {
  const cli = (target: string, body: Record<string, unknown>) =>
    awsJsonRequest(api.endpoint, { protocol: '1.0', service: 'states', target: `AWSStepFunctions.${target}`, body });

  it('answers DescribeStateMachine and ListStateMachines in AWS JSON 1.0, dates as epoch seconds', async () => {
    const described = await cli('DescribeStateMachine', { stateMachineArn });
    expect(described.status).toBe(200);
    expect(described.contentType).toBe('application/x-amz-json-1.0');
    expect(described.body).toMatchObject({ stateMachineArn, status: 'ACTIVE', type: 'STANDARD', creationDate: expect.any(Number) });
    expect(typeof described.body.definition).toBe('string');
    const listed = await cli('ListStateMachines', { maxResults: 10 });
    expect(listed.body).toEqual({
      stateMachines: [{ stateMachineArn, name: expect.any(String), type: 'STANDARD', creationDate: described.body.creationDate }],
    });
  });

  it('answers a malformed ARN with a typed InvalidArn error and an unknown one with ExecutionDoesNotExist', async () => {
    const invalid = await cli('GetExecutionHistory', { executionArn: 'arn:aws:states:local:000000000000:stateMachine:x' });
    expect(invalid).toMatchObject({
      status: 400,
      errorType: 'InvalidArn',
      body: { __type: 'InvalidArn', message: "Invalid Arn: 'Resource type not valid in this context: statemachine'" },
    });
    const unknown = await cli('DescribeExecution', { executionArn: `${stateMachineArn.replace(':stateMachine:', ':execution:')}:nope` });
    expect(unknown).toMatchObject({ status: 400, errorType: 'ExecutionDoesNotExist' });
  });
});
