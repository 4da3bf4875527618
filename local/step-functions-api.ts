// A local Step Functions endpoint for the state machine a LocalRunner runs.
// The real @aws-sdk/client-sfn client works against it unchanged except for
// `endpoint`:
//
//   const api = await startLocalStepFunctionsApi(runner);
//   const sfn = localStepFunctionsClient(api.endpoint); // local/aws-clients.ts
//   await sfn.send(new StartExecutionCommand({ stateMachineArn: runner.workflow.stateMachineArn, name, input }));
//
// It serves what the project's callers use: StartExecution (with its rules
// for names: a name is taken once; while its execution runs with the same
// input the call returns it), DescribeExecution and StopExecution.
// Wire: AWS JSON 1.0 (local/aws-json-server.ts), timestamps as epoch seconds.
// https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html
import { type AwsJsonOperation, AwsJsonRequestError, startAwsJsonServer } from './aws-json-server.ts';
import { ExecutionAlreadyExistsError, InvalidNameError, type LocalRunner, StartExecutionError } from './runner.ts';

export interface LocalStepFunctionsApi {
  /** e.g. http://127.0.0.1:41234 */
  readonly endpoint: string;
  /** Names of the executions StartExecution started (not those it returned again), in order. */
  started(): readonly string[];
  close(): Promise<void>;
}

const CONTENT_TYPE = 'application/x-amz-json-1.0';
const TARGET_PREFIX = 'AWSStepFunctions.';

class SfnError extends Error {
  constructor(
    readonly shape: string,
    message: string,
  ) {
    super(message);
  }
}

export async function startLocalStepFunctionsApi(runner: LocalRunner, options: { host?: string; port?: number } = {}): Promise<LocalStepFunctionsApi> {
  const started: string[] = [];
  const stateMachineArn = runner.workflow.stateMachineArn;
  const epochSeconds = (iso: string) => Date.parse(iso) / 1000;
  const knownMachine = (arn: unknown) => {
    if (typeof arn !== 'string' || arn === '') throw new SfnError('ValidationException', 'stateMachineArn is required');
    if (arn !== stateMachineArn) throw new SfnError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${arn}'`);
  };
  const execution = (arn: unknown) => {
    const found = typeof arn === 'string' ? runner.describe(arn) : undefined;
    if (!found) throw new SfnError('ExecutionDoesNotExist', `Execution Does Not Exist: '${String(arn)}'`);
    return found;
  };
  const operations: Record<string, AwsJsonOperation> = {
    StartExecution: async ({ stateMachineArn: arn, name, input }) => {
      knownMachine(arn);
      let parsed: unknown = {};
      if (input !== undefined) {
        try {
          parsed = JSON.parse(String(input));
        } catch {
          throw new SfnError('InvalidExecutionInput', `Invalid State Machine Execution Input: '${String(input).slice(0, 200)}' is not JSON`);
        }
      }
      const before = name === undefined ? undefined : runner.describe(runner.executionArn(String(name)));
      try {
        const running = await runner.start(parsed, name === undefined ? {} : { name: String(name) });
        // Until the runner ends it, a failure is the caller's to see; this endpoint does not wait for it.
        running.result.catch(() => undefined);
        if (!before) started.push(running.executionId.slice(running.executionId.lastIndexOf(':') + 1));
        return { executionArn: running.executionId, startDate: epochSeconds(runner.describe(running.executionId)!.startedAt) };
      } catch (error) {
        if (error instanceof ExecutionAlreadyExistsError) throw new SfnError('ExecutionAlreadyExists', error.message);
        if (error instanceof InvalidNameError) throw new SfnError('InvalidName', error.message);
        if (error instanceof StartExecutionError) throw new SfnError('InvalidExecutionInput', error.message);
        throw error;
      }
    },
    DescribeExecution: async ({ executionArn }) => {
      const found = execution(executionArn);
      const result = found.result;
      return {
        executionArn: found.executionArn,
        stateMachineArn,
        name: found.name,
        status: found.status,
        startDate: epochSeconds(found.startedAt),
        input: found.input,
        ...(result ? { stopDate: epochSeconds(result.stoppedAt) } : {}),
        ...(result?.output !== undefined ? { output: JSON.stringify(result.output) } : {}),
        ...(result?.error !== undefined ? { error: result.error } : {}),
        ...(result?.cause !== undefined ? { cause: result.cause } : {}),
      };
    },
    StopExecution: async ({ executionArn }) => {
      const found = execution(executionArn);
      if (found.status === 'RUNNING') {
        found.running.abort();
        await found.running.result.catch(() => undefined);
      }
      return { stopDate: epochSeconds(runner.describe(found.executionArn)?.result?.stoppedAt ?? new Date().toISOString()) };
    },
  };

  const server = await startAwsJsonServer({
    contentType: CONTENT_TYPE,
    targetPrefix: TARGET_PREFIX,
    operations,
    errorOf: (error) =>
      error instanceof SfnError || error instanceof AwsJsonRequestError
        ? { status: 400, shape: error.shape, message: error.message }
        : { status: 500, shape: 'InternalFailure', message: (error as Error)?.message ?? String(error) },
    ...(options.host ? { host: options.host } : {}),
    ...(options.port ? { port: options.port } : {}),
  });
  return { endpoint: server.endpoint, started: () => [...started], close: () => server.close() };
}
