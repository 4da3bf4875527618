// A stopped or dead run never locks its pipeline: a run stopped at a point of one
// step (that step's invocation running on, as on Lambda), an endpoint gone during
// RecordFailure, a killed process; the next run, under a new name, takes the
// pipeline over and publishes. Why: docs/decisions/leases-of-ended-executions.md
import { DescribeExecutionCommand, GetExecutionHistoryCommand, StopExecutionCommand } from '@aws-sdk/client-sfn';
import { describe, expect, it } from 'vitest';
import { localStepFunctionsClient } from '../../local/aws-clients.ts';
import { useForkPerTest } from '../support/fork-per-test.ts';
import { statementCounter } from '../support/statement-faults.ts';
import { caughtError, caughtMessage, inputFor, LIVE, namesFor, type TaskOverride, useWorkflowFixture, visited, type Workflow } from '../support/workflow.ts';

const DAY = 7;

const fixture = useWorkflowFixture('wf_stopped', async (wf) => {
  await wf.sample({ rowsPerDay: 20, sourceDays: 10, liveDays: 5 });
  // Installs the manifest.
  const first = await wf.run(inputFor(6), 'installs-the-manifest');
  expect(first.status, `${caughtError(first)?.Error}: ${caughtMessage(first)}`).toBe('SUCCEEDED');
  return {};
});

const leases = (wf: Workflow) => wf.query<{ execution_id: string }>('SELECT execution_id FROM atomic_publish.pipeline_leases');
const sfn = () => localStepFunctionsClient(process.env.STEP_FUNCTIONS_ENDPOINT!);

/**
 * Starts day DAY's run with `state`'s first invocation stopping the
 * execution at `at` (before its first statement, or before a statement
 * batch whose name contains `at`), then going on to its end. Returns the
 * stopped execution's result and that invocation's outcome.
 */
async function stopIn(wf: Workflow, state: 'Plan' | 'LoadChunk' | 'Publish', at: 'start' | string) {
  let arn!: () => string;
  const started = new Promise<void>((resolve) => (arn = () => (resolve(), running.executionId)));
  let invocationEnded!: (outcome: unknown) => void;
  const invocation = new Promise<unknown>((resolve) => (invocationEnded = resolve));
  const stop = async () => {
    await started;
    // StopExecution returns once the execution has ended ABORTED (and CancelOrphans has run).
    await sfn().send(new StopExecutionCommand({ executionArn: running.executionId, error: 'OperatorStop', cause: `stopped in ${state} at ${at}` }));
  };
  let first = true;
  const counter = statementCounter();
  const fault: TaskOverride = async (input, next) => {
    if (!first) return next(input);
    first = false;
    const call = at === 'start' ? stop().then(() => next(input)) : counter.within({ beforeBatch: { match: at, hook: stop } }, () => next(input));
    return call.then(
      (output) => (invocationEnded(output), output),
      (error: unknown) => (invocationEnded(error), Promise.reject(error)),
    );
  };
  wf.faults[state] = fault;
  const running = await wf.start(inputFor(DAY), `stopped-in-${state.toLowerCase()}`);
  arn();
  const result = await running.result;
  await invocation;
  wf.reset();
  return result;
}

/** The next run under a new name: it takes the pipeline over and publishes day DAY (or finds it published already). */
async function nextRunPublishes(wf: Workflow, stoppedArn: string) {
  const next = await wf.run(inputFor(DAY), 'the-next-run');
  expect(next.status, `${caughtError(next)?.Error}: ${caughtMessage(next)}`).toBe('SUCCEEDED');
  expect(['Published', 'NothingToPublish']).toContain(visited(next).at(-1));
  expect(next.alerts).toEqual([]);
  expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(DAY));
  // A later batch publishes too: nothing of the stopped run is in the way.
  const later = await wf.run(inputFor(DAY + 1), 'a-later-run');
  expect(visited(later).at(-1), `${caughtError(later)?.Error}: ${caughtMessage(later)}`).toBe('Published');
  expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(DAY + 1));
  expect(await leases(wf)).toEqual([]);
  const attempts = await wf.query<{ execution_id: string; status: string }>(
    'SELECT execution_id, status FROM atomic_publish.batch_attempts WHERE batch_id = $1',
    [namesFor(DAY).batchId],
  );
  // The stopped execution's attempt, if it recorded one, is not left RUNNING.
  expect(attempts.filter((a) => a.execution_id === stoppedArn && a.status === 'RUNNING')).toEqual([]);
}

describe('a run stopped', () => {
  const wf = useForkPerTest(fixture);

  for (const [state, at, where] of [
    ['Plan', 'start', "before Plan's first statement"],
    ['Plan', ':plan:lease:', "between Plan's statements, before it takes the lease"],
    ['Plan', ':plan:start-batch:', "between Plan's statements, after the lease, before the batch is recorded"],
    ['LoadChunk', 'start', 'inside LoadChunks'],
    ['Publish', 'start', 'in Publish, before its swap'],
  ] as const) {
    it(`${where}: ends ABORTED with the stop's error and cause, and the next run takes over and publishes`, async () => {
      const stopped = await stopIn(wf, state, at);
      expect(stopped.status).toBe('ABORTED');
      expect([stopped.error, stopped.cause]).toEqual(['OperatorStop', `stopped in ${state} at ${at}`]);
      const described = await sfn().send(new DescribeExecutionCommand({ executionArn: stopped.executionId }));
      expect(described.status).toBe('ABORTED');
      const history = await sfn().send(new GetExecutionHistoryCommand({ executionArn: stopped.executionId, reverseOrder: true, maxResults: 1 }));
      expect(history.events?.[0]).toMatchObject({
        type: 'ExecutionAborted',
        executionAbortedEventDetails: { error: 'OperatorStop', cause: `stopped in ${state} at ${at}` },
      });
      // No state was entered after the stop.
      expect(visited(stopped)).not.toContain(state === 'Publish' ? 'EmitMetrics' : 'Publish');
      await nextRunPublishes(wf, stopped.executionId);
    });
  }
});

describe('a run whose RecordFailure cannot reach the warehouse', () => {
  const wf = useForkPerTest(fixture);

  it('ends FAILED holding its lease; the re-run its page prescribes takes over and publishes', async () => {
    wf.faults.Reconcile = async () => {
      throw Object.assign(new Error('the gate failed'), { name: 'CheckFailedError' });
    };
    // RecordFailure's warehouse is an endpoint nothing listens on.
    wf.faults.RecordFailure = async (input, next) => {
      const endpoint = process.env.REDSHIFT_DATA_ENDPOINT;
      process.env.REDSHIFT_DATA_ENDPOINT = 'http://127.0.0.1:9';
      try {
        return await next(input);
      } finally {
        process.env.REDSHIFT_DATA_ENDPOINT = endpoint;
      }
    };
    const failed = await wf.run(inputFor(DAY), 'record-failure-unreachable');
    wf.reset();
    expect(failed.status).toBe('FAILED');
    expect(await leases(wf)).toEqual([{ execution_id: failed.executionId }]);
    expect(await wf.batch(namesFor(DAY).batchId)).toMatchObject({ status: 'RUNNING', execution_id: failed.executionId });
    expect(failed.alerts).toHaveLength(1);
    await nextRunPublishes(wf, failed.executionId);
    expect(await wf.query('SELECT status, error FROM atomic_publish.batch_attempts WHERE execution_id = $1', [failed.executionId])).toEqual([
      { status: 'FAILED', error: expect.stringMatching(/^ExecutionEnded: the execution ended FAILED without recording it .*; its lease was taken over by /) },
    ]);
  });
});

describe('a stop of an execution that has ended', () => {
  const wf = useForkPerTest(fixture);

  it('changes nothing: it stays SUCCEEDED', async () => {
    const done = await wf.run(inputFor(DAY), 'ended-before-the-stop');
    expect(done.status).toBe('SUCCEEDED');
    await sfn().send(new StopExecutionCommand({ executionArn: done.executionId, error: 'Late' }));
    expect((await sfn().send(new DescribeExecutionCommand({ executionArn: done.executionId }))).status).toBe('SUCCEEDED');
  });
});
