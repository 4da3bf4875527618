// A local Step Functions endpoint for the state machine a LocalRunner runs;
// the real @aws-sdk/client-sfn works against it with only `endpoint` changed
// (local/aws-clients.ts). It serves StartExecution (a name is taken once;
// while its execution runs with the same input, the call returns it),
// DescribeExecution, StopExecution, ListExecutions (newest first, paged),
// GetExecutionHistory (local/history.ts), DescribeStateMachine and
// ListStateMachines. A malformed ARN is InvalidArn, an unknown one
// ExecutionDoesNotExist or StateMachineDoesNotExist. Wire: AWS JSON 1.0.
// https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html
// https://docs.aws.amazon.com/step-functions/latest/apireference/API_ListExecutions.html
import { type AwsJsonOperation, AwsServiceError, serviceErrorOf, startAwsJsonServer } from './aws-json-server.ts';
import { ExecutionAlreadyExistsError, InvalidNameError, StartExecutionError } from './execution-errors.ts';
import { servedEvent } from './history.ts';
import type { LocalRunner } from './runner.ts';
import { describeStateMachine } from './state-machine.ts';

export interface LocalStepFunctionsApi {
  /** e.g. http://127.0.0.1:41234 */
  readonly endpoint: string;
  /** Names of the executions StartExecution started (not those it returned again), in order. */
  started(): readonly string[];
  close(): Promise<void>;
}

const CONTENT_TYPE = 'application/x-amz-json-1.0';
const TARGET_PREFIX = 'AWSStepFunctions.';

const EXECUTION_STATUSES = new Set(['RUNNING', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'ABORTED', 'PENDING_REDRIVE']);

/** The API model's PageSize: 0 to 1,000; 0 or none is a page of 100. */
const MAX_PAGE = 1000;
const DEFAULT_PAGE = 100;

/** One page of `items`: `maxResults` of them, from the offset `nextToken` carries. */
function page(key: string, items: readonly Record<string, unknown>[], maxResults: unknown, nextToken: unknown): Record<string, unknown> {
  if (
    maxResults !== undefined &&
    maxResults !== null &&
    (typeof maxResults !== 'number' || !Number.isInteger(maxResults) || maxResults < 0 || maxResults > MAX_PAGE)
  ) {
    throw new AwsServiceError(
      'ValidationException',
      `1 validation error detected: Value '${String(maxResults)}' at 'maxResults' failed to satisfy constraint: Member must have value ${Number(maxResults) < 0 ? 'greater than or equal to 0' : `less than or equal to ${MAX_PAGE}`}`,
    );
  }
  const size = typeof maxResults === 'number' && maxResults > 0 ? maxResults : DEFAULT_PAGE;
  let offset = 0;
  if (nextToken !== undefined) {
    offset = Number(Buffer.from(String(nextToken), 'base64url').toString('utf8'));
    if (!Number.isInteger(offset) || offset < 0 || offset > items.length) throw new AwsServiceError('InvalidToken', `Invalid Token: '${String(nextToken)}'`);
  }
  const end = offset + size;
  return { [key]: items.slice(offset, end), ...(end < items.length ? { nextToken: Buffer.from(String(end)).toString('base64url') } : {}) };
}

/**
 * Checks an ARN the way Step Functions does before looking it up:
 * `arn:<partition>:states:<region>:<account>:<type>:<name>` (an execution's
 * `...:execution:<state machine>:<name>`), of the resource type the
 * operation takes; InvalidArn otherwise (the messages for a missing prefix
 * and a wrong type are those Step Functions answers).
 */
function checkArn(arn: unknown, member: string, type: 'stateMachine' | 'execution'): string {
  if (arn === undefined || arn === null || arn === '') {
    throw new AwsServiceError(
      'ValidationException',
      `1 validation error detected: Value null at '${member}' failed to satisfy constraint: Member must not be null`,
    );
  }
  if (typeof arn !== 'string') throw new AwsServiceError('SerializationException', `${member} must be a string`);
  if (arn.length > 256) {
    throw new AwsServiceError(
      'ValidationException',
      `1 validation error detected: Value at '${member}' failed to satisfy constraint: Member must have length less than or equal to 256`,
    );
  }
  if (!arn.startsWith('arn:')) throw new AwsServiceError('InvalidArn', `Invalid Arn: 'Invalid ARN prefix: ${arn}'`);
  const [, partition, service, region, account, resourceType, ...names] = arn.split(':');
  if (!partition || service !== 'states' || !region || !/^\d{12}$/.test(account ?? '') || !resourceType) {
    throw new AwsServiceError('InvalidArn', `Invalid Arn: 'Invalid ARN: ${arn}'`);
  }
  if (resourceType !== type) throw new AwsServiceError('InvalidArn', `Invalid Arn: 'Resource type not valid in this context: ${resourceType.toLowerCase()}'`);
  // A state machine's name, or (for a version or alias) its name and qualifier; an execution's state machine and its name.
  const expected = type === 'execution' ? [2] : [1, 2];
  if (!expected.includes(names.length) || names.some((name) => name === '')) throw new AwsServiceError('InvalidArn', `Invalid Arn: 'Invalid ARN: ${arn}'`);
  return arn;
}

export async function startLocalStepFunctionsApi(runner: LocalRunner, options: { host?: string; port?: number } = {}): Promise<LocalStepFunctionsApi> {
  const started: string[] = [];
  const stateMachineArn = runner.workflow.stateMachineArn;
  // The state machine exists locally from when its endpoint starts.
  const creationDate = Date.now() / 1000;
  const epochSeconds = (iso: string) => Date.parse(iso) / 1000;
  const knownMachine = (arn: unknown) => {
    if (checkArn(arn, 'stateMachineArn', 'stateMachine') !== stateMachineArn)
      throw new AwsServiceError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${String(arn)}'`);
  };
  const execution = (arn: unknown) => {
    const found = runner.describe(checkArn(arn, 'executionArn', 'execution'));
    if (!found) throw new AwsServiceError('ExecutionDoesNotExist', `Execution Does Not Exist: '${String(arn)}'`);
    return found;
  };
  const operations: Record<string, AwsJsonOperation> = {
    DescribeStateMachine: async ({ stateMachineArn: arn, includedData }) => {
      if (includedData !== undefined && includedData !== 'ALL_DATA' && includedData !== 'METADATA_ONLY') {
        throw new AwsServiceError(
          'ValidationException',
          `1 validation error detected: Value '${String(includedData)}' at 'includedData' failed to satisfy constraint: Member must satisfy enum value set: [ALL_DATA, METADATA_ONLY]`,
        );
      }
      knownMachine(arn);
      return describeStateMachine(runner.workflow, creationDate);
    },
    ListStateMachines: async ({ maxResults, nextToken }) => {
      const { stateMachineArn: arn, name, type } = describeStateMachine(runner.workflow, creationDate);
      return page('stateMachines', [{ stateMachineArn: arn, name, type, creationDate }], maxResults, nextToken);
    },
    StartExecution: async ({ stateMachineArn: arn, name, input }) => {
      knownMachine(arn);
      let parsed: unknown = {};
      if (input !== undefined) {
        try {
          parsed = JSON.parse(String(input));
        } catch {
          throw new AwsServiceError('InvalidExecutionInput', `Invalid State Machine Execution Input: '${String(input).slice(0, 200)}' is not JSON`);
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
        if (error instanceof ExecutionAlreadyExistsError) throw new AwsServiceError('ExecutionAlreadyExists', error.message);
        if (error instanceof InvalidNameError) throw new AwsServiceError('InvalidName', error.message);
        if (error instanceof StartExecutionError) throw new AwsServiceError('InvalidExecutionInput', error.message);
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
    ListExecutions: async ({ stateMachineArn: arn, statusFilter, maxResults, nextToken }) => {
      knownMachine(arn);
      if (statusFilter !== undefined && !EXECUTION_STATUSES.has(String(statusFilter))) {
        throw new AwsServiceError(
          'ValidationException',
          `1 validation error detected: Value '${String(statusFilter)}' at 'statusFilter' failed to satisfy constraint: Member must satisfy enum value set: [${[...EXECUTION_STATUSES].join(', ')}]`,
        );
      }
      // Newest first, as Step Functions sorts them.
      const listed = runner
        .list()
        .filter((e) => statusFilter === undefined || e.status === statusFilter)
        .reverse()
        .map((e) => ({
          executionArn: e.executionArn,
          stateMachineArn,
          name: e.name,
          status: e.status,
          startDate: epochSeconds(e.startedAt),
          ...(e.result ? { stopDate: epochSeconds(e.result.stoppedAt) } : {}),
        }));
      return page('executions', listed, maxResults, nextToken);
    },
    GetExecutionHistory: async ({ executionArn, maxResults, nextToken, reverseOrder, includeExecutionData }) => {
      const found = execution(executionArn);
      const withData = includeExecutionData !== false;
      const events = found.history.events().map((event) => servedEvent(event, withData));
      return page('events', reverseOrder === true ? events.reverse() : events, maxResults, nextToken);
    },
    StopExecution: async ({ executionArn, error, cause }) => {
      const found = execution(executionArn);
      if (typeof error === 'string' && error.length > 256)
        throw new AwsServiceError('ValidationException', 'error: Member must have length less than or equal to 256');
      if (typeof cause === 'string' && cause.length > 32768)
        throw new AwsServiceError('ValidationException', 'cause: Member must have length less than or equal to 32768');
      if (found.status === 'RUNNING') {
        found.running.abort({ ...(typeof error === 'string' ? { error } : {}), ...(typeof cause === 'string' ? { cause } : {}) });
        await found.running.result.catch(() => undefined);
      }
      return { stopDate: epochSeconds(runner.describe(found.executionArn)?.result?.stoppedAt ?? new Date().toISOString()) };
    },
  };

  const server = await startAwsJsonServer({
    contentType: CONTENT_TYPE,
    targetPrefix: TARGET_PREFIX,
    operations,
    errorOf: serviceErrorOf('InternalFailure'),
    ...(options.host ? { host: options.host } : {}),
    ...(options.port ? { port: options.port } : {}),
  });
  return { endpoint: server.endpoint, started: () => [...started], close: () => server.close() };
}
