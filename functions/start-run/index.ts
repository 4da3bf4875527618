import { StartExecutionCommand } from '@aws-sdk/client-sfn';
import { requireEnv } from '../../domain/env.ts';
import { planScheduledStart } from '../../domain/start-run.ts';
import { pipelines } from '../../pipelines/index.ts';
import { stepHandler } from '../commons/handler.ts';
import { logger } from '../commons/powertools.ts';
import { stepFunctions } from '../commons/step-functions.ts';
import { StartRunEnv } from './env.ts';

export interface StartRunResult {
  /** The execution's name: `<pipeline>-scheduled-<UTC time>`. */
  readonly name: string;
  /** The execution this invocation's StartExecution returned; absent when Step Functions refused the name. */
  readonly executionArn?: string;
  /**
   * true: StartExecution succeeded (a new execution, or the one of this
   * name still running with the same input). false: an execution of that
   * name had already ended (an earlier delivery of the same scheduled time).
   */
  readonly started: boolean;
  readonly input: Record<string, unknown>;
}

/**
 * Starts one scheduled run under its deterministic name. A second delivery
 * of the same scheduled time is answered by Step Functions itself: the
 * running execution while it runs, ExecutionAlreadyExists once it has
 * ended, which ends this invocation cleanly (no retry, nothing started).
 */
export async function startScheduledRun(event: unknown, env: NodeJS.ProcessEnv = process.env): Promise<StartRunResult> {
  const { name, input } = planScheduledStart(event, pipelines);
  const client = stepFunctions(env);
  try {
    const started = await client.send(
      new StartExecutionCommand({ stateMachineArn: requireEnv(StartRunEnv.STATE_MACHINE_ARN, env), name, input: JSON.stringify(input) }),
    );
    logger.info('scheduled run started', { name, executionArn: started.executionArn, input });
    return { name, executionArn: started.executionArn!, started: true, input: { ...input } };
  } catch (error) {
    // The SDK's ExecutionAlreadyExists class, matched by name as Step Functions names it.
    if ((error as Error)?.name !== 'ExecutionAlreadyExists') throw error;
    logger.info('scheduled run already started: an execution of this name exists', { name, input, reason: (error as Error).message });
    return { name, started: false, input: { ...input } };
  }
}

export const handler = stepHandler((event: unknown) => startScheduledRun(event));
