// Scheduled runs: the synthesized schedule invokes StartRun with its
// context attributes replaced, as EventBridge Scheduler does; StartRun
// starts the state machine through the real Step Functions client, at a
// local Step Functions endpoint serving the runner, under a name of the
// pipeline and the scheduled time. Step Functions' rules for names (the
// local endpoint keeps them) make a second delivery of the same scheduled
// time start nothing. The sample warehouse is arranged once; each test
// acts on a copy of its own, served by a Step Functions endpoint of its own.
import {
  DescribeExecutionCommand,
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  InvalidName,
  StartExecutionCommand,
  StateMachineDoesNotExist,
  StopExecutionCommand,
} from '@aws-sdk/client-sfn';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { StartRunResult } from '../../functions/start-run/index.ts';
import { localStepFunctionsClient } from '../../local/aws-clients.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { type LocalStepFunctionsApi, startLocalStepFunctionsApi } from '../../local/step-functions-api.ts';
import { until } from '../support/until.ts';
import { inputFor, LIVE, namesFor, PIPELINE, useWorkflowFixture, type Workflow } from '../support/workflow.ts';

const HOUR_MS = 3_600_000;

const fixture = useWorkflowFixture('wf_scheduled', async (wf) => {
  await wf.sample({ rowsPerDay: 20, sourceDays: 10, liveDays: 5 });
});

interface Scheduled {
  wf: Workflow;
  /** The local Step Functions endpoint serving `wf`'s runner. */
  api: LocalStepFunctionsApi;
}

/** A copy of the sample warehouse and an endpoint serving its runner: for the calling describe ('all'), or for each of its tests. */
function useScheduled(scope: 'all' | 'each' = 'all'): Scheduled {
  const scheduled = {} as Scheduled;
  (scope === 'all' ? beforeAll : beforeEach)(async () => {
    const wf = await fixture.fork();
    let api: LocalStepFunctionsApi;
    try {
      api = await startLocalStepFunctionsApi(wf.runner);
    } catch (error) {
      await wf.close();
      throw error;
    }
    Object.assign(scheduled, { wf, api });
    return async () => {
      await api.close();
      await wf.close();
    };
  });
  return scheduled;
}

/** A gate the test opens: Plan waits at it, so the execution is still running while the test acts. */
function holdPlan(wf: Workflow, then: 'plan' | 'fail' = 'plan'): { entered: Promise<void>; open: () => void } {
  let open!: () => void;
  let entered!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const enteredPromise = new Promise<void>((resolve) => (entered = resolve));
  wf.faults.Plan = async (input, next) => {
    entered();
    await opened;
    // 'fail': an execution stopped meanwhile leaves nothing behind (no lease taken by a Plan that outlived it).
    if (then === 'fail') throw Object.assign(new Error('held Plan of a stopped execution'), { name: 'ValidationError' });
    return next(input);
  };
  return { entered: enteredPromise, open };
}

describe('a scheduled run', () => {
  // Due at 06:00 in Berlin on sample day 8 (05:00 UTC in winter): the UTC day chunks end at the start of day 8.
  const due = new Date(sampleDay(8).getTime() + 5 * HOUR_MS);
  const name = `${PIPELINE.name}-scheduled-${due.toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`;

  describe('delivered more than once', () => {
    const s = useScheduled();

    it('is named after its pipeline and scheduled time, plans up to the last boundary before it, and starts once however often it is delivered', async () => {
      const plan = holdPlan(s.wf);
      const first = (await s.wf.runner.fireSchedule(PIPELINE.name, due, s.api.endpoint)) as StartRunResult;
      expect(first).toMatchObject({ name, started: true, input: inputFor(8) });
      await plan.entered;

      // The Scheduler delivers at least once: a second delivery while the run runs gets the same execution.
      const again = (await s.wf.runner.fireSchedule(PIPELINE.name, due, s.api.endpoint, 2)) as StartRunResult;
      expect(again).toMatchObject({ name, started: true, executionArn: first.executionArn });
      expect(s.api.started()).toEqual([name]);

      plan.open();
      const result = await s.wf.runner.describe(first.executionArn!)!.running.result;
      s.wf.reset();
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      expect(await s.wf.fingerprint(LIVE)).toEqual(await s.wf.expected(8));

      // A delivery after it ended (a retry that came late) is refused by Step Functions: nothing starts.
      const late = (await s.wf.runner.fireSchedule(PIPELINE.name, due, s.api.endpoint, 3)) as StartRunResult;
      expect(late).toEqual({ name, started: false, input: inputFor(8) });
      expect(s.api.started()).toEqual([name]);
      // One execution, one attempt of the batch.
      expect(await s.wf.query('SELECT execution_id FROM atomic_publish.batch_attempts WHERE batch_id = $1', [namesFor(8).batchId])).toEqual([
        { execution_id: first.executionArn },
      ]);
    });
  });

  describe('of the next day, after the day before ran', () => {
    const s = useScheduled();
    let dayBefore: ExecutionResult;
    beforeAll(async () => {
      const started = (await s.wf.runner.fireSchedule(PIPELINE.name, due, s.api.endpoint)) as StartRunResult;
      dayBefore = await s.wf.runner.describe(started.executionArn!)!.running.result;
    });

    it('gets a name of its own and runs', async () => {
      expect(dayBefore.status, `${dayBefore.error}: ${dayBefore.cause}`).toBe('SUCCEEDED');
      const next = new Date(due.getTime() + 24 * HOUR_MS);
      const started = (await s.wf.runner.fireSchedule(PIPELINE.name, next, s.api.endpoint)) as StartRunResult;
      expect(started.name).not.toBe(name);
      expect(started).toMatchObject({ started: true, input: inputFor(9) });
      const result = await s.wf.runner.describe(started.executionArn!)!.running.result;
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      expect(await s.wf.fingerprint(LIVE)).toEqual(await s.wf.expected(9));
      expect(s.api.started()).toEqual([name, started.name]);
    });
  });
});

describe('the local Step Functions endpoint, through the real client', () => {
  const s = useScheduled('each');
  const sfn = () => localStepFunctionsClient(s.api.endpoint);
  const start = (name: string, input: unknown, stateMachineArn = s.wf.runner.workflow.stateMachineArn) =>
    sfn().send(new StartExecutionCommand({ stateMachineArn, name, input: JSON.stringify(input) }));

  it('refuses a name Step Functions refuses, and an unknown state machine, starting nothing', async () => {
    const before = s.api.started().length;
    await expect(start('sales_order_lines 2026-04-01', inputFor(9))).rejects.toBeInstanceOf(InvalidName);
    await expect(start('sales_order_lines-2026-04-01T06:00', inputFor(9))).rejects.toBeInstanceOf(InvalidName);
    await expect(start('x'.repeat(81), inputFor(9))).rejects.toBeInstanceOf(InvalidName);
    await expect(start('ok-name', inputFor(9), `${s.wf.runner.workflow.stateMachineArn}Other`)).rejects.toBeInstanceOf(StateMachineDoesNotExist);
    expect(s.api.started().length).toBe(before);
  });

  it('returns the running execution for the same name and input, refuses another input, and refuses the name once it ended', async () => {
    const plan = holdPlan(s.wf);
    const name = 'sales_order_lines-manual-day9';
    const first = await start(name, inputFor(9));
    await plan.entered;
    const same = await start(name, inputFor(9));
    expect(same.executionArn).toBe(first.executionArn);
    await expect(start(name, inputFor(8))).rejects.toBeInstanceOf(ExecutionAlreadyExists);
    const running = await sfn().send(new DescribeExecutionCommand({ executionArn: first.executionArn }));
    expect(running).toMatchObject({ name, status: 'RUNNING', input: JSON.stringify(inputFor(9)) });

    plan.open();
    await until(async () => (await sfn().send(new DescribeExecutionCommand({ executionArn: first.executionArn }))).status !== 'RUNNING', 'the execution ended');
    s.wf.reset();
    const ended = await sfn().send(new DescribeExecutionCommand({ executionArn: first.executionArn }));
    expect(ended.status).toBe('SUCCEEDED');
    expect(ended.stopDate).toBeInstanceOf(Date);
    await expect(start(name, inputFor(9))).rejects.toBeInstanceOf(ExecutionAlreadyExists);
  });

  it('stops a running execution (StopExecution): it ends ABORTED, and an unknown execution is refused', async () => {
    const plan = holdPlan(s.wf, 'fail');
    const started = await start('sales_order_lines-to-stop', inputFor(9));
    await plan.entered;
    await sfn().send(new StopExecutionCommand({ executionArn: started.executionArn }));
    plan.open();
    expect((await sfn().send(new DescribeExecutionCommand({ executionArn: started.executionArn }))).status).toBe('ABORTED');
    await s.wf.runner.describe(started.executionArn!)!.running.result;
    s.wf.reset();
    await expect(sfn().send(new DescribeExecutionCommand({ executionArn: `${started.executionArn}-nope` }))).rejects.toBeInstanceOf(ExecutionDoesNotExist);
  });
});
