// The local Step Functions endpoint's listing and history operations, through
// the real @aws-sdk/client-sfn: ListExecutions (newest first, statusFilter,
// pages) and GetExecutionHistory (typed events with the states' input).
import {
  GetExecutionHistoryCommand,
  InvalidToken,
  ListExecutionsCommand,
  type SFNClient,
  StartExecutionCommand,
  StopExecutionCommand,
} from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localStepFunctionsClient } from '../../local/aws-clients.ts';
import { type LocalStepFunctionsApi, startLocalStepFunctionsApi } from '../../local/step-functions-api.ts';
import { inputFor, useWorkflow, type Workflow } from '../support/workflow.ts';

let wf: Workflow;
let api: LocalStepFunctionsApi;
let sfn: SFNClient;
let stateMachineArn: string;
let succeededArn: string;
let abortedArn: string;

beforeAll(async () => {
  wf = await useWorkflow('sfn_api_list');
  await wf.sample({ rowsPerDay: 10, sourceDays: 6, liveDays: 3 });
  api = await startLocalStepFunctionsApi(wf.runner);
  sfn = localStepFunctionsClient(api.endpoint);
  stateMachineArn = wf.runner.workflow.stateMachineArn;
  const done = await sfn.send(new StartExecutionCommand({ stateMachineArn, name: 'listed-ok', input: JSON.stringify(inputFor(5)) }));
  succeededArn = done.executionArn!;
  await wf.runner.describe(succeededArn)!.running.result;
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
      ['listed-ok', 'SUCCEEDED'],
    ]);
    expect(listed.executions?.[1]?.startDate).toBeInstanceOf(Date);
    expect(listed.executions?.[1]?.stopDate!.getTime()).toBeGreaterThanOrEqual(listed.executions![1]!.startDate!.getTime());
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
    const second = await sfn.send(new ListExecutionsCommand({ stateMachineArn, maxResults: 1, nextToken: first.nextToken! }));
    expect(second.executions?.map((e) => e.name)).toEqual(['listed-ok']);
    expect(second.nextToken).toBeUndefined();
    await expect(sfn.send(new ListExecutionsCommand({ stateMachineArn, nextToken: 'bm9wZQ' }))).rejects.toBeInstanceOf(InvalidToken);
  });
});

describe('GetExecutionHistory', () => {
  it("gives the execution's events as Step Functions types them, with the states' input and output", async () => {
    const { events = [] } = await sfn.send(new GetExecutionHistoryCommand({ executionArn: succeededArn, maxResults: 1000 }));
    expect(events[0]?.type).toBe('ExecutionStarted');
    expect(JSON.parse(events[0]!.executionStartedEventDetails!.input!)).toEqual(inputFor(5));
    expect(events.at(-1)?.type).toBe('ExecutionSucceeded');
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    const plan = events.find((e) => e.type === 'TaskStateEntered' && e.stateEnteredEventDetails?.name === 'Plan');
    expect(JSON.parse(plan!.stateEnteredEventDetails!.input!)).toBeTypeOf('object');
    const planned = events.find((e) => e.type === 'TaskStateExited' && e.stateExitedEventDetails?.name === 'Plan');
    expect(JSON.parse(planned!.stateExitedEventDetails!.output!)).toHaveProperty('plan');
    expect(events.some((e) => e.type === 'MapIterationStarted' && e.mapIterationStartedEventDetails?.name === 'LoadChunks')).toBe(true);
  });

  it('reverses, pages and leaves the data out on request; an aborted execution ends ExecutionAborted', async () => {
    const { events: newest = [] } = await sfn.send(new GetExecutionHistoryCommand({ executionArn: abortedArn, reverseOrder: true, maxResults: 1, includeExecutionData: false }));
    expect(newest.map((e) => e.type)).toEqual(['ExecutionAborted']);
    const { events = [] } = await sfn.send(new GetExecutionHistoryCommand({ executionArn: abortedArn, includeExecutionData: false }));
    expect(events[0]?.executionStartedEventDetails?.input).toBeUndefined();
  });
});
